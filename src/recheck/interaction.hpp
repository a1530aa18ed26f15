// rankcert-recheck: the double-centred interaction C of an instance, the
// residual C - T for T = X Y^T, and the Gibbs matrix of T:
//   A~_i = softmax(log A_i - (C - T)_i)   (profile and sandwich; docs/profile.md).
// qk: C_ij = coef <Qc_i, Kc_j> with Q, K column-centred (exact); logits:
// S double-centred (exact); matrix: log A double-centred (intervals).
#pragma once

#include "recheck.hpp"

namespace recheck {

struct Interaction {
    Interaction(const Instance& inst, const Array& x, const Array& y, std::size_t r);
    template <class I> std::vector<I> residual(std::size_t i) const;
    // (A_i, A~_i) for the residual row R.
    template <class I> std::pair<std::vector<I>, std::vector<I>> gibbs(std::size_t i, const std::vector<I>& R) const;

    const Instance& inst;
    const Array &x, &y;
    std::size_t r;
    std::vector<Q> qc, kc, c;  // qk: centred q (n x d), k (N x d); logits: C (n x N)
};

// Column-centred copy of a matrix (exact).
std::vector<Q> centred(const Array& a);

}  // namespace recheck
