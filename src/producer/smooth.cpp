// Upper-bound search by smooth minimax (UNTRUSTED): L-BFGS on both factors.
//
// The quantity to push below eps is the worst row l1 error of A - U W^T, a
// maximum of sums of absolute values: not differentiable.  It is replaced by
//   F(U, W) = (1/tau) log sum_i exp(tau s_i),
//   s_i = (1/t) sum_j (sqrt(E_ij^2 + mu^2) - mu),    E = A - U W^T,
// which is smooth, never above max_i (row error_i / t) + log(n)/tau and
// never below max_i (row error_i - N mu) / t.  Stages raise tau and lower mu
// so that F approaches the true objective; each stage runs L-BFGS (memory
// 8, Armijo backtracking).  The true row errors are computed with every
// function value, and the search stops at the first iterate whose worst row
// error is at most the target: it is handed to the checker as it is.
//
// Cost per iteration: about three n x N x k products (E, D W, D^T P U) in
// single precision and one pass over the n x N entries (row sums in double,
// the derivatives D in E's storage); memory: A and E in single precision,
// one n x N matrix in double for the check below, and the history,
// 16 (n + N) k numbers, reused from step to step.  An iterate whose
// single-precision worst row error is within 1e-3 x target of the target,
// and below that of the last iterate so checked, is decided by a
// double-precision product; only that decides success.  At 512 x 512,
// rank 172, one thread: 0.60 x the time per step of the double-precision
// version with two passes and per-step allocations (docs/benchmarks.md).
#include "rankcert/producer/linalg.hpp"
#include "rankcert/producer/producer.hpp"

#include <Eigen/QR>

#include <cmath>
#include <deque>
#include <random>
#include <vector>

namespace rankcert::producer {

namespace {

struct Pair {
    Mat U, W;
};

double dot(const Pair& a, const Pair& b) {
    return (a.U.array() * b.U.array()).sum() + (a.W.array() * b.W.array()).sum();
}

// The products and the residual in single precision (sgemm does twice the
// flops of dgemm per cycle), the row sums and everything else in double.
// A residual entry is then off by about k 2^-24 times the size of the
// products' terms, a row's l1 error by far less than the 1e-3 x eps window
// below which exact_worst() decides in double.
class Objective {
public:
    Objective(const Mat& A, double t)
        : A_(A), Af_(A.cast<float>()), t_(t), E_(A.rows(), A.cols()), rows_(A.rows()), l1_(A.rows()) {}
    double mu = 1e-4, tau = 10;

