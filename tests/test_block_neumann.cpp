// block_neumann (docs/theory.md, "Lower bounds"): known answers, its relation
// to neumann, and tampered certificates that must be refused.
#include "helpers.hpp"

#include <catch2/catch.hpp>

using namespace rankcert;
using namespace rankcert::test;

namespace {

json block_cert(const std::vector<std::size_t>& rows, const json& blocks, const json& v, std::size_t m) {
    return {{"bound", "lower"}, {"kind", "block_neumann"}, {"rank", m}, {"rows", rows}, {"blocks", blocks}, {"v", v}};
}

json factor(const json& u, const json& w, std::size_t k) {
    return {{"bound", "upper"}, {"kind", "factor"}, {"rank", k}, {"u", u}, {"w", w}};
}

Report run_one(const TempDir& dir, const json& inst, const Rat& eps, const json& cert) {
    return run(dir, bundle_json(inst, eps, {cert}));
}

// One block over all n rows of the identity: v_s = s (s_0 = +1), so c = 1 and kappa = 0.
json identity_one_block(std::size_t n) {
    std::vector<std::vector<json>> cols;
    json block = json::array();
    for (std::size_t t = 0; t < n; ++t) block.push_back(t);
    for (std::size_t k = 0; k < (std::size_t{1} << (n - 1)); ++k) {
        std::vector<json> s(n);
        s[0] = 1;
        for (std::size_t p = 1; p < n; ++p) s[p] = (k >> (p - 1)) & 1 ? -1 : 1;
        cols.push_back(s);
    }
    std::vector<std::size_t> rows(n);
    for (std::size_t t = 0; t < n; ++t) rows[t] = t;
    return block_cert(rows, json::array({block}), coo_columns(n, cols), n);
}

// The three rows (1, 0), (1/2, 1), (-1/2, 1) and Lambda = [[1,0,0],[0,1/2,1/2]]: P = I_2.
const json kPlane = dense(3, 2, {1, 0, "1/2", 1, "-1/2", 1});

json mixed_plane_cert() {
    json c = block_cert({0, 1, 2}, {{0}, {1}}, coo_columns(2, {{1, 0}, {0, 1}}), 2);
    c["lambda"] = dense(2, 3, {1, 0, 0, 0, "1/2", "1/2"});
    return c;
}

}  // namespace

TEST_CASE("block_neumann: identity with one block over all rows proves r_eps = n for eps < 1",
          "[block_neumann][kind:block_neumann][known-answer]") {
    TempDir dir;
    const std::size_t n = 5;
    const json inst = matrix_instance(identity(n));
    const json cert = identity_one_block(n);
    for (const char* eps : {"0", "1/2", "0.999999"}) {
        INFO("eps = " << eps);
        REQUIRE(verdict_of(dir, inst, parse_rational_text(eps, {}), cert) == Verdict::verified);
    }
    REQUIRE(verdict_of(dir, inst, Rat(1), cert) == Verdict::refuted);
    Report r = run(dir, bundle_json(inst, Rat(1, 2), {cert}));
    REQUIRE(r.lower == n);
}

TEST_CASE("block_neumann: one exact block meets the Gastinel-Kahan threshold 1/||A^-1||",
          "[block_neumann][kind:block_neumann][known-answer]") {
    // A = [[3/4, 1/4], [1/4, 3/4]], A^-1 = [[3/2, -1/2], [-1/2, 3/2]]: the distance
    // to singularity in the max-row-l1 norm is 1/||A^-1||_inf = 1/2.  Vertex
    // preimages A^-1 (1, 1) = (1, 1) and A^-1 (1, -1) = (2, -2): c = 2.
    TempDir dir;
    const json inst = matrix_instance(dense(2, 2, {"3/4", "1/4", "1/4", "3/4"}));
    const json cert = block_cert({0, 1}, {{0, 1}}, coo_columns(2, {{1, 1}, {2, -2}}), 2);
    REQUIRE(verdict_of(dir, inst, Rat(1, 2) - pow10neg(40), cert) == Verdict::verified);
    REQUIRE(verdict_of(dir, inst, Rat(1, 2), cert) == Verdict::refuted);
    // On logits I (2 x 2) the same threshold is tanh(1/2), decided 1e-40 on either side:
    // A = [[a, b], [b, a]] with a = e/(e+1); preimages of (1,1) and (1,-1) are
    // (1,1) and (1,-1)/(a-b), so c = 1/(a - b) = 1/tanh(1/2), kappa = 0 up to rounding.
    // Here we keep v = (1,1), (1,-1) (c = 1): kappa_t = 1 - (a - b) = 1 - tanh(1/2),
    // and the condition kappa + eps < 1 is eps < tanh(1/2).
    auto [lo, hi] = tanh_half();
    const json logits = {{"kind", "logits"}, {"logits", dense(2, 2, {1, 0, 0, 1})}};
    const json unit = block_cert({0, 1}, {{0, 1}}, coo_columns(2, {{1, 1}, {1, -1}}), 2);
    REQUIRE(verdict_of(dir, logits, lo - pow10neg(40), unit) == Verdict::verified);
    REQUIRE(verdict_of(dir, logits, hi + pow10neg(40), unit) == Verdict::refuted);
}

