// Exact sharp-exponent constructions (UNTRUSTED producer; exact output).
//
// Sphere: inverse stereographic projection t -> ((1 - |t|^2), 2t) / (1 + |t|^2)
// maps rational t to rational points exactly on S^{d-1}; we round near-uniform
// float points' stereographic coordinates to rationals with denominator 4096
// and map back, so the points are exact and still near-uniform.
// Ball: rational grid points and exact key log-weights -beta |y|^2 / 2.
#include "rankcert/producer/construct.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <random>
#include <sstream>

namespace rankcert::producer {

namespace {

constexpr double kPi = 3.14159265358979323846;

Rat approx(double v, long den) {
    return Rat(static_cast<long>(std::llround(v * static_cast<double>(den))), static_cast<unsigned long>(den));
}

// Exact point of S^{d-1} from rational stereographic coordinates t (d-1 of them).
std::vector<Rat> from_stereo(const std::vector<Rat>& t) {
    Rat s;
    for (const auto& x : t) s = s + x * x;
    std::vector<Rat> p;
    p.push_back((Rat(1) - s) / (Rat(1) + s));
    for (const auto& x : t) p.push_back(Rat(2) * x / (Rat(1) + s));
    return p;
}

json rational_matrix(const std::vector<std::vector<Rat>>& rows) {
    json data = json::array();
    for (const auto& r : rows)
        for (const auto& x : r) data.push_back(x.str());
    return {{"shape", {rows.size(), rows.empty() ? 0 : rows[0].size()}}, {"data", data}};
}

Mat to_float(const std::vector<std::vector<Rat>>& rows) {
    Mat m(static_cast<Eigen::Index>(rows.size()), rows.empty() ? 0 : static_cast<Eigen::Index>(rows[0].size()));
    for (std::size_t i = 0; i < rows.size(); ++i)
        for (std::size_t j = 0; j < rows[i].size(); ++j)
            m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = fmpq_get_d(rows[i][j].get());
    return m;
}

// Even centre sets for the ADMM right inverse (docs/constructions.md, "The
// right inverse over all keys on even centres"): where k-means centres need P M^{-1},
// these rows let an R over all keys reach much further.  Empty when the
// queries are neither on the unit sphere (d = 2, 3) nor a planar grid.
Mat riesz_sphere(std::size_t m, Eigen::Index d, unsigned seed) {
    // Riesz s = 3 energy: projected repulsion steps from a random start.
    std::mt19937 gen(seed);
    std::normal_distribution<double> g;
    const auto mi = static_cast<Eigen::Index>(m);
    Mat X(mi, d);
    for (Eigen::Index i = 0; i < mi; ++i) {
        for (Eigen::Index c = 0; c < d; ++c) X(i, c) = g(gen);
        X.row(i).normalize();
    }
    Mat F(mi, d);
    double D[3];
    for (int it = 0; it < 3000; ++it) {
        F.setZero();
        for (Eigen::Index i = 0; i < mi; ++i)
            for (Eigen::Index k = i + 1; k < mi; ++k) {
                double r2 = 0;
                for (Eigen::Index c = 0; c < d; ++c) D[c] = X(i, c) - X(k, c), r2 += D[c] * D[c];
                const double w = 1 / (r2 * r2 + 1e-300);  // force D / r^4
                for (Eigen::Index c = 0; c < d; ++c) F(i, c) += w * D[c], F(k, c) -= w * D[c];
            }
        for (Eigen::Index i = 0; i < mi; ++i) F.row(i) -= F.row(i).dot(X.row(i)) * X.row(i);
        const double top = F.cwiseAbs().maxCoeff();
        if (!(top > 0)) break;
        X += (0.01 / top) * F;
        for (Eigen::Index i = 0; i < mi; ++i) X.row(i).normalize();
    }
    return X;
}

// A hexagonal lattice with m points in the queries' bounding box (the
// spacing with exactly m points, else the first m of the smallest lattice
// with more), centred in the box.
Mat hex_box(const Mat& queries, std::size_t m) {
    const Eigen::RowVectorXd lo = queries.colwise().minCoeff(), hi = queries.colwise().maxCoeff();
    std::vector<std::array<double, 2>> best;
    for (int k = 0; k < 400; ++k) {
        const double sp = 0.05 + 0.55 * k / 399.0, dy = sp * std::sqrt(3.0) / 2;
        std::vector<std::array<double, 2>> pts;
        const int ny = static_cast<int>((hi(1) - lo(1)) / dy) + 1;
        for (int iy = 0; iy < ny; ++iy) {
            const double sh = (iy % 2) * 0.5 * sp;
            const int nx = static_cast<int>((hi(0) - lo(0) - sh) / sp) + 1;
            for (int ix = 0; ix < nx; ++ix) pts.push_back({lo(0) + sh + ix * sp, lo(1) + iy * dy});
        }
        if (pts.size() < m) continue;
        double mx[2] = {INFINITY, INFINITY}, Mx[2] = {-INFINITY, -INFINITY};
        for (const auto& p : pts)
            for (int c = 0; c < 2; ++c) mx[c] = std::min(mx[c], p[static_cast<std::size_t>(c)]), Mx[c] = std::max(Mx[c], p[static_cast<std::size_t>(c)]);
        for (auto& p : pts)
            for (int c = 0; c < 2; ++c) p[static_cast<std::size_t>(c)] += (lo(c) + hi(c)) / 2 - (mx[c] + Mx[c]) / 2;
        if (pts.size() == m) { best = pts; break; }
        if (best.empty() || pts.size() < best.size()) best = pts;
    }
    Mat X(static_cast<Eigen::Index>(std::min(m, best.size())), 2);
    for (Eigen::Index i = 0; i < X.rows(); ++i) X(i, 0) = best[static_cast<std::size_t>(i)][0], X(i, 1) = best[static_cast<std::size_t>(i)][1];
    return X;
}

}  // namespace

std::vector<std::size_t> even_centres(const Mat& queries, std::size_t m) {
    const auto n = static_cast<std::size_t>(queries.rows());
    if (m == 0 || m > n) return {};
    bool sphere = queries.cols() == 2 || queries.cols() == 3;
    for (Eigen::Index i = 0; i < queries.rows() && sphere; ++i) sphere = std::abs(queries.row(i).squaredNorm() - 1) < 1e-9;
    Mat X;
    if (sphere) X = riesz_sphere(m, queries.cols(), 0);  // d <= 3 (riesz_sphere's buffer)
    else if (queries.cols() == 2) X = hex_box(queries, m);
    else return {};
    // Snap to the nearest distinct queries, in centre order.
    std::vector<std::size_t> rows;
    std::vector<char> taken(n, 0);
    for (Eigen::Index t = 0; t < X.rows(); ++t) {
        Vec d2 = (queries.rowwise() - X.row(t)).rowwise().squaredNorm();
        for (std::size_t i = 0; i < n; ++i)
            if (taken[i]) d2(static_cast<Eigen::Index>(i)) = INFINITY;
        Eigen::Index arg;
        d2.minCoeff(&arg);
        taken[static_cast<std::size_t>(arg)] = 1;
        rows.push_back(static_cast<std::size_t>(arg));
    }
    return rows;
}

Construction sphere(int d, std::size_t n, const std::string& beta) {
    if (d < 2 || d > 4) throw InputError("construct sphere: --d must be 2, 3 or 4");
    std::vector<std::vector<double>> pts;
    if (d == 2) {
        for (std::size_t k = 0; k < n; ++k) {
            const double th = -kPi + (static_cast<double>(k) + 0.5) * 2 * kPi / static_cast<double>(n);
            pts.push_back({std::cos(th), std::sin(th)});
        }
    } else if (d == 3) {
        const double golden = kPi * (3 - std::sqrt(5.0));
        for (std::size_t k = 0; k < n; ++k) {
            const double z = 1 - 2 * (static_cast<double>(k) + 0.5) / static_cast<double>(n);
            const double rr = std::sqrt(std::max(0.0, 1 - z * z)), th = golden * static_cast<double>(k);
            pts.push_back({z, rr * std::cos(th), rr * std::sin(th)});
        }
    } else {
        // Super-Fibonacci spiral (M. Alexa, CVPR 2022): a low-discrepancy set
        // on S^3, much more even than random directions.
        const double phi = std::sqrt(2.0), psi = 1.533751168755204288118041;
        for (std::size_t k = 0; k < n; ++k) {
            const double s = static_cast<double>(k) + 0.5, t = s / static_cast<double>(n);
            const double r = std::sqrt(t), R = std::sqrt(1 - t), a = 2 * kPi * s / phi, b = 2 * kPi * s / psi;
            pts.push_back({r * std::sin(a), r * std::cos(a), R * std::sin(b), R * std::cos(b)});
        }
    }
    std::vector<std::vector<Rat>> X;
    for (const auto& p : pts) {
        // Stereographic coordinates from the pole (-1, 0, ...).
        std::vector<Rat> t;
        const double den = std::max(1 + p[0], 1e-3);
        for (int c = 1; c < d; ++c) t.push_back(approx(p[static_cast<std::size_t>(c)] / den, 4096));
        X.push_back(from_stereo(t));
    }
    Construction c;
    c.family = "sphere";
    c.dim = d;
    c.theory = (d - 1) / 2.0;
    c.instance = {{"kind", "qk"}, {"q", rational_matrix(X)}, {"k", rational_matrix(X)}, {"scale", beta}, {"mask", "none"}};
    c.queries = c.keys = to_float(X);
    return c;
}

Construction ball(int r, const std::string& h_text, const std::string& beta_text, long multiplicity) {
    if (r < 1 || r > 3) throw InputError("construct ball: --r must be 1, 2 or 3");
    const Rat h = parse_rational_text(h_text, {"--h", h_text}), beta = parse_rational_text(beta_text, {"--beta", beta_text});
    if (h.sign() <= 0) throw InputError("construct ball: --h must be positive");
    const double c = 0.9 / std::sqrt(static_cast<double>(r));
    const long kmax = static_cast<long>(std::floor(c / fmpq_get_d(h.get())));
    if (std::pow(2.0 * static_cast<double>(kmax) + 1, r) > 20000) throw InputError("construct ball: grid too fine (over 20000 points)");
    std::vector<std::vector<Rat>> Y;
    std::vector<long> idx(static_cast<std::size_t>(r), -kmax);
    for (;;) {
        std::vector<Rat> p;
        for (long k : idx) p.push_back(Rat(k) * h);
        Y.push_back(p);
        std::size_t a = 0;
        while (a < idx.size() && ++idx[a] > kmax) idx[a++] = -kmax;
        if (a == idx.size()) break;
    }
    Construction cst;
    cst.dim = r;
    cst.theory = r / 2.0;
    if (multiplicity > 0) {
        // Unweighted: key y repeated round(M exp(-beta |y|^2 / 2)) times in
        // place of the log-weight.  (Merging duplicate columns is an l_inf
        // contraction, so lower bounds for this matrix hold for the weighted
        // one with integer weights; here the checker certifies it directly.)
        std::vector<std::vector<Rat>> K;
        const double b = fmpq_get_d(beta.get());
        for (const auto& y : Y) {
            double s = 0;
            for (const auto& x : y) s += fmpq_get_d(x.get()) * fmpq_get_d(x.get());
            const long m = std::lround(static_cast<double>(multiplicity) * std::exp(-b * s / 2));
            for (long t = 0; t < m; ++t) K.push_back(y);
        }
        if (K.size() > 20000) throw InputError("construct ball: too many keys with these multiplicities");
        cst.family = "ball-unweighted";
        cst.instance = {{"kind", "qk"}, {"q", rational_matrix(Y)}, {"k", rational_matrix(K)}, {"scale", beta_text},
                        {"mask", "none"}};
        cst.queries = to_float(Y);
        cst.keys = to_float(K);
        return cst;
    }
    json bias = json::array();
    for (const auto& y : Y) {
        Rat s;
        for (const auto& x : y) s = s + x * x;
        bias.push_back((-(beta * s) / Rat(2)).str());
    }
    cst.family = "ball";
    cst.instance = {{"kind", "qk"},
                    {"q", rational_matrix(Y)},
                    {"k", rational_matrix(Y)},
                    {"scale", beta_text},
                    {"key_bias", {{"shape", {Y.size()}}, {"data", bias}}},
                    {"mask", "none"}};
    cst.queries = cst.keys = to_float(Y);
    return cst;
}

std::optional<NeumannCandidate> cell_partition(const Mat& A, const Mat& queries, const Mat& keys, double eps, double seconds,
                                               double margin) {
    const auto n = A.rows(), N = A.cols();
    // Farthest-point order of the queries.
    std::vector<Eigen::Index> order{0};
    Vec dist = (queries.rowwise() - queries.row(0)).rowwise().squaredNorm();
    while (static_cast<Eigen::Index>(order.size()) < n) {
        Eigen::Index far;
        dist.maxCoeff(&far);
        if (dist(far) <= 0) break;
        order.push_back(far);
        dist = dist.cwiseMin((queries.rowwise() - queries.row(far)).rowwise().squaredNorm());
    }
    auto nearest = [](const Mat& pts, Eigen::Index row, const std::vector<Eigen::Index>& centres, const Mat& cpts) {
        double best = INFINITY;
        std::size_t arg = 0;
        for (std::size_t t = 0; t < centres.size(); ++t) {
            const double dd = (pts.row(row) - cpts.row(centres[t])).squaredNorm();
            if (dd < best) { best = dd; arg = t; }
        }
        return arg;
    };
    auto kmeans_centres = [&](std::size_t m) {
        // Centres: the farthest-point prefix, evened out by Lloyd's k-means
        // on the query points, then snapped to the nearest distinct queries.
        Mat C(static_cast<Eigen::Index>(m), queries.cols());
        for (std::size_t t = 0; t < m; ++t) C.row(static_cast<Eigen::Index>(t)) = queries.row(order[t]);
        for (int it = 0; it < 25; ++it) {
            Mat sum = Mat::Zero(C.rows(), C.cols());
            Vec cnt = Vec::Zero(C.rows());
            for (Eigen::Index i = 0; i < n; ++i) {
                Eigen::Index t;
                (C.rowwise() - queries.row(i)).rowwise().squaredNorm().minCoeff(&t);
                sum.row(t) += queries.row(i);
                cnt(t) += 1;
            }
            for (Eigen::Index t = 0; t < C.rows(); ++t)
                if (cnt(t) > 0) C.row(t) = sum.row(t) / cnt(t);
        }
        std::vector<Eigen::Index> centres;
        std::vector<char> taken(static_cast<std::size_t>(n), 0);
        for (Eigen::Index t = 0; t < C.rows(); ++t) {
            Vec d2 = (queries.rowwise() - C.row(t)).rowwise().squaredNorm();
            for (Eigen::Index i = 0; i < n; ++i)
                if (taken[static_cast<std::size_t>(i)]) d2(i) = INFINITY;
            Eigen::Index arg;
            d2.minCoeff(&arg);
            taken[static_cast<std::size_t>(arg)] = 1;
            centres.push_back(arg);
        }
        return centres;
    };
    // Nearest-centre cells are uneven on scattered points, and the worst cell
    // decides (2 (1 - own mass) + eps < 1).  Move keys into the cell of
    // smallest own mass, each time the key it gains most from, as long as the
    // cell giving it up stays above that smallest mass.
    auto rebalance = [&](const std::vector<Eigen::Index>& centres, std::vector<std::size_t>& cell) {
        const std::size_t m = centres.size();
        std::vector<double> own(m, 0.0);
        for (Eigen::Index j = 0; j < N; ++j) {
            const std::size_t t = cell[static_cast<std::size_t>(j)];
            own[t] += A(centres[t], j);
        }
        for (std::size_t it = 0; it < 10 * m; ++it) {
            const std::size_t t = static_cast<std::size_t>(std::min_element(own.begin(), own.end()) - own.begin());
            Eigen::Index best_j = -1;
            double gain = 0;
            for (Eigen::Index j = 0; j < N; ++j) {
                const std::size_t s = cell[static_cast<std::size_t>(j)];
                if (s == t || own[s] - A(centres[s], j) <= own[t]) continue;
                if (A(centres[t], j) > gain) { gain = A(centres[t], j); best_j = j; }
            }
            if (best_j < 0 || gain <= 0) break;
            const std::size_t s = cell[static_cast<std::size_t>(best_j)];
            own[s] -= A(centres[s], best_j);
            own[t] += gain;
            cell[static_cast<std::size_t>(best_j)] = t;
        }
    };
    // Two forms of the certificate on the same cells, M the m x m matrix of
    // cell masses (M_ts = mass of cell s in centre row t):
    //  * 0/1:     R = P (key-cell indicator), rho = 1, delta = 2 (1 - min own);
    //  * inverse: R = P M^{-1}, delta = 0 (A_I R = I), rho = ||M^{-1}||_inf.
    // The inverse form is never weaker (delta < 1 - eps makes M diagonally
    // dominant with ||M^{-1}|| <= 1/(1 - delta)) and much stronger where the
    // sign pattern of the worst vector is frustrated: on a square lattice of
    // cells the diagonal neighbours of a centre carry mass of its own sign.
    // Measured on the r = 2 ball at beta 128 (41^2 points): 52 rows with
    // rebalanced 0/1 cells, 66 with the inverse on the k-means centres below
    // (64 and 68 on square and hexagonal lattices of centres, outside the
    // project).
    auto cells_of = [&](const std::vector<Eigen::Index>& centres, bool balance) {
        std::vector<std::size_t> cell(static_cast<std::size_t>(N));
        for (Eigen::Index j = 0; j < N; ++j) cell[static_cast<std::size_t>(j)] = nearest(keys, j, centres, queries);
        if (balance) rebalance(centres, cell);
        return cell;
    };
    // M_ts = mass of cell s in centre row t.
    auto cell_masses = [&](const std::vector<Eigen::Index>& centres, const std::vector<std::size_t>& cell) {
        const auto mi = static_cast<Eigen::Index>(centres.size());
        Mat M = Mat::Zero(mi, mi);
        for (Eigen::Index t = 0; t < mi; ++t)
            for (Eigen::Index j = 0; j < N; ++j)
                M(t, static_cast<Eigen::Index>(cell[static_cast<std::size_t>(j)])) += A(centres[static_cast<std::size_t>(t)], j);
        return M;
    };
    // R = P M^{-1}: key j's row is row cell(j) of M^{-1}.
    auto inverse_r = [&](const std::vector<std::size_t>& cell, const Mat& Minv) {
        Mat R(N, Minv.cols());
        for (Eigen::Index j = 0; j < N; ++j) R.row(j) = Minv.row(static_cast<Eigen::Index>(cell[static_cast<std::size_t>(j)]));
        return R;
    };
    auto check = [&](const std::vector<Eigen::Index>& centres) -> std::optional<NeumannCandidate> {
        const std::size_t m = centres.size();
        const auto mi = static_cast<Eigen::Index>(m);
        std::optional<NeumannCandidate> out;
        for (bool balance : {true, false}) {
            const auto cell = cells_of(centres, balance);
            const Mat M = cell_masses(centres, cell);
            const double worst = max_row_l1(Mat::Identity(mi, mi) - M);
            NeumannCandidate c;
            c.N = static_cast<std::size_t>(N);
            for (std::size_t t = 0; t < m; ++t) c.rows.push_back(static_cast<std::size_t>(centres[t]));
            if (worst + eps < 1 - margin) {
                c.method = "cell-partition";
                c.float_value = worst + eps;
                for (Eigen::Index j = 0; j < N; ++j) c.r.push_back({static_cast<std::size_t>(j), cell[static_cast<std::size_t>(j)], 1.0});
                return c;  // the 0/1 form: rho = 1 exactly, a sparse R
            }
            if (out) continue;
            Eigen::PartialPivLU<Mat> lu(M);
            if (!(std::abs(lu.determinant()) > 0)) continue;
            const Mat Minv = lu.inverse();
            const double rho = Minv.cwiseAbs().rowwise().sum().maxCoeff();
            if (!(eps * rho < 1 - 100 * margin)) continue;
            c.method = "cell-partition-inverse";
            const Mat R = inverse_r(cell, Minv);
            for (Eigen::Index j = 0; j < N; ++j)
                for (Eigen::Index t = 0; t < mi; ++t) c.r.push_back({static_cast<std::size_t>(j), static_cast<std::size_t>(t), R(j, t)});
            c.float_value = neumann_float_value(A, eps, c.rows, c.r, c.N);
            if (c.float_value < 1 - margin) out = std::move(c);
        }
        return out;
    };
    auto attempt = [&](std::size_t m) { return check(kmeans_centres(m)); };
    // Strategy B: a greedy s-separated set of queries in lexicographic order
    // (on a grid this is an even lattice); bisection on s.
    std::vector<Eigen::Index> lex(static_cast<std::size_t>(n));
    std::iota(lex.begin(), lex.end(), 0);
    std::sort(lex.begin(), lex.end(), [&](Eigen::Index p, Eigen::Index q) {
        for (Eigen::Index c = 0; c < queries.cols(); ++c)
            if (queries(p, c) != queries(q, c)) return queries(p, c) < queries(q, c);
        return false;
    });
    auto separated = [&](double s) {
        std::vector<Eigen::Index> centres;
        for (Eigen::Index i : lex) {
            bool ok = true;
            for (Eigen::Index c : centres)
                if ((queries.row(i) - queries.row(c)).squaredNorm() < s * s) { ok = false; break; }
            if (ok) centres.push_back(i);
        }
        return centres;
    };
    std::optional<NeumannCandidate> best_b;
    {
        double lo_s = 0, hi_s = 0;
        for (Eigen::Index i = 0; i < n; ++i) hi_s = std::max(hi_s, (queries.row(i) - queries.row(0)).norm());
        hi_s *= 2;
        for (int it = 0; it < 30; ++it) {
            const double mid = (lo_s + hi_s) / 2;
            if (auto c = check(separated(mid))) {
                if (!best_b || c->rows.size() > best_b->rows.size()) best_b = c;
                hi_s = mid;
            } else {
                lo_s = mid;
            }
        }
    }
    std::size_t lo = 1, hi = order.size();
    auto best = attempt(1);
    if (!best) return std::nullopt;
    while (lo < hi) {  // largest m that works (the condition is close to monotone)
        std::size_t mid = lo + (hi - lo + 1) / 2;
        if (auto c = attempt(mid)) { best = c; lo = mid; }
        else hi = mid - 1;
    }
    // k-means can miss a count the bisection skipped over: scan a little
    // further up, stopping after a run of failures.
    for (std::size_t m = lo + 1, misses = 0; m <= order.size() && misses < 4 + lo / 8; ++m) {
        if (auto c = attempt(m)) { best = c; misses = 0; }
        else ++misses;
    }
    if (best_b && best_b->rows.size() > best->rows.size()) best = best_b;
    // Past the last count that P M^{-1} certifies, R = P M^{-1} (eps rho a
    // little above 1) is a good start for the smooth minimax over all of R
    // (delta + eps rho, neumann_smooth.cpp), which trades a small delta for a
    // smaller rho.  One count at a time while it succeeds and time remains.
    const Deadline dl = Deadline{}.within(seconds);
    for (std::size_t m = best->rows.size() + 1, misses = 0; seconds > 0 && m <= order.size() && misses < 2 && !dl.expired(); ++m) {
        const auto centres = kmeans_centres(m);
        std::optional<NeumannCandidate> got;
        for (bool balance : {true, false}) {
            if (got || dl.expired()) break;
            const auto cell = cells_of(centres, balance);
            Eigen::PartialPivLU<Mat> lu(cell_masses(centres, cell));
            if (!(std::abs(lu.determinant()) > 0)) continue;
            std::vector<std::size_t> rows(centres.begin(), centres.end());
            got = neumann_smooth_polish(A, eps, rows, inverse_r(cell, lu.inverse()), 400, 0.99, margin, dl);
        }
        if (got) { best = got; misses = 0; }
        else ++misses;
    }
    // Even centres (a Riesz code on the sphere, a hexagonal lattice on a
    // planar grid) with the ADMM right inverse over all keys, for as long
    // again: counts up from the best so far in steps of a twentieth (a
    // success stops early, a failure runs until it stalls), then bisection
    // below the first failure.  Measured with the numpy prototype on the
    // committed sweeps: S^2 at beta 16, 64 -> 70 rows; ball r = 2 at
    // beta 64, 36 -> 42.
    const Deadline dl2 = Deadline{}.within(seconds);
    std::size_t lo_m = best->rows.size(), hi_m = static_cast<std::size_t>(n);
    auto admm_try = [&](std::size_t count) -> bool {
        const auto rows = even_centres(queries, count);
        if (rows.size() != count) return false;
        auto c = neumann_admm(A, eps, rows, 0.97, 3000, margin, dl2);
        if (c) best = c;
        return c.has_value();
    };
    for (bool up = true; seconds > 0 && lo_m < hi_m && !dl2.expired();) {
        const std::size_t next = up ? std::min(hi_m, lo_m + std::max<std::size_t>(1, lo_m / 20)) : lo_m + (hi_m - lo_m + 1) / 2;
        if (admm_try(next)) lo_m = next;
        else { hi_m = next - 1; up = false; }
    }
    return best;
}

double loglog_slope(const std::vector<double>& x, const std::vector<double>& y) {
    const std::size_t n = x.size();
    double mx = 0, my = 0;
    for (std::size_t i = 0; i < n; ++i) { mx += std::log(x[i]); my += std::log(y[i]); }
    mx /= static_cast<double>(n);
    my /= static_cast<double>(n);
    double sxy = 0, sxx = 0;
    for (std::size_t i = 0; i < n; ++i) {
        sxy += (std::log(x[i]) - mx) * (std::log(y[i]) - my);
        sxx += (std::log(x[i]) - mx) * (std::log(x[i]) - mx);
    }
    return sxx > 0 ? sxy / sxx : 0;
}

}  // namespace rankcert::producer

