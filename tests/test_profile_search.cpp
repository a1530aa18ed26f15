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
        out.emplace_back(fmpq_get_d(b.certificates[t].as<ProfileCert>().kappa_lo.get()), fmpq_get_d(b.certificates[t].as<ProfileCert>().kappa_hi.get()));
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

TEST_CASE("profile search: a gauge Q -> Q G, K -> K G^-T keeps kappa and changes the native size", "[profile-search]") {
    TempDir dir;
    Rng rng(41);
    const int n = 16, N = 16, d = 3;
    std::vector<Rat> Q(n * d), K(N * d);
    for (auto& v : Q) v = rng.rational_in(6, 2);
    for (auto& v : K) v = rng.rational_in(6, 2);
    const Rat G[3][3] = {{Rat(2), Rat(1), Rat(0)}, {Rat(0), Rat(1), Rat(0)}, {Rat(1), Rat(0), Rat(1)}};
    const Rat Gi[3][3] = {{Rat(1, 2), Rat(-1, 2), Rat(0)}, {Rat(0), Rat(1), Rat(0)}, {Rat(-1, 2), Rat(1, 2), Rat(1)}};
    auto as_json = [](const std::vector<Rat>& M, int rows) {
        std::vector<json> v;
        for (auto& x : M) v.push_back(x.str());
        return dense(static_cast<std::size_t>(rows), 3, v);
    };
    std::vector<Rat> Q2(n * d), K2(N * d);
    for (int i = 0; i < n; ++i)
        for (int c = 0; c < d; ++c)
            for (int t = 0; t < d; ++t) Q2[static_cast<std::size_t>(i * d + c)] = Q2[static_cast<std::size_t>(i * d + c)] + Q[static_cast<std::size_t>(i * d + t)] * G[t][c];
    for (int j = 0; j < N; ++j)
        for (int c = 0; c < d; ++c)
            for (int t = 0; t < d; ++t) K2[static_cast<std::size_t>(j * d + c)] = K2[static_cast<std::size_t>(j * d + c)] + K[static_cast<std::size_t>(j * d + t)] * Gi[c][t];
    const json a = {{"kind", "qk"}, {"q", as_json(Q, n)}, {"k", as_json(K, N)}, {"scale", "1/2"}};
    const json b = {{"kind", "qk"}, {"q", as_json(Q2, n)}, {"k", as_json(K2, N)}, {"scale", "1/2"}};
    auto ka = certified_kappa(dir, a, {1, 3});
    TempDir dir2;
    auto kb = certified_kappa(dir2, b, {1, 3});
    for (int t = 0; t < 2; ++t) {
        // Both intervals are certified to contain the same kappa(T): they overlap, and are tight.
        REQUIRE(ka[static_cast<std::size_t>(t)].first <= kb[static_cast<std::size_t>(t)].second);
        REQUIRE(kb[static_cast<std::size_t>(t)].first <= ka[static_cast<std::size_t>(t)].second);
        REQUIRE((ka[static_cast<std::size_t>(t)].second - ka[static_cast<std::size_t>(t)].first) < 0.05 * ka[static_cast<std::size_t>(t)].second);
    }
    Bundle pa = parse_instance(a, dir.path.string(), "na"), pb = parse_instance(b, dir2.path.string(), "nb");
    const Mat Ca = interaction(pa.instance), Cb = interaction(pb.instance);
    REQUIRE((Ca - Cb).cwiseAbs().maxCoeff() < 1e-9);                 // C is gauge invariant
    REQUIRE(exact_visible_dimension(pa.instance) == exact_visible_dimension(pb.instance));
    const double na = native_size(pa.instance, Ca, 3), nb = native_size(pb.instance, Cb, 3);
    REQUIRE(na >= ka[1].first * (1 - 1e-9));                         // native >= kappa
    REQUIRE(nb >= ka[1].first * (1 - 1e-9));
    REQUIRE(std::abs(na - nb) > 1e-3 * na);                           // the native size is not
}
