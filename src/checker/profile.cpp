// Profile certificates (THEORY.md section 6).
//
// Theorems relied on, for an unmasked instance with C = P_n (log A) P_N and a
// retained T = X Y^T of rank at most r:
//  * kappa(T) <= max_i |x_i G| * max_j |y_j G^{-T}| for any invertible G
//    (T = (X G)(Y G^{-T})^T is a factorisation of inner dimension r);
//  * kappa(T) >= ||D_lambda^{1/2} T D_mu^{1/2}||_* >= <Z, D_lambda^{1/2} T D_mu^{1/2}> / ||Z||_2
//    for probability vectors lambda, mu and any Z (||X'Y'^T||_* <= |X'|_F |Y'|_F
//    and nuclear/spectral duality);
//  * ||zu zv^T||_2^2 = lambda_max(P Q) with P = zu^T zu, Q = zv^T zv, and for
//    P positive definite, lambda_max(P Q) <= s iff s P^{-1} - Q is PSD
//    (congruence by P^{1/2}); we certify s P^{-1} - Q positive definite by an
//    exact LDL^T;
//  * q(C - T) = max_i (max_j - min_j)(C - T)_ij and tau = 2 tanh(q/4), both
//    enclosed in ball arithmetic;
//  * rank C is computed exactly over the rationals when the data are rational.
#include "rankcert/profile.hpp"

#include "ldl.hpp"

#include <flint/fmpq_mat.h>

namespace rankcert {

namespace {

// Subtract column means exactly.
std::vector<Rat> centred(const Matrix& m) {
    std::vector<Rat> out(m.v);
    for (std::size_t c = 0; c < m.cols; ++c) {
        Rat mean;
        for (std::size_t i = 0; i < m.rows; ++i) mean = mean + m(i, c);
        mean = mean / Rat(static_cast<long>(m.rows));
        for (std::size_t i = 0; i < m.rows; ++i) out[i * m.cols + c] = out[i * m.cols + c] - mean;
    }
    return out;
}

// Exact C = P_n S P_N for a logits instance.
std::vector<Rat> centred_logits(const Matrix& S) {
    const std::size_t n = S.rows, N = S.cols;
    std::vector<Rat> row(n), col(N);
    Rat all;
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < N; ++j) {
            row[i] = row[i] + S(i, j);
            col[j] = col[j] + S(i, j);
        }
    for (std::size_t i = 0; i < n; ++i) all = all + row[i];
    for (auto& x : row) x = x / Rat(static_cast<long>(N));
    for (auto& x : col) x = x / Rat(static_cast<long>(n));
    all = all / Rat(static_cast<long>(n * N));
    std::vector<Rat> C(n * N);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < N; ++j) C[i * N + j] = S(i, j) - row[i] - col[j] + all;
    return C;
}

long rank_of(const std::vector<Rat>& m, std::size_t rows, std::size_t cols) {
    fmpq_mat_t a, b;
    fmpq_mat_init(a, static_cast<slong>(rows), static_cast<slong>(cols));
    fmpq_mat_init(b, static_cast<slong>(rows), static_cast<slong>(cols));
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j)
            fmpq_set(fmpq_mat_entry(a, static_cast<slong>(i), static_cast<slong>(j)), m[i * cols + j].get());
    const long r = fmpq_mat_rref(b, a);
    fmpq_mat_clear(b);
    fmpq_mat_clear(a);
    return r;
}

// G^T G-free products: out = A B (exact), A a x b, B b x c (row-major).
std::vector<Rat> mul(const std::vector<Rat>& A, const std::vector<Rat>& B, std::size_t a, std::size_t b, std::size_t c) {
    std::vector<Rat> out(a * c);
    for (std::size_t i = 0; i < a; ++i)
        for (std::size_t k = 0; k < b; ++k) {
            if (A[i * b + k].is_zero()) continue;
            for (std::size_t j = 0; j < c; ++j) fmpq_addmul(out[i * c + j].get(), A[i * b + k].get(), B[k * c + j].get());
        }
    return out;
}

