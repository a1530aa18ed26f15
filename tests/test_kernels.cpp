// Tests per trusted kernel, in the manner of Arb (one kernel, its own test):
// the registry of certificate kinds, the exact LDL^T definiteness test
// against Sylvester's criterion, the sweep slope enclosure against an
// independent high-precision computation, and the same verdicts and
// enclosures at 1 and 8 threads.
#include "../src/checker/cert/common.hpp"
#include "../src/checker/ldl.hpp"
#include "helpers.hpp"
#include "rankcert/kinds.hpp"
#include "rankcert/sweep.hpp"

#include <catch2/catch.hpp>
#include <flint/fmpq_mat.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

using namespace rankcert;
using namespace rankcert::test;

TEST_CASE("registry: one row per kind, in order, each with known-answer and tampering tests", "[kernels]") {
    const auto ks = kinds();
    REQUIRE(ks.size() == std::variant_size_v<CertData>);
    for (std::size_t i = 0; i < ks.size(); ++i) {
        REQUIRE(static_cast<std::size_t>(ks[i].kind) == i);
        REQUIRE(find_kind(ks[i].name) == &ks[i]);
        REQUIRE(&kind_info(ks[i].kind) == &ks[i]);
    }
    REQUIRE(find_kind("no-such-kind") == nullptr);
    // Every kind has a test tagged [kind:NAME][known-answer] and one tagged
    // [kind:NAME][tampering] (the tests that decide known cases and refuse
    // perturbed certificates).
    std::map<std::string, std::set<std::string>> seen;
    for (const auto& tc : Catch::getRegistryHub().getTestCaseRegistry().getAllTests()) {
        const auto& tags = tc.getTestCaseInfo().tags;
        for (const auto& t : tags)
            if (t.rfind("kind:", 0) == 0)
                for (const auto& u : tags)
                    if (u == "known-answer" || u == "tampering") seen[t.substr(5)].insert(u);
    }
    for (const auto& k : ks) {
        INFO("certificate kind " << k.name);
        CHECK(seen[k.name].count("known-answer") == 1);
        CHECK(seen[k.name].count("tampering") == 1);
    }
}

namespace {

// Sylvester: a symmetric matrix is positive definite iff every leading
// principal minor is positive.  Returns the index of the first minor that is
// not positive, or m.
std::size_t first_nonpositive_minor(const std::vector<Rat>& h, std::size_t m, int* sign) {
    for (std::size_t p = 1; p <= m; ++p) {
        fmpq_mat_t a;
        fmpq_mat_init(a, static_cast<slong>(p), static_cast<slong>(p));
        for (std::size_t i = 0; i < p; ++i)
            for (std::size_t j = 0; j < p; ++j)
                fmpq_set(fmpq_mat_entry(a, static_cast<slong>(i), static_cast<slong>(j)),
                         h[std::max(i, j) * m + std::min(i, j)].get());
        Rat det;
        fmpq_mat_det(det.get(), a);
        fmpq_mat_clear(a);
        if (det.sign() <= 0) {
            *sign = det.sign();
            return p - 1;
        }
    }
    *sign = 1;
    return m;
}

}  // namespace

