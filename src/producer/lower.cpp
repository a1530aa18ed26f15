// Lower-bound search (UNTRUSTED): Neumann and tail certificates.
//
// neumann_greedy grows rows I and columns J with R = inv(A_IJ) (updated by
// bordering, O(m^2) per step) while eps * ||R||_inf stays below 1.
// neumann_lp finds, for a given row set, the R minimising delta + eps * rho by
// a linear program (GLPK simplex) over a restricted key support; the
// certificate condition is invariant under R -> R X, so the LP optimum is the
// best any R on that support can do.  tail_search takes an eigendecomposition
// of the Gram matrix of A_I R (R = identity, or a key partition that
// aggregates mass into cells) and chooses mu, F with a safety margin.
#include "rankcert/producer/producer.hpp"

#include "rankcert/producer/linalg.hpp"
#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <set>

namespace rankcert::producer {

namespace {

double inf_norm(const Mat& m) { return max_row_l1(m); }

// The inverse of [[M, b], [c^T, d]] from inv = M^{-1}, ib = inv b,
// ci = inv^T c and the Schur complement s = d - c^T inv b (bordering).
Mat bordered(const Mat& inv, const Vec& ib, const Vec& ci, double s) {
    const auto m = inv.rows();
    Mat out(m + 1, m + 1);
    out.topLeftCorner(m, m) = inv + ib * ci.transpose() / s;
    out.topRightCorner(m, 1) = -ib / s;
    out.bottomLeftCorner(1, m) = -ci.transpose() / s;
    out(m, m) = 1 / s;
    return out;
}

}  // namespace

double neumann_float_value(const Mat& A, double eps, const std::vector<std::size_t>& rows,
                           const std::vector<NeumannCandidate::Entry>& r, std::size_t N) {
    const auto m = static_cast<Eigen::Index>(rows.size());
    Mat AR = Mat::Zero(m, m);
    std::vector<double> rowsum(N, 0.0);
    for (const auto& e : r) {
        for (Eigen::Index t = 0; t < m; ++t)
            AR(t, static_cast<Eigen::Index>(e.t)) +=
                A(static_cast<Eigen::Index>(rows[static_cast<std::size_t>(t)]), static_cast<Eigen::Index>(e.j)) * e.v;
        rowsum[e.j] += std::abs(e.v);
    }
    const double rho = r.empty() ? 0 : *std::max_element(rowsum.begin(), rowsum.end());
    return inf_norm(Mat::Identity(m, m) - AR) + eps * rho;
}

namespace {

NeumannCandidate from_inverse(const Mat& A, double eps, const std::vector<std::size_t>& I,
                              const std::vector<std::size_t>& J, const Mat& inv) {
    NeumannCandidate c;
    c.rows = I;
    c.N = static_cast<std::size_t>(A.cols());
    c.method = "inverse";
    const double big = inv.cwiseAbs().maxCoeff();
    for (Eigen::Index a = 0; a < inv.rows(); ++a)
        for (Eigen::Index t = 0; t < inv.cols(); ++t)
            if (std::abs(inv(a, t)) > 1e-15 * big) c.r.push_back({J[static_cast<std::size_t>(a)], static_cast<std::size_t>(t), inv(a, t)});
    c.float_value = neumann_float_value(A, eps, I, c.r, c.N);
    return c;
}

}  // namespace

namespace {

// One greedy run: with singletons, first single (row, key) pairs in
// decreasing A_ij; then (with opt.cells) rows in causal order with cells.
NeumannCandidate greedy_run(const Mat& A, double eps, const LowerOptions& opt, bool singletons) {
    const auto n = A.rows(), N = A.cols();
    struct Cand {
        double v;
        Eigen::Index i, j;
    };
    std::vector<Cand> cands;
    const Eigen::Index per_row = std::min<Eigen::Index>(N, 4);
    for (Eigen::Index i = 0; i < n; ++i) {
        std::vector<Eigen::Index> idx(static_cast<std::size_t>(N));
        std::iota(idx.begin(), idx.end(), 0);
        std::partial_sort(idx.begin(), idx.begin() + per_row, idx.end(),
                          [&](Eigen::Index a, Eigen::Index b) { return A(i, a) > A(i, b); });
        for (Eigen::Index t = 0; t < per_row; ++t) cands.push_back({A(i, idx[static_cast<std::size_t>(t)]), i, idx[static_cast<std::size_t>(t)]});
    }
    std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) { return a.v > b.v; });
    std::vector<std::size_t> I, J;
    std::vector<char> row_used(static_cast<std::size_t>(n), 0), col_used(static_cast<std::size_t>(N), 0);
    Mat inv(0, 0);
    const double limit = (1.0 - opt.margin) / std::max(eps, 1e-300);
    for (const auto& c : cands) {
        if (row_used[static_cast<std::size_t>(c.i)] || col_used[static_cast<std::size_t>(c.j)]) continue;
        if (c.v <= eps * 0.5 || !singletons) break;
        const auto m = static_cast<Eigen::Index>(I.size());
        // Border A_IJ with row i and column j.
        Vec b(m), cc(m);
        for (Eigen::Index t = 0; t < m; ++t) {
            b(t) = A(static_cast<Eigen::Index>(I[static_cast<std::size_t>(t)]), c.j);
            cc(t) = A(c.i, static_cast<Eigen::Index>(J[static_cast<std::size_t>(t)]));
        }
        Vec ib = Vec::Zero(m), ci = Vec::Zero(m);
        if (m > 0) {  // (BLAS rejects empty products)
            ib = inv * b;
            ci = inv.transpose() * cc;
        }
        const double s = A(c.i, c.j) - cc.dot(ib);
        if (std::abs(s) < 1e-12) continue;
        Mat ninv = bordered(inv, ib, ci, s);
        if (eps > 0 && inf_norm(ninv) >= limit) continue;
        inv = std::move(ninv);
        I.push_back(static_cast<std::size_t>(c.i));
        J.push_back(static_cast<std::size_t>(c.j));
        row_used[static_cast<std::size_t>(c.i)] = col_used[static_cast<std::size_t>(c.j)] = 1;
        if (opt.progress && I.size() % 32 == 0) opt.progress("neumann greedy: " + std::to_string(I.size()) + " rows");
    }
    if (I.empty() && !opt.cells) {
        NeumannCandidate none;
        none.N = static_cast<std::size_t>(N);
        none.method = "inverse";
        return none;
    }
    if (!opt.cells) return from_inverse(A, eps, I, J, inv);

