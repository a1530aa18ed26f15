// Kronecker instances and their two certificate kinds (docs/theory.md,
// "Kronecker instances"): known answers, agreement with the dense kinds on
// the explicitly formed product, and tampered certificates that must be
// refused.
#include "helpers.hpp"

#include <catch2/catch.hpp>

using namespace rankcert;
using namespace rankcert::test;

namespace {

json logits_instance(const json& s) { return {{"kind", "logits"}, {"logits", s}}; }
json kron(const std::vector<json>& factors) { return {{"kind", "kronecker"}, {"factors", factors}}; }

json kfactor(const std::vector<std::pair<json, json>>& uw, std::size_t rank) {
    json fs = json::array();
    for (const auto& [u, w] : uw) fs.push_back({{"u", u}, {"w", w}});
    return {{"bound", "upper"}, {"kind", "kron_factor"}, {"rank", rank}, {"factors", fs}};
}
json kneumann(const std::vector<std::pair<std::vector<std::size_t>, json>>& rr, std::size_t rank) {
    json fs = json::array();
    for (const auto& [rows, r] : rr) fs.push_back({{"rows", rows}, {"r", r}});
    return {{"bound", "lower"}, {"kind", "kron_neumann"}, {"rank", rank}, {"factors", fs}};
}


// Exact dense matrices as row-major Rat vectors.
struct Dense {
    std::size_t r = 0, c = 0;
    std::vector<Rat> v;
    const Rat& operator()(std::size_t i, std::size_t j) const { return v[i * c + j]; }
    json to_json() const {
        std::vector<json> d;
        for (const auto& x : v) d.push_back(x.str());
        return dense(r, c, d);
    }
};
// The Kronecker combination p_(ik),(jl) = op(a_ij, b_kl).
template <class Op>
Dense kron_combine(const Dense& a, const Dense& b, Op op) {
    Dense p{a.r * b.r, a.c * b.c, {}};
    p.v.resize(p.r * p.c);
    for (std::size_t i = 0; i < a.r; ++i)
        for (std::size_t j = 0; j < a.c; ++j)
            for (std::size_t k = 0; k < b.r; ++k)
                for (std::size_t l = 0; l < b.c; ++l) p.v[(i * b.r + k) * p.c + j * b.c + l] = op(a(i, j), b(k, l));
    return p;
}
Dense kron_product(const Dense& a, const Dense& b) {
    return kron_combine(a, b, [](const Rat& x, const Rat& y) { return x * y; });
}
// Logits of A_1 (x) A_2 for softmax factors: S_(ik),(jl) = S1_ij + S2_kl.
Dense kron_sum(const Dense& a, const Dense& b) {
    return kron_combine(a, b, [](const Rat& x, const Rat& y) { return x + y; });
}
Dense random_dense(Rng& rng, std::size_t r, std::size_t c, long bound, const Rat& diag = Rat()) {
    Dense d{r, c, {}};
    for (std::size_t i = 0; i < r; ++i)
        for (std::size_t j = 0; j < c; ++j) d.v.push_back((i == j ? diag : Rat()) + rng.rational_in(6, bound) * Rat(1, 8));
    return d;
}

const json kHalf = dense(2, 2, {"3/4", "1/4", "1/4", "3/4"});

}  // namespace

TEST_CASE("kron_factor: products of identities, exact factors and a dropped column",
          "[kron][kind:kron_factor][known-answer]") {
    TempDir dir;
    const json inst = kron({matrix_instance(identity(2)), matrix_instance(identity(3))});
    // B = I_2 (x) I_3 = A: error 0, rank 6.
    const json exact = kfactor({{identity(2), identity(2)}, {identity(3), identity(3)}}, 6);
    REQUIRE(verdict_of(dir, inst, Rat(0), exact) == Verdict::verified);
    // B_2 = I_3 without its last column: e_2 = 1, E = a_1 e_2 = 1, rank 4.
    const json dropped = kfactor({{identity(2), identity(2)}, {dense(3, 2, {1, 0, 0, 1, 0, 0}),
                                                               dense(3, 2, {1, 0, 0, 1, 0, 0})}},
                                 4);
    REQUIRE(verdict_of(dir, inst, Rat(1), dropped) == Verdict::verified);
    REQUIRE(verdict_of(dir, inst, Rat(1) - pow10neg(30), dropped) == Verdict::refuted);
    // Softmax factors: logits [[0, -2], [-2, 0]] twice, B_k = the 2 x 2 identity.
    // e_k = 2/(1 + e^2) exactly; E = e (1 + e) + e = e (2 + e).
    const json s = logits_instance(dense(2, 2, {0, -2, -2, 0}));
    const json softinst = kron({s, s});
    const json ident = kfactor({{identity(2), identity(2)}, {identity(2), identity(2)}}, 4);
    const auto [el, eh] = exp_enclosure(Rat(2));
    const Rat e_hi = Rat(2) / (Rat(1) + el), e_lo = Rat(2) / (Rat(1) + eh);  // e = 2/(1+e^2) in [e_lo, e_hi]
    REQUIRE(verdict_of(dir, softinst, e_hi * (Rat(2) + e_hi) + pow10neg(12), ident) == Verdict::verified);
    REQUIRE(verdict_of(dir, softinst, e_lo * (Rat(2) + e_lo) - pow10neg(12), ident) == Verdict::refuted);
}