TEST_CASE("block_neumann: mixing rows proves a rank that no row pair can",
          "[block_neumann][kind:block_neumann][known-answer]") {
    TempDir dir;
    const json inst = matrix_instance(kPlane);
    const Rat eps(4, 5);
    // Every pair of rows is within 2/3 (<= 0.8) of a rank-one matrix, certified
    // by the checker's own factor kind: r_0.8(A_pair) <= 1, so no lower-bound
    // certificate of rank 2 on a row pair (neumann, tail, block_neumann without
    // lambda) can be sound.
    struct Pair { json a, u, w; };
    const std::vector<Pair> pairs = {
        {dense(2, 2, {1, 0, "1/2", 1}), dense(2, 1, {1, "1/2"}), dense(2, 1, {1, "2/3"})},
        {dense(2, 2, {1, 0, "-1/2", 1}), dense(2, 1, {1, "-1/2"}), dense(2, 1, {1, "-2/3"})},
        {dense(2, 2, {"1/2", 1, "-1/2", 1}), dense(2, 1, {1, 1}), dense(2, 1, {0, 1})},
    };
    for (const auto& p : pairs) {
        REQUIRE(verdict_of(dir, matrix_instance(p.a), eps, factor(p.u, p.w, 1)) == Verdict::verified);
        REQUIRE(verdict_of(dir, matrix_instance(p.a), Rat(2, 3), factor(p.u, p.w, 1)) == Verdict::verified);
    }
    // Lambda = [[1,0,0],[0,1/2,1/2]] makes P = I_2, and the rank-2 bound holds for every eps < 1.
    Report r = run(dir, bundle_json(inst, eps, {mixed_plane_cert()}));
    REQUIRE(r.certificates.at(0).verdict == Verdict::verified);
    REQUIRE(r.lower == 2);
    REQUIRE(verdict_of(dir, inst, Rat(99, 100), mixed_plane_cert()) == Verdict::verified);
    REQUIRE(verdict_of(dir, inst, Rat(1), mixed_plane_cert()) == Verdict::refuted);
}

TEST_CASE("block_neumann: singleton blocks decide exactly as neumann does",
          "[block_neumann][kind:block_neumann][known-answer]") {
    // Random rational matrices and random R: the neumann certificate and the
    // block_neumann certificate with v = the columns of R get the same verdict.
    TempDir dir;
    Rng rng(7);
    int verified = 0, refuted = 0;
    for (int trial = 0; trial < 40; ++trial) {
        const std::size_t n = 2 + rng.below(3), N = n + rng.below(2);
        std::vector<json> a(n * N);
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < N; ++j) a[i * N + j] = (i == j ? Rat(1) : Rat(0)) .str();
        for (auto& x : a) x = (parse_rational_text(x.get<std::string>(), {}) + rng.rational_in(6, 1) * Rat(1, 4)).str();
        std::vector<std::vector<json>> cols(n, std::vector<json>(N, 0));
        json r = json::array(), c = json::array(), v = json::array();
        std::vector<std::size_t> rows(n);
        for (std::size_t t = 0; t < n; ++t) {
            rows[t] = t;
            for (std::size_t j = 0; j < N; ++j) {
                Rat x = (j == t ? Rat(1) : Rat(0)) + rng.rational_in(6, 1) * Rat(1, 8);
                if (x.sign() == 0) continue;
                cols[t][j] = x.str();
                r.push_back(j);
                c.push_back(t);
                v.push_back(x.str());
            }
        }
        json neu = {{"bound", "lower"}, {"kind", "neumann"}, {"rank", n}, {"rows", rows},
                    {"r", {{"shape", {N, n}}, {"coo", {{"row", r}, {"col", c}, {"val", v}}}}}};
        json blocks = json::array();
        for (std::size_t t = 0; t < n; ++t) blocks.push_back({t});
        json blk = block_cert(rows, blocks, coo_columns(N, cols), n);
        const json inst = matrix_instance(dense(n, N, a));
        const Rat eps(static_cast<long>(rng.below(40)), 100);
        const Verdict vn = verdict_of(dir, inst, eps, neu), vb = verdict_of(dir, inst, eps, blk);
        INFO("trial " << trial);
        REQUIRE(vn == vb);
        verified += vn == Verdict::verified;
        refuted += vn == Verdict::refuted;
    }
    REQUIRE(verified > 0);
    REQUIRE(refuted > 0);
}