    // Rows in causal order (which suits diffuse heads: measured on the
    // stories260K heads at 512 tokens, better than largest-entry-first),
    // each joining with a cell of keys (R = P inv(A_I P), P the key-cell indicator), so that
    // diffuse rows, which no single key can carry, still count.  A new row
    // takes unassigned keys only; the inverse is bordered as before.
    std::vector<int> cell(static_cast<std::size_t>(N), -1);
    for (std::size_t t = 0; t < J.size(); ++t) cell[J[t]] = static_cast<int>(t);
    std::vector<Eigen::Index> order;
    for (Eigen::Index i = 0; i < n; ++i)
        if (!row_used[static_cast<std::size_t>(i)]) order.push_back(i);
    std::size_t joined = 0;
    for (Eigen::Index i : order) {
        if (opt.deadline.expired()) break;
        const auto m = static_cast<Eigen::Index>(I.size());
        // Row i's mass in the existing cells, and its unassigned keys.
        Vec cc = Vec::Zero(m);
        std::vector<Eigen::Index> free;
        double free_mass = 0;
        for (Eigen::Index j = 0; j < N; ++j) {
            const int t = cell[static_cast<std::size_t>(j)];
            if (t >= 0) cc(t) += A(i, j);
            else if (A(i, j) > 0) {
                free.push_back(j);
                free_mass += A(i, j);
            }
        }
        if (free_mass <= eps) continue;  // cannot carry a diagonal entry above eps
        std::sort(free.begin(), free.end(), [&](Eigen::Index a, Eigen::Index b) { return A(i, a) > A(i, b); });
        const Vec ci = m > 0 ? Vec(inv.transpose() * cc) : Vec(0);  // (BLAS rejects empty products)
        Mat best_inv;
        std::size_t best_size = 0;
        double best_norm = limit;
        for (double frac : {0.5, 0.7, 0.9}) {
            // The smallest prefix of the free keys holding frac of their mass.
            std::size_t size = 0;
            double mass = 0;
            while (size < free.size() && mass < frac * free_mass) mass += A(i, free[size++]);
            if (size == best_size) continue;
            Vec b = Vec::Zero(m);
            for (Eigen::Index t = 0; t < m; ++t)
                for (std::size_t u = 0; u < size; ++u) b(t) += A(static_cast<Eigen::Index>(I[static_cast<std::size_t>(t)]), free[u]);
            const Vec ib = m > 0 ? Vec(inv * b) : Vec(0);
            const double sc = mass - cc.dot(ib);
            if (std::abs(sc) < 1e-12) continue;
            Mat ninv = bordered(inv, ib, ci, sc);
            const double norm = inf_norm(ninv);
            if (norm < best_norm) {
                best_norm = norm;
                best_inv = std::move(ninv);
                best_size = size;
            }
        }
        if (best_size == 0) continue;
        inv = std::move(best_inv);
        for (std::size_t u = 0; u < best_size; ++u) cell[static_cast<std::size_t>(free[u])] = static_cast<int>(m);
        I.push_back(static_cast<std::size_t>(i));
        row_used[static_cast<std::size_t>(i)] = 1;
        if (opt.progress && ++joined % 32 == 0) opt.progress("neumann cells: " + std::to_string(I.size()) + " rows");
    }
    NeumannCandidate c;
    c.rows = I;
    c.N = static_cast<std::size_t>(N);
    c.method = joined ? "inverse+cells" : "inverse";
    if (inv.size() == 0) return c;  // no row joined (Eigen's maxCoeff of an empty matrix is undefined)
    const double big = inv.cwiseAbs().maxCoeff();
    for (Eigen::Index j = 0; j < N; ++j) {
        const int a = cell[static_cast<std::size_t>(j)];
        if (a < 0) continue;
        for (Eigen::Index t = 0; t < inv.cols(); ++t)
            if (std::abs(inv(a, t)) > 1e-15 * big) c.r.push_back({static_cast<std::size_t>(j), static_cast<std::size_t>(t), inv(a, t)});
    }
    c.float_value = neumann_float_value(A, eps, I, c.r, c.N);
    return c;
}

}  // namespace

