// LDL^T positive-definiteness test, generic over balls and exact rationals.
// Internal to the checker (used by the tail and profile checks).
//
// Theorem relied on: a symmetric matrix whose LDL^T factorisation (without
// pivoting) has all pivots positive is positive definite; if the first p
// pivots are positive and pivot p+1 is negative, the leading (p+1) x (p+1)
// minor (the product of those pivots) is negative, so the matrix is not
// positive semidefinite.
#pragma once

#include "rankcert/exact.hpp"

#include <vector>

namespace rankcert {

// LDL^T of a symmetric matrix (lower triangle used), generic over balls and
// rationals.  verified: all pivots certainly > 0 (positive definite);
// refuted: pivots 0..p-1 certainly > 0 and pivot p certainly < 0 (then the
// leading (p+1) minor is negative, so the matrix is not PSD); else undecided.
struct BallOps {
    slong prec;
    using T = Ball;
    void sub_mul_mul(T& r, const T& a, const T& b, const T& c) const {  // r -= a*b*c
        Ball t;
        arb_mul(t.get(), a.get(), b.get(), prec);
        arb_submul(r.get(), t.get(), c.get(), prec);
    }
    void div(T& r, const T& a, const T& b) const { arb_div(r.get(), a.get(), b.get(), prec); }
    int sign(const T& x) const { return arb_is_positive(x.get()) ? 1 : arb_is_negative(x.get()) ? -1 : 0; }
    Endpoints ends(const T& x) const { return endpoints(x.get()); }
};
struct RatOps {
    using T = Rat;
    void sub_mul_mul(T& r, const T& a, const T& b, const T& c) const { r = r - a * b * c; }
    void div(T& r, const T& a, const T& b) const { r = a / b; }
    int sign(const T& x) const { return x.sign(); }
    Endpoints ends(const T& x) const { Endpoints e; e.lo = x; e.hi = x; return e; }
};

struct LdlResult {
    Verdict verdict;
    std::size_t pivot;  // first pivot not certainly positive (or m)
    Endpoints value;    // its enclosure; smallest pivot's when verified
};

template <class Ops>
LdlResult ldl_positive_definite(const Ops& ops, std::vector<typename Ops::T>& h, std::size_t m) {
    // h is overwritten: lower triangle becomes L (unit diagonal implied), diagonal D.
    using T = typename Ops::T;
    auto H = [&](std::size_t i, std::size_t j) -> T& { return h[i * m + j]; };
    LdlResult out{Verdict::verified, m, {}};
    for (std::size_t k = 0; k < m; ++k) {
        for (std::size_t l = 0; l < k; ++l) ops.sub_mul_mul(H(k, k), H(k, l), H(k, l), H(l, l));
        int s = ops.sign(H(k, k));
        if (s <= 0) {
            out.verdict = s < 0 ? Verdict::refuted : Verdict::undecided;
            out.pivot = k;
            out.value = ops.ends(H(k, k));
            return out;
        }
        for (std::size_t i = k + 1; i < m; ++i) {
            for (std::size_t l = 0; l < k; ++l) ops.sub_mul_mul(H(i, k), H(i, l), H(k, l), H(l, l));
            ops.div(H(i, k), H(i, k), H(k, k));
        }
    }
    // Report the smallest pivot's enclosure (a measure of the margin).
    std::size_t best = 0;
    for (std::size_t k = 1; k < m; ++k)
        if (cmp(ops.ends(H(k, k)).lo, ops.ends(H(best, best)).lo) < 0) best = k;
    if (m) out.value = ops.ends(H(best, best));
    out.pivot = best;
    return out;
}


}  // namespace rankcert
