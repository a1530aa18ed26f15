// rankcert-recheck: the interval types (see interval.hpp).
#include "interval.hpp"

namespace recheck {

const char* name(Verdict v) {
    switch (v) {
        case Verdict::verified: return "verified";
        case Verdict::refuted: return "refuted";
        default: return "undecided";
    }
}

Verdict combine(Verdict a, Verdict b) {
    if (a == Verdict::refuted || b == Verdict::refuted) return Verdict::refuted;
    if (a == Verdict::undecided || b == Verdict::undecided) return Verdict::undecided;
    return Verdict::verified;
}

bool end_le(const End& e, const Q& t) { return !e.nan && (e.inf < 0 || (e.inf == 0 && e.v <= t)); }
bool end_lt(const End& e, const Q& t) { return !e.nan && (e.inf < 0 || (e.inf == 0 && e.v < t)); }
bool end_gt(const End& e, const Q& t) { return !e.nan && (e.inf > 0 || (e.inf == 0 && e.v > t)); }
bool end_ge(const End& e, const Q& t) { return !e.nan && (e.inf > 0 || (e.inf == 0 && e.v >= t)); }

End end_max(const End& a, const End& b) {
    if (a.nan) return a;
    if (b.nan) return b;
    if (a.inf > 0 || b.inf < 0) return a;
    if (b.inf > 0 || a.inf < 0) return b;
    return a.v >= b.v ? a : b;
}

namespace {

End end_of(double x) {
    End e;
    if (std::isnan(x)) e.nan = true;
    else if (std::isinf(x)) e.inf = x > 0 ? 1 : -1;
    else e.v = Q(x);  // exact: mpq_set_d
    return e;
}

End end_of(const mpfr_t x) {
    End e;
    if (mpfr_nan_p(x)) {
        e.nan = true;
    } else if (mpfr_inf_p(x)) {
        e.inf = mpfr_sgn(x) > 0 ? 1 : -1;
    } else {
        mpq_t q;
        mpq_init(q);
        mpfr_get_q(q, x);  // exact
        e.v = Q(q);
        mpq_clear(q);
    }
    return e;
}

// A 53-bit MPFR scratch value per thread, for exp/log/conversions of DI.
struct Scratch {
    mpfr_t x, y;
    Scratch() {
        mpfr_init2(x, 53);
        mpfr_init2(y, 53);
    }
    ~Scratch() {
        mpfr_clear(x);
        mpfr_clear(y);
    }
};
thread_local Scratch scratch;

using Fn = int (*)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t);

// f at x rounded in direction rnd, as a double (f correctly rounded at 53
// bits, so the double is a bound in that direction).
double at53(Fn f, double x, mpfr_rnd_t rnd) {
    if (std::isnan(x)) return NAN;
    mpfr_set_d(scratch.x, x, MPFR_RNDN);  // exact: x is a double
    f(scratch.y, scratch.x, rnd);
    return mpfr_get_d(scratch.y, rnd);
}

}  // namespace

// exp of a double, enclosed: x = k ln2 + r with |r| <= 0.36 (r enclosed
// through an enclosure of ln2 from MPFR), exp(r) by Horner's rule in
// round-to-nearest on the 14 terms sum_{i<=13} r^i / i!, and 2^k exactly.
// Error of that sum against exp(r), |r| <= 0.36:
//   Horner's rounding   <= gamma_26 sum |c_i| |r|^i <= 27 u e^0.36     (Higham 5.1)
//   coefficients c_i = fl(1 / i!)  <= u e^0.36
//   truncation          <= 0.36^14 / 14! e^0.36 < 2^-56
// so at most 29 u 1.44 + 2^-56 < 2^-46 (u = 2^-53); the ends use 2^-45.  The
// exp of an MPFR 53-bit value checks this in tests/recheck (containment).
namespace {

struct Ln2 {
    double lo, hi;
    Ln2() {
        mpfr_t t;
        mpfr_init2(t, 53);
        mpfr_const_log2(t, MPFR_RNDD);
        lo = mpfr_get_d(t, MPFR_RNDD);
        mpfr_const_log2(t, MPFR_RNDU);
        hi = mpfr_get_d(t, MPFR_RNDU);
        mpfr_clear(t);
    }
};
const Ln2 ln2;

double horner(double r) {
    static constexpr double c[14] = {1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320,
                                     1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0};
    double p = c[13];
    for (int i = 12; i >= 0; --i) p = p * r + c[i];
    return p;
}

// One end of exp(x): dir < 0 a lower bound, dir > 0 an upper bound.
double exp_end(double x, int dir) {
    if (std::isnan(x)) return NAN;
    if (x > 709) return dir < 0 ? at53(mpfr_exp, x, MPFR_RNDD) : at53(mpfr_exp, x, MPFR_RNDU);
    if (x < -745) return dir < 0 ? 0.0 : 0x1p-1074;  // exp(x) < exp(-744.44) = 2^-1074
    const double k = std::nearbyint(x * 1.4426950408889634);
    // r in x - k [ln2.lo, ln2.hi], both products and the difference rounded outward.
    double r;
    if (dir < 0) r = k >= 0 ? down(x - up(k * ln2.hi)) : down(x - up(k * ln2.lo));
    else r = k >= 0 ? up(x - down(k * ln2.lo)) : up(x - down(k * ln2.hi));
    if (!(std::fabs(r) <= 0.36)) return dir < 0 ? at53(mpfr_exp, x, MPFR_RNDD) : at53(mpfr_exp, x, MPFR_RNDU);
    const double p = horner(r);
    const double e = dir < 0 ? down(p - 0x1p-45) : up(p + 0x1p-45);
    // 2^k from its bits where it is a normal double (then e 2^k is exact
    // unless the product is subnormal, which down/up cover).
    const int ki = static_cast<int>(k);
    const double v = ki >= -1022 && ki <= 1023 ? e * std::bit_cast<double>(static_cast<std::uint64_t>(ki + 1023) << 52)
                                               : std::ldexp(e, ki);
    return dir < 0 ? std::max(0.0, down(v)) : up(v);
}

}  // namespace