TEST_CASE("LDL^T: exact verdicts agree with Sylvester's criterion; ball verdicts never contradict them", "[kernels]") {
    Rng rng(7);
    std::size_t counts[3] = {0, 0, 0};
    for (int trial = 0; trial < 300; ++trial) {
        const std::size_t m = 1 + rng.below(6);
        // H = G G^T - s I with a random shift: positive definite, singular or indefinite.
        std::vector<Rat> g(m * m), h(m * m);
        for (auto& x : g) x = rng.rational_in(6, 3);
        const Rat s = Rat(static_cast<long>(rng.below(4))) / Rat(static_cast<long>(1 + rng.below(3)));
        for (std::size_t i = 0; i < m; ++i)
            for (std::size_t j = 0; j <= i; ++j) {
                Rat acc;
                for (std::size_t t = 0; t < m; ++t) acc = acc + g[i * m + t] * g[j * m + t];
                h[i * m + j] = i == j ? acc - s : acc;
            }
        if (trial % 10 == 0 && m >= 2) {  // exactly singular: row and column 1 repeat row and column 0
            h[1 * m + 0] = h[0];
            h[1 * m + 1] = h[0];
            for (std::size_t i = 2; i < m; ++i) h[i * m + 1] = h[i * m + 0];
        }
        int sign = 0;
        const std::size_t minor = first_nonpositive_minor(h, m, &sign);
        std::vector<Rat> he = h;
        const LdlResult exact = ldl_positive_definite(RatOps{}, he, m);
        INFO("trial " << trial << ", m = " << m);
        if (minor == m) {
            REQUIRE(exact.verdict == Verdict::verified);
        } else {
            REQUIRE(exact.verdict != Verdict::verified);
            REQUIRE(exact.pivot == minor);
            // A negative minor refutes; a zero minor (a zero pivot) is undecided.
            REQUIRE(exact.verdict == (sign < 0 ? Verdict::refuted : Verdict::undecided));
        }
        std::vector<Ball> hb(m * m);
        for (std::size_t a = 0; a < m * m; ++a) arb_set_fmpq(hb[a].get(), h[a].get(), 128);
        const LdlResult ball = ldl_positive_definite(BallOps{128}, hb, m);
        if (ball.verdict != Verdict::undecided) REQUIRE(ball.verdict == exact.verdict);
        counts[static_cast<int>(exact.verdict)]++;
    }
    // The random family reaches all three outcomes.
    REQUIRE(counts[0] > 0);
    REQUIRE(counts[1] > 0);
    REQUIRE(counts[2] > 0);
}

TEST_CASE("sweep slope: the 128-bit enclosure contains the slope computed independently at 1024 bits", "[kernels]") {
    Rng rng(11);
    for (int trial = 0; trial < 40; ++trial) {
        const std::size_t n = 2 + rng.below(6);
        json points = json::array();
        std::vector<Rat> beta(n);
        std::vector<std::uint64_t> L(n), U(n);
        std::map<std::string, std::pair<Report, std::string>> reports;
        for (std::size_t t = 0; t < n; ++t) {
            beta[t] = Rat(static_cast<long>(t + 1)) * Rat(static_cast<long>(3 + rng.below(5)), 2);  // increasing
            L[t] = 1 + rng.below(50);
            U[t] = L[t] + rng.below(50);
            const std::string name = std::string("p").append(std::to_string(t)).append(".json"), sha = std::string(64, 'a' + static_cast<char>(t));
            Report r;
            r.verdict = Verdict::verified;
            r.lower = L[t];
            r.upper = U[t];
            reports[name] = {r, sha};
            points.push_back({{"beta", beta[t].str()}, {"bundle", name}, {"sha256", sha}, {"L", L[t]}, {"U", U[t]}});
        }
        // Independent: slope = (n Sxy - Sx Sy) / (n Sxx - Sx^2) at 1024 bits.
        auto slope = [&](const std::vector<std::uint64_t>& y) {
            const slong prec = 1024;
            Ball sx, sy, sxy, sxx, x, ly, num, den, t;
            for (std::size_t i = 0; i < n; ++i) {
                arb_set_fmpq(x.get(), beta[i].get(), prec);
                arb_log(x.get(), x.get(), prec);
                arb_set_ui(ly.get(), y[i]);
                arb_log(ly.get(), ly.get(), prec);
                arb_add(sx.get(), sx.get(), x.get(), prec);
                arb_add(sy.get(), sy.get(), ly.get(), prec);
                arb_addmul(sxy.get(), x.get(), ly.get(), prec);
                arb_addmul(sxx.get(), x.get(), x.get(), prec);
            }
            arb_mul_ui(num.get(), sxy.get(), n, prec);
            arb_submul(num.get(), sx.get(), sy.get(), prec);
            arb_mul_ui(den.get(), sxx.get(), n, prec);
            arb_submul(den.get(), sx.get(), sx.get(), prec);
            arb_div(t.get(), num.get(), den.get(), prec);
            return t;
        };
        const Ball sL = slope(L), sU = slope(U);
        json idx = json::array();
        for (std::size_t t = 0; t < n; ++t) idx.push_back(t);
        const json sweep = {{"format", "rankcert-sweep/1"}, {"parameter", "beta"}, {"points", points},
                            {"fit", {{"points", idx}, {"slope_L", {"-100", "100"}}, {"slope_U", {"-100", "100"}}}}};
        const SweepReport rep = verify_sweep(sweep, ".", "sweep.json", [&](const std::filesystem::path& p) {
            return reports.at(p.filename().string());
        });
        INFO("trial " << trial << ": " << rep.detail);
        REQUIRE(rep.verdict == Verdict::verified);
        for (const auto& [enc, ref] : {std::make_pair(rep.slope_L, &sL), std::make_pair(rep.slope_U, &sU)}) {
            REQUIRE(enc.bounded);
            const Endpoints e = endpoints(ref->get());
            REQUIRE(enc.lo <= e.lo);
            REQUIRE(e.hi <= enc.hi);
            // and the 128-bit enclosure is tight: narrower than 2^-100
            REQUIRE(enc.hi - enc.lo < Rat(1, 1ul << 50) * Rat(1, 1ul << 50));
        }
    }
}