TEST_CASE("block_neumann: tampered certificates are refused", "[block_neumann][kind:block_neumann][tampering]") {
    TempDir dir;
    const json inst = matrix_instance(kPlane);
    const Rat eps(4, 5);
    REQUIRE(verdict_of(dir, inst, eps, mixed_plane_cert()) == Verdict::verified);
    SECTION("lambda without the mixing: a row subset cannot prove rank 2") {
        json bad = mixed_plane_cert();
        bad["lambda"] = dense(2, 3, {1, 0, 0, 0, 1, 0});
        REQUIRE(verdict_of(dir, inst, eps, bad) == Verdict::refuted);
    }
    SECTION("lambda scaled up") {
        json bad = mixed_plane_cert();
        bad["lambda"] = dense(2, 3, {1, 0, 0, 0, 1, 1});
        REQUIRE(verdict_of(dir, inst, eps, bad) == Verdict::refuted);
    }
    SECTION("lambda's row norms count: a doubled row with a halved preimage") {
        // P_1 = (0, 2), v_1 = (0, 1/2): kappa = 0, c = 1, l_1 = 2; the condition is 2 eps < 1.
        json scaled = mixed_plane_cert();
        scaled["lambda"] = dense(2, 3, {1, 0, 0, 0, 1, 1});
        scaled["v"] = coo_columns(2, {{1, 0}, {0, "1/2"}});
        REQUIRE(verdict_of(dir, inst, Rat(1, 2) - pow10neg(40), scaled) == Verdict::verified);
        REQUIRE(verdict_of(dir, inst, Rat(1, 2), scaled) == Verdict::refuted);
        REQUIRE(verdict_of(dir, inst, eps, scaled) == Verdict::refuted);
    }
    SECTION("a preimage changed") {
        json bad = mixed_plane_cert();
        bad["v"] = coo_columns(2, {{1, 0}, {"1/4", 1}});
        REQUIRE(verdict_of(dir, inst, eps, bad) == Verdict::refuted);
    }
    SECTION("rows permuted") {
        json bad = mixed_plane_cert();
        bad["rows"] = {1, 0, 2};
        REQUIRE(verdict_of(dir, inst, eps, bad) == Verdict::refuted);
    }
    SECTION("vertex preimages in the wrong order") {
        const json a2 = matrix_instance(dense(2, 2, {"3/4", "1/4", "1/4", "3/4"}));
        const json good = block_cert({0, 1}, {{0, 1}}, coo_columns(2, {{1, 1}, {2, -2}}), 2);
        REQUIRE(verdict_of(dir, a2, Rat(2, 5), good) == Verdict::verified);
        const json swapped = block_cert({0, 1}, {{0, 1}}, coo_columns(2, {{2, -2}, {1, 1}}), 2);
        REQUIRE(verdict_of(dir, a2, Rat(2, 5), swapped) == Verdict::refuted);
        const json reordered = block_cert({0, 1}, {{1, 0}}, coo_columns(2, {{1, 1}, {2, -2}}), 2);
        REQUIRE(verdict_of(dir, a2, Rat(2, 5), reordered) == Verdict::refuted);
    }
    SECTION("claimed rank larger than the blocks cover") {
        json bad = mixed_plane_cert();
        bad["rank"] = 3;
        REQUIRE_THROWS_AS(run_one(dir, inst, eps, bad), InputError);
    }
    SECTION("malformed structure is an input error naming the field") {
        json two = mixed_plane_cert();
        two["blocks"] = {{0, 1}, {1}};
        REQUIRE_THROWS_WITH(run_one(dir, inst, eps, two), Catch::Contains("blocks") && Catch::Contains("two blocks"));
        json few = mixed_plane_cert();
        few["v"] = coo_columns(2, {{1, 0}});
        REQUIRE_THROWS_WITH(run_one(dir, inst, eps, few), Catch::Contains("v") && Catch::Contains("N x V"));
        json shape = mixed_plane_cert();
        shape["lambda"] = dense(2, 2, {1, 0, 0, 1});
        REQUIRE_THROWS_WITH(run_one(dir, inst, eps, shape), Catch::Contains("lambda"));
        json nolam = mixed_plane_cert();
        nolam.erase("lambda");
        REQUIRE_THROWS_WITH(run_one(dir, inst, eps, nolam), Catch::Contains("without lambda"));
        json big = identity_one_block(3);
        big["blocks"] = {json::array()};
        REQUIRE_THROWS_AS(run_one(dir, matrix_instance(identity(3)), eps, big), InputError);
    }
}