// ---- the ball as a Kronecker power ------------------------------------------
namespace fs = std::filesystem;

namespace rankcert::producer {

namespace {

// The one-axis ball: grid of spacing h in [-c, c], c = 0.9/sqrt(r).
json ball_axis(int r, const Rat& h, const Rat& beta, const std::string& beta_text, std::size_t& points) {
    const double c = 0.9 / std::sqrt(static_cast<double>(r));
    const long kmax = static_cast<long>(std::floor(c / fmpq_get_d(h.get())));
    if (2 * kmax + 1 > 20000) throw InputError("construct ball --kron: grid too fine (over 20000 points per axis)");
    std::vector<std::vector<Rat>> Y;
    json bias = json::array();
    for (long k = -kmax; k <= kmax; ++k) {
        const Rat y = Rat(k) * h;
        Y.push_back({y});
        bias.push_back((-(beta * y * y) / Rat(2)).str());
    }
    points = Y.size();
    return {{"kind", "qk"},
            {"q", rational_matrix(Y)},
            {"k", rational_matrix(Y)},
            {"scale", beta_text},
            {"key_bias", {{"shape", {Y.size()}}, {"data", bias}}},
            {"mask", "none"}};
}

struct AxisCells {
    double mass = 0;  // the smallest own-cell mass
    std::vector<std::size_t> centres;
    std::vector<std::pair<std::size_t, std::size_t>> cells;  // key intervals [a, b]
    // The inverse form R = P M^{-1} (M the m x m cell masses of the centre
    // rows): A_I R = I, rho = ||M^{-1}||_inf; empty when M is singular.
    Mat minv;
    double rho = INFINITY;
};

void set_inverse(const std::vector<std::vector<double>>& pre, AxisCells& c) {
    const auto m = static_cast<Eigen::Index>(c.cells.size());
    Mat M(m, m);
    for (Eigen::Index t = 0; t < m; ++t)
        for (Eigen::Index s = 0; s < m; ++s) {
            const auto& q = pre[c.centres[static_cast<std::size_t>(t)]];
            M(t, s) = q[c.cells[static_cast<std::size_t>(s)].second + 1] - q[c.cells[static_cast<std::size_t>(s)].first];
        }
    Eigen::PartialPivLU<Mat> lu(M);
    if (!(std::abs(lu.determinant()) > 0)) return;
    c.minv = lu.inverse();
    c.rho = c.minv.cwiseAbs().rowwise().sum().maxCoeff();
}

// Greedy interval cells with own mass >= target, left to right; the
// remainder joins the last cell.  Queries and keys are the same grid.
std::optional<AxisCells> greedy_cells(const std::vector<std::vector<double>>& pre, std::size_t N, double target) {
    AxisCells out;
    auto mass = [&](std::size_t q, std::size_t a, std::size_t b) { return pre[q][b + 1] - pre[q][a]; };
    std::size_t a = 0;
    while (a < N) {
        bool found = false;
        for (std::size_t b = a; b < N && !found; ++b)
            for (std::size_t q = a; q <= b; ++q)
                if (mass(q, a, b) >= target) {
                    out.centres.push_back(q);
                    out.cells.emplace_back(a, b);
                    a = b + 1;
                    found = true;
                    break;
                }
        if (!found) {
            if (out.cells.empty()) return std::nullopt;
            out.cells.back().second = N - 1;
            break;
        }
    }
    out.mass = 1;
    for (std::size_t t = 0; t < out.cells.size(); ++t)
        out.mass = std::min(out.mass, mass(out.centres[t], out.cells[t].first, out.cells[t].second));
    return out;
}

// Exact telescoped bound E for axis errors e (norms 1).
Rat telescoped_bound(const std::vector<Rat>& e) {
    Rat total, prefix(1);
    for (const auto& x : e) {
        total = total + prefix * x;
        prefix = prefix * (Rat(1) + x);
    }
    return total;
}

}  // namespace

KronPoint kron_ball(int r, const std::string& h_text, const std::string& beta_text, const EpsValue& eps,
                    const std::string& out, const std::string& stem, const json& provenance) {
    if (r < 1 || r > 4) throw InputError("construct ball --kron: --r must be 1 to 4");
    const Rat h = parse_rational_text(h_text, {"--h", h_text}), beta = parse_rational_text(beta_text, {"--beta", beta_text});
    if (h.sign() <= 0) throw InputError("construct ball: --h must be positive");
    KronPoint res;
    const json axis = ball_axis(r, h, beta, beta_text, res.axis_points);
    const std::string axis_stem = stem + "-axis";
    Bundle parsed = parse_instance(axis, out, axis_stem);
    const Mat A = approximate_attention(parsed.instance);
    const std::size_t N = static_cast<std::size_t>(A.cols());

    // Lower: for each cell count m the best smallest own mass, then the
    // r-tuple of counts with the largest product whose product mass clears
    // (1 + eps)/2 with a margin.
    std::vector<std::vector<double>> pre(N, std::vector<double>(N + 1, 0.0));
    for (std::size_t q = 0; q < N; ++q)
        for (std::size_t j = 0; j < N; ++j) pre[q][j + 1] = pre[q][j] + A(static_cast<Eigen::Index>(q), static_cast<Eigen::Index>(j));
    // Per axis two forms on the same cells: the 0/1 R (rho 1, own mass d)
    // and R = P M^{-1} (d = l = 1, rho = ||M^{-1}||).  A row of the product
    // then has value 2 (1 - prod of the 0/1 axes' own masses) + eps prod of
    // the inverse axes' rho (docs/theory.md, "Kronecker instances"); the
    // inverse form is what lets cells shrink (r = 3, beta 1024: 15 x 16 x 16
    // rows against 13^3 with 0/1 cells).
    std::map<std::size_t, AxisCells> front, front_inv;
    for (double target = 0.3; target < 0.9999; target += 0.0005) {
        auto c = greedy_cells(pre, N, target);
        if (!c) continue;
        set_inverse(pre, *c);
        const std::size_t m = c->cells.size();
        if (c->mass >= 0.5 && c->mass > front[m].mass) front[m] = *c;
        if (c->rho < front_inv[m].rho) front_inv[m] = *c;
    }
    const double limit = 1 - 1e-6;
    struct Option {
        const AxisCells* cells;
        bool inverse;
        double own, rho;
    };
    std::vector<Option> opts;
    for (const auto& [m, c] : front)
        if (c.mass >= 0.5) opts.push_back({&c, false, c.mass, 1.0});
    for (const auto& [m, c] : front_inv)
        if (std::isfinite(c.rho) && eps.approx * c.rho < limit) opts.push_back({&c, true, 1.0, c.rho});
    std::vector<Option> best_lower;
    double best_count = 0;
    std::vector<std::size_t> pick(static_cast<std::size_t>(r), 0);
    for (; !opts.empty();) {  // every non-decreasing r-tuple of options
        double prod_own = 1, prod_rho = 1, count = 1;
        for (auto i : pick) {
            prod_own *= opts[i].own;
            prod_rho *= opts[i].rho;
            count *= static_cast<double>(opts[i].cells->cells.size());
        }
        if (2 * (1 - prod_own) + eps.approx * prod_rho < limit && count > best_count) {
            best_count = count;
            best_lower.clear();
            for (auto i : pick) best_lower.push_back(opts[i]);
        }
        std::size_t k = static_cast<std::size_t>(r);
        while (k-- > 0) {
            if (++pick[k] < opts.size()) {
                for (std::size_t j = k + 1; j < pick.size(); ++j) pick[j] = pick[k];
                break;
            }
        }
        if (k == static_cast<std::size_t>(-1)) break;
    }
    json certs = json::array();
    if (!best_lower.empty()) {
        json fs = json::array();
        for (std::size_t a = 0; a < best_lower.size(); ++a) {
            const AxisCells* c = best_lower[a].cells;
            json rj;
            if (best_lower[a].inverse) {
                Mat R = Mat::Zero(static_cast<Eigen::Index>(N), static_cast<Eigen::Index>(c->cells.size()));
                for (std::size_t t = 0; t < c->cells.size(); ++t)
                    for (std::size_t j = c->cells[t].first; j <= c->cells[t].second; ++j)
                        R.row(static_cast<Eigen::Index>(j)) = c->minv.row(static_cast<Eigen::Index>(t));
                rj = array_json(R, out, stem + "-eps" + eps.file_text() + ".axis" + std::to_string(a) + ".r.npy", 0);
            } else {
                json row = json::array(), col = json::array(), val = json::array();
                for (std::size_t t = 0; t < c->cells.size(); ++t)
                    for (std::size_t j = c->cells[t].first; j <= c->cells[t].second; ++j) {
                        row.push_back(j);
                        col.push_back(t);
                        val.push_back(1);
                    }
                rj = {{"shape", {N, c->cells.size()}}, {"coo", {{"row", row}, {"col", col}, {"val", val}}}};
            }
            fs.push_back({{"rows", c->centres}, {"r", rj}});
        }
        certs.push_back({{"bound", "lower"},
                         {"kind", "kron_neumann"},
                         {"rank", static_cast<std::uint64_t>(best_count)},
                         {"factors", fs},
                         {"producer", {{"method", "interval cells per axis (0/1 or inverse R)"}}}});
    }

    // Upper: axis factors at tolerances around e* = (1 + eps)^(1/r) - 1.
    const double estar = std::pow(1 + eps.approx, 1.0 / r) - 1;
    const std::string tmp = out + "/." + stem + "-axis-tmp";
    fs::create_directories(tmp);
    {
        BracketOptions opt;
        std::string list;
        for (double f : {0.5, 0.65, 0.8, 0.9, 1.0, 1.12, 1.3, 1.6, 2.0}) {
            std::ostringstream o;
            o << std::setprecision(5) << std::floor(estar * f * 1e6) / 1e6;
            list += (list.empty() ? "" : ",") + o.str();
        }
        opt.eps = parse_eps_list(list);
        opt.out_dir = tmp;
        opt.stem = axis_stem;
        opt.lp = false;
        opt.interpolative = false;
        opt.tail = false;
        opt.time_budget = 2.0 * static_cast<double>(opt.eps.size());
        const json axis_copy = axis;
        std::vector<std::pair<Rat, std::uint64_t>> cand;  // (e, k)
        std::vector<json> factor_of;
        for (const auto& br : run_bracket(axis_copy, opt)) {
            if (br.verdict != Verdict::verified || br.upper_kind != "factor") continue;
            json doc = read_document(br.bundle_path, br.bundle_path);
            for (const auto& c : doc["certificates"])
                if (c.value("kind", "") == "factor" && c.value("rank", 0ull) == br.upper) {
                    cand.emplace_back(parse_rational_text(br.eps_text, {}), br.upper);
                    factor_of.push_back(c);
                    break;
                }
        }
        if (!cand.empty()) {
            std::vector<std::size_t> best, idx(static_cast<std::size_t>(r), 0);
            double best_rank = 0;
            for (;;) {
                std::vector<Rat> e;
                double rank = 1;
                for (auto i : idx) {
                    e.push_back(cand[i].first);
                    rank *= static_cast<double>(cand[i].second);
                }
                if (telescoped_bound(e) <= eps.exact && (best.empty() || rank < best_rank)) {
                    best = idx;
                    best_rank = rank;
                }
                std::size_t k = idx.size();
                while (k-- > 0) {
                    if (++idx[k] < cand.size()) break;
                    idx[k] = 0;
                }
                if (k == static_cast<std::size_t>(-1)) break;
            }
            if (!best.empty()) {
                json fsj = json::array();
                for (std::size_t a = 0; a < best.size(); ++a) {
                    json f = factor_of[best[a]];
                    json entry;
                    for (const char* key : {"u", "w"}) {
                        json arr = f[key];
                        if (arr.is_object() && arr.contains("npy")) {
                            const std::string name = stem + "-eps" + eps.file_text() + ".axis" + std::to_string(a) + "." + key + ".npy";
                            fs::copy_file(tmp + "/" + arr["npy"].get<std::string>(), out + "/" + name,
                                          fs::copy_options::overwrite_existing);
                            arr["npy"] = name;
                        }
                        entry[key] = arr;
                    }
                    fsj.push_back(entry);
                }
                certs.push_back({{"bound", "upper"},
                                 {"kind", "kron_factor"},
                                 {"rank", static_cast<std::uint64_t>(best_rank)},
                                 {"factors", fsj},
                                 {"producer", {{"method", "axis factors from rankcert bracket"}}}});
            }
        }
    }
    fs::remove_all(tmp);

    json inst = {{"kind", "kronecker"}, {"factors", json::array()}};
    for (int k = 0; k < r; ++k) inst["factors"].push_back(axis);
    json doc = {{"format", "rankcert/1"},
                {"instance", inst},
                {"eps", eps.text},
                {"certificates", certs},
                {"provenance",
                 {{"construction", "ball"}, {"dimension", r}, {"beta", beta_text}, {"grid_spacing", h_text},
                  {"points", std::pow(static_cast<double>(res.axis_points), r)},
                  {"note", "the weighted ball in dimension r as the r-th Kronecker power of its one-axis matrix"}}}};
    for (const auto& [k, v] : provenance.items()) doc["provenance"][k] = v;
    res.bundle_path = out + "/" + stem + "-eps" + eps.file_text() + ".json";
    // Verify, then state the certified bracket as the claim.
    for (int pass = 0; pass < 2; ++pass) {
        std::ofstream(res.bundle_path) << doc.dump(1) << "\n";
        Bundle b = load_bundle(res.bundle_path, res.bundle_path);
        Report rep = verify(b, CheckOptions{});
        res.lower = rep.lower;
        res.upper = rep.upper;
        res.verdict = rep.verdict;
        if (pass == 0) {
            // Keep only verified certificates; claim the certified bracket.
            json kept = json::array();
            for (std::size_t i = 0; i < rep.certificates.size(); ++i)
                if (rep.certificates[i].verdict == Verdict::verified) kept.push_back(doc["certificates"][i]);
            doc["certificates"] = kept;
            doc["claim"] = {{"lower", rep.lower}, {"upper", rep.upper}};
        }
    }
    return res;
}

namespace {

void collect_npy(const json& j, std::vector<std::string>& out) {
    if (j.is_object()) {
        if (j.contains("npy") && j["npy"].is_string()) out.push_back(j["npy"].get<std::string>());
        for (const auto& [k, v] : j.items()) collect_npy(v, out);
    } else if (j.is_array()) {
        for (const auto& v : j) collect_npy(v, out);
    }
}

// <stem>.kept.<rest>: the name of a kept sidecar beside the bundle <stem>.json
// (once kept, a file keeps its name through later rebuilds).
std::string kept_name(const std::string& stem, const std::string& f) {
    if (f.rfind(stem + ".kept.", 0) == 0) return f;
    if (f.rfind(stem + ".", 0) == 0) return stem + ".kept." + f.substr(stem.size() + 1);
    return stem + ".kept." + f;
}

void rename_npy(json& j, const std::string& stem) {
    if (j.is_object()) {
        if (j.contains("npy") && j["npy"].is_string()) j["npy"] = kept_name(stem, j["npy"].get<std::string>());
        for (auto& [k, v] : j.items()) rename_npy(v, stem);
    } else if (j.is_array()) {
        for (auto& v : j) rename_npy(v, stem);
    }
}

// The kind of the verified certificate that decides one end of the bracket.
std::string winning_kind(const Report& rep, Bound bound, std::uint64_t rank, const json& certs) {
    for (const auto& c : rep.certificates)
        if (c.bound == bound && c.verdict == Verdict::verified && c.rank == rank)
            return certs.at(c.index).value("kind", "");
    return "";
}

}  // namespace

KeptBracket keep_tighter(const std::string& fresh, const KeptBracket& now, const std::string& previous) {
    const fs::path fdir = fs::path(fresh).parent_path(), pdir = fs::path(previous).parent_path();
    KeptBracket out = now;
    out.took_lower = out.took_upper = false;
    if (std::error_code ec; !fs::exists(previous, ec)) return out;
    json doc = read_document(fresh, fresh);
    const json prev = read_document(previous, previous);
    if (prev.value("instance", json()) != doc["instance"] || prev.value("eps", json()) != doc["eps"]) return out;
    const Report was = verify(load_bundle(previous, previous), CheckOptions{});
    out.took_lower = was.lower > now.lower;
    out.took_upper = was.upper < now.upper;
    if (!out.took_lower && !out.took_upper) return out;
    const std::string stem = fs::path(fresh).stem().string();
    json certs = json::array();
    std::vector<std::string> dropped;
    auto from_prev = [&](const json& c) {
        return (c.value("bound", "") == "lower" && out.took_lower) || (c.value("bound", "") == "upper" && out.took_upper);
    };
    for (const auto& c : doc["certificates"])
        if (from_prev(c)) collect_npy(c, dropped);
        else certs.push_back(c);
    for (const auto& c0 : prev["certificates"]) {
        if (!from_prev(c0)) continue;
        json c = c0;
        std::vector<std::string> files;
        collect_npy(c, files);
        for (const auto& f : files)
            if (pdir / f != fdir / kept_name(stem, f))
                fs::copy_file(pdir / f, fdir / kept_name(stem, f), fs::copy_options::overwrite_existing);
        rename_npy(c, stem);
        certs.push_back(c);
    }
    doc["certificates"] = certs;
    doc.erase("claim");
    std::ofstream(fresh) << doc.dump(1) << "\n";
    const Report rep = verify(load_bundle(fresh, fresh), CheckOptions{});
    if (rep.verdict != Verdict::verified) throw std::runtime_error(fresh + ": the merged bundle did not verify");
    doc["claim"] = {{"lower", rep.lower}, {"upper", rep.upper}};
    std::ofstream(fresh) << doc.dump(1) << "\n";
    std::vector<std::string> kept;
    for (const auto& c : certs) collect_npy(c, kept);
    for (const auto& f : dropped)
        if (std::find(kept.begin(), kept.end(), f) == kept.end()) fs::remove(fdir / f);
    out.lower = rep.lower;
    out.upper = rep.upper;
    out.lower_kind = winning_kind(rep, Bound::lower, rep.lower, certs);
    out.upper_kind = winning_kind(rep, Bound::upper, rep.upper, certs);
    return out;
}

}  // namespace rankcert::producer
