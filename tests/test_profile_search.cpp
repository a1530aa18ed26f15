// rankcert profile search: on constructions where kappa is known in closed
// form, the certified kappa interval contains it and is tight; gauging Q, K
// changes the native size but not the certified interval.
#include "helpers.hpp"
#include "rankcert/producer/bracket.hpp"
#include "rankcert/producer/construct.hpp"
#include "rankcert/producer/profile.hpp"
#include "rankcert/profile.hpp"

#include <catch2/catch.hpp>

using namespace rankcert;
using namespace rankcert::test;
using namespace rankcert::producer;

namespace {
// Profile certificates for ranks rs, verified from a bundle file; returns (lo, hi) per rank.
std::vector<std::pair<double, double>> certified_kappa(const TempDir& dir, const json& inst, const std::vector<std::size_t>& rs) {
    Bundle parsed = parse_instance(inst, dir.path.string(), "p");
    const Mat C = interaction(parsed.instance);
    std::vector<json> certs;
    for (auto r : rs) certs.push_back(profile_candidate(C, r, dir.path.string(), "p-r" + std::to_string(r)).cert);
    Bundle b = load(dir, bundle_json(inst, Rat(1, 2), certs), "profile.json");
    Report rep = verify(b, {});
    std::vector<std::pair<double, double>> out;
    for (std::size_t t = 0; t < rs.size(); ++t) {
        INFO(rep.certificates[t].detail);
        REQUIRE(rep.certificates[t].verdict == Verdict::verified);
        out.emplace_back(fmpq_get_d(b.certificates[t].profile.kappa_lo.get()), fmpq_get_d(b.certificates[t].profile.kappa_hi.get()));
    }
    return out;
}
}  // namespace

TEST_CASE("profile search: sphere self-attention has kappa = beta (centred unit vectors)", "[profile-search]") {
    TempDir dir;
    // For near-uniform unit vectors the centring shifts norms by |mean|^2 only;
    // kappa(C) = beta * kappa(X' X'^T) with X' the centred points, between
    // beta (1 - |mean|)^2 ... ; on 200 Fibonacci points the mean is tiny.
    Construction c = sphere(3, 200, "4");
    auto k = certified_kappa(dir, c.instance, {3});
    REQUIRE(k[0].first <= k[0].second);
    REQUIRE(k[0].first > 4 * 0.97);
    REQUIRE(k[0].second < 4 * 1.01);
    REQUIRE((k[0].second - k[0].first) / k[0].second < 0.01);  // tight within 1%
}

TEST_CASE("profile search: Gaussian ball rows, kappa of the full interaction", "[profile-search]") {
    TempDir dir;
    // Weighted ball r = 1: C = beta (P x)(P y)^T, rank one, so kappa =
    // beta max|x'_i| max|y'_j| with the centred grid (symmetric, so centring is exact).
    Construction c = ball(1, "1/16", "8");
    auto k = certified_kappa(dir, c.instance, {1});
    const double cmax = std::floor(0.9 * 16) / 16;  // largest grid coordinate
    const double kappa = 8 * cmax * cmax;
    REQUIRE(k[0].first <= kappa * (1 + 1e-9));
    REQUIRE(k[0].second >= kappa * (1 - 1e-9));
    REQUIRE((k[0].second - k[0].first) / k[0].second < 0.01);
}
