// Neumann lower bounds by smooth minimax over all keys (UNTRUSTED).
//
// For rows I (m of them) the certificate value is
//   V(R) = max_t sum_u |(A_I R - I)_tu| + eps max_j sum_u |R_ju|,
// and r_eps(A) >= m once V(R) < 1 (docs/theory.md, "Neumann").  V is a sum
// of two maxima of row sums of absolute values; as in the factor search
// (smooth.cpp) each maximum is replaced by a log-sum-exp of smoothed row
// sums, sqrt(x^2 + mu^2) - mu, and minimised by L-BFGS over the whole
// N x m matrix R (every key, not a key support).  Rows are then admitted one
// at a time in causal order: the new row's column starts at the key where it
// stands out most, a short search decides whether V stays below 1 - margin,
// and the row is kept or dropped.  Cost per step: two m x N x m products;
// a candidate that fails costs opt.smooth_iterations (default 200) steps,
// one that succeeds stops at the first iterate below the 2% margin.
// Measured on stories260K heads over 94 tokens (eps 0.1, 20 s per head):
// L rose from 42/43/30 (greedy Neumann with cells, LP growth) to 48/53/40.
// Between passes, where rows x keys is small, R is replaced by the exact LP
// optimum over all keys (lower.cpp, interior point), which gives back the
// slack the smooth search's early stops used up, and the pass is repeated.
#include "rankcert/producer/linalg.hpp"
#include "rankcert/producer/producer.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>

namespace rankcert::producer {

namespace {

class NeumannObjective {
public:
    NeumannObjective(const Mat& AI, double eps) : AI_(AI), eps_(eps) {}
    double tau = 10, mu = 1e-3;

