// Soundness under tampering: valid certificates verify; perturbations that
// make them false come out refuted, never verified; thresholds 10^-40 on
// either side of the true value are decided correctly.
#include "helpers.hpp"

#include <catch2/catch.hpp>

using namespace rankcert;
using namespace rankcert::test;

namespace {

// A small qk instance with rational data (exact in every representation).
json qk_instance() {
    return {{"kind", "qk"},
            {"q", dense(4, 2, {"1.5", 0, 0, "1.5", "-1.5", "0.25", "0.5", "-1"})},
            {"k", dense(5, 2, {2, 0, 0, 2, -2, 0, 0, -2, "0.5", "0.5"})},
            {"scale", {{"rsqrt", 2}}}};
}

// A rational approximation of A (to about 2^-200) from the checker's own
// high-precision enclosure; a valid factor certificate is U = I, W = A~^T.
std::vector<Rat> approx_matrix(const TempDir& dir, const json& inst, std::size_t& n, std::size_t& N) {
    json doc = bundle_json(inst, Rat(1), {});
    Bundle b = load(dir, doc, "approx.json");
    n = b.instance.n;
    N = b.instance.N;
    RowEncloser enc(b.instance, 256);
    BallVec row(N);
    std::vector<Rat> out;
    for (std::size_t i = 0; i < n; ++i) {
        enc.row(i, row.data());
        for (std::size_t j = 0; j < N; ++j) {
            Rat q;
            arf_get_fmpq(q.get(), arb_midref(row[j]));
            out.push_back(q);
        }
    }
    return out;
}

json identity_factor_cert(const std::vector<Rat>& a, std::size_t n, std::size_t N) {
    std::vector<json> w(N * n);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < N; ++j) w[j * n + i] = a[i * N + j].str();
    return {{"bound", "upper"}, {"kind", "factor"}, {"rank", n}, {"u", identity(n)}, {"w", dense(N, n, w)}};
}


json logits_instance(const std::vector<json>& s, std::size_t n, std::size_t N) {
    return {{"kind", "logits"}, {"logits", dense(n, N, s)}};
}

json neumann_identity(std::vector<std::size_t> rows, std::size_t N) {
    const std::size_t m = rows.size();
    json r = json::array(), c = json::array(), v = json::array();
    for (std::size_t t = 0; t < m; ++t) {
        r.push_back(t);
        c.push_back(t);
        v.push_back(1);
    }
    return {{"bound", "lower"}, {"kind", "neumann"}, {"rank", m}, {"rows", rows},
            {"r", {{"shape", {N, m}}, {"coo", {{"row", r}, {"col", c}, {"val", v}}}}}};
}

}  // namespace

TEST_CASE("factor: valid verifies, tampered ones are refuted", "[tamper][kind:factor][tampering]") {
    TempDir dir;
    const json inst = qk_instance();
    std::size_t n, N;
    auto a = approx_matrix(dir, inst, n, N);
    json cert = identity_factor_cert(a, n, N);
    const Rat eps = pow10neg(30);
    REQUIRE(verdict_of(dir, inst, eps, cert) == Verdict::verified);

    SECTION("one entry changed") {
        json bad = cert;
        bad["w"]["data"][3] = (a[3 * N / n] + Rat(1, 1000)).str();
        // w[3] is W(row 1, col 1)... any change of 1/1000 breaks eps = 1e-30.
        REQUIRE(verdict_of(dir, inst, eps, bad) == Verdict::refuted);
        json bad2 = cert;
        bad2["u"]["data"][0] = "1.001";
        REQUIRE(verdict_of(dir, inst, eps, bad2) == Verdict::refuted);
    }
    SECTION("rows swapped") {
        json bad = cert;
        auto& d = bad["u"]["data"];
        for (std::size_t t = 0; t < n; ++t) std::swap(d[0 * n + t], d[1 * n + t]);
        REQUIRE(verdict_of(dir, inst, eps, bad) == Verdict::refuted);
    }
    SECTION("eps lowered below the true error") {
        // The error of W = A~^T is below 2^-200 * N but above 0: at eps = 0
        // the certificate is refuted.
        REQUIRE(verdict_of(dir, inst, Rat(0), cert) == Verdict::refuted);
    }
    SECTION("rank claimed lower than the factor's width is an input error") {
        json bad = cert;
        bad["rank"] = n - 1;
        REQUIRE_THROWS_AS(run(dir, bundle_json(inst, eps, {bad})), InputError);
    }
}

