// Upper-bound search (UNTRUSTED): the float attention matrix, its SVD
// (truncations are the first factors; the smooth minimax search in
// smooth.cpp refines them), and greedy row-interpolative candidates whose
// rows are fitted by least absolute deviations (IRLS).
#include "rankcert/producer/producer.hpp"

#include "rankcert/producer/linalg.hpp"

#include <glpk.h>

#include <algorithm>
#include <cmath>

namespace rankcert::producer {

double max_row_l1(const Mat& m) {
    if (m.cols() == 0 || m.rows() == 0) return 0;
    return m.cwiseAbs().rowwise().sum().maxCoeff();
}

FloatQK float_qk(const Instance& I, bool centre) {
    FloatQK f;
    const auto n = static_cast<Eigen::Index>(I.n), N = static_cast<Eigen::Index>(I.N), d = static_cast<Eigen::Index>(I.d());
    f.Q = Mat(n, d);
    f.K = Mat(N, d);
    for (Eigen::Index i = 0; i < n; ++i)
        for (Eigen::Index t = 0; t < d; ++t) f.Q(i, t) = fmpq_get_d(I.q(i, t).get());
    for (Eigen::Index j = 0; j < N; ++j)
        for (Eigen::Index t = 0; t < d; ++t) f.K(j, t) = fmpq_get_d(I.k(j, t).get());
    f.coef = fmpq_get_d(I.scale.q.get());
    if (I.scale.kind == Number::Kind::rsqrt) f.coef = 1 / std::sqrt(f.coef);
    f.coef *= fmpq_get_d(I.temperature.get());
    if (centre) {
        f.Q.rowwise() -= f.Q.colwise().mean();
        f.K.rowwise() -= f.K.colwise().mean();
    }
    return f;
}

Mat approximate_attention(const Instance& I) {
    const auto n = static_cast<Eigen::Index>(I.n), N = static_cast<Eigen::Index>(I.N);
    Mat A(n, N);
    if (I.kind == InstanceKind::matrix) {
        for (Eigen::Index i = 0; i < n; ++i)
            for (Eigen::Index j = 0; j < N; ++j) A(i, j) = fmpq_get_d(I.a(i, j).get());
        return A;
    }
    Mat S(n, N);
    if (I.kind == InstanceKind::logits) {
        for (Eigen::Index i = 0; i < n; ++i)
            for (Eigen::Index j = 0; j < N; ++j)
                S(i, j) = I.logits.is_neg_inf(i, j) ? -INFINITY : fmpq_get_d(I.logits(i, j).get());
    } else {
        const FloatQK f = float_qk(I);
        S = f.coef * f.Q * f.K.transpose();
        for (Eigen::Index i = 0; i < n; ++i)
            for (Eigen::Index j = 0; j < N; ++j) {
                if (!I.key_bias.empty()) S(i, j) += fmpq_get_d(I.key_bias[j].get());
                if (!I.allowed(i, j)) S(i, j) = -INFINITY;
            }
    }
    // Logits beyond the double range (exact inputs like 1e400, or q.k
    // overflowing): clamped to +-1e300, where the float softmax is already
    // one-hot, so the search gets the right matrix to float precision; a NaN
    // (inf - inf in the product) has no float stand-in and is refused.
    for (Eigen::Index i = 0; i < n; ++i)
        for (Eigen::Index j = 0; j < N; ++j) {
            double& s = S(i, j);
            if (std::isnan(s))
                throw InputError("instance: the logit of row " + std::to_string(i) + ", key " + std::to_string(j) +
                                 " is beyond the double range (its float product is undefined); rescale q and k");
            if (std::isinf(s) && s > 0) s = 1e300;
            else if (std::isinf(s) && (I.kind != InstanceKind::logits || !I.logits.is_neg_inf(i, j)) && I.allowed(i, j)) s = -1e300;
        }
    for (Eigen::Index i = 0; i < n; ++i) {
        const double mx = S.row(i).maxCoeff();
        double sum = 0;
        for (Eigen::Index j = 0; j < N; ++j) {
            A(i, j) = std::isinf(S(i, j)) ? 0.0 : std::exp(S(i, j) - mx);
            sum += A(i, j);
        }
        A.row(i) /= sum;
    }
    return A;
}

Vec lad_fit(const Mat& W, const Vec& a, const Vec& x0, int iterations) {
    // IRLS for min ||a - W x||_1: weights 1 / max(|r_j|, delta).
    const auto k = W.cols();
    if (k == 0) return Vec(0);
    Vec x = x0, best = x0;
    double best_err = (a - W * x).cwiseAbs().sum();
    double delta = std::max(1e-12, best_err / static_cast<double>(std::max<Eigen::Index>(1, W.rows())) * 1e-3);
    for (int it = 0; it < iterations; ++it) {
        Vec r = a - W * x;
        Vec w = r.cwiseAbs().cwiseMax(delta).cwiseInverse();
        Mat G = W.transpose() * w.asDiagonal() * W;
        G.diagonal().array() += 1e-14 * (G.diagonal().array().abs().maxCoeff() + 1e-300);
        Vec rhs = W.transpose() * w.cwiseProduct(a);
        Vec xn = G.ldlt().solve(rhs);
        if (!xn.allFinite()) break;
        double e = (a - W * xn).cwiseAbs().sum();
        x = xn;
        if (e < best_err) {
            best_err = e;
            best = xn;
        }
        delta = std::max(delta * 0.5, 1e-15);
    }
    return best;
}

std::optional<Vec> lad_lp(const Mat& W, const Vec& a, double seconds, const Vec* weights) {
    // Columns: u (k, free), then t (N, >= 0), minimising sum_j w_j t_j
    // subject to W_j u + t_j >= a_j and -W_j u + t_j >= -a_j for every j.
    const int k = static_cast<int>(W.cols()), N = static_cast<int>(W.rows());
    if (k == 0) return Vec(0);
    if (!W.allFinite() || !a.allFinite() || (weights && !weights->allFinite())) return std::nullopt;  // (GLPK aborts on a non-finite bound)
    glp_prob* lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, k + N);
    for (int c = 1; c <= k; ++c) glp_set_col_bnds(lp, c, GLP_FR, 0, 0);
    for (int j = 1; j <= N; ++j) {
        glp_set_col_bnds(lp, k + j, GLP_LO, 0, 0);
        glp_set_obj_coef(lp, k + j, weights ? (*weights)[j - 1] : 1.0);
    }
    glp_add_rows(lp, 2 * N);
    std::vector<int> ia(1), ja(1);
    std::vector<double> ar(1);
    for (int j = 0; j < N; ++j) {
        for (int s = 0; s < 2; ++s) {
            const int row = 2 * j + s + 1;
            const double sign = s == 0 ? 1 : -1;
            glp_set_row_bnds(lp, row, GLP_LO, sign * a[j], 0);
            for (int c = 0; c < k; ++c) {
                if (W(j, c) == 0) continue;
                ia.push_back(row);
                ja.push_back(c + 1);
                ar.push_back(sign * W(j, c));
            }
            ia.push_back(row);
            ja.push_back(k + j + 1);
            ar.push_back(1);
        }
    }
    glp_load_matrix(lp, static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.meth = GLP_DUALP;
    if (seconds > 0) parm.tm_lim = static_cast<int>(std::min(seconds * 1000, 1e9));
    std::optional<Vec> u;
    if (glp_simplex(lp, &parm) == 0 && glp_get_status(lp) == GLP_OPT) {
        u = Vec(k);
        for (int c = 0; c < k; ++c) (*u)[c] = glp_get_col_prim(lp, c + 1);
    }
    glp_delete_prob(lp);
    return u;
}

UpperSearch::UpperSearch(const Mat& A, const UpperOptions& opt) : A_(A), opt_(opt) {
    // LAPACK's divide-and-conquer SVD (dgesdd, through OpenBLAS; linalg.cpp):
    // about 23 s for 4096 x 4096 on two cores, against minutes for Eigen's BDCSVD.
    ThinSvd svd = thin_svd(A);
    sv_ = std::move(svd.s);
    Usv_ = svd.U * sv_.asDiagonal();
    Vsv_ = std::move(svd.V);
}

FactorCandidate UpperSearch::svd_factor(std::size_t k) const {
    const auto kk = static_cast<Eigen::Index>(k);
    FactorCandidate c;
    c.k = k;
    c.method = "svd";
    const Vec s = sv_.head(kk).cwiseSqrt().cwiseInverse().unaryExpr([](double v) { return std::isfinite(v) ? v : 0.0; });
    c.U = Usv_.leftCols(kk) * s.asDiagonal();
    c.W = Vsv_.leftCols(kk) * sv_.head(kk).cwiseSqrt().asDiagonal();
    c.float_error = k ? max_row_l1(A_ - c.U * c.W.transpose()) : max_row_l1(A_);
    return c;
}

std::size_t UpperSearch::least_svd_rank(double target) const {
    // Row l2 residuals of every truncation, from the SVD alone (O(n r)):
    // ||A_i - (U_k S_k V_k^T)_i||_2^2 = ||A_i||^2 - sum_{t<k} (U_it s_t)^2.
    // Since l2 <= l1 <= sqrt(support) l2 for each row, they bracket the
    // least rank; the bisection then runs inside [lo, hi] only, each probe
    // in blocks of rows that stop at the first row over the target.
    const auto n = A_.rows(), r = Usv_.cols();
    Vec left = A_.rowwise().squaredNorm();
    std::vector<Eigen::Index> support(static_cast<std::size_t>(n));
    for (Eigen::Index i = 0; i < n; ++i) support[static_cast<std::size_t>(i)] = (A_.row(i).array() != 0).count();
    std::size_t lo = static_cast<std::size_t>(r), hi = static_cast<std::size_t>(r);
    for (Eigen::Index k = 0; k <= r; ++k) {
        double l2 = 0, l1 = 0;
        for (Eigen::Index i = 0; i < n; ++i) {
            const double res = std::sqrt(std::max(0.0, left(i)));
            l2 = std::max(l2, res);
            l1 = std::max(l1, res * std::sqrt(static_cast<double>(support[static_cast<std::size_t>(i)])));
        }
        if (l2 <= target && lo == static_cast<std::size_t>(r)) lo = static_cast<std::size_t>(k);
        if (l1 <= target * 0.999) {  // (a little room for rounding in the residual formula)
            hi = static_cast<std::size_t>(k);
            break;
        }
        if (k < r) left -= Usv_.col(k).cwiseAbs2();
    }
    lo = std::min(lo, hi);
    auto meets = [&](std::size_t k) {
        const auto kk = static_cast<Eigen::Index>(k);
        for (Eigen::Index b = 0; b < n; b += 256) {
            const Eigen::Index rows = std::min<Eigen::Index>(256, n - b);
            const Mat E = kk ? Mat(A_.middleRows(b, rows) - Usv_.middleRows(b, rows).leftCols(kk) * Vsv_.leftCols(kk).transpose())
                             : Mat(A_.middleRows(b, rows));
            if (E.cwiseAbs().rowwise().sum().maxCoeff() > target) return false;
        }
        return true;
    };
    while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        if (meets(mid)) hi = mid;
        else lo = mid + 1;
    }
    return hi;
}