TEST_CASE("kron_neumann: identities, the Gastinel-Kahan pair squared, softmax factors",
          "[kron][kind:kron_neumann][known-answer]") {
    TempDir dir;
    const json inst = kron({matrix_instance(identity(2)), matrix_instance(identity(3))});
    const json all = kneumann({{{0, 1}, identity(2)}, {{0, 1, 2}, identity(3)}}, 6);
    for (const char* eps : {"0", "1/2", "0.999999"}) {
        INFO("eps = " << eps);
        REQUIRE(verdict_of(dir, inst, parse_rational_text(eps, {}), all) == Verdict::verified);
    }
    REQUIRE(verdict_of(dir, inst, Rat(1), all) == Verdict::refuted);
    // [[3/4,1/4],[1/4,3/4]] (x) itself with R = I: row delta = |1 - 9/16| + 1 - 9/16 = 7/8.
    const json sq = kron({matrix_instance(kHalf), matrix_instance(kHalf)});
    const json r22 = kneumann({{{0, 1}, identity(2)}, {{0, 1}, identity(2)}}, 4);
    REQUIRE(verdict_of(dir, sq, Rat(1, 8) - pow10neg(40), r22) == Verdict::verified);
    REQUIRE(verdict_of(dir, sq, Rat(1, 8), r22) == Verdict::refuted);
    // The same product given densely: the neumann kind agrees on the threshold.
    const json dense_sq = matrix_instance(dense(4, 4, {"9/16", "3/16", "3/16", "1/16", "3/16", "9/16", "1/16", "3/16",
                                                       "3/16", "1/16", "9/16", "3/16", "1/16", "3/16", "3/16", "9/16"}));
    const json dn = {{"bound", "lower"}, {"kind", "neumann"}, {"rank", 4}, {"rows", {0, 1, 2, 3}}, {"r", identity(4)}};
    REQUIRE(verdict_of(dir, dense_sq, Rat(1, 8) - pow10neg(40), dn) == Verdict::verified);
    REQUIRE(verdict_of(dir, dense_sq, Rat(1, 8), dn) == Verdict::refuted);
    // Softmax factors: logits [[0, -1], [-1, 0]] twice: d = e/(1+e) =: p, l = 1,
    // delta = 1 - p^2 + 1 - p^2 = 2 (1 - p^2); verified iff eps < 2 p^2 - 1.
    const json s = logits_instance(dense(2, 2, {0, -1, -1, 0}));
    const auto [el, eh] = exp_enclosure(Rat(1));
    const Rat plo = el / (Rat(1) + el), phi = eh / (Rat(1) + eh);  // p = e/(1+e) is increasing in e
    const Rat thr_lo = Rat(2) * plo * plo - Rat(1), thr_hi = Rat(2) * phi * phi - Rat(1);
    REQUIRE(verdict_of(dir, kron({s, s}), thr_lo - pow10neg(20), r22) == Verdict::verified);
    REQUIRE(verdict_of(dir, kron({s, s}), thr_hi + pow10neg(20), r22) == Verdict::refuted);
}