NeumannCandidate neumann_greedy(const Mat& A, double eps, const LowerOptions& opt) {
    // Sharp heads do best with single keys first, diffuse ones with cells
    // from the start: both are cheap (O(n m^2)), the larger wins.
    NeumannCandidate a = greedy_run(A, eps, opt, true);
    if (!opt.cells || opt.deadline.expired()) return a;
    NeumannCandidate b = greedy_run(A, eps, opt, false);
    return b.rows.size() > a.rows.size() ? b : a;
}

std::optional<NeumannCandidate> neumann_lp(const Mat& A, double eps, const std::vector<std::size_t>& rows,
                                           const LowerOptions& opt, LpMode mode) {
    const auto m = static_cast<int>(rows.size());
    if (m == 0) return std::nullopt;
    // Key support: the keys carrying the most mass in the selected rows, or
    // (all_keys) every key that some selected row reaches.
    std::set<Eigen::Index> support;
    const Eigen::Index per_row = std::min<Eigen::Index>(A.cols(), 8);
    if (mode == LpMode::all_keys_interior) {
        for (Eigen::Index j = 0; j < A.cols(); ++j)
            for (auto i : rows)
                if (A(static_cast<Eigen::Index>(i), j) > 0) {
                    support.insert(j);
                    break;
                }
    } else {
        for (auto i : rows) {
            std::vector<Eigen::Index> idx(static_cast<std::size_t>(A.cols()));
            std::iota(idx.begin(), idx.end(), 0);
            const auto ii = static_cast<Eigen::Index>(i);
            std::partial_sort(idx.begin(), idx.begin() + per_row, idx.end(),
                              [&](Eigen::Index a, Eigen::Index b) { return A(ii, a) > A(ii, b); });
            for (Eigen::Index t = 0; t < per_row; ++t) support.insert(idx[static_cast<std::size_t>(t)]);
        }
    }
    std::vector<Eigen::Index> S(support.begin(), support.end());
    const int s = static_cast<int>(S.size());
    // Two forms of the same LP.  The interior point gets R and
    // E = I - A_I R split into non-negative parts (columns Rp, Rm, Ep, Em:
    // s*m, s*m, m*m, m*m; then delta, rho) with the rows A_I R + E = I
    // (m*m equalities), sum_u |E_tu| <= delta (m), sum_u |R_au| <= rho (s):
    // m^2 + m + s rows, against 2 m^2 + 2 s m + m + s in the form with free
    // R and E, G >= |.| by two inequality rows each.  GLPK's interior point,
    // the same optima to 1e-5 (2026-12-07, another process on the second
    // core): 11 rows x 32 keys 0.062 -> 0.015 s, 16 x 48 0.25 -> 0.06 s
    // (prefixes of full512 L4 H0), 40 x 105 5.0 -> 1.9 s (fresh seed 12
    // L2 H7).  The dual simplex (the LP growth, top-8 support) keeps the
    // older form: there the split form let the growth run to 15 rows at
    // value 0.992 on an image-like head (197 tokens) where it had stopped
    // at 13 rows (0.886) within its budget, and the smooth growth after it
    // then reached 28 rows instead of 36 (bench/fresh_bench.py --images 1).
    const bool split = mode == LpMode::all_keys_interior;
    glp_prob* lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    const int nR = s * m, nE = m * m;
    // split: Rp, Rm, Ep, Em; else R (free), e (>= 0), g (>= 0).
    const int ncols = split ? 2 * nR + 2 * nE + 2 : nR + nE + nR + 2;
    glp_add_cols(lp, ncols);
    auto colR = [&](int a, int u) { return 1 + a * m + u; };  // Rp (split) or R
    auto colRm = [&](int a, int u) { return 1 + nR + a * m + u; };
    auto colEp = [&](int t, int u) { return 1 + 2 * nR + t * m + u; };
    auto colEm = [&](int t, int u) { return 1 + 2 * nR + nE + t * m + u; };
    auto colE = [&](int t, int u) { return 1 + nR + t * m + u; };
    auto colG = [&](int a, int u) { return 1 + nR + nE + a * m + u; };
    const int colDelta = ncols - 1, colRho = ncols;
    for (int c = 1; c <= ncols; ++c) glp_set_col_bnds(lp, c, !split && c <= nR ? GLP_FR : GLP_LO, 0, 0);
    glp_set_obj_coef(lp, colDelta, 1.0);
    glp_set_obj_coef(lp, colRho, eps);
    std::vector<int> ia(1), ja(1);
    std::vector<double> ar(1);
    int row = 0;
    auto add_row = [&](int type, double lb, double ub) {
        ++row;
        glp_add_rows(lp, 1);
        glp_set_row_bnds(lp, row, type, lb, ub);
    };
    auto put = [&](int c, double v) {
        ia.push_back(row);
        ja.push_back(c);
        ar.push_back(v);
    };
    // Coefficients below this are dropped (they only shift delta by about
    // tiny * ||R||, far inside the margin; the checker uses the exact A).
    const double tiny = 1e-9;
    // |x| of one entry in a norm row: its two parts (split) or its bound.
    auto put_abs = [&](int plus, int minus, int bound) {
        if (split) {
            put(plus, 1.0);
            put(minus, 1.0);
        } else {
            put(bound, 1.0);
        }
    };
    // sign * sum_a A_{i_t S_a} R_au
    auto put_AR = [&](Eigen::Index it, int u, double sign) {
        for (int a = 0; a < s; ++a) {
            const double v = A(it, S[static_cast<std::size_t>(a)]);
            if (v <= tiny) continue;
            put(colR(a, u), sign * v);
            if (split) put(colRm(a, u), -sign * v);
        }
    };
    for (int t = 0; t < m; ++t) {
        const auto it = static_cast<Eigen::Index>(rows[static_cast<std::size_t>(t)]);
        for (int u = 0; u < m; ++u) {
            const double target = t == u ? 1.0 : 0.0;
            if (split) {
                add_row(GLP_FX, target, target);  // A R + Ep - Em = target
                put_AR(it, u, 1.0);
                put(colEp(t, u), 1.0);
                put(colEm(t, u), -1.0);
            } else {
                add_row(GLP_LO, target, 0);  // e + A R >= target
                put(colE(t, u), 1.0);
                put_AR(it, u, 1.0);
                add_row(GLP_LO, -target, 0);  // e - A R >= -target
                put(colE(t, u), 1.0);
                put_AR(it, u, -1.0);
            }
        }
        add_row(GLP_UP, 0, 0);  // sum_u |E_tu| - delta <= 0
        for (int u = 0; u < m; ++u) put_abs(colEp(t, u), colEm(t, u), colE(t, u));
        put(colDelta, -1.0);
    }
    for (int a = 0; a < s; ++a) {
        if (!split) {
            for (int u = 0; u < m; ++u) {
                add_row(GLP_LO, 0, 0);  // g - R >= 0
                put(colG(a, u), 1.0);
                put(colR(a, u), -1.0);
                add_row(GLP_LO, 0, 0);  // g + R >= 0
                put(colG(a, u), 1.0);
                put(colR(a, u), 1.0);
            }
        }
        add_row(GLP_UP, 0, 0);  // sum_u |R_au| - rho <= 0
        for (int u = 0; u < m; ++u) put_abs(colR(a, u), colRm(a, u), colG(a, u));
        put(colRho, -1.0);
    }
    glp_load_matrix(lp, static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
    int rc = 0;
    bool solved = false;
    if (mode == LpMode::all_keys_interior) {
        // GLPK's interior point method: about 0.3 s at 21 rows x 94 keys and
        // 1.3 s at 40 rows, where the dual simplex needs 3.6 s and over 9 s
        // (measured).  It has no time limit; callers bound m * keys instead.
        glp_iptcp parm;
        glp_init_iptcp(&parm);
        parm.msg_lev = GLP_MSG_OFF;
        rc = glp_interior(lp, &parm);
        // It often stops on "numeric instability" a few digits from the
        // optimum (gap 3e-6 on the head above); that point is as good a
        // candidate R as any, since the value is recomputed below and the
        // checker decides.
        solved = rc == 0 || rc == GLP_ENOCVG || rc == GLP_EINSTAB;
    } else {
        glp_smcp parm;
        glp_init_smcp(&parm);
        parm.msg_lev = GLP_MSG_OFF;
        parm.meth = GLP_DUALP;
        parm.tm_lim = static_cast<int>(opt.lp_time_limit * 1000);
        rc = glp_simplex(lp, &parm);
        solved = rc == 0 && (glp_get_status(lp) == GLP_OPT || glp_get_status(lp) == GLP_FEAS);
    }
    std::optional<NeumannCandidate> out;
    if (solved) {
        NeumannCandidate c;
        c.rows = rows;
        c.N = static_cast<std::size_t>(A.cols());
        c.method = "lp";
        const auto prim = [&](int col) { return split ? glp_ipt_col_prim(lp, col) : glp_get_col_prim(lp, col); };
        for (int a = 0; a < s; ++a)
            for (int u = 0; u < m; ++u) {
                const double v = split ? prim(colR(a, u)) - prim(colRm(a, u)) : prim(colR(a, u));
                if (std::abs(v) > 1e-13) c.r.push_back({static_cast<std::size_t>(S[static_cast<std::size_t>(a)]), static_cast<std::size_t>(u), v});
            }
        c.float_value = neumann_float_value(A, eps, rows, c.r, c.N);
        out = c;
    }
    glp_delete_prob(lp);
    return out;
}

NeumannCandidate neumann_lp_grow(const Mat& A, double eps, NeumannCandidate best, const LowerOptions& opt) {
    if (best.rows.size() > opt.lp_max_rows) return best;
    const auto t0 = std::chrono::steady_clock::now();
    // Candidate rows: not yet used, most concentrated first.
    std::vector<std::size_t> order;
    std::vector<char> used(static_cast<std::size_t>(A.rows()), 0);
    for (auto r : best.rows) used[r] = 1;
    for (Eigen::Index i = 0; i < A.rows(); ++i)
        if (!used[static_cast<std::size_t>(i)]) order.push_back(static_cast<std::size_t>(i));
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return A.row(static_cast<Eigen::Index>(a)).maxCoeff() > A.row(static_cast<Eigen::Index>(b)).maxCoeff();
    });
    int failures = 0;
    for (std::size_t cand : order) {
        if (best.rows.size() >= opt.lp_max_rows || failures >= 6) break;
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > opt.lp_budget) break;
        if (opt.deadline.expired()) break;
        auto rows = best.rows;
        rows.push_back(cand);
        LowerOptions o = opt;  // never run past the budget
        o.lp_time_limit = std::min({opt.lp_time_limit, opt.deadline.left(),
                                    opt.lp_budget - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()});
        if (o.lp_time_limit < 0.05) break;
        auto c = neumann_lp(A, eps, rows, o);
        if (c && c->float_value < 1 - opt.margin) {
            best = *c;
            failures = 0;
            if (opt.progress) opt.progress("neumann LP: " + std::to_string(best.rows.size()) + " rows");
        } else {
            ++failures;
        }
    }
    return best;
}