namespace {

// Entries k / (den * shrink) for |k| <= den.
json random_dense(Rng& rng, std::size_t r, std::size_t c, long den, long shrink = 1) {
    std::vector<json> d(r * c);
    for (auto& x : d) x = (Rat(static_cast<long>(rng.below(2 * den + 1)) - den, 1) / Rat(den * shrink, 1)).str();
    return dense(r, c, d);
}

// A profile and a sandwich certificate on a random 80 x 80 qk instance: enough
// rows for the parallel loop to use every thread.
json threaded_bundle(Rng& rng) {
    const std::size_t n = 80, d = 3;
    const json inst = {{"kind", "qk"}, {"q", random_dense(rng, n, d, 4)}, {"k", random_dense(rng, n, d, 4)}, {"scale", "1/2"}};
    const json x = random_dense(rng, n, 1, 8), y = random_dense(rng, n, 1, 8);
    std::vector<json> e0(n, 0), uni(n, "1/80");
    e0[0] = 1;
    const json profile = {{"bound", "profile"}, {"kind", "profile"}, {"r", 1}, {"x", x}, {"y", y},
                          {"gauge", dense(1, 1, {1})}, {"lambda", dense(n, 1, uni)}, {"mu", dense(n, 1, uni)},
                          {"zu", dense(n, 1, e0)}, {"zv", dense(n, 1, e0)}, {"z_norm_sq", 2},
                          {"claims", {{"q", {0, 1000}}, {"tau", {0, 2}}, {"kappa", {-1000, 1000}}, {"tau_star", {0, 2}}}}};
    const json sandwich = {{"bound", "upper"}, {"kind", "sandwich"}, {"rank", 2}, {"r", 1}, {"x", x}, {"y", y},
                           {"tau_star", 2}, {"u", random_dense(rng, n, 2, 100, 100)}, {"w", random_dense(rng, n, 2, 100, 100)}};
    std::vector<json> id(n * n, 0);
    for (std::size_t i = 0; i < n; ++i) id[i * n + i] = 1;
    const json factor = {{"bound", "upper"}, {"kind", "factor"}, {"rank", n}, {"u", dense(n, n, id)}, {"w", random_dense(rng, n, n, 100, 1000)}};
    return bundle_json(inst, Rat(4), {profile, sandwich, factor});
}

}  // namespace