    double value(const Mat& R) {
        const auto m = AI_.rows();
        D_.noalias() = AI_ * R;
        D_.diagonal().array() -= 1.0;
        g_.resize(m);
        double delta = 0;
        for (Eigen::Index t = 0; t < m; ++t) {
            double s = 0, l1 = 0;
            for (Eigen::Index u = 0; u < m; ++u) {
                const double x = D_(t, u);
                s += std::sqrt(x * x + mu * mu) - mu;
                l1 += std::abs(x);
            }
            g_(t) = s;
            delta = std::max(delta, l1);
        }
        h_.resize(R.rows());
        double rho = 0;
        for (Eigen::Index j = 0; j < R.rows(); ++j) {
            double s = 0, l1 = 0;
            for (Eigen::Index u = 0; u < R.cols(); ++u) {
                const double x = R(j, u);
                s += std::sqrt(x * x + mu * mu) - mu;
                l1 += std::abs(x);
            }
            h_(j) = s;
            rho = std::max(rho, l1);
        }
        exact_ = delta + eps_ * rho;
        return smax(g_, pg_) + eps_ * smax(h_, ph_);
    }
    Mat gradient(const Mat& R) {
        Mat Gd = D_;
        for (Eigen::Index t = 0; t < Gd.rows(); ++t)
            for (Eigen::Index u = 0; u < Gd.cols(); ++u) {
                const double x = Gd(t, u);
                Gd(t, u) = pg_(t) * x / std::sqrt(x * x + mu * mu);
            }
        Mat G = AI_.transpose() * Gd;
        for (Eigen::Index j = 0; j < R.rows(); ++j)
            for (Eigen::Index u = 0; u < R.cols(); ++u) {
                const double x = R(j, u);
                G(j, u) += eps_ * ph_(j) * x / std::sqrt(x * x + mu * mu);
            }
        return G;
    }
    double exact() const { return exact_; }

private:
    double smax(const Vec& v, Vec& p) const {
        const double top = v.maxCoeff();
        p = (tau * (v.array() - top)).exp();
        const double z = p.sum();
        p /= z;
        return top + std::log(z) / tau;
    }
    const Mat& AI_;
    double eps_;
    Mat D_;
    Vec g_, h_, pg_, ph_;
    double exact_ = INFINITY;
};

double fdot(const Mat& a, const Mat& b) { return (a.array() * b.array()).sum(); }

// Minimise the smooth surrogate from R (updated to the best iterate by the
// exact value); stops early once the exact value is below `enough`.
double optimise(const Mat& AI, double eps, Mat& R, int iterations, double enough, const Deadline& dl) {
    NeumannObjective f(AI, eps);
    double best = INFINITY;
    Mat bestR = R;
    static constexpr double stages[][2] = {{10, 1e-2}, {40, 3e-3}, {150, 1e-3}, {500, 3e-4}};
    for (const auto& st : stages) {
        f.tau = st[0];
        f.mu = st[1];
        double fx = f.value(R);
        if (f.exact() < best) best = f.exact(), bestR = R;
        if (best < enough) break;
        Mat g = f.gradient(R);
        std::deque<std::pair<Mat, Mat>> hist;
        const int cap = std::max(1, iterations / 4);
        for (int it = 0; it < cap; ++it) {
            if (dl.expired()) break;
            Mat d = -g;
            std::vector<double> alpha(hist.size());
            for (std::size_t h = hist.size(); h-- > 0;) {
                alpha[h] = fdot(hist[h].first, d) / fdot(hist[h].second, hist[h].first);
                d -= alpha[h] * hist[h].second;
            }
            const double gamma = hist.empty() ? 1e-2 / std::sqrt(std::max(fdot(g, g), 1e-300))
                                              : fdot(hist.back().first, hist.back().second) / fdot(hist.back().second, hist.back().second);
            d *= gamma;
            for (std::size_t h = 0; h < hist.size(); ++h) {
                const double beta = fdot(hist[h].second, d) / fdot(hist[h].second, hist[h].first);
                d += (alpha[h] - beta) * hist[h].first;
            }
            double slope = fdot(g, d);
            if (!(slope < 0)) {
                hist.clear();
                d = -1e-2 / std::sqrt(std::max(fdot(g, g), 1e-300)) * g;
                slope = fdot(g, d);
            }
            double step = 1, fn = 0;
            Mat Rn;
            bool ok = false;
            for (int ls = 0; ls < 25; ++ls, step *= 0.5) {
                Rn = R + step * d;
                fn = f.value(Rn);
                if (std::isfinite(fn) && fn <= fx + 1e-4 * step * slope) {
                    ok = true;
                    break;
                }
            }
            if (!ok) break;
            if (f.exact() < best) best = f.exact(), bestR = Rn;
            if (best < enough) break;
            Mat gn = f.gradient(Rn);
            Mat s = Rn - R, y = gn - g;
            if (fdot(s, y) > 1e-300) {
                hist.emplace_back(std::move(s), std::move(y));
                if (hist.size() > 8) hist.pop_front();
            }
            const bool stalled = fx - fn < 1e-7 * std::abs(fx);
            R = std::move(Rn);
            g = std::move(gn);
            fx = fn;
            if (stalled) break;
        }
        if (best < enough || dl.expired()) break;
    }
    R = bestR;
    return best;
}

NeumannCandidate candidate(const Mat& A, double eps, const std::vector<std::size_t>& I, const Mat& R) {
    NeumannCandidate c;
    c.rows = I;
    c.N = static_cast<std::size_t>(A.cols());
    c.method = "smooth";
    for (Eigen::Index j = 0; j < R.rows(); ++j)
        for (Eigen::Index u = 0; u < R.cols(); ++u)
            if (std::abs(R(j, u)) > 1e-13) c.r.push_back({static_cast<std::size_t>(j), static_cast<std::size_t>(u), R(j, u)});
    c.float_value = neumann_float_value(A, eps, I, c.r, c.N);
    return c;
}

// A candidate's R (triplets) as a dense N x m matrix.
Mat dense_r(const NeumannCandidate& c) {
    Mat R = Mat::Zero(static_cast<Eigen::Index>(c.N), static_cast<Eigen::Index>(c.rows.size()));
    for (const auto& e : c.r) R(static_cast<Eigen::Index>(e.j), static_cast<Eigen::Index>(e.t)) = e.v;
    return R;
}

}  // namespace

std::optional<NeumannCandidate> neumann_smooth_grow(const Mat& A, double eps, const std::vector<std::size_t>& start,
                                                    const LowerOptions& opt, const Deadline& dl,
                                                    const NeumannCandidate* start_r, std::size_t* resume,
                                                    std::vector<std::size_t>* rejected_rows) {
    const auto N = A.cols();
    std::vector<std::size_t> I = start;
    if (I.empty()) return std::nullopt;
    // Start: the least-norm right inverse of A_I, then the smooth optimum.
    Mat AI = rows_of(A, I);
    Mat R = AI.transpose() * (AI * AI.transpose()).ldlt().solve(Mat::Identity(AI.rows(), AI.rows()));
    const auto t_start = std::chrono::steady_clock::now();
    double v = optimise(AI, eps, R, 200, 0.9, dl);
    // The certificate's own R as a second start: the least-norm inverse can
    // optimise to a worse value than the certificate already has (full512
    // L0 H1, eps 0.1: 1.003 from it, against 0.998 for the greedy's R).
    if (start_r && start_r->rows == start && start_r->N == static_cast<std::size_t>(N) && !(v < 0.9)) {
        Mat R2 = dense_r(*start_r);
        const double v2 = optimise(AI, eps, R2, 200, 0.9, dl);
        if (v2 < v) {
            R = std::move(R2);
            v = v2;
        }
    }
    if (opt.progress)
        opt.progress("neumann smooth: start value " + std::to_string(v) + " after " +
                     std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count()) + " s");
    // The exact LP optimum over all keys (interior point) where it is cheap:
    // the smooth search admits a row at the first iterate below 0.98, which
    // leaves the next candidate almost no slack, while the LP optimum for
    // the same rows is often far lower (stories260K long L2 H4 at t = 0.5,
    // eps 0.1: 0.92 for the 21 rows where the smooth search stopped).
    // On instances of pdhg_min_rows rows or more (512 tokens), where GLPK
    // does not finish, the same LP by a first-order method (neumann_pdhg),
    // warm-started from the current R and dual point; the LP optimum is
    // only approached, which is all the growth needs (slack).  There PDHG
    // also runs where the exact LP passes are off (phase 2): once at the
    // start, and as the candidates' test (below).
    double last_lp = 0;
    Mat Ypd;  // PDHG's dual point for the current rows, carried from run to run
    const bool lp_on = opt.lp_reopt_size > 0;
    auto exact_lp = [&](const std::vector<std::size_t>& rows) {
        return lp_on && static_cast<double>(rows.size()) * static_cast<double>(N) <= opt.lp_reopt_size;
    };
    const bool pdhg_mode = opt.pdhg_iterations > 0 && static_cast<std::size_t>(A.rows()) >= opt.pdhg_min_rows && !exact_lp(I);
    // R (N x rows) re-optimised for `rows` by the exact LP or PDHG; false
    // when neither runs (off, too large without PDHG, or no time).
    // PDHG stops early below `enough`.
    auto reoptimise = [&](const std::vector<std::size_t>& rows, Mat& Rm, double& vcur, double enough = 0.0) {
        if (!exact_lp(rows) && !pdhg_mode) return false;
        if (dl.expired() || (last_lp > 0 && dl.left() < 3 * last_lp)) return false;
        const auto t = std::chrono::steady_clock::now();
        if (exact_lp(rows)) {
            auto c = neumann_lp(A, eps, rows, opt, LpMode::all_keys_interior);
            last_lp = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
            if (c && c->float_value < vcur) {
                Rm = dense_r(*c);
                vcur = c->float_value;
            }
            return true;
        }
        Mat R2 = Rm;
        if (Ypd.rows() != static_cast<Eigen::Index>(rows.size())) Ypd.resize(0, 0);
        const double v2 = neumann_pdhg(rows_of(A, rows), eps, R2, opt.pdhg_iterations, enough, dl.within(0.5 * dl.left()), &Ypd);
        last_lp = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
        if (opt.progress)
            opt.progress("neumann pdhg: " + std::to_string(rows.size()) + " rows, " + std::to_string(vcur) + " -> " +
                         std::to_string(v2) + " in " + std::to_string(last_lp) + " s");
        if (v2 < vcur) {
            Rm = std::move(R2);
            vcur = v2;
        }
        return true;
    };
    const double admit = 0.98;  // a 2% margin while growing
    // Where PDHG stands in for the LP, it runs first: the smooth start
    // leaves little slack (full512 L4 H0, eps 0.1, the committed 110 rows:
    // 0.958 from the smooth search, 0.895 after 3000 PDHG steps in 11 s),
    // and candidates tried with little slack failed for 100 s.
    if (pdhg_mode) reoptimise(I, R, v);
    // The value after the last PDHG run on the set itself, and the set's
    // size then: the cheaper candidate tests spend that slack, and a
    // rejection with the slack spent restores it (below).
    double v_restored = v;
    std::size_t size_at_restore = I.size();
    // With PDHG every candidate re-optimises the whole R, so the admission
    // needs less margin than the smooth search's.
    const double pdhg_admit = 0.99;
    // The bordered start for candidate row c: with r the part of a_c
    // orthogonal to the rows in I, scaled so that a_c r = 1, the columns
    // R - r (a_c R) and r keep A_I's products and make row c's exact; PDHG
    // then trades that for rho.  False when a_c is (numerically) in their span.
    Mat Qrows;  // an orthonormal basis of the rows in I (N x m), for the current I
    auto bordered = [&](Eigen::Index c, Mat& R2) {
        if (Qrows.cols() != AI.rows()) Qrows = Eigen::HouseholderQR<Mat>(AI.transpose()).householderQ() * Mat::Identity(N, AI.rows());
        const Vec ac = A.row(c).transpose();
        const Vec r = ac - Qrows * (Qrows.transpose() * ac);
        const double ar = ac.dot(r);
        if (!(ar > 1e-12 * ac.squaredNorm())) return false;
        const Vec rn = r / ar;
        R2.leftCols(R.cols()) = R - rn * (ac.transpose() * R);
        R2.col(R.cols()) = rn;
        return true;
    };
    if (!(v < admit) && !pdhg_mode && !reoptimise(I, R, v)) {
        // No slack to admit a row with, and no LP to restore it (too large):
        // a longer smooth search.  full512 L0 H0 at eps 0.1, from its
        // certificate's 197 rows: 0.996 after 200 steps (the search ended
        // there, as every candidate must get below 0.98), 0.977 after 1600.
        const auto t_deep = std::chrono::steady_clock::now();
        const double v3 = optimise(AI, eps, R, opt.smooth_start_iterations, 0.9, dl);
        if (opt.progress)
            opt.progress("neumann smooth: longer start search " + std::to_string(v) + " -> " + std::to_string(v3) + " in " +
                         std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - t_deep).count()) + " s");
        v = std::min(v, v3);
    }
    std::optional<NeumannCandidate> best;
    if (v < 1 - opt.margin) best = candidate(A, eps, I, R);
    // A start above the admission threshold admits nothing: every candidate
    // re-optimises from this R and has to get below it with one row more.
    // At 512 tokens, where the LP is too large to restore slack, trying them
    // took the whole share (full512 L0 H1, eps 0.1: start 1.003, 30 s of
    // candidates, none admitted), which the factor search then lacked.
    if (!(v < admit)) return best;
    std::vector<char> used(static_cast<std::size_t>(A.rows()), 0);
    for (auto i : I) used[i] = 1;
    // At 512 tokens one candidate costs seconds (200 steps of O(m^2 N)); a
    // long run of rejections there means the rest of the budget is better
    // spent on the upper bound.
    // The stop rule, only where candidates are expensive: when the last one
    // took more than half of `smooth_stall` (the share affords fewer than
    // about 20), stop after `smooth_stall` seconds without an admitted row.
    // At 94 tokens a candidate costs ~30 ms and long runs of rejections are
    // normal (any idle-time rule there cost L: median -1, measured); at 512
    // tokens one costs seconds and the first rejections end the growth.
    auto last_admitted = std::chrono::steady_clock::now();
    double last_cost = 0;
    // Passes over the rows not yet in I, in causal order.  Without the LP
    // (too large, or lp_reopt_size 0 as in phase 2) there is one pass, as
    // before; with it, R is re-optimised at the end of each pass and the
    // pass repeats while it admits rows or the LP gains slack (long L2 H4 at
    // t = 0.5, eps 0.1, alone in 20 s: 21 -> 29 rows).
    auto take = [&](Eigen::Index c, std::vector<std::size_t> I2, Mat AI2, Mat R2, double v2) {
        I = std::move(I2);
        AI = std::move(AI2);
        R = std::move(R2);
        v = v2;
        used[static_cast<std::size_t>(c)] = 1;
        last_admitted = std::chrono::steady_clock::now();
        if (v < 1 - opt.margin) {
            auto cand = candidate(A, eps, I, R);
            if (cand.float_value < 1 - opt.margin && (!best || cand.rows.size() > best->rows.size())) best = cand;
        }
        if (opt.progress) opt.progress("neumann smooth: " + std::to_string(I.size()) + " rows");
    };
    const bool by_res = opt.order == LowerOptions::Order::residual ||
                        (opt.order == LowerOptions::Order::automatic && A.rows() > 128);
    bool stalled = false;
    for (int pass = 0; pass < 64 && !stalled && !dl.expired(); ++pass) {
    const std::size_t at_pass_start = I.size();
    std::vector<std::pair<double, Eigen::Index>> rejected;
    const Eigen::Index first = resume && pass == 0 && !by_res
                                   ? static_cast<Eigen::Index>(*resume % static_cast<std::size_t>(A.rows()))
                                   : 0;
    // The order of the candidates: causal, or (by_res) by how far each row
    // is from what the rows in I already reach through R, the l1 norm of
    // A_c - (A_c R) A_I, largest first and recomputed after every admitted
    // row (an n x N x m product; rows rejected in this pass are not tried
    // again in it).  Measured on full512 L3 H0 at eps 0.1 (302 candidates
    // after 82 rows, causal order): Spearman -0.69 between this residual and
    // the candidate's optimised value, the 7 admitted rows among the top 15%
    // by it, while the key score used for the new column below was
    // unrelated (+0.03).  In 100 s from the committed 82 rows: 89 rows in
    // causal order, 97 by residual.  At 94 tokens, where a whole pass costs
    // seconds, the order made no difference (8 long-text heads, eps 0.1:
    // the same L, or one more or less), so automatic keeps it causal there.
    std::vector<Eigen::Index> queue;
    std::vector<char> tried(static_cast<std::size_t>(A.rows()), 0);
    if (by_res && rejected_rows && pass == 0)
        for (auto i : *rejected_rows)
            if (i < tried.size()) tried[i] = 1;
    std::size_t qpos = 0;
    bool stale = true;
    auto by_residual = [&]() {
        const Mat X = A * R;                                             // n x m
        const Vec res = (A - X * AI).cwiseAbs().rowwise().sum();         // n
        std::vector<Eigen::Index> q;
        for (Eigen::Index i = 0; i < A.rows(); ++i)
            if (!used[static_cast<std::size_t>(i)] && !tried[static_cast<std::size_t>(i)]) q.push_back(i);
        std::stable_sort(q.begin(), q.end(), [&](Eigen::Index a, Eigen::Index b) { return res(a) > res(b); });
        return q;
    };
    for (Eigen::Index ci = 0; !dl.expired(); ++ci) {
        Eigen::Index c;
        if (by_res) {
            if (stale) {
                queue = by_residual();
                qpos = 0;
                stale = false;
            }
            if (qpos >= queue.size()) break;
            c = queue[qpos++];
        } else {
            if (ci >= A.rows()) break;
            c = (first + ci) % A.rows();
            if (resume) *resume = static_cast<std::size_t>(c);  // (the row under way when time runs out is tried again)
            if (used[static_cast<std::size_t>(c)]) continue;
        }
        const auto t_cand = std::chrono::steady_clock::now();
        if (opt.smooth_stall > 0 && last_cost > 0.5 * opt.smooth_stall &&
            std::chrono::duration<double>(t_cand - last_admitted).count() > opt.smooth_stall) {
            stalled = true;
            break;
        }
        if (by_res) tried[static_cast<std::size_t>(c)] = 1;
        // The new column: the key where row c stands out most from the rows in I.
        Vec colmass = AI.colwise().sum().transpose();
        Eigen::Index jstar = 0;
        double bestscore = -1;
        for (Eigen::Index j = 0; j < N; ++j) {
            const double s = A(c, j) / (colmass(j) + A(c, j) + 1e-300);
            if (A(c, j) > 0 && s * A(c, j) > bestscore) bestscore = s * A(c, j), jstar = j;
        }
        std::vector<std::size_t> I2 = I;
        I2.push_back(static_cast<std::size_t>(c));
        Mat AI2 = rows_of(A, I2);
        Mat R2 = Mat::Zero(N, R.cols() + 1);
        double v2 = INFINITY;
        Mat Y2;
        if (pdhg_mode) {
            // Where PDHG stands in for the LP (512 tokens), it also tests the
            // candidate, from the bordered right inverse (the current R with
            // row c's coupling removed and a new column that is zero on the
            // rows in I) and the current dual point: 200 smooth steps from
            // [R, e_j / a_cj] admitted no row on full512 L4 H0 nor L0 H0 at
            // eps 0.1 in 135 / 111 s after PDHG had brought R to 0.895 /
            // 0.872, while this test admitted 2 of the first 40 / 12
            // candidates (numpy prototype, 400 steps each).
            if (!bordered(c, R2)) continue;
            Y2 = Mat::Zero(R.cols() + 1, R.cols() + 1);
            if (Ypd.rows() == R.cols()) Y2.topLeftCorner(R.cols(), R.cols()) = Ypd;
            // The bordered inverse is itself a candidate: where R has slack
            // it often stays below the admission level with no PDHG step,
            // and costs one m x N x m product instead of 400 PDHG steps.
            v2 = opt.pdhg_bordered_first ? neumann_value_dense(AI2, eps, R2) : INFINITY;
            // The PDHG test stops once the candidate is back within
            // pdhg_candidate_slack of the set's value before it: with 400
            // steps always, each row cost 0.5 s at 405 tokens while the
            // values stayed near 0.6 (fresh seed 25 L2 H6, eps 0.1), so the
            // growth ran out of its share with slack left.
            if (!(v2 < pdhg_admit)) {
                const double enough = opt.pdhg_candidate_slack > 0 ? std::min(pdhg_admit, v + opt.pdhg_candidate_slack) : 0.0;
                v2 = neumann_pdhg(AI2, eps, R2, opt.pdhg_candidate_iterations, enough, dl, &Y2);
            }
            // A near miss gets twice the steps again: after 400 steps a
            // quarter of the candidates stood within 2% above the level
            // (full512 L4 H0, eps 0.1, from 114 rows: 75 candidates, the
            // quartiles 1.021 / 1.056 / 1.096), still falling.
            if (!(v2 < pdhg_admit) && v2 < pdhg_admit + 0.04)
                v2 = std::min(v2, neumann_pdhg(AI2, eps, R2, 2 * opt.pdhg_candidate_iterations, pdhg_admit, dl, &Y2));
        } else {
            R2.leftCols(R.cols()) = R;
            R2(jstar, R.cols()) = 1.0 / A(c, jstar);
            v2 = optimise(AI2, eps, R2, opt.smooth_iterations, admit, dl);
        }
        last_cost = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_cand).count();
        if (opt.progress && pdhg_mode)
            opt.progress("neumann pdhg: row " + std::to_string(c) + " with " + std::to_string(I.size()) + " rows: " +
                         std::to_string(v2) + (v2 < pdhg_admit ? ", admitted" : ""));
        if (v2 < (pdhg_mode ? pdhg_admit : admit)) {
            if (pdhg_mode) Ypd = std::move(Y2);
            take(c, std::move(I2), std::move(AI2), std::move(R2), v2);
            stale = true;
        } else {
            rejected.push_back({v2, c});
            // A rejection after rows joined on spent slack: PDHG on the set
            // (warm) brings the value back towards where it was, the clock of
            // the stall rule restarts, and the growth goes on with the next
            // candidates (the one just rejected was measured to fail again
            // from the restored R, 0.994 -> 0.995).  Without it the growth
            // at 512 tokens stopped at the first rejection after its cheap
            // admissions (full512 L3 H0, eps 0.1: 74 -> 81 rows at 0.907,
            // then one candidate at 0.994 and the stall rule).
            if (pdhg_mode && opt.pdhg_restore_gap > 0 && I.size() > size_at_restore && v > v_restored + opt.pdhg_restore_gap &&
                !dl.expired()) {
                const double before = v;
                const double v3 = neumann_pdhg(AI, eps, R, opt.pdhg_iterations / 3, v_restored, dl.within(0.25 * dl.left()), &Ypd);
                if (v3 < v) v = v3;
                if (opt.progress)
                    opt.progress("neumann pdhg: " + std::to_string(I.size()) + " rows restored, " + std::to_string(before) + " -> " +
                                 std::to_string(v));
                v_restored = v;
                size_at_restore = I.size();
                last_admitted = std::chrono::steady_clock::now();
                stale = true;  // (by residual: the order from the new R; rows rejected stay tried)
            }
        }
    }
    if (by_res && rejected_rows) {  // tried (in this pass or, skipped, in an earlier call) and not admitted
        rejected_rows->clear();
        for (std::size_t i = 0; i < tried.size(); ++i)
            if (tried[i] && !used[i]) rejected_rows->push_back(i);
    }
    // End of a pass.  The smooth search admits a row at its first iterate
    // below 0.98, which leaves the next candidates almost no slack; the
    // exact LP over all keys (interior point, where it is cheap) restores
    // it: long L2 H4 at t = 0.5, eps 0.1 had 0.92 for the 21 rows where the
    // smooth search stopped at 0.98.  With new slack, another pass.
    const double before_lp = v;
    if (!lp_on || !reoptimise(I, R, v)) break;  // no LP passes (off, too large, or no time): one pass
    if (pdhg_mode && I.size() == at_pass_start) break;  // every candidate was already tested by PDHG
    if (I.size() > at_pass_start || v < before_lp - 0.005) continue;
    // Nothing admitted and no slack to gain: rows the smooth test rejected,
    // by the LP itself, the most promising (lowest smooth value) first, all
    // of them while the time lasts.  (Until 2026-12-03 only the first six,
    // and only below 0.98, below: on medium L1 H6 at t = 0.5, eps 0.1 that
    // admitted none of the eleven candidates, while with row 3 the
    // exact LP has 0.980.)
    // At most lp_try_rows of them: on a 197-token image head at 7 rows x 197
    // keys (below lp_reopt_size), --focus lower, the LP passes over up to 190
    // rejected rows ran 44 s and none joined (the exact best-add greedy ends
    // at 7 rows there too).
    std::sort(rejected.begin(), rejected.end());
    if (rejected.size() > opt.lp_try_rows) rejected.resize(opt.lp_try_rows);
    bool admitted = false;
    for (const auto& [v2, c] : rejected) {
        if (dl.expired() || dl.left() < 3 * last_lp) break;
        std::vector<std::size_t> I2 = I;
        I2.push_back(static_cast<std::size_t>(c));
        // (Only the exact LP gets here: with PDHG the pass itself tested
        // every candidate, and the loop above ends.)
        Mat R2 = Mat::Zero(N, R.cols() + 1);
        double v2c = INFINITY;
        if (!reoptimise(I2, R2, v2c, admit)) break;
        // Any value below 1 is a certificate; the 2% margin is for the smooth
        // search, which needs slack to admit the next row.  (That margin
        // here rejected medium L1 H6 at t = 0.5, eps 0.1: the exact LP with
        // row 3 has 0.980.)
        if (!(v2c < 1 - opt.margin)) continue;
        Mat AI2 = rows_of(A, I2);
        take(c, std::move(I2), std::move(AI2), std::move(R2), v2c);
        admitted = true;
        break;
    }
    if (!admitted) break;
    }
    return best;
}