TEST_CASE("factor: error tanh(1/2) decided 1e-40 on either side", "[tamper]") {
    TempDir dir;
    // Row softmax of (0, 1) is (1, e)/(1 + e); B = (1/2, 1/2) has row error
    // exactly (e - 1)/(e + 1) = tanh(1/2) (a transcendental number).
    auto [lo, hi] = tanh_half();
    const Rat gap = pow10neg(40);
    json cert = {{"bound", "upper"}, {"kind", "factor"}, {"rank", 1}, {"u", dense(1, 1, {1})},
                 {"w", dense(2, 1, {"1/2", "1/2"})}};
    const json logits = logits_instance({0, 1}, 1, 2);
    const json qk = {{"kind", "qk"}, {"q", dense(1, 1, {1})}, {"k", dense(2, 1, {0, 2})}, {"scale", "1/2"}};
    for (const json& inst : {logits, qk}) {
        INFO(inst.dump());
        REQUIRE(verdict_of(dir, inst, hi + gap, cert) == Verdict::verified);
        REQUIRE(verdict_of(dir, inst, lo - gap, cert) == Verdict::refuted);
        // With too little precision allowed the decision is honest: undecided.
        Report r = run(dir, bundle_json(inst, hi + gap, {cert}), 64);
        REQUIRE(r.certificates[0].verdict == Verdict::undecided);
        REQUIRE(r.verdict == Verdict::undecided);
    }
}

TEST_CASE("factor: decimal exactness (0.55, 0.45 vs 0.5, eps 0.1)", "[tamper]") {
    TempDir dir;
    json inst = {{"kind", "matrix"}, {"a", dense(1, 2, {"0.55", "0.45"})}};
    // Use real JSON numbers, as a user would write them.
    std::string text = R"({"format":"rankcert/1","instance":{"kind":"matrix","a":{"shape":[1,2],"data":[0.55,0.45]}},
        "eps":0.1,"claim":{"upper":1},"certificates":[{"bound":"upper","kind":"factor","rank":1,
        "u":{"shape":[1,1],"data":[1]},"w":{"shape":[2,1],"data":[0.5,0.5]}}]})";
    auto p = dir.file("dec.json", text);
    Bundle b = load_bundle(p, "dec.json");
    Report r = verify(b, {});
    REQUIRE(r.verdict == Verdict::verified);
    REQUIRE(r.upper == 1);
    // And 0.1 - 1e-40 is refuted, 0.1 + 1e-40 verified.
    json cert = {{"bound", "upper"}, {"kind", "factor"}, {"rank", 1}, {"u", dense(1, 1, {1})},
                 {"w", dense(2, 1, {"0.5", "0.5"})}};
    REQUIRE(verdict_of(dir, inst, Rat(1, 10) - pow10neg(40), cert) == Verdict::refuted);
    REQUIRE(verdict_of(dir, inst, Rat(1, 10) + pow10neg(40), cert) == Verdict::verified);
}

TEST_CASE("row_interpolative: valid verifies, tampered ones are refuted", "[tamper][kind:row_interpolative][tampering]") {
    TempDir dir;
    const json inst = qk_instance();
    // All rows, X = I: B = A exactly, error 0 (even at eps = 0, since the
    // difference of identical enclosures is not exactly zero: use eps 1e-30).
    json cert = {{"bound", "upper"}, {"kind", "row_interpolative"}, {"rows", {0, 1, 2, 3}}, {"x", identity(4)}};
    REQUIRE(verdict_of(dir, inst, pow10neg(30), cert) == Verdict::verified);
    json bad = cert;
    bad["x"]["data"][5] = "0.99";
    REQUIRE(verdict_of(dir, inst, pow10neg(30), bad) == Verdict::refuted);
    json swapped = cert;
    swapped["rows"] = {1, 0, 2, 3};
    REQUIRE(verdict_of(dir, inst, pow10neg(30), swapped) == Verdict::refuted);
    json fewer = {{"bound", "upper"}, {"kind", "row_interpolative"}, {"rows", {0}}, {"x", dense(4, 1, {1, 1, 1, 1})}};
    REQUIRE(verdict_of(dir, inst, Rat(1, 10), fewer) == Verdict::refuted);
}

TEST_CASE("neumann: valid verifies, tampered ones are refuted", "[tamper][kind:neumann][tampering]") {
    TempDir dir;
    // Logits 5 I (n = N = 4): diagonal e^5/(e^5 + 3) ~ 0.98.
    std::vector<json> s(16, 0);
    for (int i = 0; i < 4; ++i) s[i * 5] = 5;
    const json inst = logits_instance(s, 4, 4);
    json cert = neumann_identity({0, 1, 2, 3}, 4);
    REQUIRE(verdict_of(dir, inst, Rat(1, 2), cert) == Verdict::verified);
    SECTION("one entry of R changed") {
        json bad = cert;
        bad["r"]["coo"]["val"][2] = 0;
        REQUIRE(verdict_of(dir, inst, Rat(1, 2), bad) == Verdict::refuted);
        json big = cert;
        big["r"]["coo"]["val"][0] = 2;  // rho = 2: 2 * eps = 1
        REQUIRE(verdict_of(dir, inst, Rat(1, 2), big) == Verdict::refuted);
    }
    SECTION("rows swapped") {
        json bad = cert;
        bad["rows"] = {1, 0, 2, 3};
        REQUIRE(verdict_of(dir, inst, Rat(1, 2), bad) == Verdict::refuted);
    }
    SECTION("eps raised past the margin") {
        REQUIRE(verdict_of(dir, inst, Rat(99, 100), cert) == Verdict::refuted);
    }
}

