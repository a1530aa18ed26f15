// Sweep witnesses: every listed bundle is verified, listed brackets must be
// the certified ones, and stated slope intervals must contain the exact
// least-squares slope.
#include "helpers.hpp"
#include "rankcert/sweep.hpp"

#include <catch2/catch.hpp>

using namespace rankcert;
using namespace rankcert::test;

namespace {

// Identity matrices of size 2, 4, 8 at eps 1/2: the bracket closes at n, so
// log L against log n has slope exactly 1.
json make_sweep(const TempDir& dir) {
    json points = json::array();
    for (std::size_t n : {2, 4, 8}) {
        json rows = json::array(), r = json::array(), v = json::array();
        for (std::size_t t = 0; t < n; ++t) { rows.push_back(t); v.push_back(1); }
        json doc = bundle_json({{"kind", "matrix"}, {"a", identity(n)}}, Rat(1, 2),
                               {{{"bound", "upper"}, {"kind", "factor"}, {"rank", n}, {"u", identity(n)}, {"w", identity(n)}},
                                {{"bound", "lower"}, {"kind", "neumann"}, {"rank", n}, {"rows", rows},
                                 {"r", {{"shape", {n, n}}, {"coo", {{"row", rows}, {"col", rows}, {"val", v}}}}}}},
                               {{"lower", n}, {"upper", n}});
        const std::string name = "id" + std::to_string(n) + ".json", text = doc.dump();
        dir.file(name, text);
        points.push_back({{"beta", n}, {"eps", "1/2"}, {"bundle", name}, {"sha256", sha256_hex(text)}, {"L", n}, {"U", n}});
    }
    return {{"format", "rankcert-sweep/1"}, {"family", "identity"}, {"dimension", 1}, {"parameter", "beta"},
            {"points", points}, {"fit", {{"points", {0, 1, 2}}, {"slope_L", {"0.999", "1.001"}}, {"slope_U", {"1", "1"}}}}};
}

SweepReport check(const TempDir& dir, const json& sweep) {
    BundleVerifier vb = [](const std::filesystem::path& p) {
        Bundle b = load_bundle(p, p.string());
        return std::make_pair(verify(b, {}), b.sha256);
    };
    return verify_sweep(sweep, dir.path, "sweep.json", vb);
}

}  // namespace

TEST_CASE("sweep: a degenerate slope interval is never verified", "[sweep]") {
    TempDir dir;
    SweepReport r = check(dir, make_sweep(dir));
    INFO(r.detail);
    REQUIRE(r.verdict == Verdict::undecided);
    REQUIRE(r.points.size() == 3);
    REQUIRE(r.fit_L == Verdict::verified);
    // slope_U = [1, 1] is verified only if the enclosure collapses to 1: the
    // ball of an exact 1 from logarithms is not a point, so it is undecided,
    // never verified.
    REQUIRE(r.fit_U == Verdict::undecided);
}

TEST_CASE("sweep: tampered witnesses are refused", "[sweep]") {
    TempDir dir;
    json s = make_sweep(dir);
    s["fit"]["slope_U"] = {"0.99", "1.01"};
    SweepReport ok = check(dir, s);
    REQUIRE(ok.verdict == Verdict::verified);
    REQUIRE(ok.slope_L.lo <= Rat(1));
    REQUIRE(ok.slope_L.hi >= Rat(1));
    SECTION("a wrong slope interval") {
        s["fit"]["slope_L"] = {"1.01", "1.02"};
        REQUIRE(check(dir, s).verdict == Verdict::refuted);
    }
    SECTION("a listed bracket that is not the certified one") {
        s["points"][1]["L"] = 5;
        REQUIRE(check(dir, s).verdict == Verdict::refuted);
    }
    SECTION("a wrong hash") {
        s["points"][0]["sha256"] = std::string(64, '0');
        REQUIRE_THROWS_AS(check(dir, s), InputError);
    }
    SECTION("a bundle outside the folder") {
        s["points"][0]["bundle"] = "../x.json";
        REQUIRE_THROWS_AS(check(dir, s), InputError);
    }
}
