// rankcert-recheck: exact rationals and two interval types of its own.
//
//   Q   exact rationals: Boost.Multiprecision's gmp_rational (mpq_t beneath);
//   DI  [lo, hi] in binary64: every operation is done in round-to-nearest and
//       its result widened to the next double outward (down/up below).  IEEE
//       754 round-to-nearest is within half a gap of the exact result, so
//       the neighbouring doubles enclose it, also near zero (subnormals) and
//       at overflow (the neighbour of +-inf is -+DBL_MAX).  exp and log go
//       through MPFR at 53 bits with directed rounding (correctly rounded),
//       never through libm;
//   MI  [lo, hi] in MPFR at the precision `get_mi_bits()` (thread-local), every
//       end rounded outward (MPFR_RNDD / MPFR_RNDU).
//
// The same generic code (templates over DI and MI) computes every row; the
// cheap DI tier decides most rows, MI at rising precision the rest.  A NaN
// anywhere makes a comparison undecided, never verified.
#pragma once

#include <boost/multiprecision/gmp.hpp>
#include <mpfr.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace recheck {

using Q = boost::multiprecision::mpq_rational;
using Z = boost::multiprecision::mpz_int;

enum class Verdict { verified, refuted, undecided };
const char* name(Verdict v);
// refuted if any is refuted, else undecided if any is, else verified.
Verdict combine(Verdict a, Verdict b);

// An end of an interval as an exact rational, or an infinity (or NaN).
struct End {
    int inf = 0;       // -1: -inf, +1: +inf, 0: finite (v)
    bool nan = false;
    Q v;
};
bool end_le(const End& e, const Q& t);  // e <= t certainly (false for NaN)
bool end_lt(const End& e, const Q& t);
bool end_gt(const End& e, const Q& t);
bool end_ge(const End& e, const Q& t);
// The larger end (a NaN wins: it decides nothing).
End end_max(const End& a, const End& b);

// ---- binary64 intervals ------------------------------------------------------

inline double up(double x) {
    if (!(x < std::numeric_limits<double>::infinity())) return x;  // +inf or NaN
    if (x == 0) return 0x1p-1074;
    auto b = std::bit_cast<std::uint64_t>(x);
    b = x > 0 ? b + 1 : b - 1;
    return std::bit_cast<double>(b);
}
inline double down(double x) { return -up(-x); }

struct DI {
    double lo = 0, hi = 0;
    DI() = default;
    DI(double l, double h) : lo(l), hi(h) {}
    static DI point(double x) { return {x, x}; }
};

inline DI operator+(const DI& a, const DI& b) { return {down(a.lo + b.lo), up(a.hi + b.hi)}; }
inline DI operator-(const DI& a, const DI& b) { return {down(a.lo - b.hi), up(a.hi - b.lo)}; }
inline DI operator-(const DI& a) { return {-a.hi, -a.lo}; }
inline DI operator*(const DI& a, const DI& b) {
    // Sign cases first (two products); the general case takes all four.
    double l = NAN, h = NAN;
    if (a.lo >= 0 && b.lo >= 0) l = a.lo * b.lo, h = a.hi * b.hi;
    else if (a.lo >= 0 && b.hi <= 0) l = a.hi * b.lo, h = a.lo * b.hi;
    else if (a.hi <= 0 && b.lo >= 0) l = a.lo * b.hi, h = a.hi * b.lo;
    else if (a.hi <= 0 && b.hi <= 0) l = a.hi * b.hi, h = a.lo * b.lo;
    if (!std::isnan(l) && !std::isnan(h)) return {down(l), up(h)};
    const double p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
    l = h = p[0];
    for (double x : p) {
        if (std::isnan(x)) return {NAN, NAN};
        l = std::min(l, x);
        h = std::max(h, x);
    }
    return {down(l), up(h)};
}
inline DI operator/(const DI& a, const DI& b) {
    if (!(b.lo > 0)) return {NAN, NAN};  // only positive divisors occur
    const double p[4] = {a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi};
    double l = p[0], h = p[0];
    for (double x : p) {
        if (std::isnan(x)) return {NAN, NAN};
        l = std::min(l, x);
        h = std::max(h, x);
    }
    return {down(l), up(h)};
}
inline DI& operator+=(DI& a, const DI& b) { return a = a + b; }
inline DI iabs(const DI& a) {
    if (a.lo >= 0) return a;
    if (a.hi <= 0) return {-a.hi, -a.lo};
    if (std::isnan(a.lo) || std::isnan(a.hi)) return {NAN, NAN};
    return {0.0, std::max(-a.lo, a.hi)};
}
inline DI imax(const DI& a, const DI& b) {
    if (std::isnan(a.lo) || std::isnan(b.lo) || std::isnan(a.hi) || std::isnan(b.hi)) return {NAN, NAN};
    return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
}
inline DI imin(const DI& a, const DI& b) {
    if (std::isnan(a.lo) || std::isnan(b.lo) || std::isnan(a.hi) || std::isnan(b.hi)) return {NAN, NAN};
    return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
}
DI iexp(const DI& a);
DI ilog(const DI& a);   // NaN unless a.lo > 0
DI isqrt(const DI& a);  // NaN unless a.lo >= 0
DI rsqrt_di(const Q& q);
DI to_di(const Q& q);
inline double mid(const DI& a) { return 0.5 * a.lo + 0.5 * a.hi; }
End lo_end(const DI& a);
End hi_end(const DI& a);

