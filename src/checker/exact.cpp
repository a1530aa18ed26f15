// Exact decisions on Arb balls.
//
// Theorem relied on: an Arb ball (m, r) contains the real number it encloses,
// so if m + r <= t then every enclosed value is <= t.  m and r are dyadic; we
// compare the endpoint with t exactly (first by a cheap two-sided enclosure of
// t, then, only when they are too close for that, in exact rational
// arithmetic).  No floating-point comparison enters a decision.
#include "rankcert/exact.hpp"

#include <flint/fmpz.h>

#include <algorithm>

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

// Endpoints are rounded outward to at most endpoint_bits bits (more than any
// ball of the ladder carries, so normally exact), and magnitudes are clamped
// to [2^-max_exp, 2^max_exp], outward: a lower end below 2^-max_exp in
// magnitude becomes 0 (or -2^-max_exp), an upper end likewise; an end beyond
// 2^max_exp in the unsafe direction makes the ball unbounded.  So a ball
// whose midpoint and radius exponents are far apart (exp(-10^12), say) never
// becomes a rational with 10^12 bits: the bounds stay valid and small.
constexpr slong endpoint_bits = 1 << 17;
constexpr slong max_exp = 1 << 14;

struct Bounds {
    arf_t lo, hi;
    bool bounded = true;
    explicit Bounds(arb_srcptr x) {
        arf_init(lo);
        arf_init(hi);
        // Rounding directed outward: lo <= every point <= hi.  Enough bits to
        // keep the ball's information, without spelling out mid + rad exactly
        // when a tiny midpoint sits under a large radius.
        // The radius sits arb_rel_accuracy_bits(x) bits below the midpoint
        // (negative when it dominates; huge for an exact ball), so the ends
        // need about that many bits more than the midpoint's own.
        const slong gap = std::max<slong>(0, std::min<slong>(arb_rel_accuracy_bits(x), endpoint_bits));
        const slong bits = std::min<slong>(endpoint_bits, std::max<slong>(arf_bits(arb_midref(x)), 30) + 64 + gap);
        arb_get_lbound_arf(lo, x, bits);
        arb_get_ubound_arf(hi, x, bits);
        clamp(lo, false);
        clamp(hi, true);
    }
    ~Bounds() { arf_clear(lo); arf_clear(hi); }
    Bounds(const Bounds&) = delete;
    Bounds& operator=(const Bounds&) = delete;

private:
    // Replace v by a number no larger (upper = false) or no smaller (upper =
    // true) with a moderate exponent.
    void clamp(arf_t v, bool upper) {
        if (arf_is_zero(v) || !arf_is_finite(v)) return;
        if (arf_cmpabs_2exp_si(v, -max_exp) < 0) {
            const bool pos = arf_sgn(v) > 0;
            if (pos == upper) {  // move away from zero by a hair: 2^-max_exp with v's sign
                arf_one(v);
                arf_mul_2exp_si(v, v, -max_exp);
                if (!pos) arf_neg(v, v);
            } else {
                arf_zero(v);  // towards zero, which is the outward side here
            }
        } else if (arf_cmpabs_2exp_si(v, max_exp) > 0) {
            const bool pos = arf_sgn(v) > 0;
            if (pos == upper) {
                bounded = false;  // no moderate number is outward of v
            } else {
                arf_one(v);
                arf_mul_2exp_si(v, v, max_exp);
                if (!pos) arf_neg(v, v);
            }
        }
    }
};

}  // namespace

Verdict decide_le(arb_srcptr x, const Rat& t) {
    if (!arb_is_finite(x)) return Verdict::undecided;
    Bounds b(x);
    if (!b.bounded) return Verdict::undecided;
    if (arf_cmp_rat(b.hi, t) <= 0) return Verdict::verified;
    if (arf_cmp_rat(b.lo, t) > 0) return Verdict::refuted;
    return Verdict::undecided;
}

Verdict decide_lt(arb_srcptr x, const Rat& t) {
    if (!arb_is_finite(x)) return Verdict::undecided;
    Bounds b(x);
    if (!b.bounded) return Verdict::undecided;
    if (arf_cmp_rat(b.hi, t) < 0) return Verdict::verified;
    if (arf_cmp_rat(b.lo, t) >= 0) return Verdict::refuted;
    return Verdict::undecided;
}

Verdict decide_gt(arb_srcptr x, const Rat& t) {
    if (!arb_is_finite(x)) return Verdict::undecided;
    Bounds b(x);
    if (!b.bounded) return Verdict::undecided;
    if (arf_cmp_rat(b.lo, t) > 0) return Verdict::verified;
    if (arf_cmp_rat(b.hi, t) <= 0) return Verdict::refuted;
    return Verdict::undecided;
}

Verdict decide_ge(arb_srcptr x, const Rat& t) {
    if (!arb_is_finite(x)) return Verdict::undecided;
    Bounds b(x);
    if (!b.bounded) return Verdict::undecided;
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
    if (!b.bounded) {
        e.bounded = false;
        return e;
    }
    arf_get_fmpq(e.lo.get(), b.lo);
    arf_get_fmpq(e.hi.get(), b.hi);
    return e;
}

}  // namespace rankcert
