// zonal (docs/theory.md, "Upper bounds"): the rank the checker derives is
// never below the exact rank of B (computed over Q), row errors are
// enclosed (compared with exact rational enclosures), and tampered
// certificates are refused.
#include "helpers.hpp"

#include <catch2/catch.hpp>
#include <flint/fmpq_mat.h>

using namespace rankcert;
using namespace rankcert::test;

namespace {

// A rational point on S^{d-1}: inverse stereographic projection of u in Q^{d-1}.
std::vector<Rat> sphere_point(Rng& rng, std::size_t d) {
    std::vector<Rat> u(d - 1);
    Rat s;
    for (auto& x : u) {
        x = rng.rational_in(6, 2);
        s = s + x * x;
    }
    std::vector<Rat> p(d);
    const Rat den = Rat(1) + s;
    p[0] = (Rat(1) - s) / den;
    for (std::size_t a = 1; a < d; ++a) p[a] = (Rat(2) * u[a - 1]) / den;
    return p;
}

std::vector<std::vector<Rat>> points(Rng& rng, std::size_t n, std::size_t d, bool sphere) {
    std::vector<std::vector<Rat>> out;
    for (std::size_t i = 0; i < n; ++i) {
        if (sphere) {
            out.push_back(sphere_point(rng, d));
        } else {
            std::vector<Rat> p(d);
            for (auto& x : p) x = rng.rational_in(6, 1);
            out.push_back(p);
        }
    }
    return out;
}

json as_json(const std::vector<std::vector<Rat>>& pts) {
    std::vector<json> data;
    for (const auto& p : pts)
        for (const auto& x : p) data.push_back(x.str());
    return dense(pts.size(), pts.at(0).size(), data);
}

Rat dot(const std::vector<Rat>& a, const std::vector<Rat>& b) {
    Rat s;
    for (std::size_t k = 0; k < a.size(); ++k) s = s + a[k] * b[k];
    return s;
}

// sum_k c_k T_k(t), exactly (Clenshaw).
Rat chebyshev(const std::vector<Rat>& c, const Rat& t) {
    Rat b1, b2;
    for (std::size_t k = c.size() - 1; k >= 1; --k) {
        Rat b0 = c[k] + Rat(2) * t * b1 - b2;
        b2 = b1;
        b1 = b0;
    }
    return c[0] + t * b1 - b2;
}

// Chebyshev coefficients of the Taylor polynomial of exp(sigma t) to degree p
// (t^m = 2^{1-m} sum_{k = m, m-2, ..} C(m, (m-k)/2) T_k, half weight at k = 0).
std::vector<Rat> taylor_chebyshev(const Rat& sigma, std::size_t p) {
    std::vector<Rat> c(p + 1);
    Rat term(1);  // sigma^m / m!
    for (std::size_t m = 0; m <= p; ++m) {
        if (m > 0) term = term * sigma / Rat(static_cast<long>(m));
        Rat binom(1);  // C(m, j)
        for (std::size_t j = 0; 2 * j <= m; ++j) {
            if (j > 0) binom = binom * Rat(static_cast<long>(m - j + 1)) / Rat(static_cast<long>(j));
            const std::size_t k = m - 2 * j;
            Rat w = term * binom;
            for (std::size_t e = 0; e + 1 < m; ++e) w = w / Rat(2);  // 2^{1-m}
            if (m == 0) w = term;
            else if (k == 0) w = w / Rat(2);
            c[k] = c[k] + w;
        }
    }
    return c;
}

// x rounded up (or down) to a multiple of 10^-12: a short spelling for eps.
Rat round12(const Rat& x, bool up) {
    fmpz_t z, scale;
    fmpz_init(z);
    fmpz_init(scale);
    fmpz_set_ui(scale, 1000000000000UL);
    fmpz_mul(z, fmpq_numref(x.get()), scale);
    if (up) fmpz_cdiv_q(z, z, fmpq_denref(x.get()));
    else fmpz_fdiv_q(z, z, fmpq_denref(x.get()));
    Rat r;
    fmpq_set_fmpz_frac(r.get(), z, scale);
    fmpz_clear(z);
    fmpz_clear(scale);
    return r;
}

json zonal_cert(const std::vector<Rat>& c, const Rat& shift, std::uint64_t rank) {
    json cs = json::array();
    for (const auto& x : c) cs.push_back(x.str());
    return {{"bound", "upper"}, {"kind", "zonal"}, {"rank", rank}, {"chebyshev", cs}, {"shift", shift.str()}};
}

json qk(const std::vector<std::vector<Rat>>& q, const std::vector<std::vector<Rat>>& k, const std::string& scale) {
    return {{"kind", "qk"}, {"q", as_json(q)}, {"k", as_json(k)}, {"scale", scale}};
}

// The rank the checker derives for c on these points: a wrong stated rank is
// an input error that names the proven one.
std::uint64_t derived_rank(const TempDir& dir, const json& inst, const std::vector<Rat>& c) {
    const json cert = zonal_cert(c, Rat(0), 999999999);  // never the proven rank here
    try {
        (void)load(dir, bundle_json(inst, Rat(1, 2), {cert}));
    } catch (const InputError& e) {
        const std::string m = e.what();
        const auto at = m.find("the data prove rank ");
        REQUIRE(at != std::string::npos);
        return std::stoull(m.substr(at + 20));
    }
    FAIL("a zonal certificate with a wrong rank must be refused");
    return 0;
}

// Exact rank of G_ij = g(<q_i, k_j>).
long exact_rank(const std::vector<std::vector<Rat>>& q, const std::vector<std::vector<Rat>>& k,
                const std::vector<Rat>& c) {
    fmpq_mat_t G;
    fmpq_mat_init(G, static_cast<slong>(q.size()), static_cast<slong>(k.size()));
    for (std::size_t i = 0; i < q.size(); ++i)
        for (std::size_t j = 0; j < k.size(); ++j)
            fmpq_set(fmpq_mat_entry(G, i, j), chebyshev(c, dot(q[i], k[j])).get());
    fmpq_mat_t E;
    fmpq_mat_init(E, fmpq_mat_nrows(G), fmpq_mat_ncols(G));
    const long r = fmpq_mat_rref(E, G);
    fmpq_mat_clear(E);
    fmpq_mat_clear(G);
    return r;
}

}  // namespace

