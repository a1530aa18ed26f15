// The intrinsic interaction C = P_n (log A) P_N of a head, exactly where the
// data allow (docs/theory.md, "Extensions: profile and sandwich
// certificates").  The profile and sandwich certificate kinds are units under
// src/checker/cert/.
#pragma once

#include "rankcert/bundle.hpp"

namespace rankcert {

// Exact visible dimension rank C for rational data (qk: rank of
// (P_n Q)(P_N K)^T; logits: rank of P_n S P_N); -1 when not computable
// exactly (matrix instances, whose C involves logarithms; very large logits).
long exact_visible_dimension(const Instance& inst);

}  // namespace rankcert