std::optional<NeumannCandidate> neumann_smooth_polish(const Mat& A, double eps, const std::vector<std::size_t>& rows,
                                                      Mat R, int iterations, double enough, double margin,
                                                      const Deadline& dl) {
    if (rows.empty() || R.rows() != A.cols() || R.cols() != static_cast<Eigen::Index>(rows.size())) return std::nullopt;
    const Mat AI = rows_of(A, rows);
    if (!(optimise(AI, eps, R, iterations, enough, dl) < 1 - margin)) return std::nullopt;
    auto c = candidate(A, eps, rows, R);
    c.method = "smooth-polish";
    if (!(c.float_value < 1 - margin)) return std::nullopt;
    return c;
}

// ADMM between the affine set {R : A_I R = I} and the product of the l1
// balls {R : every row's l1 norm <= target / eps}.  The affine projection is
// R - A_I^T (A_I A_I^T)^{-1} (A_I R - I); the l1-ball projection is a sort
// per row.  The iterate kept is the l1-ball one, so eps rho <= target holds
// and delta = ||I - A_I R||_inf is whatever the affine constraint still
// misses; the certificate needs only delta + eps rho < 1.  Measured
// (numpy prototype, tools/code_lp.py --admm): on S^2 at beta 8, 33 Riesz
// rows, value 0.9000 after 500 iterations (0.4 s) where the exact LP optimum
// is 0.889 and took HiGHS 416 s.
std::optional<NeumannCandidate> neumann_admm(const Mat& A, double eps, const std::vector<std::size_t>& rows, double target,
                                             int iterations, double margin, const Deadline& dl) {
    const auto m = static_cast<Eigen::Index>(rows.size());
    if (m == 0 || !(eps > 0) || !(target > 0)) return std::nullopt;
    const Mat AI = rows_of(A, rows);
    Eigen::LLT<Mat> gram(AI * AI.transpose());
    if (gram.info() != Eigen::Success) return std::nullopt;  // rows (numerically) dependent
    const double radius = target / eps;
    const Mat Im = Mat::Identity(m, m);
    auto affine = [&](const Mat& Z) -> Mat {
        Mat D = AI * Z - Im;
        return Z - AI.transpose() * gram.solve(D);
    };
    std::vector<double> u(static_cast<std::size_t>(m));
    auto l1_balls = [&](Mat& V) {
        for (Eigen::Index j = 0; j < V.rows(); ++j) {
            double s = 0;
            for (Eigen::Index t = 0; t < m; ++t) s += std::abs(V(j, t));
            if (s <= radius) continue;
            for (Eigen::Index t = 0; t < m; ++t) u[static_cast<std::size_t>(t)] = std::abs(V(j, t));
            std::sort(u.begin(), u.end(), std::greater<>());
            double cs = 0, theta = 0;
            for (std::size_t k = 0; k < u.size(); ++k) {
                cs += u[k];
                const double th = (cs - radius) / static_cast<double>(k + 1);
                if (u[k] - th > 0) theta = th;
            }
            for (Eigen::Index t = 0; t < m; ++t) {
                const double x = V(j, t);
                V(j, t) = std::copysign(std::max(std::abs(x) - theta, 0.0), x);
            }
        }
    };
    Mat Z = affine(Mat::Zero(A.cols(), m));
    l1_balls(Z);
    Mat U = Mat::Zero(A.cols(), m), bestZ = Z;
    double best = INFINITY, mark = INFINITY;
    for (int it = 0; it < iterations && !dl.expired(); ++it) {
        const Mat R = affine(Z - U);
        Z = R + U;
        l1_balls(Z);
        U += R - Z;
        if (it % 50 == 49 || it + 1 == iterations) {
            const double v = max_row_l1(Im - AI * Z) + eps * Z.cwiseAbs().rowwise().sum().maxCoeff();
            if (v < best) best = v, bestZ = Z;
            if (best < target + 0.5 * (1 - target)) break;  // met with half the slack left
            // Stalled: less than 1% of the way down to 1 in the last 500 steps.
            if (it % 500 == 499) {
                if (mark - best < 0.01 * std::max(best - (1 - margin), 0.0) + 1e-4) break;
                mark = best;
            }
        }
    }
    if (!(best < 1 - margin)) return std::nullopt;
    auto c = candidate(A, eps, rows, bestZ);
    c.method = "admm";
    if (!(c.float_value < 1 - margin)) return std::nullopt;
    return c;
}

}  // namespace rankcert::producer

