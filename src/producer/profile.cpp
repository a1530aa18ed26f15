// `rankcert profile` search (UNTRUSTED): the retained T, a gauge for the
// upper end of kappa, dual weights for its lower end.
//
// T is the rank-r truncated SVD of C.  The gauge G = M^{1/2} comes from a
// fixed-point iteration on M > 0 minimising max_i x_i M x_i^T * max_j y_j M^{-1} y_j^T
// with the maxima smoothed by softmax weights a, b of growing sharpness: the
// stationary point of log(sum a_i x_i M x_i^T) + log(sum b_j y_j M^{-1} y_j^T)
// is the matrix geometric mean M = A^{-1} # B (A = X^T D_a X, B = Y^T D_b Y).
// The final weights serve as the dual lambda, mu; Z = U V^T from the SVD of
// D_lambda^{1/2} T D_mu^{1/2}.  The checker decides every stated enclosure.
#include "rankcert/producer/linalg.hpp"
#include "rankcert/producer/profile.hpp"


#include <cmath>

namespace rankcert::producer {

namespace {

Mat sym_pow(const Mat& S, double p) {
    const SymEig es = sym_eig(S);
    Vec ev = es.values.cwiseMax(1e-300);
    return es.vectors * ev.array().pow(p).matrix().asDiagonal() * es.vectors.transpose();
}

Vec softmax_weights(const Vec& v, double sharp) {
    const double mx = v.maxCoeff();
    Vec w = ((v.array() / std::max(mx, 1e-300) - 1) * sharp).exp();
    return w / w.sum();
}

// Exact rational probability vector close to w: p_i / sum p, p_i integers.
json probability_json(const Vec& w) {
    std::vector<long long> p(static_cast<std::size_t>(w.size()));
    long long total = 0;
    for (Eigen::Index i = 0; i < w.size(); ++i) {
        p[static_cast<std::size_t>(i)] = std::llround(std::max(0.0, w(i)) * 1073741824.0);
        total += p[static_cast<std::size_t>(i)];
    }
    if (total == 0) {
        p[0] = 1;
        total = 1;
    }
    json data = json::array();
    for (auto x : p) data.push_back(Rat(static_cast<long>(x), static_cast<unsigned long>(total)).str());
    return {{"shape", {w.size()}}, {"data", data}};
}

}  // namespace

Mat interaction(const Instance& I) {
    const auto n = static_cast<Eigen::Index>(I.n), N = static_cast<Eigen::Index>(I.N);
    Mat S(n, N);
    if (I.kind == InstanceKind::qk) {
        const FloatQK f = float_qk(I, true);
        return f.coef * f.Q * f.K.transpose();
    }
    for (Eigen::Index i = 0; i < n; ++i)
        for (Eigen::Index j = 0; j < N; ++j)
            S(i, j) = I.kind == InstanceKind::logits ? fmpq_get_d(I.logits(i, j).get()) : std::log(fmpq_get_d(I.a(i, j).get()));
    S.rowwise() -= S.colwise().mean();
    S.colwise() -= S.rowwise().mean();
    return S;
}

ProfileCandidate profile_candidate(const Mat& C, std::size_t r, const std::string& dir, const std::string& stem,
                                   const Mat* A) {
    ProfileCandidate pc;
    pc.r = r;
    const auto rr = static_cast<Eigen::Index>(r);
    const ThinSvd svd = thin_svd(C);
    Vec sv = svd.s.head(rr).cwiseSqrt();
    Mat X = svd.U.leftCols(rr) * sv.asDiagonal();
    Mat Y = svd.V.leftCols(rr) * sv.asDiagonal();
    Mat T = X * Y.transpose();
    const Mat R = C - T;
    pc.q = 0;
    for (Eigen::Index i = 0; i < R.rows(); ++i) pc.q = std::max(pc.q, R.row(i).maxCoeff() - R.row(i).minCoeff());
    pc.tau = 2 * std::tanh(pc.q / 4);
    // The exact induced error max_i |A_i - A~_i|_1, A~_i = softmax(log A_i - (C - T)_i).
    if (A) {
        pc.tau_star = 0;
        for (Eigen::Index i = 0; i < R.rows(); ++i) {
            Vec l = (A->row(i).array().log() - R.row(i).array()).matrix().transpose();
            l.array() -= l.maxCoeff();
            Vec e = l.array().exp();
            e /= e.sum();
            pc.tau_star = std::max(pc.tau_star, (A->row(i).transpose() - e).cwiseAbs().sum());
        }
    }
    // Gauge by the smoothed fixed point; keep the best gauge seen (the
    // identity, i.e. the balanced SVD factors, to start with).
    auto gauge_value = [&](const Mat& G) {
        const Mat Gi = G.inverse();
        const double v = std::sqrt((X * G).rowwise().squaredNorm().maxCoeff() * (Y * Gi.transpose()).rowwise().squaredNorm().maxCoeff());
        return std::isfinite(v) ? v : INFINITY;
    };
    Mat M = Mat::Identity(rr, rr), bestG = Mat::Identity(rr, rr);
    double best = gauge_value(bestG);
    Vec a, b;
    for (int it = 0; it < 200; ++it) {
        const double sharp = 5 + it * 2.5;
        Vec xs = (X * M).cwiseProduct(X).rowwise().sum();
        Vec ys = (Y * M.inverse()).cwiseProduct(Y).rowwise().sum();
        a = softmax_weights(xs, sharp);
        b = softmax_weights(ys, sharp);
        Mat A = X.transpose() * a.asDiagonal() * X + 1e-14 * Mat::Identity(rr, rr);
        Mat B = Y.transpose() * b.asDiagonal() * Y + 1e-14 * Mat::Identity(rr, rr);
        // M = A^{-1} # B = A^{-1/2} (A^{1/2} B A^{1/2})^{1/2} A^{-1/2}
        Mat Ah = sym_pow(A, 0.5), Aih = sym_pow(A, -0.5);
        Mat Mn = Aih * sym_pow(Ah * B * Ah, 0.5) * Aih;
        if (!Mn.allFinite()) break;
        M = 0.5 * (Mn + Mn.transpose());
        M /= std::max(M.diagonal().maxCoeff(), 1e-300);  // scale-free: keep M bounded
        const Mat G = sym_pow(M, 0.5);
        const double v = gauge_value(G);
        if (v < best) {
            best = v;
            bestG = G;
        }
    }
    // Dual: maximise ||D_a^{1/2} T D_b^{1/2}||_* over probability vectors by
    // the fixed point a_i <- (U S U^T)_ii / tr S, b_j <- (V S V^T)_jj / tr S
    // (the KKT condition of the maximum), started at the smoothed weights.
    a = (a + Vec::Constant(a.size(), 1.0 / static_cast<double>(a.size()))) / 2;
    b = (b + Vec::Constant(b.size(), 1.0 / static_cast<double>(b.size()))) / 2;
    double last = 0;
    for (int it = 0; it < 300; ++it) {
        Mat D = a.cwiseSqrt().asDiagonal() * T * b.cwiseSqrt().asDiagonal();
        const ThinSvd dsvd = thin_svd(D);
        const Vec s = dsvd.s.head(rr);
        const double tr = s.sum();
        if (!(tr > 0)) break;
        if (it > 20 && tr - last < 1e-9 * tr) break;  // converged
        last = tr;
        const Mat U = dsvd.U.leftCols(rr), V = dsvd.V.leftCols(rr);
        a = (U.array().square().matrix() * s) / tr;
        b = (V.array().square().matrix() * s) / tr;
    }
    // The gauge that is stationary for these weights: M = A^{-1} # B.
    {
        Mat A = X.transpose() * a.asDiagonal() * X + 1e-14 * Mat::Identity(rr, rr);
        Mat B = Y.transpose() * b.asDiagonal() * Y + 1e-14 * Mat::Identity(rr, rr);
        Mat Ah = sym_pow(A, 0.5), Aih = sym_pow(A, -0.5);
        Mat Mn = Aih * sym_pow(Ah * B * Ah, 0.5) * Aih;
        if (Mn.allFinite()) {
            const Mat Gd = sym_pow(0.5 * (Mn + Mn.transpose()), 0.5);
            const double v = gauge_value(Gd);
            if (v < best) {
                best = v;
                bestG = Gd;
            }
        }
    }
    const Mat G = bestG;
    pc.kappa_up = best;
    Mat D = a.cwiseSqrt().asDiagonal() * T * b.cwiseSqrt().asDiagonal();
    const ThinSvd dsvd = thin_svd(D);
    Mat Zu = dsvd.U.leftCols(rr), Zv = dsvd.V.leftCols(rr);
    pc.kappa_low = dsvd.s.head(rr).sum();
    const double zsq = 1 + 1e-9;
    const double lo_q = pc.q * (1 - 1e-6) - 1e-12, hi_q = pc.q * (1 + 1e-6) + 1e-12;
    const double lo_t = 2 * std::tanh(lo_q / 4) - 1e-12, hi_t = 2 * std::tanh(hi_q / 4) + 1e-12;
    pc.cert = {{"bound", "profile"},
               {"kind", "profile"},
               {"r", r},
               {"x", array_json(X, dir, stem + ".x.npy")},
               {"y", array_json(Y, dir, stem + ".y.npy")},
               {"gauge", array_json(G, dir, stem + ".gauge.npy")},
               {"lambda", probability_json(a)},
               {"mu", probability_json(b)},
               {"zu", array_json(Zu, dir, stem + ".zu.npy")},
               {"zv", array_json(Zv, dir, stem + ".zv.npy")},
               {"z_norm_sq", exact_text(zsq)},
               {"claims",
                {{"q", {exact_text(lo_q), exact_text(hi_q)}},
                 {"tau", {exact_text(lo_t), exact_text(hi_t)}},
                 {"kappa", {exact_text(pc.kappa_low * (1 - 1e-4)), exact_text(pc.kappa_up * (1 + 1e-6))}}}}};
    if (pc.tau_star >= 0)
        pc.cert["claims"]["tau_star"] = {exact_text(pc.tau_star * (1 - 1e-6) - 1e-12), exact_text(pc.tau_star * (1 + 1e-6) + 1e-12)};
    return pc;
}

double native_size(const Instance& I, const Mat& C, std::size_t r) {
    if (I.kind != InstanceKind::qk) return -1;
    // T_r = U_r U_r^T C = (U_r U_r^T Q') Pi_W (K')^T c, where W is the row
    // space of Q'' = U_r U_r^T Q' (dimension <= r) and Pi_W its orthogonal
    // projector in the given coordinates: with an orthonormal basis B of W,
    // T_r = (sqrt(c) Q'' B)(sqrt(c) K' B)^T, a factorisation of inner
    // dimension r in the given Euclidean coordinates.
    const FloatQK f = float_qk(I, true);
    const ThinSvd svd = thin_svd(C, true, false);
    const Mat Ur = svd.U.leftCols(static_cast<Eigen::Index>(r));
    const Mat Q2 = Ur * (Ur.transpose() * f.Q);
    const ThinSvd qs = thin_svd(Q2, false, true);
    const Mat B = qs.V.leftCols(std::min<Eigen::Index>(static_cast<Eigen::Index>(r), qs.V.cols()));
    return f.coef * std::sqrt((Q2 * B).rowwise().squaredNorm().maxCoeff() * (f.K * B).rowwise().squaredNorm().maxCoeff());
}

}  // namespace rankcert::producer
