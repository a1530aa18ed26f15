// zonal: B_ij = exp(b_j + c) g(<q_i, k_j>) / Z_i with g = sum_{k<=p} c_k T_k
// (docs/theory.md, "Upper bounds").
//
// Checked: for every row i,
//   r_i = sum_j e^{b_j} |e^{sigma t_ij - c} - g(t_ij)| / sum_l e^{b_l} e^{sigma t_il - c} <= eps,
// t_ij = <q_i, k_j>, sigma = temperature * scale.  B = D_1 G D_2 with
// G_ij = g(<q_i, k_j>), whose rows are degree-p polynomials evaluated at the
// keys, so rank B <= C(p+d, d); on the unit sphere (|k_j|^2 = 1 exactly) the
// polynomials of degree <= p agree with homogeneous ones of degree p and
// p - 1: rank B <= C(p+d-1, d-1) + C(p+d-2, d-1), and the second term drops
// when g has only the parity of p.  The same holds with the queries on the
// sphere (the column space of G).  Every entry is enclosed in ball
// arithmetic on the precision ladder (Clenshaw's recurrence for g) after
// the fast tier below; there is no exact path.
//
// Fast tier: a~ from fast::SoftmaxRows (sum_j |A_ij - a_j| <= errA, its shift
// m and Z~ with |Z - Z~| <= Zerr, Z = sum_l e^{S_il - m}), so that
// B_ij = e^{b_j} g(t_ij) F / Z with F = e^{c - m} (enclosed in Arb once per
// row).  t~ = fl(q~ . k~) with |t - t~| <= tau (SoftmaxRows::dot_err); G~ =
// Clenshaw in binary64 at t~ with a running bound Eg >= |g(t) - G~|:
//   b_k = c_k + 2 t b_{k+1} - b_{k+2}:
//   E_k <= in_rel |c~_k| + 2 (|t~| + tau) E_{k+1} + 2 tau |b~_{k+1}| + E_{k+2}
//          + u (|x1| + |x2| + |b~_k|)   (x1 = fl(2 t~ b~_{k+1}), x2 = fl(x1 - b~_{k+2})),
// and the same with factor 1 for g = c_0 + t b_1 - b_2 (each step inflated,
// plus 2^-1000 for underflow).  With b~_j = fl(fl(G~ eb~_j) s~), s~ = fl(F~ / Z~),
//   |B_ij - b~_j| <= K eb~_j Eg_j + (rho (1 + 4u) + 3.01 u) |b~_j|,
//   K = (1 + eta_b)(1 + eta_F) F~ / (Z~ - Zerr),
//   rho = (eta_b + eta_F + eta_b eta_F + z) / (1 - z), z = Zerr / Z~,
// and the row error is R~ = fl(sum_j |a_j - b~_j|) +- (gamma_{N+2} R~ + errA + errB).
#include "zonal.hpp"

#include "units.hpp"

#include "rankcert/enclose.hpp"

#include <flint/fmpz.h>

#include <cmath>