TEST_CASE("kron kinds agree with the dense kinds on the formed product", "[kron][enclosure]") {
    // Random factors (rational matrices, or logits for softmax), random rows
    // and R: kron_neumann's decisive value equals the dense neumann delta of
    // the product with rows I_1 x I_2 and R_1 (x) R_2 (exactly, for rational
    // factors), and whenever kron_factor verifies, the dense factor
    // U_1 (x) U_2, W_1 (x) W_2 verifies too (the telescoped E bounds its error).
    TempDir dir;
    Rng rng(5);
    int nv = 0, nr = 0, fv = 0, fr = 0;
    for (int trial = 0; trial < 40; ++trial) {
        const bool soft = trial % 2 == 1;
        const std::size_t n1 = 2 + rng.below(2), N1 = 2 + rng.below(2), n2 = 2, N2 = 2 + rng.below(2);
        const Dense a1 = random_dense(rng, n1, N1, 1, Rat(soft ? 3 : 1)), a2 = random_dense(rng, n2, N2, 1, Rat(soft ? 3 : 1));
        const json f1 = soft ? logits_instance(a1.to_json()) : matrix_instance(a1.to_json());
        const json f2 = soft ? logits_instance(a2.to_json()) : matrix_instance(a2.to_json());
        const json kinst = kron({f1, f2});
        const json dinst = soft ? logits_instance(kron_sum(a1, a2).to_json())
                                : matrix_instance(kron_product(a1, a2).to_json());
        const Rat eps(static_cast<long>(rng.below(8)), 16);
        // neumann: rows {0, 1} of each factor, R near the identity columns.
        const Dense r1 = random_dense(rng, N1, 2, 1, Rat(1)), r2 = random_dense(rng, N2, 2, 1, Rat(1));
        const json kn = kneumann({{{0, 1}, r1.to_json()}, {{0, 1}, r2.to_json()}}, 4);
        std::vector<std::size_t> drows;
        for (std::size_t i : {0, 1})
            for (std::size_t k : {0, 1}) drows.push_back(i * n2 + k);
        const json dn = {{"bound", "lower"}, {"kind", "neumann"}, {"rank", 4}, {"rows", drows},
                         {"r", kron_product(r1, r2).to_json()}};
        const Report rk = run(dir, bundle_json(kinst, eps, {kn}));
        const Report rd = run(dir, bundle_json(dinst, eps, {dn}));
        const Verdict vk = rk.certificates[0].verdict, vd = rd.certificates[0].verdict;
        INFO("trial " << trial << " soft " << soft);
        REQUIRE(vk != Verdict::undecided);
        REQUIRE(vk == vd);
        (vk == Verdict::verified ? nv : nr)++;
        if (!soft && rk.certificates[0].decisive.contains("enclosure")) {
            // Exact: the worst multi-index's value is the dense delta's worst row.
            const auto& ek = rk.certificates[0].decisive["enclosure"];
            const auto& ed = rd.certificates[0].decisive["delta"];
            if (vk == Verdict::verified) {
                REQUIRE(ek[0] == ek[1]);
                const Rat v = parse_rational_text(ek[1].get<std::string>(), {});
                REQUIRE(parse_rational_text(ed[0].get<std::string>(), {}) <= v);
                REQUIRE(v <= parse_rational_text(ed[1].get<std::string>(), {}));
            }
        }
        // factor: random rank-1 or rank-2 factors per axis.
        const std::size_t k1 = 1 + rng.below(2), k2 = 1 + rng.below(2);
        const Dense u1 = random_dense(rng, n1, k1, 1, Rat(1)), w1 = random_dense(rng, N1, k1, 1, Rat(1));
        const Dense u2 = random_dense(rng, n2, k2, 1, Rat(1)), w2 = random_dense(rng, N2, k2, 1, Rat(1));
        const json kf = kfactor({{u1.to_json(), w1.to_json()}, {u2.to_json(), w2.to_json()}}, k1 * k2);
        const Rat feps(static_cast<long>(1 + rng.below(40)), 8);
        const Verdict vf = run(dir, bundle_json(kinst, feps, {kf})).certificates[0].verdict;
        const json df = {{"bound", "upper"}, {"kind", "factor"}, {"rank", k1 * k2},
                         {"u", kron_product(u1, u2).to_json()}, {"w", kron_product(w1, w2).to_json()}};
        const Verdict vdf = run(dir, bundle_json(dinst, feps, {df})).certificates[0].verdict;
        if (vf == Verdict::verified) {
            REQUIRE(vdf == Verdict::verified);
            ++fv;
        } else {
            ++fr;
        }
    }
    CHECK(nv > 3);
    CHECK(nr > 3);
    CHECK(fv > 3);
    CHECK(fr > 3);
}