TEST_CASE("zonal: the derived rank is never below the exact rank of B", "[zonal][kind:zonal][known-answer]") {
    TempDir dir;
    Rng rng(7);
    struct Case {
        std::size_t d, p;
        bool sphere, odd_only;
        std::uint64_t expect;  // the formula of docs/theory.md
    };
    const Case cases[] = {
        {2, 4, true, false, 9},     // C(5,1) + C(4,1): harmonics of degree <= 4 on S^1
        {3, 3, true, false, 16},    // (p+1)^2 on S^2
        {3, 3, true, true, 10},     // odd g: degree-3 homogeneous only, C(5,2)
        {4, 2, true, false, 14},    // C(5,3) + C(4,3) on S^3
        {3, 3, false, false, 20},   // off the sphere: C(6,3)
    };
    for (const auto& cs : cases) {
        CAPTURE(cs.d, cs.p, cs.sphere, cs.odd_only);
        const std::size_t n = cs.expect + 6;
        const auto q = points(rng, n, cs.d, cs.sphere);
        const auto k = points(rng, n, cs.d, cs.sphere);
        // Random coefficients: a zero Gegenbauer coefficient (e.g. c_0 = c_2 / 3
        // on S^2) would drop a whole harmonic space from the exact rank.
        std::vector<Rat> c(cs.p + 1);
        for (std::size_t j = 0; j <= cs.p; ++j)
            c[j] = (cs.odd_only && j % 2 == 0) ? Rat(0) : Rat(1) + rng.rational_in(8, 1) / Rat(4);
        const auto rank = derived_rank(dir, qk(q, k, "1"), c);
        CHECK(rank == cs.expect);
        // Soundness: the exact rank never exceeds what the checker claims;
        // equality shows the bound is the dimension, not just a bound.
        CHECK(exact_rank(q, k, c) == static_cast<long>(cs.expect));
    }
    // Never above min(n, N), and rank 0 for g = 0.
    const auto q = points(rng, 5, 3, true), k = points(rng, 4, 3, true);
    CHECK(derived_rank(dir, qk(q, k, "1"), {Rat(1), Rat(1), Rat(1), Rat(1)}) == 4);
    CHECK(derived_rank(dir, qk(q, k, "1"), {Rat(0), Rat(0)}) == 0);
}

