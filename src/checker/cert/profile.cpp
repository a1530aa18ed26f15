// profile: certified enclosures of the interaction geometry of a retained
// T = X Y^T (docs/theory.md, "Extensions: profile and sandwich certificates";
// docs/profile.md states each theorem).
//
// Theorems relied on, for an unmasked instance with C = P_n (log A) P_N and
// T = X Y^T of rank at most r:
//  * kappa(T) <= max_i |x_i G| * max_j |y_j G^{-T}| for any invertible G
//    (T = (X G)(Y G^{-T})^T is a factorisation of inner dimension r);
//  * kappa(T) >= ||D_lambda^{1/2} T D_mu^{1/2}||_* >= <Z, D_lambda^{1/2} T D_mu^{1/2}> / ||Z||_2
//    for probability vectors lambda, mu and any Z (||X'Y'^T||_* <= |X'|_F |Y'|_F
//    and nuclear/spectral duality);
//  * ||zu zv^T||_2^2 = lambda_max(P Q) with P = zu^T zu, Q = zv^T zv, and for
//    P positive definite, lambda_max(P Q) <= s iff s P^{-1} - Q is PSD
//    (congruence by P^{1/2}); s P^{-1} - Q is certified positive definite by
//    an exact LDL^T;
//  * q(C - T) = max_i (max_j - min_j)(C - T)_ij and tau = 2 tanh(q/4), both
//    enclosed in ball arithmetic; tau* = max_i |A_i - A~_i|_1 likewise;
//  * rank C is computed exactly over the rationals when the data are rational.
#include "../interaction.hpp"
#include "../ldl.hpp"
#include "common.hpp"
#include "rankcert/profile.hpp"
#include "units.hpp"

#include <flint/fmpq_mat.h>