TEST_CASE("neumann: threshold tanh(1/2) decided 1e-40 on either side", "[tamper]") {
    TempDir dir;
    // Logits I (2 x 2): A_tt = e/(e+1); delta = 2/(e+1); delta + eps < 1 iff
    // eps < (e-1)/(e+1) = tanh(1/2).
    auto [lo, hi] = tanh_half();
    const json inst = logits_instance({1, 0, 0, 1}, 2, 2);
    json cert = neumann_identity({0, 1}, 2);
    REQUIRE(verdict_of(dir, inst, lo - pow10neg(40), cert) == Verdict::verified);
    REQUIRE(verdict_of(dir, inst, hi + pow10neg(40), cert) == Verdict::refuted);
    // Exact matrix: delta = 1/2 for [[3/4, 1/4], [1/4, 3/4]]; condition eps < 1/2.
    const json m = {{"kind", "matrix"}, {"a", dense(2, 2, {"3/4", "1/4", "1/4", "3/4"})}};
    REQUIRE(verdict_of(dir, m, Rat(1, 2) - pow10neg(40), cert) == Verdict::verified);
    REQUIRE(verdict_of(dir, m, Rat(1, 2), cert) == Verdict::refuted);
    REQUIRE(verdict_of(dir, m, Rat(1, 2) + pow10neg(40), cert) == Verdict::refuted);
}

TEST_CASE("tail: valid verifies, tampered ones are refuted", "[tamper][kind:tail][tampering]") {
    TempDir dir;
    std::vector<json> s(25, 0);
    for (int i = 0; i < 5; ++i) s[i * 6] = 8;
    const json inst = logits_instance(s, 5, 5);
    json cert = {{"bound", "lower"}, {"kind", "tail"}, {"rank", 5}, {"rows", {0, 1, 2, 3, 4}}, {"k", 4},
                 {"mu", "1.05"}, {"r", identity(5)}, {"f", {{"shape", {5, 0}}, {"data", json::array()}}}};
    REQUIRE(verdict_of(dir, inst, Rat(1, 10), cert) == Verdict::verified);
    SECTION("mu lowered: not positive semidefinite") {
        json bad = cert;
        bad["mu"] = "0.5";
        REQUIRE(verdict_of(dir, inst, Rat(1, 10), bad) == Verdict::refuted);
    }
    SECTION("k raised: the Frobenius condition fails") {
        json bad = cert;
        bad["k"] = 5;
        bad["rank"] = 6;
        bad["rows"] = {0, 1, 2, 3, 4};
        REQUIRE(verdict_of(dir, inst, Rat(1, 10), bad) == Verdict::refuted);
    }
    SECTION("eps raised") {
        REQUIRE(verdict_of(dir, inst, Rat(1, 2), cert) == Verdict::refuted);
    }
    SECTION("rows swapped does not matter for tail (Gram is permutation invariant), an entry of R does") {
        json bad = cert;
        bad["r"]["data"][0] = 3;
        REQUIRE(verdict_of(dir, inst, Rat(1, 10), bad) == Verdict::refuted);
    }
}

TEST_CASE("trivial: rank 1 iff eps below the largest row l1 norm", "[tamper][kind:trivial][tampering]") {
    TempDir dir;
    const json inst = logits_instance({0, 1, 2, 3}, 2, 2);
    json cert = {{"bound", "lower"}, {"kind", "trivial"}, {"rank", 1}};
    REQUIRE(verdict_of(dir, inst, Rat(1) - pow10neg(40), cert) == Verdict::verified);
    REQUIRE(verdict_of(dir, inst, Rat(1), cert) == Verdict::refuted);
    const json m = {{"kind", "matrix"}, {"a", dense(2, 2, {"0.3", "-0.2", "0.1", "0.1"})}};
    REQUIRE(verdict_of(dir, m, Rat(1, 2) - pow10neg(40), cert) == Verdict::verified);
    REQUIRE(verdict_of(dir, m, Rat(1, 2), cert) == Verdict::refuted);
}

TEST_CASE("claims: unsupported is undecided, impossible is refuted", "[tamper]") {
    TempDir dir;
    const json inst = {{"kind", "matrix"}, {"a", identity(3)}};
    json lower = neumann_identity({0, 1, 2}, 3);
    REQUIRE(run(dir, bundle_json(inst, Rat(1, 2), {lower}, {{"lower", 3}})).verdict == Verdict::verified);
    REQUIRE(run(dir, bundle_json(inst, Rat(1, 2), {lower}, {{"upper", 2}})).verdict == Verdict::undecided);
    REQUIRE(run(dir, bundle_json(inst, Rat(1, 2), {lower}, {{"lower", 3}, {"upper", 2}})).verdict == Verdict::refuted);
    REQUIRE(run(dir, bundle_json(inst, Rat(1, 2), {lower}, {{"upper", 4}})).verdict == Verdict::refuted);
    // A verified bracket never claims more than the certificates prove.
    Report r = run(dir, bundle_json(inst, Rat(1, 2), {lower}, {{"lower", 2}}));
    REQUIRE(r.verdict == Verdict::verified);
    REQUIRE(r.lower == 3);
    REQUIRE(r.upper == 3);
}
