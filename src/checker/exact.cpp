// Exact decisions on Arb balls.
//
// Theorem relied on: an Arb ball (m, r) contains the real number it encloses,
// so if m + r <= t then every enclosed value is <= t.  m and r are dyadic; we
// compare the endpoint with t exactly (first by a cheap two-sided enclosure of
// t, then, only when they are too close for that, in exact rational
// arithmetic).  No floating-point comparison enters a decision.
#include "rankcert/exact.hpp"

#include <flint/fmpz.h>

namespace rankcert {

std::string Rat::str() const {
    char* s = fmpq_get_str(nullptr, 10, v_);
    std::string out(s);
    flint_free(s);
    return out;
}

const char* to_string(Verdict v) {
    switch (v) {
    case Verdict::verified: return "verified";
    case Verdict::refuted: return "refuted";
    case Verdict::undecided: return "undecided";
    }
    return "undecided";
}

int arf_cmp_rat(const arf_t x, const Rat& t) {
    if (arf_is_nan(x)) return 0;  // callers check finiteness first
    if (arf_is_pos_inf(x)) return 1;
    if (arf_is_neg_inf(x)) return -1;
    if (arf_is_zero(x)) return -t.sign();
    // Cheap path: enclose t in a narrow ball; decide if x is outside it.
    arb_t tb;
    arf_t lo, hi;
    arb_init(tb);
    arf_init(lo);
    arf_init(hi);
    arb_set_fmpq(tb, t.get(), 128);
    arb_get_lbound_arf(lo, tb, 128);
    arb_get_ubound_arf(hi, tb, 128);
    int res;
    if (arf_cmp(x, lo) < 0) {
        res = -1;
    } else if (arf_cmp(x, hi) > 0) {
        res = 1;
    } else {
        // x lies within a relative 2^-127 of t: its exponent is that of t,
        // so the exact conversion is cheap.
        Rat xq;
        arf_get_fmpq(xq.get(), x);
        res = cmp(xq, t);
    }
    arf_clear(hi);
    arf_clear(lo);
    arb_clear(tb);
    return res;
}

namespace {
struct Bounds {
    arf_t lo, hi;
    explicit Bounds(arb_srcptr x) {
        arf_init(lo);
        arf_init(hi);
        // Rounding directed outward: lo <= every point <= hi.
        arb_get_lbound_arf(lo, x, ARF_PREC_EXACT);
        arb_get_ubound_arf(hi, x, ARF_PREC_EXACT);
    }
    ~Bounds() { arf_clear(lo); arf_clear(hi); }
    Bounds(const Bounds&) = delete;
    Bounds& operator=(const Bounds&) = delete;
};
}  // namespace

Verdict decide_le(arb_srcptr x, const Rat& t) {
    if (!arb_is_finite(x)) return Verdict::undecided;
    Bounds b(x);
    if (arf_cmp_rat(b.hi, t) <= 0) return Verdict::verified;
    if (arf_cmp_rat(b.lo, t) > 0) return Verdict::refuted;
    return Verdict::undecided;
}

Verdict decide_lt(arb_srcptr x, const Rat& t) {
    if (!arb_is_finite(x)) return Verdict::undecided;
    Bounds b(x);
    if (arf_cmp_rat(b.hi, t) < 0) return Verdict::verified;
    if (arf_cmp_rat(b.lo, t) >= 0) return Verdict::refuted;
    return Verdict::undecided;
}

Verdict decide_gt(arb_srcptr x, const Rat& t) {
    if (!arb_is_finite(x)) return Verdict::undecided;
    Bounds b(x);
    if (arf_cmp_rat(b.lo, t) > 0) return Verdict::verified;
    if (arf_cmp_rat(b.hi, t) <= 0) return Verdict::refuted;
    return Verdict::undecided;
}

Verdict decide_ge(arb_srcptr x, const Rat& t) {
    if (!arb_is_finite(x)) return Verdict::undecided;
    Bounds b(x);
    if (arf_cmp_rat(b.lo, t) >= 0) return Verdict::verified;
    if (arf_cmp_rat(b.hi, t) < 0) return Verdict::refuted;
    return Verdict::undecided;
}

Verdict decide_in(arb_srcptr x, const Rat& lo, const Rat& hi) {
    const Verdict above_lo = decide_ge(x, lo), below_hi = decide_le(x, hi);
    if (above_lo == Verdict::verified && below_hi == Verdict::verified) return Verdict::verified;
    if (above_lo == Verdict::refuted || below_hi == Verdict::refuted) return Verdict::refuted;
    return Verdict::undecided;
}

Endpoints endpoints(arb_srcptr x) {
    Endpoints e;
    if (!arb_is_finite(x)) {
        e.bounded = false;
        return e;
    }
    Bounds b(x);
    arf_get_fmpq(e.lo.get(), b.lo);
    arf_get_fmpq(e.hi.get(), b.hi);
    return e;
}

}  // namespace rankcert