std::vector<Rat> transpose(const std::vector<Rat>& A, std::size_t a, std::size_t b) {
    std::vector<Rat> out(a * b);
    for (std::size_t i = 0; i < a; ++i)
        for (std::size_t j = 0; j < b; ++j) out[j * a + i] = A[i * b + j];
    return out;
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

// Is the ball inside [lo, hi] (verified), certainly outside (refuted), or unclear?
Verdict within(arb_srcptr x, const Rat& lo, const Rat& hi) {
    const Verdict below = decide_lt(x, lo), above = decide_le(x, hi);
    if (below == Verdict::refuted && above == Verdict::verified) return Verdict::verified;
    if (below == Verdict::verified || above == Verdict::refuted) return Verdict::refuted;
    return Verdict::undecided;
}

json ends(const Endpoints& e) { return e.bounded ? json::array({e.lo.str(), e.hi.str()}) : json::array({"-inf", "inf"}); }

Verdict combine(std::initializer_list<Verdict> vs) {
    bool und = false;
    for (Verdict v : vs) {
        if (v == Verdict::refuted) return Verdict::refuted;
        if (v == Verdict::undecided) und = true;
    }
    return und ? Verdict::undecided : Verdict::verified;
}

// Rows of the residual C - T and of the Gibbs matrix of T, in balls.
// A~_i = softmax(log A_i - (C - T)_i): the same key weights as A, potentials T.
class InteractionRows {
public:
    InteractionRows(const Instance& I, const Matrix& X, const Matrix& Y, std::size_t r, slong prec,
                    const std::vector<Rat>& Cexact)
        : I_(I), r_(r), prec_(prec), Cexact_(Cexact), enc_(I, prec) {
        const std::size_t n = I.n, N = I.N;
        enclose_matrix(X, prec, X_);
        enclose_matrix(Y, prec, Y_);
        if (I.kind == InstanceKind::qk) {
            Matrix qm = I.q, km = I.k;
            qm.v = centred(I.q);
            km.v = centred(I.k);
            enclose_matrix(qm, prec, Qc_);
            enclose_matrix(km, prec, Kc_);
            arb_set_fmpq(coef_.get(), I.scale.q.get(), prec);
            if (I.scale.kind == Number::Kind::rsqrt) arb_rsqrt(coef_.get(), coef_.get(), prec);
            Ball t;
            arb_set_fmpq(t.get(), I.temperature.get(), prec);
            arb_mul(coef_.get(), coef_.get(), t.get(), prec);
        } else if (I.kind == InstanceKind::matrix) {
            // log A and its double centring, in balls.
            Lg_ = BallVec(n * N);
            LogA_ = BallVec(n * N);
            for (std::size_t a = 0; a < n * N; ++a) {
                arb_set_fmpq(LogA_[a], I.a.v[a].get(), prec);
                arb_log(LogA_[a], LogA_[a], prec);
                arb_set(Lg_[a], LogA_[a]);
            }
            BallVec rm(n), cm(N);
            Ball all;
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t j = 0; j < N; ++j) {
                    arb_add(rm[i], rm[i], Lg_[i * N + j], prec);
                    arb_add(cm[j], cm[j], Lg_[i * N + j], prec);
                }
            for (std::size_t i = 0; i < n; ++i) arb_add(all.get(), all.get(), rm[i], prec);
            for (std::size_t i = 0; i < n; ++i) arb_div_ui(rm[i], rm[i], N, prec);
            for (std::size_t j = 0; j < N; ++j) arb_div_ui(cm[j], cm[j], n, prec);
            arb_div_ui(all.get(), all.get(), n * N, prec);
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t j = 0; j < N; ++j) {
                    arb_sub(Lg_[i * N + j], Lg_[i * N + j], rm[i], prec);
                    arb_sub(Lg_[i * N + j], Lg_[i * N + j], cm[j], prec);
                    arb_add(Lg_[i * N + j], Lg_[i * N + j], all.get(), prec);
                }
        }
    }
    // out[j] = (C - T)_ij
    void residual(std::size_t i, arb_ptr out) const {
        const std::size_t N = I_.N, d = I_.kind == InstanceKind::qk ? I_.d() : 0;
        for (std::size_t j = 0; j < N; ++j) {
            if (I_.kind == InstanceKind::qk) {
                arb_dot(out + j, nullptr, 0, Qc_[i * d], 1, Kc_[j * d], 1, static_cast<slong>(d), prec_);
                arb_mul(out + j, out + j, coef_.get(), prec_);
            } else if (I_.kind == InstanceKind::logits) {
                arb_set_fmpq(out + j, Cexact_[i * N + j].get(), prec_);
            } else {
                arb_set(out + j, Lg_[i * N + j]);
            }
            arb_dot(out + j, out + j, 1, X_[i * r_], 1, Y_[j * r_], 1, static_cast<slong>(r_), prec_);
        }
    }
    // A_i, and the Gibbs row A~_i of T, from the residual row R.
    void gibbs(std::size_t i, arb_srcptr R, arb_ptr A, arb_ptr At) const {
        const std::size_t N = I_.N;
        std::vector<std::uint8_t> allowed(N, 1);
        if (I_.kind == InstanceKind::matrix)
            for (std::size_t j = 0; j < N; ++j) arb_set(At + j, LogA_[i * N + j]);
        else
            enc_.logits(i, At, allowed.data());
        for (std::size_t j = 0; j < N; ++j) {
            if (I_.kind == InstanceKind::matrix) arb_set_fmpq(A + j, I_.a(i, j).get(), prec_);  // rows as given
            else arb_set(A + j, At + j);
            arb_sub(At + j, At + j, R + j, prec_);
        }
        if (I_.kind != InstanceKind::matrix) enclose_softmax(A, allowed.data(), N, prec_);
        enclose_softmax(At, allowed.data(), N, prec_);
    }

