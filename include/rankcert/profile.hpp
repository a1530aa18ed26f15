// Profile certificates: certified enclosures of the intrinsic interaction
// geometry of a head (THEORY.md section 6) for a retained T = X Y^T.
#pragma once

#include "rankcert/check.hpp"

namespace rankcert {

// Checks a `profile` certificate against the instance; reports the profile
// P = (1 + kappa / (eps - tau)^2)^{r/2} at eps when tau < eps.
CertResult check_profile(const Instance& inst, const Rat& eps, const Certificate& cert, const CheckOptions& opt);

// Sandwich upper certificate: a factor B = U W^T within eps - t of the Gibbs
// matrix of T, and tau*(T) <= t, prove r_eps(A) <= k (triangle inequality).
CertResult check_sandwich(const Instance& inst, const Rat& eps, const Certificate& cert, const CheckOptions& opt);

// Exact visible dimension rank C for rational data (qk: rank of
// (P_n Q)(P_N K)^T; logits: rank of P_n S P_N); -1 when not computable
// exactly (matrix instances, whose C involves logarithms; very large logits).
long exact_visible_dimension(const Instance& inst);

}  // namespace rankcert
