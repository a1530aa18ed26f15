// Zonal upper certificates for self-attention on the unit sphere (UNTRUSTED
// producer; docs/theory.md, "Upper bounds", zonal).
//
// Rows of exp(sigma <x_i, x_j>) / Z_i on near-uniform points of S^{d-1} are
// all alike: the l1 error of B_ij = e^c g(t_ij) / Z_i is a quadrature of
//   int |e^{sigma (t - 1)} - g(t)| w(t) dt / int e^{sigma (t - 1)} w(t) dt,
// w(t) = (1 - t^2)^{(d-3)/2} (the density of <x, y> on the sphere), shift
// c = sigma.  So g is the weighted-L1 best polynomial of degree p on a
// Chebyshev grid in theta (an LP, GLPK), and the least p whose float row
// errors on the actual points stay below eps (1 - margin) is proposed.  Its
// rank is the dimension of the spherical harmonics of degree <= p.
#include "rankcert/producer/construct.hpp"
#include "rankcert/producer/producer.hpp"

#include <cmath>

namespace rankcert::producer {

namespace {

constexpr double kPi = 3.14159265358979323846;

// min_c sum_m w_m |f_m - sum_k c_k T_k(t_m)| on M nodes t_m = cos theta_m.
// Returns the coefficients (empty on LP failure) and the weighted value
// relative to sum_m w_m f_m.
std::vector<double> weighted_l1_fit(int d, double sigma, std::size_t p, std::size_t M, double& rel) {
    const auto nc = static_cast<Eigen::Index>(p + 1), nu = static_cast<Eigen::Index>(M);
    Mat T(nu, nc);
    Vec w(nu), f(nu);
    double fw = 0;
    for (Eigen::Index m = 0; m < nu; ++m) {
        const double th = (static_cast<double>(m) + 0.5) * kPi / static_cast<double>(M);
        w[m] = std::pow(std::sin(th), d - 2);
        f[m] = std::exp(sigma * (std::cos(th) - 1));
        fw += w[m] * f[m];
        for (Eigen::Index k = 0; k < nc; ++k) T(m, k) = std::cos(static_cast<double>(k) * th);
    }
    w /= fw;
    const auto c = lad_lp(T, f, 0, &w);  // (upper.cpp: the LP of a least-absolute-deviation fit)
    if (!c) return {};
    rel = w.dot((f - T * *c).cwiseAbs());
    return std::vector<double>(c->data(), c->data() + c->size());
}

// The largest float row error sum_j |e^{sigma (t_ij - 1)} - g(t_ij)| / sum_j e^{sigma (t_ij - 1)}.
double worst_row_error(const Mat& X, double sigma, const std::vector<double>& c) {
    const Eigen::Index n = X.rows();
    double worst = 0;
    for (Eigen::Index i = 0; i < n; ++i) {
        double num = 0, den = 0;
        for (Eigen::Index j = 0; j < n; ++j) {
            const double t = X.row(i).dot(X.row(j));
            double b1 = 0, b2 = 0;
            for (std::size_t k = c.size() - 1; k >= 1; --k) {
                const double b0 = c[k] + 2 * t * b1 - b2;
                b2 = b1;
                b1 = b0;
            }
            const double g = c[0] + t * b1 - b2, f = std::exp(sigma * (t - 1));
            num += std::fabs(f - g);
            den += f;
        }
        worst = std::max(worst, num / den);
    }
    return worst;
}

std::uint64_t binom(std::uint64_t a, std::uint64_t b) {
    std::uint64_t r = 1;
    for (std::uint64_t k = 1; k <= b; ++k) r = r * (a - b + k) / k;  // exact at every step
    return r;
}

}  // namespace

std::uint64_t zonal_sphere_rank(std::size_t d, std::size_t p, std::size_t n) {
    std::uint64_t k = binom(p + d - 1, d - 1) + (p >= 1 ? binom(p + d - 2, d - 1) : 0);
    return std::min<std::uint64_t>(k, n);
}

std::optional<json> zonal_sphere(const Mat& X, double sigma, const std::string& shift_text, double eps,
                                 std::size_t max_degree, double margin) {
    const int d = static_cast<int>(X.cols());
    std::size_t tried_rows = 0;
    for (std::size_t p = 1; p <= max_degree; ++p) {
        double rel = 0;
        const std::vector<double> c = weighted_l1_fit(d, sigma, p, 800, rel);
        if (c.empty() || rel > eps) continue;
        // The continuum value is an average over rows; the worst row decides.
        if (worst_row_error(X, sigma, c) <= eps * (1 - margin)) {
            json cs = json::array();
            for (double v : c) cs.push_back(exact_text(v));
            return json{{"bound", "upper"},
                        {"kind", "zonal"},
                        {"rank", zonal_sphere_rank(static_cast<std::size_t>(d), p, static_cast<std::size_t>(X.rows()))},
                        {"chebyshev", cs},
                        {"shift", shift_text}};
        }
        if (++tried_rows >= 4) break;
    }
    return std::nullopt;
}

}  // namespace rankcert::producer
