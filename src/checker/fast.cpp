// The verified double-precision tier (see rankcert/fast.hpp and
// docs/theory.md, "The fast tier", which derives every constant here).
#include "rankcert/fast.hpp"

#include "rankcert/enclose.hpp"

#include <bit>
#include <cfenv>
#include <cfloat>
#include <cmath>
#include <limits>

#if defined(__FAST_MATH__)
#error "the fast tier's bounds assume IEEE semantics: do not build rankcert with -ffast-math"
#endif
static_assert(std::numeric_limits<double>::is_iec559, "binary64 doubles required");
static_assert(FLT_EVAL_METHOD == 0, "double expressions must be evaluated in double");

namespace rankcert::fast {

namespace {
constexpr double ln2_hi = exp_constants::ln2_hi, ln2_lo = exp_constants::ln2_lo, inv_ln2 = exp_constants::inv_ln2;
constexpr const double* coef = exp_constants::coef;
}  // namespace

// 1/i! rounded to nearest, i = 0..13.
const double exp_constants::coef[14] = {0x1p+0,
                             0x1p+0,
                             0x1p-1,
                             0x1.5555555555555p-3,
                             0x1.5555555555555p-5,
                             0x1.1111111111111p-7,
                             0x1.6c16c16c16c17p-10,
                             0x1.a01a01a01a01ap-13,
                             0x1.a01a01a01a01ap-16,
                             0x1.71de3a556c734p-19,
                             0x1.27e4fb7789f5cp-22,
                             0x1.ae64567f544e4p-26,
                             0x1.1eed8eff8d898p-29,
                             0x1.6124613a86d09p-33};

namespace {

constexpr double lo_range = 0x1p-250, hi_range = 0x1p+250;

}  // namespace

bool environment_ok() { return std::fegetround() == FE_TONEAREST; }

bool to_double(const Rat& q, double& out) {
    out = 0;
    if (q.is_zero()) return true;
    // Fast path, exact: a dyadic p / 2^e with |p| < 2^53 (every float read from
    // .npy or safetensors).
    const fmpz* num = fmpq_numref(q.get());
    const fmpz* den = fmpq_denref(q.get());
    if (fmpz_bits(num) <= 53 && fmpz_val2(den) + 1 == fmpz_bits(den) && fmpz_bits(den) <= 250) {
        out = std::ldexp(fmpz_get_d(num), -static_cast<int>(fmpz_val2(den)));  // both steps exact
        return std::fabs(out) >= lo_range && std::fabs(out) <= hi_range;
    }
    arf_t a;
    arf_init(a);
    arf_set_fmpq(a, q.get(), 53, ARF_RND_NEAR);
    const bool ok = arf_cmpabs_2exp_si(a, 250) < 0 && arf_cmpabs_2exp_si(a, -250) > 0;
    if (ok) out = arf_get_d(a, ARF_RND_NEAR);  // exact: 53 bits, normal range
    arf_clear(a);
    return ok && std::fabs(out) >= lo_range && std::fabs(out) <= hi_range;
}

double exp_neg(double x) {
    if (!(x >= -700.0 && x <= 0.5)) return std::numeric_limits<double>::quiet_NaN();
    const double k = std::nearbyint(x * inv_ln2);  // |k| <= 1010
    const double r = (x - k * ln2_hi) - k * ln2_lo;
    if (!(std::fabs(r) <= 0.347)) return std::numeric_limits<double>::quiet_NaN();
    double p = coef[13];
    for (int i = 12; i >= 0; --i) p = p * r + coef[i];
    // times 2^k, built from its bits (-1010 <= k <= 1: a normal power of two);
    // exact, since the product is a normal number.
    const auto bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(k) + 1023) << 52;
    return p * std::bit_cast<double>(bits);
}

double up(double a, double rad) { return (a + rad) * (1 + 0x1p-50) + tiny; }

double down(double a, double rad) {
    const double d = a - rad;
    return d - std::fabs(d) * 0x1p-50 - tiny;
}