TEST_CASE("block_neumann: the decisive enclosure contains the exact rational value", "[block_neumann][enclosure]") {
    // Random rational matrices, a random Lambda and random vertex preimages
    // (blocks of sizes 2 and 1): the ball enclosure the checker reports for
    // its decisive row contains kappa_t + eps c l_t computed here in exact
    // rationals, independently of the checker's code; and c is exact.
    TempDir dir;
    Rng rng(11);
    int verified = 0, refuted = 0;
    for (int trial = 0; trial < 30; ++trial) {
        const std::size_t p = 3, m = 3, N = 4;
        std::vector<Rat> a(p * N), lam(m * p);
        std::vector<json> aj, lj;
        // Near a valid certificate (A and Lambda near the identity, v near
        // the vertex sign vectors), so that both verdicts occur.
        const Rat noise(static_cast<long>(1 + rng.below(4)), 16);
        for (std::size_t i = 0; i < p; ++i)
            for (std::size_t j = 0; j < N; ++j) {
                a[i * N + j] = (i == j ? Rat(1) : Rat(0)) + rng.rational_in(8, 1) * noise;
                aj.push_back(a[i * N + j].str());
            }
        for (std::size_t t = 0; t < m; ++t)
            for (std::size_t i = 0; i < p; ++i) {
                lam[t * p + i] = (t == i ? Rat(1) : Rat(0)) + rng.rational_in(8, 1) * noise;
                lj.push_back(lam[t * p + i].str());
            }
        // Blocks {0, 1} (vertices (+,+), (+,-)) and {2} (vertex +): V = 3.
        const int vert[3][4] = {{1, 1, 0, 0}, {1, -1, 0, 0}, {0, 0, 1, 0}};
        std::vector<std::vector<Rat>> v(3, std::vector<Rat>(N));
        std::vector<std::vector<json>> vj(3, std::vector<json>(N));
        for (std::size_t k = 0; k < 3; ++k)
            for (std::size_t j = 0; j < N; ++j) {
                v[k][j] = Rat(static_cast<long>(vert[k][j])) + rng.rational_in(8, 1) * noise;
                vj[k][j] = v[k][j].str();
            }
        const Rat eps(static_cast<long>(rng.below(20)), 100);
        json cert = block_cert({0, 1, 2}, {{0, 1}, {2}}, coo_columns(N, vj), m);
        cert["lambda"] = dense(m, p, lj);
        const Report r = run_one(dir, matrix_instance(dense(p, N, aj)), eps, cert);
        const CertResult& cr = r.certificates.at(0);
        // Exact reference.
        Rat c;
        for (std::size_t j = 0; j < N; ++j) {
            Rat b0 = v[0][j].abs() > v[1][j].abs() ? v[0][j].abs() : v[1][j].abs();
            if (b0 + v[2][j].abs() > c) c = b0 + v[2][j].abs();
        }
        REQUIRE(parse_rational_text(cr.decisive.at("c").get<std::string>(), {}) == c);
        std::vector<Rat> q(m);
        const int sign[3][3] = {{1, 1, 0}, {1, -1, 0}, {0, 0, 1}};  // s_b on row t for each vector
        for (std::size_t t = 0; t < m; ++t) {
            Rat l;
            std::vector<Rat> pt(N);
            for (std::size_t i = 0; i < p; ++i) {
                l = l + lam[t * p + i].abs();
                for (std::size_t j = 0; j < N; ++j) pt[j] = pt[j] + lam[t * p + i] * a[i * N + j];
            }
            std::vector<Rat> res(3);
            for (std::size_t k = 0; k < 3; ++k) {
                Rat d;
                for (std::size_t j = 0; j < N; ++j) d = d + pt[j] * v[k][j];
                res[k] = (Rat(static_cast<long>(sign[k][t])) - d).abs();
            }
            q[t] = (res[0] > res[1] ? res[0] : res[1]) + res[2] + eps * c * l;
        }
        if (cr.verdict == Verdict::refuted && cr.precision == "exact" && cr.decisive.contains("enclosure") == false)
            continue;  // refuted without computing (eps c l_t >= 1)
        const auto t = cr.decisive.at("t").get<std::size_t>();
        const auto& e = cr.decisive.at("enclosure");
        INFO("trial " << trial << ", row " << t);
        REQUIRE(e.size() == 2);
        REQUIRE(parse_rational_text(e[0].get<std::string>(), {}) <= q[t]);
        REQUIRE(q[t] <= parse_rational_text(e[1].get<std::string>(), {}));
        bool all_below = true;
        for (const auto& x : q) all_below = all_below && x < Rat(1);
        REQUIRE((cr.verdict == Verdict::verified) == all_below);
        verified += cr.verdict == Verdict::verified;
        refuted += cr.verdict == Verdict::refuted;
    }
    REQUIRE(verified > 0);
    REQUIRE(refuted > 0);
}
