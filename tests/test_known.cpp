// Known answers: cases whose r_eps is known from mathematics.
#include "helpers.hpp"

#include <catch2/catch.hpp>

using namespace rankcert;
using namespace rankcert::test;

namespace {


json factor(const json& u, const json& w, std::size_t k) {
    return {{"bound", "upper"}, {"kind", "factor"}, {"rank", k}, {"u", u}, {"w", w}};
}

json column_selection(std::size_t m) {
    json rows = json::array(), r = json::array(), c = json::array(), v = json::array();
    for (std::size_t t = 0; t < m; ++t) {
        rows.push_back(t);
        r.push_back(t);
        c.push_back(t);
        v.push_back(1);
    }
    return {{"bound", "lower"}, {"kind", "neumann"}, {"rank", m}, {"rows", rows},
            {"r", {{"shape", {m, m}}, {"coo", {{"row", r}, {"col", c}, {"val", v}}}}}};
}

// Logits beta * I: A has diagonal e^beta / (e^beta + N - 1).
json sharp_diagonal(std::size_t n, long beta) {
    std::vector<json> d(n * n, 0);
    for (std::size_t i = 0; i < n; ++i) d[i * n + i] = beta;
    return {{"kind", "logits"}, {"logits", dense(n, n, d)}};
}

}  // namespace

TEST_CASE("identity matrix: r_eps = n for every eps < 1", "[known][kind:neumann][kind:factor][known-answer]") {
    TempDir dir;
    const std::size_t n = 6;
    for (const char* eps : {"0", "1/2", "0.999999"}) {
        json doc = bundle_json(matrix_instance(identity(n)), parse_rational_text(eps, {}),
                               {factor(identity(n), identity(n), n), column_selection(n)}, {{"lower", n}, {"upper", n}});
        Report r = run(dir, doc);
        INFO("eps = " << eps);
        REQUIRE(r.verdict == Verdict::verified);
        REQUIRE(r.lower == n);
        REQUIRE(r.upper == n);
        REQUIRE(r.closed);
    }
    // eps = 1: the column-selection condition delta + eps*rho < 1 fails.
    json doc = bundle_json(matrix_instance(identity(n)), Rat(1), {column_selection(n)});
    Report r = run(dir, doc);
    REQUIRE(r.verdict == Verdict::refuted);
}

TEST_CASE("eps >= 1 on a stochastic matrix gives rank 0", "[known][kind:trivial][known-answer]") {
    TempDir dir;
    const std::size_t n = 4;
    json empty_u = {{"shape", {n, 0}}, {"data", json::array()}};
    for (const char* eps : {"1", "3/2"}) {
        json doc = bundle_json(sharp_diagonal(n, 3), parse_rational_text(eps, {}),
                               {factor(empty_u, empty_u, 0)}, {{"lower", 0}, {"upper", 0}});
        Report r = run(dir, doc);
        INFO("eps = " << eps);
        REQUIRE(r.verdict == Verdict::verified);
        REQUIRE(r.upper == 0);
        REQUIRE(r.closed);
        // ... and the trivial lower bound rank 1 is refuted there.
        doc["certificates"] = {{{"bound", "lower"}, {"kind", "trivial"}, {"rank", 1}}};
        REQUIRE(run(dir, doc).verdict == Verdict::refuted);
    }
    // Just below 1 the zero factor (row error exactly 1) is refuted and rank >= 1 holds.
    json doc = bundle_json(sharp_diagonal(n, 3), Rat(1) - pow10neg(40), {factor(empty_u, empty_u, 0)});
    REQUIRE(run(dir, doc).verdict == Verdict::refuted);
    doc["certificates"] = {{{"bound", "lower"}, {"kind", "trivial"}, {"rank", 1}}};
    REQUIRE(run(dir, doc).verdict == Verdict::verified);
}

TEST_CASE("rank-one matrices: the bracket closes at 1", "[known][kind:factor][kind:row_interpolative][kind:trivial][known-answer]") {
    TempDir dir;
    // Every row equal to v: A = 1 v^T.
    const std::vector<json> v = {"1/6", "1/3", "1/2"};
    std::vector<json> a;
    for (int i = 0; i < 4; ++i) a.insert(a.end(), v.begin(), v.end());
    json u = dense(4, 1, {1, 1, 1, 1}), w = dense(3, 1, v);
    json doc = bundle_json(matrix_instance(dense(4, 3, a)), Rat(1, 10),
                           {factor(u, w, 1), {{"bound", "lower"}, {"kind", "trivial"}, {"rank", 1}},
                            {{"bound", "upper"}, {"kind", "row_interpolative"}, {"rows", {2}}, {"x", u}}},
                           {{"lower", 1}, {"upper", 1}});
    Report r = run(dir, doc);
    REQUIRE(r.verdict == Verdict::verified);
    REQUIRE(r.closed);
    REQUIRE(r.lower == 1);
    // Softmax of logits whose rows differ by constants is rank one too
    // (row softmax cancels row constants): rows (0,1,2) + c_i.
    json logits = {{"kind", "logits"}, {"logits", dense(3, 3, {0, 1, 2, 5, 6, 7, "-1/3", "2/3", "5/3"})}};
    json doc2 = bundle_json(logits, Rat(1, 10),
                            {{{"bound", "upper"}, {"kind", "row_interpolative"}, {"rows", {0}}, {"x", dense(3, 1, {1, 1, 1})}},
                             {{"bound", "lower"}, {"kind", "trivial"}, {"rank", 1}}},
                            {{"lower", 1}, {"upper", 1}});
    Report r2 = run(dir, doc2);
    REQUIRE(r2.verdict == Verdict::verified);
    REQUIRE(r2.closed);
}