    // F at (U, W).  Keeps, for gradient(), the derivative of every entry's
    // smoothed |.| (in place of E: one sqrt and one division per entry, and
    // the gradient needs no pass of its own over the n x N entries) and the
    // row weights.  The pass runs down the columns (E is column-major).
    double value(const Pair& x) {
        Uf_ = x.U.cast<float>();
        Wf_ = x.W.cast<float>();
        E_.noalias() = Af_;
        E_.noalias() -= Uf_ * Wf_.transpose();
        const auto n = A_.rows(), N = A_.cols();
        rows_.setZero();
        l1_.setZero();
        const double mu2 = mu * mu;
        for (Eigen::Index j = 0; j < N; ++j) {
            float* e = E_.col(j).data();
            for (Eigen::Index i = 0; i < n; ++i) {
                const double ei = e[i], r = std::sqrt(ei * ei + mu2);
                rows_[i] += r - mu;
                l1_[i] += std::abs(ei);
                e[i] = static_cast<float>(ei / r);
            }
        }
        rows_ /= t_;
        worst_ = l1_.maxCoeff();
        const double top = rows_.maxCoeff();
        p_ = (tau * (rows_.array() - top)).exp();
        const double z = p_.sum();
        p_ /= z;
        return top + std::log(z) / tau;
    }
    // The gradient at the point of the last value() call, into g:
    // with D the derivatives and P = diag(p) / t,
    // dF/dU = -P D W and dF/dW = -D^T P U.
    void gradient(const Pair& x, Pair& g) {
        const Vec w = p_ / t_;
        Gf_.noalias() = E_ * Wf_;
        g.U = Gf_.cast<double>();
        g.U.array().colwise() *= -w.array();
        Sf_ = (w.asDiagonal() * x.U).cast<float>();
        Gf_.noalias() = E_.transpose() * Sf_;
        g.W = -Gf_.cast<double>();
    }
    // The single-precision worst row l1 error of the last value() call.
    double worst() const { return worst_; }
    // The worst row l1 error of A - U W^T in double precision.
    double exact_worst(const Pair& x) {
        D_.noalias() = A_;
        D_.noalias() -= x.U * x.W.transpose();
        return D_.cwiseAbs().rowwise().sum().maxCoeff();
    }

private:
    const Mat& A_;
    Eigen::MatrixXf Af_;
    double t_;
    Eigen::MatrixXf E_, Uf_, Wf_, Gf_, Sf_;
    Mat D_;
    Vec rows_, l1_, p_;
    double worst_ = 0;
};

// Polish: the last stage still smooths every |E_ij| by mu = 0.01 target / N
// and the maximum over rows by tau = 1000, so a near miss is not a minimum
// of the true worst row error.  With W fixed each row's error is its own
// least-absolute-deviation problem; the rows above the target are refitted
// exactly (lad_lp) and a row keeps its refit only where it is better.  True
// when every row is then at most the target, in double precision (best
// then holds the refitted factor and its error).
bool polish(const Mat& A, FactorCandidate& best, double target, const Deadline& dl) {
    Mat U = best.U;
    const Mat& W = best.W;
    Vec err = (A - U * W.transpose()).cwiseAbs().rowwise().sum();
    for (Eigen::Index i = 0; i < A.rows(); ++i) {
        if (!(err[i] > target)) continue;
        if (dl.expired()) return false;
        const Vec a = A.row(i).transpose();
        const auto u = lad_lp(W, a, std::min(dl.left(), 10.0));
        if (!u) return false;
        const double e = (a - W * *u).cwiseAbs().sum();
        if (!(e < err[i])) return false;  // (the smooth fit was already the row's optimum)
        U.row(i) = u->transpose();
        err[i] = e;
        if (!(e <= target)) return false;
    }
    const double worst = (A - U * W.transpose()).cwiseAbs().rowwise().sum().maxCoeff();
    if (!(worst <= target)) return false;
    best.U = std::move(U);
    best.float_error = worst;
    best.method = "smooth-minimax, rows refitted";
    return true;
}

}  // namespace

void truncate_factor(const Mat& U, const Mat& W, std::size_t k, Mat& Uk, Mat& Wk) {
    const auto kk = static_cast<Eigen::Index>(k);
    Eigen::HouseholderQR<Mat> qu(U), qw(W);
    const auto r = U.cols();
    const Mat Qu = qu.householderQ() * Mat::Identity(U.rows(), r);
    const Mat Qw = qw.householderQ() * Mat::Identity(W.rows(), r);
    const Mat Ru = qu.matrixQR().topRows(r).triangularView<Eigen::Upper>();
    const Mat Rw = qw.matrixQR().topRows(r).triangularView<Eigen::Upper>();
    const ThinSvd svd = thin_svd(Ru * Rw.transpose());
    const Vec s = svd.s.head(kk).cwiseSqrt();
    Uk = Qu * svd.U.leftCols(kk) * s.asDiagonal();
    Wk = Qw * svd.V.leftCols(kk) * s.asDiagonal();
}

void start_factor(const Mat& A, const Mat& U, const Mat& W, std::size_t k, int variant, Mat& Uk, Mat& Wk,
                  std::uint64_t seed) {
    const auto kk = static_cast<Eigen::Index>(k);
    if (variant < 3) {
        truncate_factor(U, W, k, Uk, Wk);
        if (variant == 0) return;
        // Balanced: column c of both is scaled by sqrt(s_c); move it all to one side.
        for (Eigen::Index c = 0; c < kk; ++c) {
            const double h = Wk.col(c).norm();  // = sqrt(s_c)
            if (!(h > 0)) continue;
            const double f = variant == 1 ? h : 1 / h;
            Uk.col(c) *= f;
            Wk.col(c) /= f;
        }
        return;
    }
    // Entries of U W^T are sums of k products of two N(0, c^2) numbers:
    // root mean square c^2 sqrt(k), set to A's.
    const double rms = std::sqrt(A.squaredNorm() / static_cast<double>(std::max<Eigen::Index>(A.size(), 1)));
    const double c = std::sqrt(rms / std::sqrt(static_cast<double>(std::max<std::size_t>(k, 1))));
    std::seed_seq seq{static_cast<std::uint64_t>(variant), seed};
    std::mt19937_64 gen(seq);
    std::normal_distribution<double> z(0.0, c);
    Uk.resize(A.rows(), kk);
    Wk.resize(A.cols(), kk);
    for (Eigen::Index j = 0; j < kk; ++j)
        for (Eigen::Index i = 0; i < Uk.rows(); ++i) Uk(i, j) = z(gen);
    for (Eigen::Index j = 0; j < kk; ++j)
        for (Eigen::Index i = 0; i < Wk.rows(); ++i) Wk(i, j) = z(gen);
}

void kick_factor(const Mat& U, const Mat& W, int count, std::uint64_t seed, Mat& Uk, Mat& Wk) {
    // Balanced first (the same product), so that one relative size fits both.
    truncate_factor(U, W, static_cast<std::size_t>(U.cols()), Uk, Wk);
    const double s = 0.02 * static_cast<double>(1 + (std::max(count, 1) - 1) % 3);
    std::seed_seq seq{static_cast<std::uint64_t>(count), seed, std::uint64_t{0x6b69636b}};
    std::mt19937_64 gen(seq);
    std::normal_distribution<double> z(0.0, 1.0);
    for (Mat* M : {&Uk, &Wk}) {
        const double rms = std::sqrt(M->squaredNorm() / static_cast<double>(std::max<Eigen::Index>(M->size(), 1)));
        for (Eigen::Index j = 0; j < M->cols(); ++j)
            for (Eigen::Index i = 0; i < M->rows(); ++i) (*M)(i, j) += s * rms * z(gen);
    }
}

std::optional<FactorCandidate> smooth_factor(const Mat& A, Mat U, Mat W, double target, const SmoothOptions& opt) {
    const auto N = A.cols();
    const std::size_t k = static_cast<std::size_t>(U.cols());
    FactorCandidate best;
    best.k = k;
    best.method = "smooth-minimax";
    best.float_error = INFINITY;
    if (k == 0) return std::nullopt;
    Objective f(A, target);
    Pair x{std::move(U), std::move(W)};
    int total = 0;
    if (opt.out_of_steps) *opt.out_of_steps = false;
    std::vector<double> checkpoints;  // worst row error / target every 25 steps
    int extra = 0, extended = 0;      // steps added to the last stage, and how often
    // Keep x when the last value() found a smaller worst row error.
    // Near the target the double-precision error decides (done).
    // (A plateau just above the target would otherwise pay a double
    // product at every step.)
    bool done = false;
    double checked = INFINITY;  // single-precision error of the last iterate checked in double
    auto keep_if_best = [&](const Pair& at) {
        if (f.worst() <= target * (1 + 1e-3) && f.worst() < checked) {
            checked = f.worst();
            if (const double e = f.exact_worst(at); e <= target) {
                best.float_error = e;
                best.U = at.U;
                best.W = at.W;
                done = true;
                return;
            }
        }
        if (f.worst() < best.float_error) {
            best.float_error = f.worst();
            best.U = at.U;
            best.W = at.W;
            if (opt.best_error) *opt.best_error = std::min(*opt.best_error, best.float_error);
            if (opt.best_miss && best.float_error < opt.best_miss->float_error) *opt.best_miss = best;
        }
    };
    // Stages: (tau, mu * N / target).
    static constexpr double stages[][2] = {{8, 1.0}, {30, 0.3}, {100, 0.1}, {300, 0.03}, {1000, 0.01}};
    for (std::size_t stage = static_cast<std::size_t>(std::clamp(opt.first_stage, 0, 4)); stage < std::size(stages); ++stage) {
        const auto& st = stages[stage];
        f.tau = st[0];
        f.mu = st[1] * target / static_cast<double>(N);
        double fx = f.value(x);
        keep_if_best(x);
        if (done) break;
        Pair g, gn;
        f.gradient(x, g);
        // L-BFGS history (s, y, 1 / <y, s>), oldest first; the storage of a
        // dropped pair is reused, and so are the direction and trial point.
        struct Step {
            Pair s, y;
            double inv_ys;
        };
        std::deque<Step> hist;
        Pair d, xn;
        std::vector<double> alpha;
        const int cap = opt.iterations / static_cast<int>(std::size(stages));
        const bool last_stage = stage + 1 == std::size(stages);
        int stage_cap = cap;
        double last = fx;
        int stall = 0;
        for (int it = 0; it < stage_cap; ++it, ++total) {
            if (opt.deadline.expired()) return std::nullopt;
            // Two-loop recursion: d = -H g.
            d.U = -g.U;
            d.W = -g.W;
            alpha.assign(hist.size(), 0.0);
            for (std::size_t h = hist.size(); h-- > 0;) {
                const auto& [sh, yh, inv] = hist[h];
                alpha[h] = dot(sh, d) * inv;
                d.U -= alpha[h] * yh.U;
                d.W -= alpha[h] * yh.W;
            }
            double gamma = 1;
            if (!hist.empty()) gamma = 1 / (hist.back().inv_ys * dot(hist.back().y, hist.back().y));
            else gamma = 1e-2 / std::sqrt(std::max(dot(g, g), 1e-300));
            d.U *= gamma;
            d.W *= gamma;
            for (std::size_t h = 0; h < hist.size(); ++h) {
                const auto& [sh, yh, inv] = hist[h];
                const double beta = dot(yh, d) * inv;
                d.U += (alpha[h] - beta) * sh.U;
                d.W += (alpha[h] - beta) * sh.W;
            }
            double slope = dot(g, d);
            if (!(slope < 0)) {  // not a descent direction: restart from the gradient
                hist.clear();
                const double scale = 1e-2 / std::sqrt(std::max(dot(g, g), 1e-300));
                d.U = -scale * g.U;
                d.W = -scale * g.W;
                slope = dot(g, d);
            }
            // Armijo backtracking.
            double step = 1, fn = 0;
            bool accepted = false;
            for (int ls = 0; ls < 30; ++ls, step *= 0.5) {
                if (ls > 0 && opt.deadline.expired()) return std::nullopt;  // (each try is a product)
                xn.U = x.U + step * d.U;
                xn.W = x.W + step * d.W;
                fn = f.value(xn);
                if (std::isfinite(fn) && fn <= fx + 1e-4 * step * slope) {
                    accepted = true;
                    break;
                }
            }
            if (!accepted) break;
            keep_if_best(xn);
            if (done) break;
            f.gradient(xn, gn);
            Step nxt;
            if (hist.size() >= 8) {
                nxt = std::move(hist.front());
                hist.pop_front();
            }
            nxt.s.U = xn.U - x.U;
            nxt.s.W = xn.W - x.W;
            nxt.y.U = gn.U - g.U;
            nxt.y.W = gn.W - g.W;
            const double ys = dot(nxt.s, nxt.y);
            if (ys > 1e-300) {
                nxt.inv_ys = 1 / ys;
                hist.push_back(std::move(nxt));
            }
            std::swap(x, xn);
            std::swap(g, gn);
            fx = fn;
            // Give up on a rank whose error has stopped falling fast enough to
            // reach the target in the iterations left (plateaus above it are
            // the common way a too-small rank fails).  Only from the stage
            // tau = 300 on: in the smoother stages a plateau is the end of
            // the stage, and the next, sharper one moves the error again
            // (full512 L0 H0, eps 0.1, rank 295 from the SVD, 300 steps per
            // stage: worst row error 1.21 x target at the end of the first
            // stage, 1.05 at the end of the second, below target in the third).
            if (total % 25 == 0) {
                const double ratio = best.float_error / target;
                checkpoints.push_back(ratio);
                if (opt.give_up && f.tau >= 300 && checkpoints.size() >= 5) {
                    const double gained = checkpoints[checkpoints.size() - 3] - ratio;  // over 50 steps
                    const double left = static_cast<double>(opt.iterations + extra - total) / 50.0;
                    if (gained * std::max(left, 0.0) < (ratio - 1) * 0.5) return std::nullopt;  // a plateau
                }
            }
            if (opt.progress && total % 25 == 0)
                opt.progress("rank " + std::to_string(k) + ": L-BFGS step " + std::to_string(total) + ", worst row error " +
                             std::to_string(best.float_error / target) + " x target");
            // A stage ends when F has stopped moving.
            if (last - fx < 1e-6 * std::abs(last)) {
                if (++stall >= 5) break;
            } else {
                stall = 0;
            }
            last = fx;
            // Extension: the sharpest stage about to end at its cap, near
            // the target and still falling fast enough to get there in one
            // more cap's steps at the rate of the last 50, goes on (at most
            // `extensions` times; the plateau test above then counts the
            // added steps as left).  Measured on full512 L3 H0, eps 0.1:
            // rank 186 ended its 300 steps at 1.0053 x target, falling
            // 0.0077 in the last 50, and the descent went on at rank 190.
            if (last_stage && it + 1 == stage_cap && extended < opt.extensions && checkpoints.size() >= 3) {
                const double ratio = best.float_error / target;
                const double gained = checkpoints[checkpoints.size() - 3] - checkpoints.back();
                if (ratio <= opt.extend_within && gained > 0 && (ratio - 1) * 50 <= gained * cap) {
                    stage_cap += cap;
                    extra += cap;
                    ++extended;
                    if (opt.progress)
                        opt.progress("rank " + std::to_string(k) + ": " + std::to_string(cap) + " more steps at " +
                                     std::to_string(ratio) + " x target");
                }
            }
        }
        if (done) break;
    }
    // (One row's LP took 0.02 s at k = 67, N = 105, 0.1 s at 120 x 197 and
    // 2.3 s at 300 x 512: no polish above k N = 40000, i.e. at 512 tokens.)
    if (!done && opt.polish_within > 0 && best.float_error <= opt.polish_within * target && !opt.deadline.expired() &&
        static_cast<double>(k) * static_cast<double>(N) <= 40000 &&
        polish(A, best, target, opt.deadline)) {
        if (opt.progress) opt.progress("rank " + std::to_string(k) + ": exact row refits reach the target");
        return best;
    }
    if (!done) {
        // Every stage ran to its cap (none ended on a stall): more steps might help.
        if (opt.out_of_steps) *opt.out_of_steps = total >= opt.iterations - static_cast<int>(std::size(stages));
        return std::nullopt;
    }
    return best;
}

}  // namespace rankcert::producer