namespace rankcert::producer {

namespace {

// V onto the ball {Z : sum_j w_j max_u |Z_ju| <= r} (rows j; w_j = 1
// without `weight`): row j is clipped at a level mu_j, and the levels are
// those at which every row with mu_j > 0 loses the same l1 mass theta;
// theta by bisection on the continuous decreasing sum of the w_j mu_j(theta).
// Without weights that is the Euclidean projection (its KKT conditions).
// With weights it is not, but it is what the diagonally preconditioned
// PDHG step needs (neumann_pdhg, w_j = 1 / tau_j): the projection of
// V / tau onto the unweighted ball in the metric sum_j tau_j ||.||^2,
// scaled back by tau, clips every row of V with the same l1 excess, at
// levels whose sum weighted by 1 / tau_j is r.
void project_l1inf(Mat& V, double r, std::vector<double>& sorted, std::vector<double>& cums,
                   std::vector<double>& gaps, const Vec* weight = nullptr) {
    const auto rows = V.rows(), m = V.cols();
    auto w = [&](Eigen::Index j) { return weight ? (*weight)(j) : 1.0; };
    double total = 0;
    for (Eigen::Index j = 0; j < rows; ++j) total += w(j) * V.row(j).cwiseAbs().maxCoeff();
    if (total <= r) return;
    const auto M = static_cast<std::size_t>(m);
    sorted.resize(static_cast<std::size_t>(rows) * M);
    cums.resize(sorted.size());
    gaps.resize(sorted.size());
    double hi = 0;
    for (Eigen::Index j = 0; j < rows; ++j) {
        double* s = &sorted[static_cast<std::size_t>(j) * M];
        for (Eigen::Index u = 0; u < m; ++u) s[u] = std::abs(V(j, u));
        std::sort(s, s + M, std::greater<>());
        double* c = &cums[static_cast<std::size_t>(j) * M];
        double* d = &gaps[static_cast<std::size_t>(j) * M];
        double acc = 0;
        for (std::size_t k = 0; k < M; ++k) {
            acc += s[k];
            c[k] = acc;
            d[k] = acc - static_cast<double>(k + 1) * s[k];  // non-decreasing in k
        }
        hi = std::max(hi, acc);
    }
    // mu_j(theta): the level whose excess sum_u (|V_ju| - mu)_+ is theta.
    auto level = [&](Eigen::Index j, double theta) {
        const double* c = &cums[static_cast<std::size_t>(j) * M];
        if (theta >= c[M - 1]) return 0.0;
        const double* d = &gaps[static_cast<std::size_t>(j) * M];
        const auto kk = static_cast<std::size_t>(std::lower_bound(d, d + M, theta) - d);  // entries above the level
        return std::max(0.0, (c[kk - 1] - theta) / static_cast<double>(kk));
    };
    double lo = 0;
    for (int it = 0; it < 64; ++it) {
        const double theta = 0.5 * (lo + hi);
        double s = 0;
        for (Eigen::Index j = 0; j < rows; ++j) s += w(j) * level(j, theta);
        (s > r ? lo : hi) = theta;
    }
    for (Eigen::Index j = 0; j < rows; ++j) {
        const double mu = level(j, hi);
        for (Eigen::Index u = 0; u < m; ++u) V(j, u) = std::clamp(V(j, u), -mu, mu);
    }
}

}  // namespace

double neumann_value_dense(const Mat& AI, double eps, const Mat& R) {
    Mat D = -(AI * R);
    D.diagonal().array() += 1.0;
    return max_row_l1(D) + eps * R.cwiseAbs().rowwise().sum().maxCoeff();
}

// The Neumann LP min_R ||I - A_I R||_inf + eps ||R||_inf as the saddle point
// min_R max_Y <Y, I - A_I R> + eps ||R||_inf over ||Y||_(1,inf) <= 1 (the
// dual of the max-row-l1 norm is the sum of the rows' max norms), solved by
// the primal-dual hybrid gradient method (Chambolle-Pock): a dual ascent
// step projected onto that ball, a primal step through the prox of
// eps ||.||_inf in the metric of the step sizes (V minus a projection onto a
// weighted (1,inf) ball, by Moreau; project_l1inf), and extrapolation.  No
// LP solver is needed, and one step costs two m x N x m products.  Measured
// at 512 tokens, where GLPK and HiGHS do not finish (full512 L4 H0, eps 0.1,
// the committed 110 rows; numpy prototype, 2026-12-04, scalar steps): from
// the smooth search's 0.988, 0.921 after 1000 steps and 0.893 after 4000
// (the dual bound then 0.868, so the LP optimum lies between); primal steps
// 10 times larger than dual ones did best (0.945 / 0.941 / 0.929 / 0.921 /
// 0.923 at ratios 0.1 / 0.3 / 3 / 10 / 30 after 1000 steps); omega below
// is that ratio.
double neumann_pdhg(const Mat& AI, double eps, Mat& R, int iterations, double enough, const Deadline& dl, Mat* dual) {
    const auto m = AI.rows();
    if (m == 0 || R.rows() != AI.cols() || R.cols() != m) return INFINITY;
    const Mat Im = Mat::Identity(m, m);
    auto value = [&](const Mat& X) { return neumann_value_dense(AI, eps, X); };
    // Diagonal step sizes (Pock and Chambolle 2011, alpha = 1): key j's
    // primal step is omega / (the l1 mass of key j in the rows of I), the
    // dual step 1 / (omega max_t ||A_t||_1), so that every step is as long
    // as its own column or row allows.  A key no row of I touches has no
    // gradient and no weight in the projection: its row of R keeps only the
    // common excess, never more than the other rows' l1 norms.
    // Measured on full512 L4 H0 at eps 0.1, the committed 114 rows (numpy
    // prototype, 2026-12-04), after 500 / 3000 steps: 0.946 / 0.904 with
    // one scalar step pair, 0.914 / 0.893 with these; the candidates of the
    // growth then got below 0.99 in 400 steps 4 times in 6 (0 before).
    constexpr double omega = 10;
    const Vec colmass = AI.cwiseAbs().colwise().sum().transpose();
    const double rowmass = AI.cwiseAbs().rowwise().sum().maxCoeff();
    if (!(rowmass > 0)) return value(R);
    const double sigma = 0.99 / (omega * rowmass);
    Vec tau(colmass.size()), weight(colmass.size());  // weight = 1 / tau (0 where tau would be infinite)
    for (Eigen::Index j = 0; j < colmass.size(); ++j) {
        weight(j) = colmass(j) / (0.99 * omega);
        tau(j) = colmass(j) > 0 ? 1 / weight(j) : 0.0;
    }
    Mat Y = dual && dual->rows() == m && dual->cols() == m ? *dual : Mat::Zero(m, m), Rbar = R, V, P;
    double best = value(R);
    Mat bestR = R;
    std::vector<double> b1, b2, b3;
    for (int it = 1; it <= iterations && best >= enough; ++it) {
        Y.noalias() += sigma * (Im - AI * Rbar);
        project_l1inf(Y, 1.0, b1, b2, b3);
        V.noalias() = AI.transpose() * Y;
        V = R + tau.asDiagonal() * V;
        P = V;
        project_l1inf(P, eps, b1, b2, b3, &weight);
        Rbar = -R;
        R = V - P;
        Rbar += 2 * R;
        if (it % 25 == 0) {
            const double v = value(R);
            if (v < best) best = v, bestR = R;
            if (dl.expired()) break;
        }
    }
    R = std::move(bestR);
    if (dual) *dual = std::move(Y);
    return best;
}

}  // namespace rankcert::producer