private:
    const Instance& I_;
    std::size_t r_;
    slong prec_;
    const std::vector<Rat>& Cexact_;
    RowEncloser enc_;
    BallVec X_, Y_, Qc_, Kc_, Lg_, LogA_;
    Ball coef_;
};

}  // namespace

long exact_visible_dimension(const Instance& I) {
    if (I.kind == InstanceKind::qk) {
        // rank((P_n Q)(P_N K)^T) = rank(Q'^T Q' K'^T K') (d x d); the scale does not matter.
        const std::size_t d = I.d();
        auto Qc = centred(I.q), Kc = centred(I.k);
        auto G1 = mul(transpose(Qc, I.n, d), Qc, d, I.n, d);
        auto G2 = mul(transpose(Kc, I.N, d), Kc, d, I.N, d);
        return rank_of(mul(G1, G2, d, d, d), d, d);
    }
    if (I.kind == InstanceKind::logits && I.n * I.N <= 65536) return rank_of(centred_logits(I.logits), I.n, I.N);
    return -1;
}

CertResult check_profile(const Instance& I, const Rat& eps, const Certificate& cert, const CheckOptions& opt) {
    CertResult res;
    res.kind = CertKind::profile;
    res.rank = cert.rank;
    const auto& p = cert.profile;
    const std::size_t n = I.n, N = I.N, r = p.r, s = p.zu.cols;
    json dec;

    // ---- kappa <= kappa_hi by the gauge (exact) ----
    std::vector<Rat> Ginv;
    Verdict v_gauge;
    if (!invert(p.gauge.v, r, Ginv)) {
        v_gauge = Verdict::refuted;
        dec["gauge"] = "singular";
    } else {
        const auto U = mul(p.x.v, p.gauge.v, n, r, r);
        const auto V = mul(p.y.v, transpose(Ginv, r, r), N, r, r);  // y_j G^{-T}
        const Rat prod = max_row_sq(U, n, r) * max_row_sq(V, N, r);  // kappa_gauge^2
        v_gauge = (p.kappa_hi.sign() >= 0 && prod <= p.kappa_hi * p.kappa_hi) ? Verdict::verified : Verdict::refuted;
        dec["kappa_gauge_sq"] = prod.str();
    }

    // ---- ||Z||_2^2 <= z_norm_sq (exact), lambda and mu probability vectors ----
    Verdict v_prob = Verdict::verified;
    for (const auto* vec : {&p.lambda, &p.mu}) {
        Rat sum;
        for (const auto& x : *vec) {
            if (x.sign() < 0) v_prob = Verdict::refuted;
            sum = sum + x;
        }
        if (!(sum == Rat(1))) v_prob = Verdict::refuted;
    }
    Verdict v_znorm = Verdict::undecided;
    {
        const auto P = mul(transpose(p.zu.v, n, s), p.zu.v, s, n, s);
        const auto Q = mul(transpose(p.zv.v, N, s), p.zv.v, s, N, s);
        std::vector<Rat> Pinv;
        if (invert(P, s, Pinv)) {
            std::vector<Rat> H(s * s);
            for (std::size_t a = 0; a < s * s; ++a) H[a] = p.z_norm_sq * Pinv[a] - Q[a];
            v_znorm = ldl_positive_definite(RatOps{}, H, s).verdict;
        }
        dec["z_norm_sq"] = p.z_norm_sq.str();
    }

    // ---- visible dimension (exact) ----
    Verdict v_dim = Verdict::verified;
    if (p.visible_dim) {
        const long vd = exact_visible_dimension(I);
        dec["visible_dim"] = vd;
        v_dim = vd < 0 ? Verdict::undecided : (static_cast<std::uint64_t>(vd) == *p.visible_dim ? Verdict::verified : Verdict::refuted);
    }

    // ---- q, tau and the dual bound in ball arithmetic, raising precision ----
    std::vector<Rat> Cexact;
    if (I.kind == InstanceKind::logits) Cexact = centred_logits(I.logits);
    if (I.kind == InstanceKind::matrix)
        for (const auto& a : I.a.v)
            if (a.sign() <= 0) {
                res.verdict = Verdict::refuted;
                res.precision = "exact";
                res.detail = "a profile needs positive entries of A (log A)";
                return res;
            }
    Verdict v_q = Verdict::undecided, v_tau = Verdict::undecided, v_dual = Verdict::undecided;
    Endpoints q_e, tau_e, dual_e;
    std::string prec_used;
    Ball qb, taub, dualb, tsb;
    Verdict v_ts = Verdict::verified;
    for (slong prec : PrecisionLadder::up_to(opt.max_prec).bits) {
        prec_used = std::to_string(prec);
        InteractionRows rows(I, p.x, p.y, r, prec, Cexact);
        BallVec R(N), Arow(N), Atil(N), X, Y;
        enclose_matrix(p.x, prec, X);
        enclose_matrix(p.y, prec, Y);
        Ball mx, mn, osc, row_err;
        arb_zero(qb.get());
        arb_zero(tsb.get());
        for (std::size_t i = 0; i < n; ++i) {
            rows.residual(i, R.data());
            arb_set(mx.get(), R[0]);
            arb_set(mn.get(), R[0]);
            for (std::size_t j = 1; j < N; ++j) {
                arb_max(mx.get(), mx.get(), R[j], prec);
                arb_min(mn.get(), mn.get(), R[j], prec);
            }
            if (p.tau_star) {
                rows.gibbs(i, R.data(), Arow.data(), Atil.data());
                enclose_l1_distance(row_err.get(), Arow.data(), Atil.data(), N, prec);
                if (i == 0) arb_set(tsb.get(), row_err.get());
                else arb_max(tsb.get(), tsb.get(), row_err.get(), prec);
            }
            arb_sub(osc.get(), mx.get(), mn.get(), prec);
            if (i == 0) arb_set(qb.get(), osc.get());
            else arb_max(qb.get(), qb.get(), osc.get(), prec);
        }
        arb_mul_2exp_si(taub.get(), qb.get(), -2);
        arb_tanh(taub.get(), taub.get(), prec);
        arb_mul_2exp_si(taub.get(), taub.get(), 1);
        // Dual: <Mu, Mv>_F / sqrt(z_norm_sq), Mu = zu^T D_l^{1/2} X, Mv = zv^T D_m^{1/2} Y.
        auto weighted = [&](const Matrix& z, const std::vector<Rat>& w, const BallVec& F, std::size_t rows) {
            BallVec M(s * r);
            Ball sw, zw;
            for (std::size_t i = 0; i < rows; ++i) {
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
        BallVec Mu = weighted(p.zu, p.lambda, X, n), Mv = weighted(p.zv, p.mu, Y, N);
        arb_dot(dualb.get(), nullptr, 0, Mu.data(), 1, Mv.data(), 1, static_cast<slong>(s * r), prec);
        Ball zn;
        arb_set_fmpq(zn.get(), p.z_norm_sq.get(), prec);
        arb_sqrt(zn.get(), zn.get(), prec);
        arb_div(dualb.get(), dualb.get(), zn.get(), prec);
        v_q = within(qb.get(), p.q_lo, p.q_hi);
        v_tau = within(taub.get(), p.tau_lo, p.tau_hi);
        // The dual bound must reach kappa_lo: dual >= kappa_lo everywhere.
        const Verdict below = decide_lt(dualb.get(), p.kappa_lo);
        v_dual = below == Verdict::refuted ? Verdict::verified : below == Verdict::verified ? Verdict::refuted : Verdict::undecided;
        if (p.tau_star) v_ts = within(tsb.get(), p.tau_star->first, p.tau_star->second);
        if (v_q != Verdict::undecided && v_tau != Verdict::undecided && v_dual != Verdict::undecided &&
            v_ts != Verdict::undecided)
            break;
    }
    q_e = endpoints(qb.get());
    tau_e = endpoints(taub.get());
    dual_e = endpoints(dualb.get());
    dec["q"] = ends(q_e);
    dec["tau"] = ends(tau_e);
    dec["kappa_dual"] = ends(dual_e);
    if (p.tau_star) dec["tau_star"] = ends(endpoints(tsb.get()));
    const Verdict v_kappa_lo = combine({v_prob, v_znorm, v_dual});
    res.verdict = combine({v_gauge, v_kappa_lo, v_q, v_tau, v_dim, v_ts});
    res.precision = prec_used;
    // The profile P at eps from the certified intervals (increasing in kappa and tau).
    if (res.verdict == Verdict::verified && p.tau_hi < eps && p.kappa_lo.sign() >= 0) {
        auto P = [&](const Rat& kappa, const Rat& tau, bool upper) {
            Ball b, e;
            arb_set_fmpq(e.get(), (eps - tau).get(), 128);
            arb_sqr(e.get(), e.get(), 128);
            arb_set_fmpq(b.get(), kappa.get(), 128);
            arb_div(b.get(), b.get(), e.get(), 128);
            arb_add_ui(b.get(), b.get(), 1, 128);
            Ball ex;
            arb_set_ui(ex.get(), r);
            arb_mul_2exp_si(ex.get(), ex.get(), -1);
            arb_pow(b.get(), b.get(), ex.get(), 128);
            Endpoints en = endpoints(b.get());
            return upper ? en.hi : en.lo;
        };
        dec["profile_P"] = json::array({P(p.kappa_lo, p.tau_lo, false).str(), P(p.kappa_hi, p.tau_hi, true).str()});
    }
    dec["eps"] = eps.str();
    res.decisive = dec;
    auto vs = [](Verdict v) { return std::string(to_string(v)); };
    res.detail = "q in [" + p.q_lo.str() + ", " + p.q_hi.str() + "]: " + vs(v_q) + "; tau: " + vs(v_tau) +
                 "; kappa <= " + p.kappa_hi.str() + " (gauge): " + vs(v_gauge) + "; kappa >= " + p.kappa_lo.str() +
                 " (dual): " + vs(v_kappa_lo) + (p.tau_star ? "; tau* (induced error): " + vs(v_ts) : "") + (p.visible_dim ? "; visible dimension " + std::to_string(*p.visible_dim) + ": " + vs(v_dim) : "");
    return res;
}

CertResult check_sandwich(const Instance& I, const Rat& eps, const Certificate& cert, const CheckOptions& opt) {
    // ||A - B|| <= ||A - A~|| + ||A~ - B|| <= t + (eps - t): a factor
    // certificate for the Gibbs matrix A~ of T at eps - t, with t >= tau*(T),
    // is an upper certificate for A at eps.
    CertResult res;
    res.kind = CertKind::sandwich;
    res.upper = true;
    res.rank = cert.rank;
    const auto& p = cert.profile;
    const Rat& t = cert.sandwich_tau;
    const Rat rest = eps - t;
    if (rest.sign() < 0) {
        res.verdict = Verdict::refuted;
        res.precision = "exact";
        res.detail = "tau* bound " + t.str() + " exceeds eps";
        return res;
    }
    const std::size_t n = I.n, N = I.N, k = cert.rank;
    const std::vector<Rat> Cexact = I.kind == InstanceKind::logits ? centred_logits(I.logits) : std::vector<Rat>();
    std::vector<Verdict> done(n, Verdict::undecided);
    Endpoints worst_a, worst_b;
    std::size_t undecided = n;
    for (slong prec : PrecisionLadder::up_to(opt.max_prec).bits) {
        res.precision = std::to_string(prec);
        InteractionRows rows(I, p.x, p.y, p.r, prec, Cexact);
        BallVec R(N), A(N), At(N), B(N), U, W;
        enclose_matrix(cert.u, prec, U);
        enclose_matrix(cert.w, prec, W);
        Ball da, db;
        undecided = 0;
        for (std::size_t i = 0; i < n; ++i) {
            if (done[i] == Verdict::verified) continue;
            rows.residual(i, R.data());
            rows.gibbs(i, R.data(), A.data(), At.data());
            for (std::size_t j = 0; j < N; ++j)
                arb_dot(B[j], nullptr, 0, U[i * k], 1, W[j * k], 1, static_cast<slong>(k), prec);
            enclose_l1_distance(da.get(), A.data(), At.data(), N, prec);
            enclose_l1_distance(db.get(), At.data(), B.data(), N, prec);
            const Verdict va = decide_le(da.get(), t), vb = decide_le(db.get(), rest);
            if (va == Verdict::refuted || vb == Verdict::refuted) {
                res.verdict = Verdict::refuted;
                res.detail = "row " + std::to_string(i) + ": " +
                             (va == Verdict::refuted ? "|A_i - A~_i|_1 exceeds tau* bound " + t.str()
                                                     : "|A~_i - B_i|_1 exceeds eps - tau* = " + rest.str());
                res.decisive = {{"row", i}, {"a_minus_gibbs", ends(endpoints(da.get()))}, {"gibbs_minus_b", ends(endpoints(db.get()))},
                                {"tau_star_bound", t.str()}, {"eps_minus_tau", rest.str()}};
                return res;
            }
            if (va == Verdict::verified && vb == Verdict::verified) {
                done[i] = Verdict::verified;
                const Endpoints ea = endpoints(da.get()), eb = endpoints(db.get());
                if (cmp(ea.hi, worst_a.hi) > 0) worst_a = ea;
                if (cmp(eb.hi, worst_b.hi) > 0) worst_b = eb;
            } else {
                ++undecided;
            }
        }
        if (undecided == 0) break;
    }
    res.verdict = undecided == 0 ? Verdict::verified : Verdict::undecided;
    res.decisive = {{"tau_star_bound", t.str()}, {"eps_minus_tau", rest.str()},
                    {"worst_a_minus_gibbs", ends(worst_a)}, {"worst_gibbs_minus_b", ends(worst_b)}};
    res.detail = res.verdict == Verdict::verified
                     ? "every row: |A_i - A~_i|_1 <= " + t.str() + " and |A~_i - B_i|_1 <= eps - tau*"
                     : std::to_string(undecided) + " rows undecided";
    return res;
}

}  // namespace rankcert