TEST_CASE("threads: the same verdicts and enclosures at 1 and 8 threads", "[kernels]") {
    std::vector<std::filesystem::path> files;
    TempDir dir;
    Rng rng(3);
    for (int t = 0; t < 2; ++t) files.push_back(dir.file(std::string("t").append(std::to_string(t)).append(".json"), threaded_bundle(rng).dump()));
    if (const char* root = std::getenv("RANKCERT_SOURCE")) {
        const std::filesystem::path c = std::filesystem::path(root) / "certificates";
        for (const char* f : {"identity/identity8.json", "softmax-small/gauss24-d4-beta2-eps0.1.json",
                              "constructions/ball-r1/ball-r1-beta128-eps0.1.json",
                              "constructions/sphere-d2-eps/sphere-d2-beta128-eps0.05.json",
                              "real/stories260K/short/short-L4-H4-t2-eps0.1.json",
                              "real/stories260K/long/long-L3-H2-t1-eps0.2.json"})
            files.push_back(c / f);
    } else {
        WARN("RANKCERT_SOURCE not set: checking generated bundles only");
    }
    for (const auto& f : files) {
        INFO(f.string());
        const Bundle b = load_bundle(f, f.string());
        CheckOptions one, eight;
        one.threads = 1;
        eight.threads = 8;
        const Report r1 = verify(b, one), r8 = verify(b, eight);
        REQUIRE(r1.verdict == r8.verdict);
        REQUIRE(r1.lower == r8.lower);
        REQUIRE(r1.upper == r8.upper);
        REQUIRE(r1.certificates.size() == r8.certificates.size());
        if (f.parent_path() == dir.path)  // the generated profile and sandwich are verified: every row enclosed
            for (const auto& c : r1.certificates) {
                INFO(c.detail);
                REQUIRE(c.verdict == Verdict::verified);
            }
        for (std::size_t i = 0; i < r1.certificates.size(); ++i) {
            INFO("certificate " << i << ": " << r1.certificates[i].detail);
            REQUIRE(r1.certificates[i].verdict == r8.certificates[i].verdict);
            // Early stopping may find a different refuting row; otherwise
            // every enclosure is the same computation.
            if (r1.certificates[i].verdict != Verdict::refuted) REQUIRE(r1.certificates[i].decisive == r8.certificates[i].decisive);
        }
    }
}

TEST_CASE("row_sum_norm: the dyadic fast path equals rational summation", "[kernels]") {
    Rng rng(17);
    for (int trial = 0; trial < 50; ++trial) {
        SparseMatrix r;
        r.rows = 1 + rng.below(6);
        r.cols = 1 + rng.below(6);
        for (std::uint32_t i = 0; i < r.rows; ++i)
            for (std::uint32_t j = 0; j < r.cols; ++j) {
                if (rng.below(3) == 0) continue;
                Rat v = Rat(static_cast<long>(rng.below(1u << 20)) - (1 << 19), 1) /
                        Rat(1L << rng.below(60), 1);  // dyadic
                if (trial % 3 == 0 && rng.below(4) == 0) v = v / Rat(3);  // some rows not dyadic
                r.entries.push_back({i, j, v});
            }
        Rat best;
        for (std::uint32_t i = 0; i < r.rows; ++i) {
            Rat s;
            for (const auto& e : r.entries)
                if (e.row == i) s = s + e.val.abs();
            if (s > best) best = s;
        }
        REQUIRE(cert::row_sum_norm(r) == best);
    }
}

TEST_CASE("ball ends: a short midpoint under a tiny radius keeps its precision", "[kernels]") {
    // mid = 1/2 exactly, radius 2^-300: the upper end must stay below 1/2 + 2^-250.
    Ball x;
    arb_set_d(x.get(), 0.5);
    mag_set_ui_2exp_si(arb_radref(x.get()), 1, -300);
    Rat t = Rat(1, 2) + Rat(1) / Rat(1L << 50) / Rat(1L << 50) / Rat(1L << 50) / Rat(1L << 50) / Rat(1L << 50);  // 2^-250
    REQUIRE(decide_le(x.get(), t) == Verdict::verified);
    REQUIRE(decide_gt(x.get(), Rat(1, 2) - (t - Rat(1, 2))) == Verdict::verified);
    // A tiny midpoint under a large radius gives short ends.
    Ball y;
    arb_one(y.get());
    arb_mul_2exp_si(y.get(), y.get(), -1000000);
    mag_set_ui_2exp_si(arb_radref(y.get()), 1, -60);
    const Endpoints e = endpoints(y.get());
    REQUIRE(fmpz_bits(fmpq_denref(e.hi.get())) < 200);
}