namespace rankcert::cert {

namespace {

void require_unmasked(const Instance& I, const Where& w, const char* what) {
    if (I.has_mask()) throw InputError(w, std::string(what) + " (masked rows have no interaction C)");
}

// Exact inverse; false when singular.
bool invert(const std::vector<Rat>& A, std::size_t r, std::vector<Rat>& out) {
    fmpq_mat_t a, b;
    fmpq_mat_init(a, static_cast<slong>(r), static_cast<slong>(r));
    fmpq_mat_init(b, static_cast<slong>(r), static_cast<slong>(r));
    for (std::size_t i = 0; i < r; ++i)
        for (std::size_t j = 0; j < r; ++j) fmpq_set(fmpq_mat_entry(a, static_cast<slong>(i), static_cast<slong>(j)), A[i * r + j].get());
    const bool ok = fmpq_mat_inv(b, a);
    out.assign(r * r, Rat());
    if (ok)
        for (std::size_t i = 0; i < r; ++i)
            for (std::size_t j = 0; j < r; ++j) fmpq_set(out[i * r + j].get(), fmpq_mat_entry(b, static_cast<slong>(i), static_cast<slong>(j)));
    fmpq_mat_clear(b);
    fmpq_mat_clear(a);
    return ok;
}

Rat max_row_sq(const std::vector<Rat>& M, std::size_t rows, std::size_t cols) {
    Rat best;
    for (std::size_t i = 0; i < rows; ++i) {
        Rat s;
        for (std::size_t j = 0; j < cols; ++j) fmpq_addmul(s.get(), M[i * cols + j].get(), M[i * cols + j].get());
        if (s > best) best = s;
    }
    return best;
}

Verdict combine(std::initializer_list<Verdict> vs) {
    bool und = false;
    for (Verdict v : vs) {
        if (v == Verdict::refuted) return Verdict::refuted;
        if (v == Verdict::undecided) und = true;
    }
    return und ? Verdict::undecided : Verdict::verified;
}

// kappa <= kappa_hi by the gauge (exact).
Verdict check_gauge(const ProfileCert& p, std::size_t n, std::size_t N, json& dec) {
    const std::size_t r = p.r;
    std::vector<Rat> Ginv;
    if (!invert(p.gauge.v, r, Ginv)) {
        dec["gauge"] = "singular";
        return Verdict::refuted;
    }
    const auto U = rat_mul(p.x.v, p.gauge.v, n, r, r);
    const auto V = rat_mul(p.y.v, rat_transpose(Ginv, r, r), N, r, r);  // y_j G^{-T}
    const Rat prod = max_row_sq(U, n, r) * max_row_sq(V, N, r);  // kappa_gauge^2
    dec["kappa_gauge_sq"] = prod.str();
    return (p.kappa_hi.sign() >= 0 && prod <= p.kappa_hi * p.kappa_hi) ? Verdict::verified : Verdict::refuted;
}

// lambda and mu probability vectors; ||Z||_2^2 <= z_norm_sq (exact).
Verdict check_dual_data(const ProfileCert& p, std::size_t n, std::size_t N, json& dec) {
    Verdict v = Verdict::verified;
    for (const auto* vec : {&p.lambda, &p.mu}) {
        Rat sum;
        for (const auto& x : *vec) {
            if (x.sign() < 0) v = Verdict::refuted;
            sum = sum + x;
        }
        if (!(sum == Rat(1))) v = Verdict::refuted;
    }
    const std::size_t s = p.zu.cols;
    const auto P = rat_mul(rat_transpose(p.zu.v, n, s), p.zu.v, s, n, s);
    const auto Q = rat_mul(rat_transpose(p.zv.v, N, s), p.zv.v, s, N, s);
    std::vector<Rat> Pinv;
    Verdict vz = Verdict::undecided;
    if (invert(P, s, Pinv)) {
        std::vector<Rat> H(s * s);
        for (std::size_t a = 0; a < s * s; ++a) H[a] = p.z_norm_sq * Pinv[a] - Q[a];
        vz = ldl_positive_definite(RatOps{}, H, s).verdict;
    }
    dec["z_norm_sq"] = p.z_norm_sq.str();
    return combine({v, vz});
}

// The dual bound <Mu, Mv>_F / sqrt(z_norm_sq), Mu = zu^T D_l^{1/2} X, Mv = zv^T D_m^{1/2} Y.
void enclose_dual(const ProfileCert& p, slong prec, arb_ptr out) {
    const std::size_t r = p.r, s = p.zu.cols;
    BallVec X, Y;
    enclose_matrix(p.x, prec, X);
    enclose_matrix(p.y, prec, Y);
    auto weighted = [&](const Matrix& z, const std::vector<Rat>& w, const BallVec& F) {
        BallVec M(s * r);
        Ball sw, zw;
        for (std::size_t i = 0; i < z.rows; ++i) {
            arb_set_fmpq(sw.get(), w[i].get(), prec);
            arb_sqrt(sw.get(), sw.get(), prec);
            for (std::size_t a = 0; a < s; ++a) {
                if (z(i, a).is_zero()) continue;
                arb_set_fmpq(zw.get(), z(i, a).get(), prec);
                arb_mul(zw.get(), zw.get(), sw.get(), prec);
                for (std::size_t b = 0; b < r; ++b) arb_addmul(M[a * r + b], zw.get(), F[i * r + b], prec);
            }
        }
        return M;
    };
    const BallVec Mu = weighted(p.zu, p.lambda, X), Mv = weighted(p.zv, p.mu, Y);
    arb_dot(out, nullptr, 0, Mu.data(), 1, Mv.data(), 1, static_cast<slong>(s * r), prec);
    Ball zn;
    arb_set_fmpq(zn.get(), p.z_norm_sq.get(), prec);
    arb_sqrt(zn.get(), zn.get(), prec);
    arb_div(out, out, zn.get(), prec);
}

// P = (1 + kappa / (eps - tau)^2)^{r/2}, an outward end at 128 bits.
Rat profile_P(const Rat& eps, const Rat& kappa, const Rat& tau, std::size_t r, bool upper) {
    Ball b, e, ex;
    arb_set_fmpq(e.get(), (eps - tau).get(), 128);
    arb_sqr(e.get(), e.get(), 128);
    arb_set_fmpq(b.get(), kappa.get(), 128);
    arb_div(b.get(), b.get(), e.get(), 128);
    arb_add_ui(b.get(), b.get(), 1, 128);
    arb_set_ui(ex.get(), r);
    arb_mul_2exp_si(ex.get(), ex.get(), -1);
    arb_pow(b.get(), b.get(), ex.get(), 128);
    const Endpoints en = endpoints(b.get());
    return upper ? en.hi : en.lo;
}

}  // namespace

void parse_profile(const json& c, const Where& w, const Instance& I, ArrayLoader& L, Certificate& cert) {
    require_unmasked(I, w, "a profile needs an unmasked instance");
    ProfileCert p;
    p.r = parse_index(require(c, "r", w), w.key("r"), 1u << 16);
    cert.rank = p.r;
    p.x = load_shaped(c, "x", w, L, I.n, p.r, "n x r");
    p.y = load_shaped(c, "y", w, L, I.N, p.r, "N x r");
    p.gauge = load_shaped(c, "gauge", w, L, p.r, p.r, "r x r");
    p.lambda = as_vector(L.load(require(c, "lambda", w), w.key("lambda")), I.n, w.key("lambda"));
    p.mu = as_vector(L.load(require(c, "mu", w), w.key("mu")), I.N, w.key("mu"));
    p.zu = L.load(require(c, "zu", w), w.key("zu"));
    p.zv = L.load(require(c, "zv", w), w.key("zv"));
    if (p.zu.rows != I.n || p.zv.rows != I.N || p.zu.cols != p.zv.cols)
        throw InputError(w.key("zu"), "zu (n x s) and zv (N x s) must share their column count");
    p.z_norm_sq = parse_rational(require(c, "z_norm_sq", w), w.key("z_norm_sq"));
    if (p.z_norm_sq.sign() <= 0) throw InputError(w.key("z_norm_sq"), "must be positive");
    const json& cl = require(c, "claims", w);
    const Where wc = w.key("claims");
    std::tie(p.q_lo, p.q_hi) = parse_interval(cl, "q", wc);
    std::tie(p.tau_lo, p.tau_hi) = parse_interval(cl, "tau", wc);
    std::tie(p.kappa_lo, p.kappa_hi) = parse_interval(cl, "kappa", wc);
    if (auto v = optional(cl, "visible_dim")) p.visible_dim = parse_index(*v, wc.key("visible_dim"));
    if (optional(cl, "tau_star")) p.tau_star = parse_interval(cl, "tau_star", wc);
    cert.data = std::move(p);
}

CertResult check_profile(const Instance& I, const Rat& eps, const Certificate& cert, const CheckOptions& opt) {
    CertResult res = result_for(cert);
    const auto& p = cert.as<ProfileCert>();
    const std::size_t n = I.n, N = I.N, r = p.r;
    json dec;
    const Verdict v_gauge = check_gauge(p, n, N, dec);
    const Verdict v_dual_data = check_dual_data(p, n, N, dec);
    Verdict v_dim = Verdict::verified;
    if (p.visible_dim) {
        const long vd = exact_visible_dimension(I);
        dec["visible_dim"] = vd;
        v_dim = vd < 0 ? Verdict::undecided : (static_cast<std::uint64_t>(vd) == *p.visible_dim ? Verdict::verified : Verdict::refuted);
    }
    if (I.kind == InstanceKind::matrix)
        for (const auto& a : I.a.v)
            if (a.sign() <= 0) {
                res.verdict = Verdict::refuted;
                res.precision = "exact";
                res.detail = "a profile needs positive entries of A (log A)";
                return res;
            }

    // q, tau, tau* and the dual bound in ball arithmetic, raising precision.
    const std::vector<Rat> Cexact = I.kind == InstanceKind::logits ? centred_logits(I.logits) : std::vector<Rat>();
    Verdict v_q = Verdict::undecided, v_tau = Verdict::undecided, v_dual = Verdict::undecided, v_ts = Verdict::verified;
    Ball qb, taub, dualb, tsb;
    for (slong prec : rows::ladder(opt)) {
        res.precision = std::to_string(prec);
        const InteractionRows ir(I, p.x, p.y, r, prec, Cexact);
        BallVec osc(n), err(n);  // per row: oscillation of C - T, |A_i - A~_i|_1
        rows::parallel_for(n, opt, "profile", prec, [&](std::size_t i) {
            BallVec R(N), A(N), At(N);
            Ball mx, mn;
            ir.residual(i, R.data());
            arb_set(mx.get(), R[0]);
            arb_set(mn.get(), R[0]);
            for (std::size_t j = 1; j < N; ++j) {
                arb_max(mx.get(), mx.get(), R[j], prec);
                arb_min(mn.get(), mn.get(), R[j], prec);
            }
            arb_sub(osc[i], mx.get(), mn.get(), prec);
            if (p.tau_star) {
                ir.gibbs(i, R.data(), A.data(), At.data());
                enclose_l1_distance(err[i], A.data(), At.data(), N, prec);
            }
            return true;
        });
        arb_set(qb.get(), osc[0]);
        arb_set(tsb.get(), err[0]);
        for (std::size_t i = 1; i < n; ++i) {
            arb_max(qb.get(), qb.get(), osc[i], prec);
            arb_max(tsb.get(), tsb.get(), err[i], prec);
        }
        arb_mul_2exp_si(taub.get(), qb.get(), -2);
        arb_tanh(taub.get(), taub.get(), prec);
        arb_mul_2exp_si(taub.get(), taub.get(), 1);
        enclose_dual(p, prec, dualb.get());
        v_q = decide_in(qb.get(), p.q_lo, p.q_hi);
        v_tau = decide_in(taub.get(), p.tau_lo, p.tau_hi);
        v_dual = decide_ge(dualb.get(), p.kappa_lo);  // the dual bound reaches kappa_lo
        if (p.tau_star) v_ts = decide_in(tsb.get(), p.tau_star->first, p.tau_star->second);
        if (v_q != Verdict::undecided && v_tau != Verdict::undecided && v_dual != Verdict::undecided &&
            v_ts != Verdict::undecided)
            break;
    }
    dec["q"] = endpoints_json(endpoints(qb.get()));
    dec["tau"] = endpoints_json(endpoints(taub.get()));
    dec["kappa_dual"] = endpoints_json(endpoints(dualb.get()));
    if (p.tau_star) dec["tau_star"] = endpoints_json(endpoints(tsb.get()));
    const Verdict v_kappa_lo = combine({v_dual_data, v_dual});
    res.verdict = combine({v_gauge, v_kappa_lo, v_q, v_tau, v_dim, v_ts});
    // The profile P at eps from the certified intervals (increasing in kappa and tau).
    if (res.verdict == Verdict::verified && p.tau_hi < eps && p.kappa_lo.sign() >= 0)
        dec["profile_P"] = json::array({profile_P(eps, p.kappa_lo, p.tau_lo, r, false).str(),
                                        profile_P(eps, p.kappa_hi, p.tau_hi, r, true).str()});
    dec["eps"] = eps.str();
    res.decisive = dec;
    auto vs = [](Verdict v) { return std::string(to_string(v)); };
    res.detail = "q in [" + p.q_lo.str() + ", " + p.q_hi.str() + "]: " + vs(v_q) + "; tau: " + vs(v_tau) +
                 "; kappa <= " + p.kappa_hi.str() + " (gauge): " + vs(v_gauge) + "; kappa >= " + p.kappa_lo.str() +
                 " (dual): " + vs(v_kappa_lo) + (p.tau_star ? "; tau* (induced error): " + vs(v_ts) : "") +
                 (p.visible_dim ? "; visible dimension " + std::to_string(*p.visible_dim) + ": " + vs(v_dim) : "");
    return res;
}

std::string describe_profile(const Certificate& c) {
    const auto& p = c.as<ProfileCert>();
    return "T = X Y^T with r = " + std::to_string(p.r) + ", claims q in [" + p.q_lo.str() + ", " + p.q_hi.str() +
           "], kappa in [" + p.kappa_lo.str() + ", " + p.kappa_hi.str() + "]";
}

}  // namespace rankcert::cert