TEST_CASE("kron kinds: tampered certificates and malformed instances are refused",
          "[kron][kind:kron_factor][kind:kron_neumann][tampering]") {
    TempDir dir;
    const json sq = kron({matrix_instance(kHalf), matrix_instance(kHalf)});
    const json r22 = kneumann({{{0, 1}, identity(2)}, {{0, 1}, identity(2)}}, 4);
    const Rat eps(1, 10);
    REQUIRE(verdict_of(dir, sq, eps, r22) == Verdict::verified);
    SECTION("R changed in one factor") {
        const json bad = kneumann({{{0, 1}, identity(2)}, {{0, 1}, dense(2, 2, {1, 0, "1/4", 1})}}, 4);
        REQUIRE(verdict_of(dir, sq, eps, bad) == Verdict::refuted);
    }
    SECTION("R scaled up (eps rho >= 1)") {
        const json bad = kneumann({{{0, 1}, dense(2, 2, {10, 0, 0, 10})}, {{0, 1}, identity(2)}}, 4);
        REQUIRE(verdict_of(dir, sq, eps, bad) == Verdict::refuted);
    }
    SECTION("rows permuted in one factor") {
        const json bad = kneumann({{{1, 0}, identity(2)}, {{0, 1}, identity(2)}}, 4);
        REQUIRE(verdict_of(dir, sq, eps, bad) == Verdict::refuted);
    }
    SECTION("a factor's u changed") {
        const json good = kfactor({{kHalf, identity(2)}, {kHalf, identity(2)}}, 4);
        REQUIRE(verdict_of(dir, sq, Rat(0), good) == Verdict::verified);
        const json bad = kfactor({{kHalf, identity(2)}, {dense(2, 2, {"3/4", "1/4", "1/4", "5/8"}), identity(2)}}, 4);
        REQUIRE(verdict_of(dir, sq, eps, bad) == Verdict::refuted);
        REQUIRE(verdict_of(dir, sq, Rat(1, 8), bad) == Verdict::verified);  // E = 1/8 exactly
        REQUIRE(verdict_of(dir, sq, Rat(1, 8) - pow10neg(40), bad) == Verdict::refuted);
    }
    SECTION("a factor of rank above min(n_k, N_k): refused, so the product rank cannot wrap around") {
        const json wide = kfactor({{identity(2), identity(2)}, {dense(2, 3, {1, 0, 0, 0, 1, 0}), dense(2, 3, {1, 0, 0, 0, 1, 0})}}, 6);
        REQUIRE_THROWS_WITH(run(dir, bundle_json(sq, eps, {wide})), Catch::Contains("factors[1].u") && Catch::Contains("min(n_k, N_k)"));
    }
    SECTION("claimed rank not the product") {
        json bad = r22;
        bad["rank"] = 3;
        REQUIRE_THROWS_AS(run(dir, bundle_json(sq, eps, {bad})), InputError);
    }
    SECTION("structure: errors name the field") {
        const json one = kneumann({{{0, 1}, identity(2)}}, 2);
        REQUIRE_THROWS_WITH(run(dir, bundle_json(sq, eps, {one})), Catch::Contains("factors"));
        const json shape = kneumann({{{0, 1}, identity(2)}, {{0, 1}, identity(3)}}, 4);
        REQUIRE_THROWS_WITH(run(dir, bundle_json(sq, eps, {shape})), Catch::Contains("factors[1].r"));
        const json dn = {{"bound", "lower"}, {"kind", "neumann"}, {"rank", 1}, {"rows", {0}}, {"r", dense(4, 1, {1, 0, 0, 0})}};
        REQUIRE_THROWS_WITH(run(dir, bundle_json(sq, eps, {dn})), Catch::Contains("only kron_factor and kron_neumann"));
        REQUIRE_THROWS_WITH(run(dir, bundle_json(matrix_instance(kHalf), eps, {r22})),
                            Catch::Contains("needs a kronecker instance"));
        const json nested = kron({sq, matrix_instance(kHalf)});
        REQUIRE_THROWS_WITH(run(dir, bundle_json(nested, eps, {})), Catch::Contains("cannot itself be a kronecker"));
        const json zero = kron({matrix_instance(dense(2, 2, {0, 0, 0, 0})), matrix_instance(kHalf)});
        REQUIRE_THROWS_WITH(run(dir, bundle_json(zero, eps, {})), Catch::Contains("factors[0].a"));
        const json empty = {{"kind", "kronecker"}, {"factors", json::array()}};
        REQUIRE_THROWS_WITH(run(dir, bundle_json(empty, eps, {})), Catch::Contains("1 to 4"));
    }
}