namespace rankcert::cert {

namespace {

// The most coefficients a certificate may give (degree 4096).
constexpr std::size_t max_coefficients = 4097;

// C(a, b) as an fmpz.
Rat binomial(std::uint64_t a, std::uint64_t b) {
    Rat r;
    fmpz_t z;
    fmpz_init(z);
    fmpz_bin_uiui(z, a, b);
    fmpq_set_fmpz(r.get(), z);
    fmpz_clear(z);
    return r;
}

// The rank the data prove (docs/theory.md): the polynomial-space bound, and
// never more than min(n, N).
std::uint64_t zonal_rank(const ZonalCert& z, std::size_t d, std::size_t n, std::size_t N) {
    if (fmpq_is_zero(z.cheb[z.degree].get())) return 0;  // g = 0, B = 0
    const std::uint64_t p = z.degree;
    Rat bound;
    if (!z.sphere) {
        bound = binomial(p + d, d);
    } else {
        bound = binomial(p + d - 1, d - 1);
        if (p >= 1 && !z.one_parity) bound = bound + binomial(p + d - 2, d - 1);
    }
    const std::uint64_t cap = std::min(n, N);
    if (bound > Rat(static_cast<slong>(cap))) return cap;
    return static_cast<std::uint64_t>(fmpz_get_ui(fmpq_numref(bound.get())));
}

// The nearest double to the ball's midpoint and a bound on the relative
// distance from every point of the ball; false outside [2^-900, 2^900].
bool ball_to_double(arb_srcptr b, double& out, double& rel) {
    out = arf_get_d(arb_midref(b), ARF_RND_NEAR);
    if (!(std::fabs(out) >= 0x1p-900 && std::fabs(out) <= 0x1p900)) return false;
    Ball dist;
    arb_set_d(dist.get(), out);
    arb_sub(dist.get(), dist.get(), b, 128);
    arb_abs(dist.get(), dist.get());
    arf_t ub;
    arf_init(ub);
    arb_get_ubound_arf(ub, dist.get(), 53);
    const double d = arf_get_d(ub, ARF_RND_UP);
    arf_clear(ub);
    rel = d / std::fabs(out) * fast::inflate;
    return std::isfinite(rel) && rel <= 0x1p-40;
}

}  // namespace

void ZonalRows::prepare(slong prec) {
    const std::size_t d = I_.d();
    q_ = BallVec(I_.n * d);
    k_ = BallVec(I_.N * d);
    for (std::size_t i = 0; i < I_.n; ++i)
        for (std::size_t a = 0; a < d; ++a) arb_set_fmpq(q_[i * d + a], I_.q(i, a).get(), prec);
    for (std::size_t j = 0; j < I_.N; ++j)
        for (std::size_t a = 0; a < d; ++a) arb_set_fmpq(k_[j * d + a], I_.k(j, a).get(), prec);
    eb_ = BallVec(I_.N);  // e^{b_j}
    for (std::size_t j = 0; j < I_.N; ++j) {
        if (I_.key_bias.empty()) {
            arb_one(eb_[j]);
        } else {
            arb_set_fmpq(eb_[j], I_.key_bias[j].get(), prec);
            arb_exp(eb_[j], eb_[j], prec);
        }
    }
    cheb_ = BallVec(z_.degree + 1);
    for (std::size_t k = 0; k <= z_.degree; ++k) arb_set_fmpq(cheb_[k], z_.cheb[k].get(), prec);
    enclose_logit_coefficient(I_, prec, sigma_.get());
    arb_set_fmpq(shift_.get(), z_.shift.get(), prec);
    prec_ = prec;
}

void ZonalRows::eval(std::size_t i, arb_ptr out) const {
    const std::size_t d = I_.d();
    const slong p = static_cast<slong>(z_.degree);
    Ball t, t2, x, g, b1, b2, tmp, num, den;
    for (std::size_t j = 0; j < I_.N; ++j) {
        arb_dot(t.get(), nullptr, 0, q_.data() + i * d, 1, k_.data() + j * d, 1, static_cast<slong>(d), prec_);
        // x = e^{sigma t - c}
        arb_mul(x.get(), sigma_.get(), t.get(), prec_);
        arb_sub(x.get(), x.get(), shift_.get(), prec_);
        arb_exp(x.get(), x.get(), prec_);
        // g(t) by Clenshaw: b_k = c_k + 2t b_{k+1} - b_{k+2}, g = c_0 + t b_1 - b_2.
        arb_mul_2exp_si(t2.get(), t.get(), 1);
        arb_zero(b1.get());
        arb_zero(b2.get());
        for (slong k = p; k >= 1; --k) {
            arb_mul(tmp.get(), t2.get(), b1.get(), prec_);
            arb_sub(tmp.get(), tmp.get(), b2.get(), prec_);
            arb_add(tmp.get(), tmp.get(), cheb_[k], prec_);
            arb_swap(b2.get(), b1.get());
            arb_swap(b1.get(), tmp.get());
        }
        arb_mul(g.get(), t.get(), b1.get(), prec_);
        arb_sub(g.get(), g.get(), b2.get(), prec_);
        arb_add(g.get(), g.get(), cheb_[0], prec_);
        // num += e^{b_j} |x - g|, den += e^{b_j} x
        arb_sub(g.get(), x.get(), g.get(), prec_);
        arb_abs(g.get(), g.get());
        arb_addmul(num.get(), eb_[j], g.get(), prec_);
        arb_addmul(den.get(), eb_[j], x.get(), prec_);
    }
    arb_div(out, num.get(), den.get(), prec_);
}

bool ZonalRows::fast_prepare() {
    soft_ = std::make_unique<fast::SoftmaxRows>(I_);
    if (!soft_->ok()) return false;
    const std::size_t d = I_.d();
    fq_.resize(I_.n * d);
    fk_.resize(I_.N * d);
    for (std::size_t s = 0; s < fq_.size(); ++s)
        if (!fast::to_double(I_.q.v[s], fq_[s])) return false;
    for (std::size_t s = 0; s < fk_.size(); ++s)
        if (!fast::to_double(I_.k.v[s], fk_[s])) return false;
    feb_.assign(I_.N, 1);
    eta_b_ = 0;
    if (!I_.key_bias.empty()) {
        Ball e;
        for (std::size_t j = 0; j < I_.N; ++j) {
            arb_set_fmpq(e.get(), I_.key_bias[j].get(), 128);
            arb_exp(e.get(), e.get(), 128);
            double rel = 0;
            if (!ball_to_double(e.get(), feb_[j], rel)) return false;
            eta_b_ = std::max(eta_b_, rel);
        }
    }
    fc_.resize(z_.degree + 1);
    for (std::size_t k = 0; k <= z_.degree; ++k)
        if (!fast::to_double(z_.cheb[k], fc_[k])) return false;
    return true;
}

bool ZonalRows::fast(std::size_t i, double* lo, double* hi) const {
    using fast::in_rel;
    using fast::inflate;
    using fast::tiny;
    using fast::unit;
    const std::size_t N = I_.N, d = I_.d();
    thread_local std::vector<double> a;
    a.resize(N);
    double errA = 0;
    fast::SoftmaxRows::Scale sc;
    if (!soft_->row(i, a.data(), errA, &sc)) return false;
    // F = e^{c - m}, once per row in Arb.
    double F = 0, eta_F = 0;
    {
        Ball f, m;
        arb_set_fmpq(f.get(), z_.shift.get(), 128);
        arb_set_d(m.get(), sc.m);
        arb_sub(f.get(), f.get(), m.get(), 128);
        arb_exp(f.get(), f.get(), 128);
        if (!ball_to_double(f.get(), F, eta_F)) return false;
    }
    const double z = sc.Zerr / sc.Z * inflate;
    const double rho = (eta_b_ + eta_F + eta_b_ * eta_F + z) / (1 - z) * inflate;
    const double K = (1 + eta_b_) * (1 + eta_F) * F / (sc.Z - sc.Zerr) * inflate;
    const double s = F / sc.Z;
    // A product G eb~ that underflows errs by up to 2^-1075 absolutely; with
    // s below 2^50 the scaled error stays below the 2^-1000 per entry in errB.
    if (!(s < 0x1p50)) return false;
    const double* qi = fq_.data() + i * d;
    const std::size_t p = z_.degree;
    double R = 0, sumEg = 0, sumB = 0;
    for (std::size_t j = 0; j < N; ++j) {
        const double* kj = fk_.data() + j * d;
        double t = 0;
        for (std::size_t u = 0; u < d; ++u) t += qi[u] * kj[u];
        const double tau = soft_->dot_err(i, j), at = std::fabs(t);
        double b1 = 0, b2 = 0, e1 = 0, e2 = 0;
        for (std::size_t k = p; k >= 1; --k) {
            const double x1 = 2 * t * b1, x2 = x1 - b2, b0 = x2 + fc_[k];
            const double e0 = (in_rel * std::fabs(fc_[k]) + 2 * (at + tau) * e1 + 2 * tau * std::fabs(b1) + e2 +
                               unit * (std::fabs(x1) + std::fabs(x2) + std::fabs(b0))) * inflate + tiny;
            b2 = b1;
            b1 = b0;
            e2 = e1;
            e1 = e0;
        }
        const double y1 = t * b1, y2 = y1 - b2, G = y2 + fc_[0];
        const double Eg = (in_rel * std::fabs(fc_[0]) + (at + tau) * e1 + tau * std::fabs(b1) + e2 +
                           unit * (std::fabs(y1) + std::fabs(y2) + std::fabs(G))) * inflate + tiny;
        const double b = G * feb_[j] * s;
        R += std::fabs(a[j] - b);
        sumEg += feb_[j] * Eg;
        sumB += std::fabs(b);
    }
    const double errB = (K * sumEg + (rho * (1 + 4 * unit) + 3.01 * unit) * sumB) * inflate + static_cast<double>(N) * tiny;
    const double rad = (fast::gamma(N + 2) * R + errA + errB) * inflate + tiny;
    lo[0] = fast::down(R, rad);
    hi[0] = fast::up(R, rad);
    return std::isfinite(hi[0]);
}

void parse_zonal(const json& c, const Where& w, const Instance& I, ArrayLoader&, Certificate& cert) {
    if (I.kind != InstanceKind::qk || I.has_mask())
        throw InputError(w.key("kind"), "zonal applies only to qk instances without a mask");
    if (I.d() == 0) throw InputError(w.key("kind"), "zonal needs queries and keys of dimension at least 1");
    ZonalCert z;
    const json& cs = require(c, "chebyshev", w);
    if (!cs.is_array() || cs.empty() || cs.size() > max_coefficients)
        throw InputError(w.key("chebyshev"), "must be a list of 1 to " + std::to_string(max_coefficients) +
                                                 " rational coefficients c_0 .. c_p");
    for (std::size_t k = 0; k < cs.size(); ++k) z.cheb.push_back(parse_rational(cs[k], w.key("chebyshev").index(k)));
    z.shift = parse_rational(require(c, "shift", w), w.key("shift"));
    for (std::size_t k = 0; k < z.cheb.size(); ++k)
        if (!fmpq_is_zero(z.cheb[k].get())) z.degree = k;
    z.cheb.resize(z.degree + 1);
    z.one_parity = true;
    for (std::size_t k = 0; k <= z.degree; ++k)
        if ((k % 2) != (z.degree % 2) && !fmpq_is_zero(z.cheb[k].get())) z.one_parity = false;
    // The sphere bound holds when the keys (row space of G) or the queries
    // (column space, by the same argument) all lie on the unit sphere.
    auto on_sphere = [&](const Matrix& m) {
        for (std::size_t j = 0; j < m.rows; ++j) {
            Rat s;
            for (std::size_t a = 0; a < m.cols; ++a) fmpq_addmul(s.get(), m(j, a).get(), m(j, a).get());
            if (!(s == Rat(1))) return false;
        }
        return true;
    };
    z.sphere = on_sphere(I.k) || on_sphere(I.q);
    check_rank(c, w, zonal_rank(z, I.d(), I.n, I.N), cert, true);
    cert.data = std::move(z);
}

CertResult check_zonal(const Instance& I, const Rat& eps, const Certificate& c, const CheckOptions& opt) {
    ZonalRows q(I, c.as<ZonalCert>());
    return check_row_errors(q, eps, c, opt);
}

std::string describe_zonal(const Certificate& c) {
    const auto& z = c.as<ZonalCert>();
    return "Chebyshev degree " + std::to_string(z.degree) + ", shift " + exact_text(z.shift) +
           (z.sphere ? ", keys or queries on the unit sphere" : ", neither keys nor queries all on the unit sphere") +
           (z.sphere && z.one_parity ? ", one parity" : "");
}

}  // namespace rankcert::cert
