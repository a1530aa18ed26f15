// rankcert-recheck: `profile` (docs/profile.md).  Each claim is re-checked:
//   kappa <= kappa_hi: max_i |x_i G|^2 max_j |y_j G^-T|^2 <= kappa_hi^2 (exact);
//   ||zu zv^T||_2^2 <= z_norm_sq: z_norm_sq P^-1 - Q positive definite, P =
//     zu^T zu, Q = zv^T zv (exact LDL^T), lambda and mu probability vectors;
//   kappa >= kappa_lo: <Mu, Mv> / sqrt(z_norm_sq) >= kappa_lo with Mu = sum_i
//     sqrt(lambda_i) zu_i x_i^T, Mv alike (intervals);
//   q = max_i osc (C - T)_i, tau = 2 tanh(q / 4), tau* = max_i |A_i - A~_i|_1
//     inside their claimed intervals (intervals);
//   visible_dim: the exact rank of Qc^T Qc Kc^T Kc (qk) or of C (logits).
#include "../interaction.hpp"

namespace recheck {

namespace {

using QMat = std::vector<Q>;  // row-major

std::optional<QMat> inverse(const QMat& M, std::size_t r) {
    std::vector<std::vector<Q>> a(r, std::vector<Q>(2 * r, Q(0)));
    for (std::size_t i = 0; i < r; ++i) {
        for (std::size_t j = 0; j < r; ++j) a[i][j] = M[i * r + j];
        a[i][r + i] = 1;
    }
    for (std::size_t c = 0; c < r; ++c) {
        std::size_t piv = c;
        while (piv < r && a[piv][c] == 0) ++piv;
        if (piv == r) return std::nullopt;
        std::swap(a[c], a[piv]);
        const Q inv = 1 / a[c][c];
        for (auto& v : a[c]) v *= inv;
        for (std::size_t i = 0; i < r; ++i) {
            if (i == c || a[i][c] == 0) continue;
            const Q f = a[i][c];
            for (std::size_t j = 0; j < 2 * r; ++j) a[i][j] -= f * a[c][j];
        }
    }
    QMat out(r * r);
    for (std::size_t i = 0; i < r; ++i)
        for (std::size_t j = 0; j < r; ++j) out[i * r + j] = a[i][r + j];
    return out;
}

std::size_t rank(QMat M, std::size_t rows, std::size_t cols) {
    std::size_t rk = 0;
    for (std::size_t c = 0; c < cols && rk < rows; ++c) {
        std::size_t piv = rk;
        while (piv < rows && M[piv * cols + c] == 0) ++piv;
        if (piv == rows) continue;
        for (std::size_t j = 0; j < cols; ++j) std::swap(M[rk * cols + j], M[piv * cols + j]);
        for (std::size_t i = rk + 1; i < rows; ++i) {
            if (M[i * cols + c] == 0) continue;
            const Q f = M[i * cols + c] / M[rk * cols + c];
            for (std::size_t j = c; j < cols; ++j) M[i * cols + j] -= f * M[rk * cols + j];
        }
        ++rk;
    }
    return rk;
}

QMat mul(const QMat& A, const QMat& B, std::size_t a, std::size_t b, std::size_t c) {
    QMat out(a * c, Q(0));
    for (std::size_t i = 0; i < a; ++i)
        for (std::size_t k = 0; k < b; ++k) {
            if (A[i * b + k] == 0) continue;
            for (std::size_t j = 0; j < c; ++j) out[i * c + j] += A[i * b + k] * B[k * c + j];
        }
    return out;
}

QMat transpose(const QMat& A, std::size_t a, std::size_t b) {
    QMat out(a * b);
    for (std::size_t i = 0; i < a; ++i)
        for (std::size_t j = 0; j < b; ++j) out[j * a + i] = A[i * b + j];
    return out;
}

// Exact LDL^T without pivoting: verified when every pivot is positive;
// refuted at a negative pivot (the leading principal minor up to it is
// negative, so H is not even semidefinite); undecided at a zero pivot.
Verdict positive_definite(QMat H, std::size_t s) {
    for (std::size_t q = 0; q < s; ++q) {
        for (std::size_t l = 0; l < q; ++l) H[q * s + q] -= H[q * s + l] * H[q * s + l] * H[l * s + l];
        if (H[q * s + q] < 0) return Verdict::refuted;
        if (H[q * s + q] == 0) return Verdict::undecided;
        for (std::size_t i = q + 1; i < s; ++i) {
            for (std::size_t l = 0; l < q; ++l) H[i * s + q] -= H[i * s + l] * H[q * s + l] * H[l * s + l];
            H[i * s + q] /= H[q * s + q];
        }
    }
    return Verdict::verified;
}

std::pair<Q, Q> claim_interval(const Json& cl, const char* key, const std::string& where) {
    const Json& v = cl.at(key, where);
    if (!v.is_array() || v.items.size() != 2) throw InputError(where + "." + key + ": needs [lo, hi]");
    return {read_q(v.items[0], where + "." + key), read_q(v.items[1], where + "." + key)};
}

}  // namespace

Outcome check_profile(const Context& c) {
    const Instance& inst = c.inst;
    if (inst.masked()) throw InputError(c.where + ": profile applies only to unmasked instances");
    const std::size_t n = inst.n, N = inst.N;
    const std::size_t r = c.cert.at("r", c.where).index(c.where + ".r");
    const Array X = dense(c, "x", n, r), Y = dense(c, "y", N, r), G = dense(c, "gauge", r, r);
    const Array lam = dense(c, "lambda", n, 1), mu = dense(c, "mu", N, 1);
    const Array zu = dense(c, "zu", n, SIZE_MAX);
    const std::size_t s = zu.cols;
    const Array zv = dense(c, "zv", N, s);
    const Q zn = read_q(c.cert.at("z_norm_sq", c.where), c.where + ".z_norm_sq");
    const Json& cl = c.cert.at("claims", c.where);
    const auto [q_lo, q_hi] = claim_interval(cl, "q", c.where + ".claims");
    const auto [t_lo, t_hi] = claim_interval(cl, "tau", c.where + ".claims");
    const auto [k_lo, k_hi] = claim_interval(cl, "kappa", c.where + ".claims");
    Outcome o;
    Verdict exact_parts = Verdict::verified;
    // kappa through the gauge.
    const auto Gi = inverse(G.q, r);
    if (!Gi || k_hi < 0) {
        exact_parts = Verdict::refuted;
    } else {
        const QMat XG = mul(X.q, G.q, n, r, r), YG = mul(Y.q, transpose(*Gi, r, r), N, r, r);
        Q mx = 0, my = 0;
        for (std::size_t i = 0; i < n; ++i) {
            Q t = 0;
            for (std::size_t b = 0; b < r; ++b) t += XG[i * r + b] * XG[i * r + b];
            if (t > mx) mx = t;
        }
        for (std::size_t j = 0; j < N; ++j) {
            Q t = 0;
            for (std::size_t b = 0; b < r; ++b) t += YG[j * r + b] * YG[j * r + b];
            if (t > my) my = t;
        }
        o.exact["kappa_gauge_sq"] = mx * my;
        if (!(mx * my <= k_hi * k_hi)) exact_parts = Verdict::refuted;
    }
    // Probability vectors and the spectral-norm certificate of Z.
    bool prob = true;
    Q sl = 0, sm = 0;
    for (const auto& v : lam.q) prob = prob && v >= 0, sl += v;
    for (const auto& v : mu.q) prob = prob && v >= 0, sm += v;
    prob = prob && sl == 1 && sm == 1;
    const QMat P = mul(transpose(zu.q, n, s), zu.q, s, n, s), Qm = mul(transpose(zv.q, N, s), zv.q, s, N, s);
    const auto Pi = inverse(P, s);
    Verdict zok = Verdict::undecided;
    if (Pi) {
        QMat H(s * s);
        for (std::size_t t = 0; t < s * s; ++t) H[t] = zn * (*Pi)[t] - Qm[t];
        zok = positive_definite(H, s);
    }
    exact_parts = combine(exact_parts, combine(prob ? Verdict::verified : Verdict::refuted, zok));
    if (inst.kind == "matrix")
        for (const auto& v : inst.a.q)
            if (v <= 0) {
                o.verdict = Verdict::refuted;
                return o;
            }
    // The visible dimension (exact).
    std::optional<std::size_t> vd;
    if (const Json* v = cl.find("visible_dim")) {
        const std::size_t want = v->index(c.where + ".claims.visible_dim");
        const Interaction ia0(inst, X, Y, r);
        if (inst.kind == "qk") {
            const std::size_t d = inst.d;
            const QMat G1 = mul(transpose(ia0.qc, n, d), ia0.qc, d, n, d), G2 = mul(transpose(ia0.kc, N, d), ia0.kc, d, N, d);
            vd = rank(mul(G1, G2, d, d, d), d, d);
        } else if (inst.kind == "logits") {
            vd = rank(ia0.c, n, N);
        }
        if (vd) o.exact["visible_dim"] = Q(*vd);
        exact_parts = combine(exact_parts, !vd ? Verdict::undecided : *vd == want ? Verdict::verified : Verdict::refuted);
    }
    const bool has_ts = cl.find("tau_star") != nullptr;
    std::pair<Q, Q> ts{0, 0};
    if (has_ts) ts = claim_interval(cl, "tau_star", c.where + ".claims");
    const Interaction ia(inst, X, Y, r);
    auto intervals = [&]<class I>(I zero, std::map<std::string, Encl>& named) {
        // The dual bound.
        auto weighted = [&](const Array& z, const Array& w, const Array& F, std::size_t rows) {
            std::vector<I> M(s * r, zero);
            for (std::size_t i = 0; i < rows; ++i) {
                const I sw = isqrt(from_q<I>(w.q[i]));
                for (std::size_t a = 0; a < s; ++a) {
                    if (z.q[i * s + a] == 0) continue;
                    const I zw = from_q<I>(z.q[i * s + a]) * sw;
                    for (std::size_t b = 0; b < r; ++b) M[a * r + b] += zw * from_q<I>(F.q[i * r + b]);
                }
            }
            return M;
        };
        const std::vector<I> Mu = weighted(zu, lam, X, n), Mv = weighted(zv, mu, Y, N);
        I dot = zero;
        for (std::size_t t = 0; t < s * r; ++t) dot += Mu[t] * Mv[t];
        const I dual = dot / isqrt(from_q<I>(zn));
        named["kappa_dual"] = encl(dual);
        Verdict v = ge(dual, k_lo);
        std::optional<I> qv, tsv;
        for (std::size_t i = 0; i < n; ++i) {
            const std::vector<I> R = ia.residual<I>(i);
            I mx = R[0], mn = R[0];
            for (std::size_t j = 1; j < N; ++j) {
                mx = imax(mx, R[j]);
                mn = imin(mn, R[j]);
            }
            const I osc = mx - mn;
            qv = qv ? imax(*qv, osc) : osc;
            if (has_ts) {
                const auto [A, At] = ia.gibbs<I>(i, R);
                I e = zero;
                for (std::size_t j = 0; j < N; ++j) e += iabs(A[j] - At[j]);
                tsv = tsv ? imax(*tsv, e) : e;
            }
        }
        const I tau = from_double<I>(2) * itanh(*qv / from_double<I>(4));
        named["q"] = encl(*qv);
        named["tau"] = encl(tau);
        v = combine(v, combine(within(*qv, q_lo, q_hi), within(tau, t_lo, t_hi)));
        if (has_ts) {
            named["tau_star"] = encl(*tsv);
            v = combine(v, within(*tsv, ts.first, ts.second));
        }
        return v;
    };
    Verdict iv = intervals(DI::point(0), o.named);
    for (std::size_t tier = 0; tier < 3 && iv == Verdict::undecided; ++tier) {
        const mpfr_prec_t keep = get_mi_bits();
        set_mi_bits(ladder[tier]);
        o.named.clear();
        iv = intervals(to_mi(0.0), o.named);
        set_mi_bits(keep);
    }
    o.verdict = combine(exact_parts, iv);
    return o;
}

}  // namespace recheck