double UpperSearch::svd_error(std::size_t k) const {
    const auto kk = static_cast<Eigen::Index>(k);
    if (k == 0) return max_row_l1(A_);
    return max_row_l1(A_ - Usv_.leftCols(kk) * Vsv_.leftCols(kk).transpose());
}

RowInterpCandidate UpperSearch::greedy_row_interpolative(double target, const std::vector<std::size_t>& seed) const {
    // Rows in column-pivoted QR order of A^T (after the seed rows, e.g. the
    // rows of a lower-bound certificate); a row joins I when its L1 fit onto
    // the span of the rows already in I misses the target.  Rows checked
    // earlier stay within the target, since the span only grows.
    Eigen::ColPivHouseholderQR<Mat> qr(A_.transpose());
    const auto n = A_.rows(), N = A_.cols();
    Eigen::VectorXi perm(n);
    {
        std::vector<char> used(static_cast<std::size_t>(n), 0);
        Eigen::Index s = 0;
        for (auto r : seed)
            if (r < static_cast<std::size_t>(n) && !used[r]) { perm(s++) = static_cast<int>(r); used[r] = 1; }
        const auto& qp = qr.colsPermutation().indices();
        for (Eigen::Index t = 0; t < n; ++t)
            if (!used[static_cast<std::size_t>(qp(t))]) perm(s++) = qp(t);
    }
    RowInterpCandidate c;
    Mat basis(N, 0);
    std::vector<std::pair<Eigen::Index, Vec>> fits;  // row, coefficients over the basis at the time
    double worst = 0;
    for (Eigen::Index s = 0; s < n; ++s) {
        if (opt_.deadline.expired()) {  // out of time: no candidate
            RowInterpCandidate none;
            none.float_error = INFINITY;
            return none;
        }
        const Eigen::Index i = perm(s);
        Vec a = A_.row(i).transpose();
        double e = a.cwiseAbs().sum();
        Vec x = Vec::Zero(basis.cols());
        if (basis.cols() > 0 && e > target) {
            x = basis.colPivHouseholderQr().solve(a);
            e = (a - basis * x).cwiseAbs().sum();
            if (e > target) {
                x = lad_fit(basis, a, x, opt_.lad_iterations);
                e = (a - basis * x).cwiseAbs().sum();
            }
        }
        if (e > target) {
            c.rows.push_back(static_cast<std::size_t>(i));
            basis.conservativeResize(N, basis.cols() + 1);
            basis.col(basis.cols() - 1) = a;
            x = Vec::Zero(basis.cols());
            x(basis.cols() - 1) = 1;
            e = 0;
        }
        worst = std::max(worst, e);
        fits.emplace_back(i, x);
        if (opt_.progress && s % 32 == 31)
            opt_.progress("interpolative greedy: row " + std::to_string(s + 1) + "/" + std::to_string(n) + ", " +
                          std::to_string(c.rows.size()) + " rows selected");
    }
    const auto k = static_cast<Eigen::Index>(c.rows.size());
    c.X = Mat::Zero(n, k);
    for (auto& [i, x] : fits) c.X.row(i).head(x.size()) = x.transpose();
    c.float_error = worst;
    return c;
}

}  // namespace rankcert::producer