// A thin interval [lo, hi] (the usual case) takes one polynomial: with one k
// for both ends, exp([lo, hi]) lies in 2^k [e^{r_lo}, e^{r_lo} e^w], w = r_hi -
// r_lo, and e^w <= 1 + 1.01 w for w <= 2^-20.
DI iexp(const DI& a) {
    if (!(a.lo >= -700 && a.hi <= 700 && a.hi - a.lo <= 0x1p-20)) return {exp_end(a.lo, -1), exp_end(a.hi, 1)};
    const double k = std::nearbyint(a.lo * 1.4426950408889634);
    const double r_lo = k >= 0 ? down(a.lo - up(k * ln2.hi)) : down(a.lo - up(k * ln2.lo));
    const double r_hi = k >= 0 ? up(a.hi - down(k * ln2.lo)) : up(a.hi - down(k * ln2.hi));
    const double w = up(r_hi - r_lo);
    if (!(std::fabs(r_lo) <= 0.36 && std::fabs(r_hi) <= 0.36 && w <= 0x1p-20)) return {exp_end(a.lo, -1), exp_end(a.hi, 1)};
    const double p = horner(r_lo);
    const double lo = down(p - 0x1p-45), hi = up(up(p + 0x1p-45) * up(1.0 + up(w * 1.01)));
    const double scale = std::bit_cast<double>(static_cast<std::uint64_t>(static_cast<int>(k) + 1023) << 52);  // |k| <= 1010
    return {down(lo * scale), up(hi * scale)};
}
DI ilog(const DI& a) {
    if (!(a.lo > 0)) return {NAN, NAN};
    return {at53(mpfr_log, a.lo, MPFR_RNDD), at53(mpfr_log, a.hi, MPFR_RNDU)};
}
DI isqrt(const DI& a) {
    if (!(a.lo >= 0)) return {NAN, NAN};
    return {down(std::sqrt(a.lo)), up(std::sqrt(a.hi))};  // IEEE sqrt is correctly rounded
}

DI to_di(const Q& q) {
    mpfr_set_q(scratch.x, q.backend().data(), MPFR_RNDD);
    const double l = mpfr_get_d(scratch.x, MPFR_RNDD);
    mpfr_set_q(scratch.x, q.backend().data(), MPFR_RNDU);
    const double h = mpfr_get_d(scratch.x, MPFR_RNDU);
    return {l, h};
}

DI rsqrt_di(const Q& q) {
    // 1/sqrt is decreasing: the lower end from q rounded up, and back.
    if (q <= 0) return {NAN, NAN};
    mpfr_set_q(scratch.x, q.backend().data(), MPFR_RNDU);
    mpfr_rec_sqrt(scratch.y, scratch.x, MPFR_RNDD);
    const double l = mpfr_get_d(scratch.y, MPFR_RNDD);
    mpfr_set_q(scratch.x, q.backend().data(), MPFR_RNDD);
    mpfr_rec_sqrt(scratch.y, scratch.x, MPFR_RNDU);
    const double h = mpfr_get_d(scratch.y, MPFR_RNDU);
    return {l, h};
}