TEST_CASE("diagonal dominance: sharp diagonal softmax has full rank", "[known][kind:neumann][known-answer]") {
    TempDir dir;
    const std::size_t n = 8;
    // Diagonal e^b/(e^b + 7); off-diagonal mass 7/(e^b+7).  Column selection
    // needs 2 * 7/(e^b + 7) < 1 - eps.
    json doc = bundle_json(sharp_diagonal(n, 6), Rat(1, 10),
                           {factor(identity(n), identity(n), n), column_selection(n)}, {{"lower", n}, {"upper", n}});
    // The factor B = I has row error 2*7/(e^6+7) ~ 0.034 <= 0.1.
    Report r = run(dir, doc);
    REQUIRE(r.verdict == Verdict::verified);
    REQUIRE(r.closed);
    // At beta = 1 the diagonal is not dominant: the same certificate is refuted.
    json weak = bundle_json(sharp_diagonal(n, 1), Rat(1, 10), {column_selection(n)});
    REQUIRE(run(dir, weak).verdict == Verdict::refuted);
}

TEST_CASE("tail certificate on a matrix with known singular values", "[known][kind:tail][known-answer]") {
    TempDir dir;
    // A = diag(1, 1/2, 1/4): sigma = 1, 1/2, 1/4.  With k = 1, mu = 7/16 >=
    // sigma_2^2 and F = (4/5, 0, 0)^T: H = mu I + F F^T - A A^T =
    // diag(31/400, 3/16, 3/8) is positive definite, and
    // ||A||_F^2 - k mu - ||F||^2 = 21/16 - 7/16 - 16/25 = 47/200 > 3 eps^2
    // iff eps^2 < 47/600, i.e. eps < 0.27988...
    json a = dense(3, 3, {1, 0, 0, 0, "1/2", 0, 0, 0, "1/4"});
    json tail = {{"bound", "lower"}, {"kind", "tail"}, {"rank", 2}, {"rows", {0, 1, 2}}, {"k", 1}, {"mu", "7/16"},
                 {"r", identity(3)}, {"f", dense(3, 1, {"4/5", 0, 0})}};
    json doc = bundle_json(matrix_instance(a), Rat(27, 100), {tail}, {{"lower", 2}});
    Report r = run(dir, doc);
    REQUIRE(r.verdict == Verdict::verified);
    REQUIRE(r.lower == 2);
    doc["eps"] = "0.28";
    REQUIRE(run(dir, doc).verdict == Verdict::refuted);
    // Exactly at the boundary eps^2 = 47/600 is not rational-square; take a
    // rational eps with eps^2 just below and just above 47/600 instead.
    // 0.279880 ^2 = 0.078332... < 0.0783333..., 0.279881^2 > .
    doc["eps"] = "0.279880";
    REQUIRE(run(dir, doc).verdict == Verdict::verified);
    doc["eps"] = "0.279881";
    REQUIRE(run(dir, doc).verdict == Verdict::refuted);
}

TEST_CASE("tail certificate on a softmax instance, decided in ball arithmetic", "[known][kind:tail][known-answer]") {
    TempDir dir;
    const std::size_t n = 5;
    // Logits 8 I: A close to I; G = A A^T close to I.  k = n - 1, mu = 1.05
    // dominates every eigenvalue, F = 0:  ||A||_F^2 - (n-1) mu > n eps^2 for small eps.
    json tail = {{"bound", "lower"}, {"kind", "tail"}, {"rank", n}, {"rows", {0, 1, 2, 3, 4}}, {"k", n - 1},
                 {"mu", "1.05"}, {"r", identity(n)}, {"f", {{"shape", {n, 0}}, {"data", json::array()}}}};
    json doc = bundle_json(sharp_diagonal(n, 8), Rat(1, 10), {tail}, {{"lower", n}});
    Report r = run(dir, doc);
    INFO(r.certificates[0].detail);
    REQUIRE(r.verdict == Verdict::verified);
    REQUIRE(r.lower == n);
    REQUIRE(r.certificates[0].precision != "exact");
}