Rat exact(double x) {
    arf_t a;
    arf_init(a);
    arf_set_d(a, x);
    Rat q;
    arf_get_fmpq(q.get(), a);
    arf_clear(a);
    return q;
}

namespace {

// Rows of m in doubles; norms rounded up.  False when an entry is out of range.
bool enter(const Matrix& m, std::vector<double>& v, std::vector<double>& norm) {
    v.resize(m.size());
    norm.assign(m.rows, 0);
    for (std::size_t s = 0; s < m.size(); ++s)
        if (!to_double(m.v[s], v[s])) return false;
    for (std::size_t i = 0; i < m.rows; ++i) {
        double s = 0;
        for (std::size_t t = 0; t < m.cols; ++t) s += v[i * m.cols + t] * v[i * m.cols + t];
        norm[i] = std::sqrt(s) * inflate;  // relative error of sum and sqrt <= gamma_{cols+2}
    }
    return true;
}

}  // namespace

std::vector<double> transpose(const std::vector<double>& m, std::size_t rows, std::size_t cols) {
    std::vector<double> t(m.size());
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) t[j * rows + i] = m[i * cols + j];
    return t;
}

// Compiled for AVX2 and for the baseline, chosen at run time; the
// arithmetic is the same IEEE operations in the same order either way (the
// build never contracts to FMA), only four lanes wide.
__attribute__((target_clones("avx2", "default")))
void axpy_rows(const double* x, const double* mt, std::size_t len, std::size_t cols, double* out) {
    // out[j] = sum_t x[t] mt[t][j], each a plain left-to-right sum over t
    // (gamma_len applies); the loop over j vectorises without reassociation.
    for (std::size_t j = 0; j < cols; ++j) out[j] = 0;
    for (std::size_t t = 0; t < len; ++t) {
        const double xt = x[t];
        const double* row = mt + t * cols;
        for (std::size_t j = 0; j < cols; ++j) out[j] += xt * row[j];
    }
}

Dense::Dense(const Matrix& m) : rows(m.rows), cols(m.cols) { ok = m.cols <= max_len && enter(m, v, norm); }

SoftmaxRows::SoftmaxRows(const Instance& I) : I_(I) {
    if (!environment_ok() || I.N > max_len || I.n > max_len) return;
    if (I.kind == InstanceKind::logits) {
        s_.resize(I.n * I.N);
        for (std::size_t s = 0; s < s_.size(); ++s)
            if (!I.logits.is_neg_inf(s / I.N, s % I.N) && !to_double(I.logits.v[s], s_[s])) return;
        ok_ = true;
        return;
    }
    if (I.kind != InstanceKind::qk) return;
    d_ = I.d();
    if (d_ > max_len || !enter(I.q, q_, qn_) || !enter(I.k, k_, kn_)) return;
    k_ = transpose(k_, I.N, d_);  // d x N: the logit loop runs along keys
    bias_.assign(I.N, 0);
    for (std::size_t j = 0; j < I.key_bias.size(); ++j)
        if (!to_double(I.key_bias[j], bias_[j])) return;
    // The coefficient temperature * scale: an Arb enclosure, its midpoint as
    // a double, and |c - c~| bounded by the ball's radius plus the distance
    // from the midpoint.
    Ball c;
    enclose_logit_coefficient(I, 128, c.get());
    c_ = arf_get_d(arb_midref(c.get()), ARF_RND_NEAR);
    if (!(std::fabs(c_) >= lo_range && std::fabs(c_) <= hi_range)) return;
    Ball dist;
    arb_set_d(dist.get(), c_);
    arb_sub(dist.get(), dist.get(), c.get(), 128);
    arb_abs(dist.get(), dist.get());
    arf_t ub;
    arf_init(ub);
    arb_get_ubound_arf(ub, dist.get(), 53);
    c_err_ = arf_get_d(ub, ARF_RND_UP);
    arf_clear(ub);
    ok_ = std::isfinite(c_err_);
}

