// `rankcert construct`: the sharp-exponent families of docs/constructions.md,
// built exactly (rational points), with certified sweeps over beta and eps.
//
// UNTRUSTED producer code: it writes instances with exact rational data (the
// checker needs no generator), proposes certificates, and records sweeps;
// every bundle is decided by the checker, and `rankcert verify SWEEP.json`
// re-checks every bundle and the fitted slopes.
#pragma once

#include "rankcert/producer/bracket.hpp"

#include <string>
#include <vector>

namespace rankcert::producer {

struct Construction {
    std::string family;  // "sphere" or "ball"
    int dim = 0;         // d (sphere S^{d-1}) or r (ball)
    json instance;       // exact, inline
    Mat queries, keys;   // float coordinates (rows), for the search only
    double theory = 0;   // theoretical exponent of r_eps in beta
};

// n exact rational points on S^{d-1} (d = 2, 3, 4), near-uniform: inverse
// stereographic projection of rational points.  Self-attention logits
// beta <x_i, x_j>.
Construction sphere(int d, std::size_t n, const std::string& beta);
// Weighted ball in dimension r: keys and queries on the grid of spacing h in
// the cube [-c, c]^r, c = 0.9 / sqrt(r) (inside the unit ball), key
// log-weights -beta |y|^2 / 2: row i is the Gaussian exp(-beta |x_i - y|^2 / 2).
// With multiplicity M > 0: the unweighted ball, key y repeated
// round(M exp(-beta |y|^2 / 2)) times instead of the log-weight.
Construction ball(int r, const std::string& h, const std::string& beta, long multiplicity = 0);

// Cell-partition Neumann certificate: m well-spread query rows (farthest
// point sampling), every key in the cell of its nearest centre; the largest m
// whose float condition holds with margin, R the 0/1 cell indicator P or
// P M^{-1} (M the cell masses of the centre rows).  With seconds > 0, larger
// counts are then tried with R polished by the smooth minimax from P M^{-1},
// and after that (for as long again) even centres with the ADMM right
// inverse over all keys (even_centres, neumann_admm).
std::optional<NeumannCandidate> cell_partition(const Mat& A, const Mat& queries, const Mat& keys, double eps,
                                               double seconds = 0, double margin = 1e-6);

// m distinct query rows spread evenly: a Riesz s = 3 energy code snapped to
// the queries when they lie on the unit sphere S^1 or S^2, a hexagonal
// lattice snapped to them when they are planar; empty otherwise.
std::vector<std::size_t> even_centres(const Mat& queries, std::size_t m);

// The weighted ball in dimension r as a kronecker instance (docs/theory.md,
// "Kronecker instances"): the r-th Kronecker power of the one-axis ball on the
// grid of spacing h in [-c, c], c = 0.9 / sqrt(r) -- the same matrix as
// ball(r, h, beta) up to the order of the grid points, with n = n_1^r.
// Lower: per-axis interval cells (a kron_neumann certificate with 0/1 R_k and
// the largest prod m_k whose product cell mass exceeds (1 + eps)/2).  Upper:
// per-axis factors from the bracket search at several axis tolerances e_k,
// the combination of least prod k_k with telescoped error <= eps.  The bundle
// is written to out/stem-eps<eps>.json (sidecars beside it) and verified.
struct KronPoint {
    std::string bundle_path;
    std::uint64_t lower = 0, upper = 0;
    std::size_t axis_points = 0;
    Verdict verdict = Verdict::undecided;
};
KronPoint kron_ball(int r, const std::string& h, const std::string& beta, const EpsValue& eps, const std::string& out,
                    const std::string& stem, const json& provenance);

// Keep the tighter end of two bundles of the same instance and eps: the
// bundle at `fresh` (just written and verified by the caller, which passes
// its certified bracket and the winning kinds as `now`) takes the lower certificates of `previous`
// when they certify a larger L, and its upper certificates when they certify
// a smaller U (sidecars copied beside `fresh` as <stem>.kept.<name>).  The
// merged bundle is verified from its file and its claim set to the certified
// bracket; nothing changes when the instance or eps differ or `previous` is
// missing.  Sweeps are budgeted searches whose ends move by a rank or two
// between runs: this is how a rebuild never widens a committed bracket.
struct KeptBracket {
    std::uint64_t lower = 0, upper = 0;
    std::string lower_kind, upper_kind;
    bool took_lower = false, took_upper = false;
};
KeptBracket keep_tighter(const std::string& fresh, const KeptBracket& now, const std::string& previous);

// A zonal upper certificate (docs/theory.md) for self-attention with logits
// sigma <x_i, x_j> on points X (rows) exactly on the unit sphere: g the
// weighted-L1 best Chebyshev polynomial of exp(sigma (t - 1)) (shift = sigma,
// spelled shift_text), the least degree <= max_degree whose float row errors
// on X are at most eps (1 - margin); nullopt when none is found.
std::optional<json> zonal_sphere(const Mat& X, double sigma, const std::string& shift_text, double eps,
                                 std::size_t max_degree = 80, double margin = 1e-6);
// Its rank: the dimension of the polynomials of degree <= p on S^{d-1}, at most n.
std::uint64_t zonal_sphere_rank(std::size_t d, std::size_t p, std::size_t n);

// Least-squares slope of log(y) against log(x) (float; for reports).
double loglog_slope(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace rankcert::producer
