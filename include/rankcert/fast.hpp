// The verified double-precision tier (docs/theory.md, "The fast tier").
//
// Rows of a softmax instance are computed in IEEE binary64 (round to nearest,
// no fused or reassociated operations: the build uses -std=c++20, which turns
// contraction off, and never -ffast-math) together with a rigorous a priori
// bound on the l1 distance between the computed row and the exact one.
// Every bound below is a theorem about round-to-nearest arithmetic (Higham,
// "Accuracy and Stability of Numerical Algorithms", ch. 3: gamma_k = k u /
// (1 - k u) for a k-term sum or dot product) plus a generous inflation that
// covers the rounding of the bound's own computation.  A caller decides a
// row from the bounds only when they settle it; everything else goes to the
// Arb ladder.  The tier declines (returns false) whenever a premise fails:
// a value outside the normal range, a rounding mode other than to-nearest,
// a logit error too large for the exp bound, n or N above 2^20.
#pragma once

#include "rankcert/bundle.hpp"

#include <cstdint>
#include <vector>

namespace rankcert::fast {

inline constexpr double unit = 0x1p-53;  // u, the unit roundoff of binary64
// |x - x~| <= in_rel |x~| for an exact rational x entered as x~ (nearest).
inline constexpr double in_rel = 0x1p-52;
// |exp_neg(x) - exp(x)| <= exp_rel exp(x) for x in [-700, 1/2]
// (docs/theory.md, "The fast tier"; tests/test_fast.cpp reruns the bound in Arb).
inline constexpr double exp_rel = 0x1p-45;
// Inflation of a bound computed in floating point (covers gamma_m, m <= 2^20).
inline constexpr double inflate = 1 + 0x1p-30;
// Absolute floor added to every bound (covers underflow in the bound).
inline constexpr double tiny = 0x1p-1000;
inline constexpr std::size_t max_len = std::size_t{1} << 20;

// gamma_k = k u / (1 - k u), rounded up generously (k <= 2^20).
inline double gamma(std::size_t k) { return static_cast<double>(k + 1) * unit * (1 + 0x1p-19); }

// The nearest double to q.  False when q != 0 and |x~| is outside
// [2^-250, 2^250] (then in_rel may fail, or later products may under- or overflow).
bool to_double(const Rat& q, double& out);

// exp(x) for x in [-700, 1/2], with relative error at most exp_rel; NaN
// outside (callers decline).  Range reduction x = k ln2 + r with an exact
// split of ln2, Taylor polynomial of degree 13 on |r| <= 0.347.
double exp_neg(double x);

// The constants of exp_neg (tests/test_fast.cpp checks them in Arb).
struct exp_constants {
    // ln2 = ln2_hi + ln2_lo + d with |d| < 1.2e-26; ln2_hi has 32 significant
    // bits, so k * ln2_hi is exact for |k| < 2^21.
    static constexpr double ln2_hi = 0x1.62e42fee00000p-1;
    static constexpr double ln2_lo = 0x1.a39ef35793c76p-33;
    static constexpr double inv_ln2 = 0x1.71547652b82fep+0;  // any value works; nearest keeps |r| small
    static constexpr double r_max = 0.347;                    // |r| beyond this: NaN (never for x in range)
    static constexpr int degree = 13;
    static const double coef[14];  // 1/i! rounded to nearest
};

// Is the floating-point environment what the bounds assume?
bool environment_ok();

// Upper and lower ends of a + rad and a - rad for a >= 0, rad >= 0 computed
// in floating point: a + rad <= up(a, rad) and down(a, rad) <= a - rad.
double up(double a, double rad);
double down(double a, double rad);

// The exact rational value of a double.
Rat exact(double x);

// Row softmax of a qk or logits instance in binary64 with a bound on
// sum_j |A_ij - a_j|.
class SoftmaxRows {
public:
    explicit SoftmaxRows(const Instance& inst);
    bool ok() const { return ok_; }  // false: the tier declines this instance
    // a[0..N): the computed row (masked entries exactly 0); err >= sum_j |A_ij - a_j|.
    // With scale set: the shift m (a double) and Z~ with |Z - Z~| <= Zerr,
    // Z = sum_l exp(S_il - m) over allowed l (exact logits S).
    struct Scale {
        double m = 0, Z = 0, Zerr = 0;
    };
    bool row(std::size_t i, double* a, double& err, Scale* scale = nullptr) const;
    // |<q_i, k_j> - fl(q~_i . k~_j)| <= dot_err(i, j) (qk instances).
    double dot_err(std::size_t i, std::size_t j) const {
        return (gamma(d_) + 2.01 * in_rel) * qn_[i] * kn_[j] * inflate;
    }

private:
    const Instance& I_;
    bool ok_ = false;
    std::size_t d_ = 0;
    std::vector<double> q_, k_, qn_, kn_, bias_, s_;
    double c_ = 0, c_err_ = 0;
};

// m (rows x cols, row-major) transposed.
std::vector<double> transpose(const std::vector<double>& m, std::size_t rows, std::size_t cols);
// out[j] = sum_{t < len} x[t] mt[t * cols + j] for j < cols, each sum in the
// order t = 0, 1, ... (so |out_j - exact| <= gamma_len sum_t |x_t mt_tj|).
void axpy_rows(const double* x, const double* mt, std::size_t len, std::size_t cols, double* out);

// A dense exact matrix in doubles with the Euclidean norm of each row
// (rounded up); false from ok() when some entry is out of range.
struct Dense {
    std::size_t rows = 0, cols = 0;
    std::vector<double> v, norm;  // v row-major; norm[i] >= |row i|_2
    bool ok = false;
    std::vector<double> transposed() const { return transpose(v, rows, cols); }
    explicit Dense(const Matrix& m);
};

}  // namespace rankcert::fast