End lo_end(const DI& a) { return end_of(a.lo); }
End hi_end(const DI& a) { return end_of(a.hi); }

// ---- MI ----------------------------------------------------------------------

namespace {
thread_local mpfr_prec_t mi_bits = 128;
}  // namespace

mpfr_prec_t get_mi_bits() { return mi_bits; }
void set_mi_bits(mpfr_prec_t bits) { mi_bits = bits; }

MI::MI() {
    mpfr_init2(lo, mi_bits);
    mpfr_init2(hi, mi_bits);
    mpfr_set_zero(lo, 1);
    mpfr_set_zero(hi, 1);
}
MI::MI(const MI& o) {
    mpfr_init2(lo, mpfr_get_prec(o.lo));
    mpfr_init2(hi, mpfr_get_prec(o.hi));
    mpfr_set(lo, o.lo, MPFR_RNDD);
    mpfr_set(hi, o.hi, MPFR_RNDU);
}
MI::MI(MI&& o) noexcept : MI() {
    mpfr_swap(lo, o.lo);
    mpfr_swap(hi, o.hi);
}
MI& MI::operator=(const MI& o) {
    if (this != &o) {
        mpfr_set_prec(lo, mpfr_get_prec(o.lo));
        mpfr_set_prec(hi, mpfr_get_prec(o.hi));
        mpfr_set(lo, o.lo, MPFR_RNDD);
        mpfr_set(hi, o.hi, MPFR_RNDU);
    }
    return *this;
}
MI& MI::operator=(MI&& o) noexcept {
    mpfr_swap(lo, o.lo);
    mpfr_swap(hi, o.hi);
    return *this;
}
MI::~MI() {
    mpfr_clear(lo);
    mpfr_clear(hi);
}

MI operator+(const MI& a, const MI& b) {
    MI r;
    mpfr_add(r.lo, a.lo, b.lo, MPFR_RNDD);
    mpfr_add(r.hi, a.hi, b.hi, MPFR_RNDU);
    return r;
}
MI operator-(const MI& a, const MI& b) {
    MI r;
    mpfr_sub(r.lo, a.lo, b.hi, MPFR_RNDD);
    mpfr_sub(r.hi, a.hi, b.lo, MPFR_RNDU);
    return r;
}
MI operator-(const MI& a) {
    MI r;
    mpfr_neg(r.lo, a.hi, MPFR_RNDD);
    mpfr_neg(r.hi, a.lo, MPFR_RNDU);
    return r;
}

namespace {
// The least and greatest of the four end products (quotients), rounded outward.
MI four(const MI& a, const MI& b, int (*op)(mpfr_ptr, mpfr_srcptr, mpfr_srcptr, mpfr_rnd_t)) {
    MI r;
    mpfr_t t;
    mpfr_init2(t, mi_bits);
    bool first = true;
    for (mpfr_srcptr x : {a.lo, a.hi})
        for (mpfr_srcptr y : {b.lo, b.hi}) {
            op(t, x, y, MPFR_RNDD);
            if (mpfr_nan_p(t)) {
                mpfr_set_nan(r.lo);
                mpfr_set_nan(r.hi);
                mpfr_clear(t);
                return r;
            }
            if (first || mpfr_less_p(t, r.lo)) mpfr_set(r.lo, t, MPFR_RNDD);
            op(t, x, y, MPFR_RNDU);
            if (first || mpfr_greater_p(t, r.hi)) mpfr_set(r.hi, t, MPFR_RNDU);
            first = false;
        }
    mpfr_clear(t);
    return r;
}
}  // namespace