std::optional<TailCandidate> tail_search(const Mat& A, double eps, const LowerOptions& opt) {
    const auto n = A.rows(), N = A.cols();
    // Rows: all, or an evenly spaced subset of at most 256.
    std::vector<std::size_t> rows;
    const Eigen::Index step = std::max<Eigen::Index>(1, (n + 255) / 256);
    for (Eigen::Index i = 0; i < n; i += step) rows.push_back(static_cast<std::size_t>(i));
    const auto m = static_cast<Eigen::Index>(rows.size());
    Mat AI(m, N);
    for (Eigen::Index t = 0; t < m; ++t) AI.row(t) = A.row(static_cast<Eigen::Index>(rows[static_cast<std::size_t>(t)]));

    std::optional<TailCandidate> best;
    auto try_with = [&](const Mat& M, const std::vector<NeumannCandidate::Entry>& r, std::size_t p, const std::string& method) {
        Mat G = M * M.transpose();
        const SymEig es = sym_eig(G);
        Vec lam = es.values.reverse();
        Mat V = es.vectors.rowwise().reverse();
        const double scale = std::max(lam(0), 1e-300);
        const double margin = 1e-8 * scale;
        const double need = static_cast<double>(m) * eps * eps * (1 + 1e-9) + 1e-12;  // rho = 1
        // Largest k with sum_{t>k} lambda_t - k margin > need.
        Vec tail(m + 1);
        tail(m) = 0;
        for (Eigen::Index t = m - 1; t >= 0; --t) tail(t) = tail(t + 1) + std::max(0.0, lam(t));
        Eigen::Index k = -1;
        for (Eigen::Index kk = 0; kk < m; ++kk)
            if (tail(kk) - static_cast<double>(kk) * margin - 4 * margin > need) k = kk;
        if (k < 0) return;
        if (best && best->k >= static_cast<std::size_t>(k)) return;
        TailCandidate c;
        c.rows = rows;
        c.N = static_cast<std::size_t>(N);
        c.p = p;
        c.r = r;
        c.k = static_cast<std::size_t>(k);
        c.mu = (k < m ? std::max(0.0, lam(k)) : 0.0) + 2 * margin;
        c.F = Mat::Zero(m, k);
        for (Eigen::Index t = 0; t < k; ++t) {
            const double f2 = lam(t) - c.mu + margin;
            if (f2 > 0) c.F.col(t) = V.col(t) * std::sqrt(f2);
        }
        c.float_slack = M.squaredNorm() - static_cast<double>(k) * c.mu - c.F.squaredNorm() - static_cast<double>(m) * eps * eps;
        c.method = method;
        if (c.float_slack > 0) best = c;
    };
    // R = identity: M = A_I.
    {
        std::vector<NeumannCandidate::Entry> r;
        for (Eigen::Index j = 0; j < N; ++j) r.push_back({static_cast<std::size_t>(j), static_cast<std::size_t>(j), 1.0});
        try_with(AI, r, static_cast<std::size_t>(N), "identity");
    }
    // R = key partition: keys grouped by the row (of the subset) where they
    // carry most mass; cells of a partition aggregate diffuse rows.
    {
        std::vector<std::size_t> cell(static_cast<std::size_t>(N));
        std::vector<int> id(static_cast<std::size_t>(m), -1);
        std::size_t p = 0;
        for (Eigen::Index j = 0; j < N; ++j) {
            Eigen::Index arg;
            AI.col(j).maxCoeff(&arg);
            if (id[static_cast<std::size_t>(arg)] < 0) id[static_cast<std::size_t>(arg)] = static_cast<int>(p++);
            cell[static_cast<std::size_t>(j)] = static_cast<std::size_t>(id[static_cast<std::size_t>(arg)]);
        }
        if (p < static_cast<std::size_t>(N)) {
            std::vector<NeumannCandidate::Entry> r;
            Mat M = Mat::Zero(m, static_cast<Eigen::Index>(p));
            for (Eigen::Index j = 0; j < N; ++j) {
                r.push_back({static_cast<std::size_t>(j), cell[static_cast<std::size_t>(j)], 1.0});
                M.col(static_cast<Eigen::Index>(cell[static_cast<std::size_t>(j)])) += AI.col(j);
            }
            try_with(M, r, p, "partition");
        }
    }
    (void)opt;
    return best;
}

}  // namespace rankcert::producer