TEST_CASE("zonal: row errors are enclosed (exact rational reference)", "[zonal]") {
    TempDir dir;
    Rng rng(11);
    const std::size_t n = 7, d = 3, p = 6;
    const auto q = points(rng, n, d, true), k = points(rng, n, d, true);
    const Rat sigma(3, 2), shift(1, 3);
    // g ~ exp(sigma t - shift): the Taylor polynomial, scaled by a rational
    // near exp(-shift) (the check is for whatever g is given).
    auto c = taylor_chebyshev(sigma, p);
    const Rat scale_g(7, 10);
    for (auto& x : c) x = x * scale_g;
    // Reference: r_i in [lo_i, hi_i] from exact enclosures of exp.
    Rat worst_lo, worst_hi;
    for (std::size_t i = 0; i < n; ++i) {
        Rat num_lo, num_hi, den_lo, den_hi;
        for (std::size_t j = 0; j < n; ++j) {
            const Rat t = dot(q[i], k[j]);
            const auto [elo, ehi] = exp_enclosure(sigma * t - shift);
            const Rat g = chebyshev(c, t);
            const Rat a = (elo - g).abs(), b = (ehi - g).abs();
            const bool straddles = elo <= g && g <= ehi;
            num_lo = num_lo + (straddles ? Rat(0) : (a < b ? a : b));
            num_hi = num_hi + (a < b ? b : a);
            den_lo = den_lo + elo;
            den_hi = den_hi + ehi;
        }
        const Rat lo = num_lo / den_hi, hi = num_hi / den_lo;
        if (lo > worst_lo) worst_lo = lo;
        if (hi > worst_hi) worst_hi = hi;
    }
    REQUIRE(worst_lo > Rat(0));
    const json inst = qk(q, k, "3/2");
    const auto rank = derived_rank(dir, inst, c);
    REQUIRE(rank == 7);  // (p+1)^2 = 49 on S^2, capped at min(n, N) = 7
    const json cert = zonal_cert(c, shift, 7);
    const Rat margin(1000001, 1000000);
    const Report above = run(dir, bundle_json(inst, round12(worst_hi * margin, true), {cert}));
    CHECK(above.certificates.at(0).verdict == Verdict::verified);
    const Report below = run(dir, bundle_json(inst, round12(worst_lo / margin, false), {cert}));
    CHECK(below.certificates.at(0).verdict == Verdict::refuted);
}

TEST_CASE("zonal: known answer on the sphere, and tampering", "[zonal][kind:zonal][tampering]") {
    TempDir dir;
    Rng rng(3);
    const std::size_t n = 40, d = 3, p = 10;
    const auto x = points(rng, n, d, true);
    // Self-attention at sigma = 2 with the Taylor polynomial of exp(2t) to
    // degree 10: |exp(2t) - g(t)| <= 2^11 e^2 / 11! < 4e-4 on [-1, 1], and
    // Z_i >= e^2 + 39 e^{-2} > 12 (t_ii = 1), so every row error is below
    // 40 * 4e-4 / 12 < 2e-3.
    const auto c = taylor_chebyshev(Rat(2), p);
    const json inst = qk(x, x, "2");
    const json good = zonal_cert(c, Rat(0), 40);  // (p+1)^2 = 121 > n = 40
    const Rat eps(1, 100);
    REQUIRE(run(dir, bundle_json(inst, eps, {good})).certificates.at(0).verdict == Verdict::verified);

    SECTION("a wrong coefficient is refuted") {
        auto bad = c;
        bad[0] = bad[0] + Rat(1, 10);
        CHECK(run(dir, bundle_json(inst, eps, {zonal_cert(bad, Rat(0), 40)})).certificates.at(0).verdict ==
              Verdict::refuted);
    }
    SECTION("a wrong shift is refuted") {
        CHECK(run(dir, bundle_json(inst, eps, {zonal_cert(c, Rat(1, 10), 40)})).certificates.at(0).verdict ==
              Verdict::refuted);
    }
    SECTION("a stated rank below the proven one is an input error") {
        // degree 3 on S^2 proves 16; claiming 15 is refused at load.
        std::vector<Rat> c3(c.begin(), c.begin() + 4);
        CHECK_THROWS_AS(load(dir, bundle_json(inst, eps, {zonal_cert(c3, Rat(0), 15)})), InputError);
        CHECK_NOTHROW(load(dir, bundle_json(inst, eps, {zonal_cert(c3, Rat(0), 16)})));
    }
    SECTION("one key and one query moved off the sphere change the proven rank") {
        auto k = x, q = x;
        k[0][0] = k[0][0] + Rat(1, 1000000);
        std::vector<Rat> c3(c.begin(), c.begin() + 4);
        // Only the keys off the sphere: the queries still give 16.
        CHECK_NOTHROW(load(dir, bundle_json(qk(x, k, "2"), eps, {zonal_cert(c3, Rat(0), 16)})));
        q[1][2] = q[1][2] - Rat(1, 1000000);
        CHECK_THROWS_AS(load(dir, bundle_json(qk(q, k, "2"), eps, {zonal_cert(c3, Rat(0), 16)})), InputError);
        CHECK_NOTHROW(load(dir, bundle_json(qk(q, k, "2"), eps, {zonal_cert(c3, Rat(0), 20)})));
    }
    SECTION("a masked instance is refused") {
        json masked = inst;
        masked["mask"] = "causal";
        CHECK_THROWS_AS(load(dir, bundle_json(masked, eps, {good})), InputError);
    }
    SECTION("no coefficients is refused") {
        json bad = good;
        bad["chebyshev"] = json::array();
        CHECK_THROWS_AS(load(dir, bundle_json(inst, eps, {bad})), InputError);
    }
}