bool SoftmaxRows::row(std::size_t i, double* a, double& err, Scale* scale) const {
    if (!ok_) return false;
    const std::size_t N = I_.N;
    // allowed(i, j), inlined for the common masks.
    const bool all = I_.kind == InstanceKind::qk && I_.mask == MaskKind::none;
    const bool causal = I_.kind == InstanceKind::qk && I_.mask == MaskKind::causal;
    const std::size_t last = i + (N - I_.n);  // causal: keys j <= last
    auto allowed = [&](std::size_t j) { return all || (causal ? j <= last : I_.allowed(i, j)); };
    thread_local std::vector<double> s, E;
    s.resize(N);
    E.resize(N);
    double m = -std::numeric_limits<double>::infinity();
    // Logits s~_j and bounds E_j >= |s_j - s~_j|.
    if (I_.kind == InstanceKind::logits) {
        const double* row = s_.data() + i * N;
        for (std::size_t j = 0; j < N; ++j) {
            if (!allowed(j)) continue;
            s[j] = row[j];
            E[j] = in_rel * std::fabs(row[j]);
            m = std::max(m, s[j]);
        }
    } else {
        // |q.k - fl(q~.k~)| <= (gamma_d + 2.01 in_rel) |q~| |k~| <= G qn_i kn_j (Cauchy-Schwarz).
        const double G = gamma(d_) + 2.01 * in_rel, cabs = std::fabs(c_) + c_err_;
        const double gq = cabs * G * qn_[i];
        axpy_rows(q_.data() + i * d_, k_.data(), d_, N, s.data());
        for (std::size_t j = 0; j < N; ++j) {
            const double p = s[j], cp = c_ * p, sv = cp + bias_[j];
            s[j] = sv;
            E[j] = (gq * kn_[j] + c_err_ * std::fabs(p) + unit * std::fabs(cp) + unit * std::fabs(sv) +
                    in_rel * std::fabs(bias_[j])) * inflate + tiny;
        }
        for (std::size_t j = 0; j < N; ++j)
            if (allowed(j)) m = std::max(m, s[j]);
    }
    // e_j = exp(s_j - m) (the row softmax is invariant under the exact shift
    // m), enclosed as e~_j +- de_j.
    double Z = 0, sde = 0;
    for (std::size_t j = 0; j < N; ++j) {
        if (!allowed(j)) {
            a[j] = 0;
            continue;
        }
        const double x = s[j] - m;                  // <= 0
        const double ej = (E[j] + unit * std::fabs(x)) * inflate + tiny;  // >= |(s_j - m) - x|
        if (!(ej <= 0.5)) return false;
        double e, de;
        if (x < -700) {
            e = 0;
            de = 0x1p-1000;  // e_j <= exp(-699.5) < 2^-1009
        } else {
            e = exp_neg(x);
            if (!(e == e)) return false;
            de = e * 3 * (exp_rel + ej);
        }
        a[j] = e;
        Z += e;
        sde += de;
    }
    const double gN = gamma(N + 1);
    const double Zerr = (sde * (1 + gN) + gN * Z * (1 + gN)) * inflate + tiny;  // >= |Z_exact - Z~|
    if (!(Zerr <= 0.25 * Z)) return false;
    if (scale) *scale = {m, Z, Zerr};
    const double inv = 1 / Z;
    for (std::size_t j = 0; j < N; ++j) a[j] *= inv;
    // sum_j |A_j - a_j| <= (sum de_j + Zerr sigma) / (Z~ - Zerr) + 2.01 u sigma,
    // sigma = sum_j e~_j / Z~ <= 1 + 2 gamma_N.
    const double sigma = 1 + 2 * gN;
    err = ((sde * (1 + gN) + Zerr * sigma) / (Z - Zerr) + 2.01 * unit * sigma) * inflate + tiny;
    return std::isfinite(err);
}

}  // namespace rankcert::fast