// ---- MPFR intervals ----------------------------------------------------------

// The working precision of MI values created from here on (bits), per
// thread.  (Functions, not an extern thread_local: UBSan reports a store
// through a null pointer for the latter across translation units, GCC 12.)
mpfr_prec_t get_mi_bits();
void set_mi_bits(mpfr_prec_t bits);

class MI {
public:
    MI();
    MI(const MI& o);
    MI(MI&& o) noexcept;
    MI& operator=(const MI& o);
    MI& operator=(MI&& o) noexcept;
    ~MI();
    mpfr_t lo, hi;
};

MI operator+(const MI& a, const MI& b);
MI operator-(const MI& a, const MI& b);
MI operator-(const MI& a);
MI operator*(const MI& a, const MI& b);
MI operator/(const MI& a, const MI& b);
inline MI& operator+=(MI& a, const MI& b) { return a = a + b; }
MI iabs(const MI& a);
MI imax(const MI& a, const MI& b);
MI imin(const MI& a, const MI& b);
MI iexp(const MI& a);
MI ilog(const MI& a);
MI isqrt(const MI& a);
MI rsqrt_mi(const Q& q);
MI to_mi(const Q& q);
MI to_mi(double x);
double mid(const MI& a);
End lo_end(const MI& a);
End hi_end(const MI& a);

// ---- generic -------------------------------------------------------------------

template <class I> I from_q(const Q& q);
template <> inline DI from_q<DI>(const Q& q) { return to_di(q); }
template <> inline MI from_q<MI>(const Q& q) { return to_mi(q); }
template <class I> I from_double(double x);
template <> inline DI from_double<DI>(double x) { return DI::point(x); }
template <> inline MI from_double<MI>(double x) { return to_mi(x); }
template <class I> I rsqrt_of(const Q& q);
template <> inline DI rsqrt_of<DI>(const Q& q) { return rsqrt_di(q); }
template <> inline MI rsqrt_of<MI>(const Q& q) { return rsqrt_mi(q); }

// The degenerate intervals at each end, and [a.lo, b.hi].
inline DI lo_pt(const DI& a) { return DI::point(a.lo); }
inline DI hi_pt(const DI& a) { return DI::point(a.hi); }
inline DI hull(const DI& a, const DI& b) { return {a.lo, b.hi}; }
MI lo_pt(const MI& a);
MI hi_pt(const MI& a);
MI hull(const MI& a, const MI& b);

// tanh is increasing: 1 - 2 / (exp(2x) + 1) at each end, then the hull.
template <class I> I itanh(const I& x) {
    const I one = from_double<I>(1), two = from_double<I>(2);
    const I l = one - two / (iexp(two * lo_pt(x)) + one);
    const I h = one - two / (iexp(two * hi_pt(x)) + one);
    return hull(l, h);
}

// Decisions of an enclosure against an exact threshold.
template <class I> Verdict le(const I& x, const Q& t) {
    const End h = hi_end(x), l = lo_end(x);
    if (end_le(h, t)) return Verdict::verified;
    if (end_gt(l, t)) return Verdict::refuted;
    return Verdict::undecided;
}
template <class I> Verdict lt(const I& x, const Q& t) {
    const End h = hi_end(x), l = lo_end(x);
    if (end_lt(h, t)) return Verdict::verified;
    if (end_ge(l, t)) return Verdict::refuted;
    return Verdict::undecided;
}
template <class I> Verdict gt(const I& x, const Q& t) {
    const End h = hi_end(x), l = lo_end(x);
    if (end_gt(l, t)) return Verdict::verified;
    if (end_le(h, t)) return Verdict::refuted;
    return Verdict::undecided;
}
template <class I> Verdict ge(const I& x, const Q& t) {
    const End h = hi_end(x), l = lo_end(x);
    if (end_ge(l, t)) return Verdict::verified;
    if (end_lt(h, t)) return Verdict::refuted;
    return Verdict::undecided;
}
template <class I> Verdict within(const I& x, const Q& a, const Q& b) {
    const End h = hi_end(x), l = lo_end(x);
    if (end_ge(l, a) && end_le(h, b)) return Verdict::verified;
    if (end_lt(h, a) || end_gt(l, b)) return Verdict::refuted;
    return Verdict::undecided;
}

// An exact enclosure [lo, hi] kept for comparisons with the witness.
struct Encl {
    End lo, hi;
};
template <class I> Encl encl(const I& x) { return {lo_end(x), hi_end(x)}; }

}  // namespace recheck