MI operator*(const MI& a, const MI& b) { return four(a, b, mpfr_mul); }
MI operator/(const MI& a, const MI& b) {
    if (!(mpfr_sgn(b.lo) > 0) || mpfr_nan_p(b.lo)) {
        MI r;
        mpfr_set_nan(r.lo);
        mpfr_set_nan(r.hi);
        return r;
    }
    return four(a, b, mpfr_div);
}
MI iabs(const MI& a) {
    MI r;
    if (mpfr_nan_p(a.lo) || mpfr_nan_p(a.hi)) {
        mpfr_set_nan(r.lo);
        mpfr_set_nan(r.hi);
    } else if (mpfr_sgn(a.lo) >= 0) {
        mpfr_set(r.lo, a.lo, MPFR_RNDD);
        mpfr_set(r.hi, a.hi, MPFR_RNDU);
    } else if (mpfr_sgn(a.hi) <= 0) {
        mpfr_neg(r.lo, a.hi, MPFR_RNDD);
        mpfr_neg(r.hi, a.lo, MPFR_RNDU);
    } else {
        mpfr_set_zero(r.lo, 1);
        mpfr_neg(r.hi, a.lo, MPFR_RNDU);
        if (mpfr_greater_p(a.hi, r.hi)) mpfr_set(r.hi, a.hi, MPFR_RNDU);
    }
    return r;
}
MI imax(const MI& a, const MI& b) {
    MI r;
    if (mpfr_nan_p(a.lo) || mpfr_nan_p(a.hi) || mpfr_nan_p(b.lo) || mpfr_nan_p(b.hi)) {
        mpfr_set_nan(r.lo);
        mpfr_set_nan(r.hi);
        return r;
    }
    mpfr_max(r.lo, a.lo, b.lo, MPFR_RNDD);
    mpfr_max(r.hi, a.hi, b.hi, MPFR_RNDU);
    return r;
}
MI imin(const MI& a, const MI& b) {
    MI r;
    if (mpfr_nan_p(a.lo) || mpfr_nan_p(a.hi) || mpfr_nan_p(b.lo) || mpfr_nan_p(b.hi)) {
        mpfr_set_nan(r.lo);
        mpfr_set_nan(r.hi);
        return r;
    }
    mpfr_min(r.lo, a.lo, b.lo, MPFR_RNDD);
    mpfr_min(r.hi, a.hi, b.hi, MPFR_RNDU);
    return r;
}
MI iexp(const MI& a) {
    MI r;
    mpfr_exp(r.lo, a.lo, MPFR_RNDD);
    mpfr_exp(r.hi, a.hi, MPFR_RNDU);
    return r;
}
MI ilog(const MI& a) {
    MI r;
    if (!(mpfr_sgn(a.lo) > 0) || mpfr_nan_p(a.lo)) {
        mpfr_set_nan(r.lo);
        mpfr_set_nan(r.hi);
        return r;
    }
    mpfr_log(r.lo, a.lo, MPFR_RNDD);
    mpfr_log(r.hi, a.hi, MPFR_RNDU);
    return r;
}
MI isqrt(const MI& a) {
    MI r;
    if (!(mpfr_sgn(a.lo) >= 0) || mpfr_nan_p(a.lo)) {
        mpfr_set_nan(r.lo);
        mpfr_set_nan(r.hi);
        return r;
    }
    mpfr_sqrt(r.lo, a.lo, MPFR_RNDD);
    mpfr_sqrt(r.hi, a.hi, MPFR_RNDU);
    return r;
}
MI rsqrt_mi(const Q& q) {
    MI r, t;
    if (q <= 0) {
        mpfr_set_nan(r.lo);
        mpfr_set_nan(r.hi);
        return r;
    }
    mpfr_set_q(t.hi, q.backend().data(), MPFR_RNDU);
    mpfr_rec_sqrt(r.lo, t.hi, MPFR_RNDD);
    mpfr_set_q(t.lo, q.backend().data(), MPFR_RNDD);
    mpfr_rec_sqrt(r.hi, t.lo, MPFR_RNDU);
    return r;
}
MI to_mi(const Q& q) {
    MI r;
    mpfr_set_q(r.lo, q.backend().data(), MPFR_RNDD);
    mpfr_set_q(r.hi, q.backend().data(), MPFR_RNDU);
    return r;
}
MI to_mi(double x) {
    MI r;
    mpfr_set_d(r.lo, x, MPFR_RNDD);
    mpfr_set_d(r.hi, x, MPFR_RNDU);
    return r;
}
MI lo_pt(const MI& a) {
    MI r;
    mpfr_set(r.lo, a.lo, MPFR_RNDD);
    mpfr_set(r.hi, a.lo, MPFR_RNDU);
    return r;
}
MI hi_pt(const MI& a) {
    MI r;
    mpfr_set(r.lo, a.hi, MPFR_RNDD);
    mpfr_set(r.hi, a.hi, MPFR_RNDU);
    return r;
}
MI hull(const MI& a, const MI& b) {
    MI r;
    mpfr_set(r.lo, a.lo, MPFR_RNDD);
    mpfr_set(r.hi, b.hi, MPFR_RNDU);
    return r;
}
double mid(const MI& a) { return 0.5 * mpfr_get_d(a.lo, MPFR_RNDN) + 0.5 * mpfr_get_d(a.hi, MPFR_RNDN); }
End lo_end(const MI& a) { return end_of(a.lo); }
End hi_end(const MI& a) { return end_of(a.hi); }

}  // namespace recheck
