// Exact rationals and Arb balls: the only number types of the trusted checker.
//
// Every quantity the checker decides on is either an exact rational (FLINT
// fmpq) or an Arb ball [m - r, m + r] that is guaranteed to contain the true
// real number.  Decisions compare a ball with an exact rational threshold
// exactly (the ball's endpoints are dyadic, so the comparison is done in
// rational arithmetic, never in floating point).  A decision is `verified`
// only when the inequality holds for every point of the ball.
#pragma once

#include <flint/fmpq.h>
#include <flint/fmpz.h>
#include <arb.h>

#include <string>
#include <utility>

namespace rankcert {

// ---- exact rationals -------------------------------------------------------
class Rat {
public:
    Rat() { fmpq_init(v_); }
    explicit Rat(long n) { fmpq_init(v_); fmpq_set_si(v_, n, 1); }
    Rat(long p, unsigned long q) { fmpq_init(v_); fmpq_set_si(v_, p, q); }
    Rat(const Rat& o) { fmpq_init(v_); fmpq_set(v_, o.v_); }
    Rat(Rat&& o) noexcept { fmpq_init(v_); fmpq_swap(v_, o.v_); }
    Rat& operator=(const Rat& o) { fmpq_set(v_, o.v_); return *this; }
    Rat& operator=(Rat&& o) noexcept { fmpq_swap(v_, o.v_); return *this; }
    ~Rat() { fmpq_clear(v_); }

    fmpq* get() { return v_; }
    const fmpq* get() const { return v_; }

    int sign() const { return fmpq_sgn(v_); }
    bool is_zero() const { return fmpq_is_zero(v_); }
    // Canonical text: "p" or "p/q".
    std::string str() const;

    friend bool operator==(const Rat& a, const Rat& b) { return fmpq_equal(a.v_, b.v_); }
    friend int cmp(const Rat& a, const Rat& b) { return fmpq_cmp(a.v_, b.v_); }
    friend bool operator<(const Rat& a, const Rat& b) { return fmpq_cmp(a.v_, b.v_) < 0; }
    friend bool operator<=(const Rat& a, const Rat& b) { return fmpq_cmp(a.v_, b.v_) <= 0; }
    friend bool operator>(const Rat& a, const Rat& b) { return fmpq_cmp(a.v_, b.v_) > 0; }
    friend bool operator>=(const Rat& a, const Rat& b) { return fmpq_cmp(a.v_, b.v_) >= 0; }
    friend Rat operator+(const Rat& a, const Rat& b) { Rat r; fmpq_add(r.v_, a.v_, b.v_); return r; }
    friend Rat operator-(const Rat& a, const Rat& b) { Rat r; fmpq_sub(r.v_, a.v_, b.v_); return r; }
    friend Rat operator*(const Rat& a, const Rat& b) { Rat r; fmpq_mul(r.v_, a.v_, b.v_); return r; }
    friend Rat operator/(const Rat& a, const Rat& b) { Rat r; fmpq_div(r.v_, a.v_, b.v_); return r; }
    Rat operator-() const { Rat r; fmpq_neg(r.v_, v_); return r; }
    Rat abs() const { Rat r; fmpq_abs(r.v_, v_); return r; }

private:
    fmpq_t v_;
};

// ---- Arb balls --------------------------------------------------------------
class Ball {
public:
    Ball() { arb_init(v_); }
    Ball(const Ball& o) { arb_init(v_); arb_set(v_, o.v_); }
    Ball(Ball&& o) noexcept { arb_init(v_); arb_swap(v_, o.v_); }
    Ball& operator=(const Ball& o) { arb_set(v_, o.v_); return *this; }
    Ball& operator=(Ball&& o) noexcept { arb_swap(v_, o.v_); return *this; }
    ~Ball() { arb_clear(v_); }
    arb_ptr get() { return v_; }
    arb_srcptr get() const { return v_; }
private:
    arb_t v_;
};

// A contiguous vector of balls (Arb's own vector layout, so arb_dot applies).
class BallVec {
public:
    BallVec() = default;
    explicit BallVec(std::size_t n) : n_(n), p_(n ? _arb_vec_init(static_cast<slong>(n)) : nullptr) {}
    BallVec(const BallVec&) = delete;
    BallVec& operator=(const BallVec&) = delete;
    BallVec(BallVec&& o) noexcept : n_(o.n_), p_(o.p_) { o.n_ = 0; o.p_ = nullptr; }
    BallVec& operator=(BallVec&& o) noexcept { std::swap(n_, o.n_); std::swap(p_, o.p_); return *this; }
    ~BallVec() { if (p_) _arb_vec_clear(p_, static_cast<slong>(n_)); }
    std::size_t size() const { return n_; }
    arb_ptr data() { return p_; }
    arb_srcptr data() const { return p_; }
    arb_ptr operator[](std::size_t i) { return p_ + i; }
    arb_srcptr operator[](std::size_t i) const { return p_ + i; }
private:
    std::size_t n_ = 0;
    arb_ptr p_ = nullptr;
};

// ---- decisions ----------------------------------------------------------------
enum class Verdict { verified, refuted, undecided };
const char* to_string(Verdict v);

// Is x <= t for every point of the ball x?  verified / refuted (x > t for every
// point) / undecided.  Exact: the ball's dyadic endpoints are compared with t
// in rational arithmetic.
Verdict decide_le(arb_srcptr x, const Rat& t);
// Is x < t for every point of x?  refuted when x >= t for every point.
Verdict decide_lt(arb_srcptr x, const Rat& t);
// Is x > t for every point of x?  refuted when x <= t for every point.
Verdict decide_gt(arb_srcptr x, const Rat& t);
// Is x >= t for every point of x?  refuted when x < t for every point.
Verdict decide_ge(arb_srcptr x, const Rat& t);
// Is lo <= x <= hi for every point of x?  refuted when every point lies
// outside [lo, hi] on one side.
Verdict decide_in(arb_srcptr x, const Rat& lo, const Rat& hi);

// Exact dyadic endpoints of a ball (lower, upper).  Infinite or NaN balls
// (which only arise on overflow) give an `unbounded` flag.
struct Endpoints {
    Rat lo, hi;
    bool bounded = true;
};
Endpoints endpoints(arb_srcptr x);

// Set a ball to contain the rational q at precision prec (exact when q is a
// dyadic number with at most prec bits).
inline void ball_set(arb_ptr b, const Rat& q, slong prec) { arb_set_fmpq(b, q.get(), prec); }

// Exact comparison of a dyadic (arf) number with a rational.
int arf_cmp_rat(const arf_t x, const Rat& t);

}  // namespace rankcert
