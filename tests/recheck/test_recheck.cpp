// Unit tests of the second checker's arithmetic and readers (src/recheck/):
// containment of every interval operation against exact rationals (Boost's
// gmp_rational) or a 400-bit MPFR enclosure for exp, the a priori dot and
// norm bounds, Rump's positive-definiteness test on matrices whose answer
// is known, and exact number parsing.  No code of the first checker.
#include "recheck.hpp"

#include <catch2/catch.hpp>

#include <random>

using namespace recheck;

namespace {

// x <= v and x >= v for a double end that may be infinite (never NaN here).
bool below(double x, const Q& v) { return x == -INFINITY || (std::isfinite(x) && Q(x) <= v); }
bool above(double x, const Q& v) { return x == INFINITY || (std::isfinite(x) && Q(x) >= v); }
bool contains(const DI& x, const Q& v) { return below(x.lo, v) && above(x.hi, v); }

// A random double of varied magnitude (subnormal to 2^60), either sign.
double wild(std::mt19937_64& g) {
    std::uniform_real_distribution<double> m(-1.0, 1.0);
    std::uniform_int_distribution<int> e(-1074, 60);
    const int ex = e(g);
    return std::ldexp(m(g), ex < -1060 ? ex : ex % 80);
}

DI random_interval(std::mt19937_64& g) {
    const double a = wild(g), b = a + std::abs(wild(g)) * 1e-3;
    return {std::min(a, b), std::max(a, b)};
}

// The exact ends of x op y over the four corner products (exact in Q).
std::pair<Q, Q> corners(const DI& x, const DI& y, char op) {
    std::vector<Q> v;
    for (double a : {x.lo, x.hi})
        for (double b : {y.lo, y.hi}) v.push_back(op == '*' ? Q(a) * Q(b) : Q(a) / Q(b));
    return {*std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
}

}  // namespace

TEST_CASE("binary64 intervals contain the exact results of +, -, *, / and abs", "[recheck]") {
    std::mt19937_64 g(7);
    for (int k = 0; k < 20000; ++k) {
        const DI x = random_interval(g), y = random_interval(g);
        const DI s = x + y, d = x - y, p = x * y, a = iabs(x);
        REQUIRE(below(s.lo, Q(x.lo) + Q(y.lo)));
        REQUIRE(above(s.hi, Q(x.hi) + Q(y.hi)));
        REQUIRE(below(d.lo, Q(x.lo) - Q(y.hi)));
        REQUIRE(above(d.hi, Q(x.hi) - Q(y.lo)));
        const auto [pl, ph] = corners(x, y, '*');
        REQUIRE(below(p.lo, pl));
        REQUIRE(above(p.hi, ph));
        REQUIRE(a.lo >= 0);
        REQUIRE(above(a.hi, abs(Q(x.lo))));
        REQUIRE(above(a.hi, abs(Q(x.hi))));
        if (y.lo > 0) {
            const DI q = x / y;
            const auto [ql, qh] = corners(x, y, '/');
            REQUIRE(below(q.lo, ql));
            REQUIRE(above(q.hi, qh));
        }
    }
}

TEST_CASE("binary64 exp encloses exp on adversarial arguments", "[recheck]") {
    // Reference: MPFR at 400 bits, rounded outward; the DI ends must lie outside it.
    mpfr_t x, lo, hi;
    mpfr_inits2(400, x, lo, hi, (mpfr_ptr)nullptr);
    std::mt19937_64 g(11);
    std::uniform_real_distribution<double> u(-760.0, 715.0);
    std::vector<double> xs = {0.0, -0.0, 1e-300, -1e-300, 0.34657359027997264, -0.34657359027997264, 709.0, 709.78, -745.0,
                              -745.2, -744.44, -708.4, -1.0, 1.0, 0.5, std::log(2.0), -std::log(2.0)};
    for (int k = 0; k < 200000; ++k) xs.push_back(u(g));
    for (int k = -1100; k <= 1030; ++k) {  // near multiples of ln 2 / 2, where |r| is largest
        const double c = k * 0.34657359027997264;
        xs.push_back(c);
        xs.push_back(std::nextafter(c, 1e9));
        xs.push_back(std::nextafter(c, -1e9));
    }
    std::size_t n = 0;
    for (double v : xs) {
        if (v < -800 || v > 709.7) continue;
        const DI e = iexp(DI::point(v));
        mpfr_set_d(x, v, MPFR_RNDN);
        mpfr_exp(lo, x, MPFR_RNDD);
        mpfr_exp(hi, x, MPFR_RNDU);
        INFO("x = " << v << " enclosure [" << e.lo << ", " << e.hi << "]");
        REQUIRE(mpfr_cmp_d(lo, e.lo) >= 0);
        REQUIRE(mpfr_cmp_d(hi, e.hi) <= 0);
        // and it is tight: relative width below 2^-40 where exp(x) is a normal double
        if (v > -700) REQUIRE((e.hi - e.lo) <= std::ldexp(e.hi, -40));
        ++n;
    }
    // Thin intervals [v, v + w] (one polynomial for both ends): the lower end
    // below exp(v), the upper above exp(v + w).
    std::uniform_real_distribution<double> wd(0.0, 1.0);
    for (int k = 0; k < 100000; ++k) {
        const double v = u(g), w = std::ldexp(wd(g), -20 - static_cast<int>(g() % 40));
        const double v2 = v + w;
        if (v < -800 || v2 > 709.7) continue;
        const DI e = iexp(DI(v, v2));
        mpfr_set_d(x, v, MPFR_RNDN);
        mpfr_exp(lo, x, MPFR_RNDD);
        mpfr_set_d(x, v2, MPFR_RNDN);
        mpfr_exp(hi, x, MPFR_RNDU);
        INFO("x = [" << v << ", " << v2 << "] enclosure [" << e.lo << ", " << e.hi << "]");
        REQUIRE(mpfr_cmp_d(lo, e.lo) >= 0);
        REQUIRE(mpfr_cmp_d(hi, e.hi) <= 0);
        ++n;
    }
    mpfr_clears(x, lo, hi, (mpfr_ptr)nullptr);
    CHECK(n > 300000);
}

TEST_CASE("MPFR intervals contain the exact results", "[recheck]") {
    std::mt19937_64 g(3);
    for (mpfr_prec_t bits : {64, 128, 512}) {
        set_mi_bits(bits);
        for (int k = 0; k < 2000; ++k) {
            const Q a = Q(wild(g)) / Q(3), b = Q(wild(g)) / Q(7);
            const MI x = to_mi(a), y = to_mi(b);
            auto inside = [](const MI& m, const Q& v) {
                const End l = lo_end(m), h = hi_end(m);
                return end_le(l, v) && end_ge(h, v);
            };
            REQUIRE(inside(x + y, a + b));
            REQUIRE(inside(x - y, a - b));
            REQUIRE(inside(x * y, a * b));
            REQUIRE(inside(iabs(x - y), abs(a - b)));
            if (b > 0) REQUIRE(inside(x / y, a / b));
        }
        // 1/sqrt(q) squared and inverted: contains q.
        const MI r = rsqrt_mi(Q(128));
        const MI back = to_mi(1.0) / (r * r);
        REQUIRE(end_le(lo_end(back), Q(128)));
        REQUIRE(end_ge(hi_end(back), Q(128)));
    }
    set_mi_bits(128);
}

TEST_CASE("a priori dot products and norms contain the exact values", "[recheck]") {
    std::mt19937_64 g(5);
    for (int k = 0; k < 3000; ++k) {
        const std::size_t K = 1 + g() % 300;
        std::vector<double> x(K), y(K), xr(K);
        for (std::size_t t = 0; t < K; ++t) {
            x[t] = wild(g);
            y[t] = wild(g);
            xr[t] = std::abs(wild(g)) * 1e-6;
        }
        // y exact, x in x +- xr: the true x.y for x at either end of each entry lies inside.
        const DI d = dot_enclose(dot_rn(x.data(), y.data(), K), K, norm_up(x.data(), K), norm_up(xr.data(), K),
                                 norm_up(y.data(), K), 0.0);
        Q exact = 0, shifted = 0, sq = 0;
        for (std::size_t t = 0; t < K; ++t) {
            exact += Q(x[t]) * Q(y[t]);
            shifted += (Q(x[t]) + (y[t] >= 0 ? Q(xr[t]) : -Q(xr[t]))) * Q(y[t]);  // the extreme point
            sq += Q(x[t]) * Q(x[t]);
        }
        REQUIRE(contains(d, exact));
        REQUIRE(contains(d, shifted));
        const double nu = norm_up(x.data(), K);
        REQUIRE(Q(nu) * Q(nu) >= sq);
    }
}

TEST_CASE("Rump's test: positive definite matrices verify, semidefinite and indefinite ones never", "[recheck]") {
    auto matrix = [](std::size_t m, auto f) {
        std::vector<std::vector<DI>> H(m, std::vector<DI>(m));
        for (std::size_t a = 0; a < m; ++a)
            for (std::size_t b = 0; b <= a; ++b) H[a][b] = f(a, b);
        return H;
    };
    // Identity, and a diagonally dominant matrix: positive definite.
    CHECK(spd_di(matrix(50, [](std::size_t a, std::size_t b) { return DI::point(a == b ? 1.0 : 0.0); })) == Verdict::verified);
    CHECK(spd_di(matrix(80, [](std::size_t a, std::size_t b) { return DI::point(a == b ? 100.0 : 1.0); })) == Verdict::verified);
    // v v^T (rank one, semidefinite, singular): never verified.
    CHECK(spd_di(matrix(20, [](std::size_t a, std::size_t b) { return DI::point(double(a + 1) * double(b + 1)); })) ==
          Verdict::undecided);
    // The Hilbert matrix minus 1e-3 I is indefinite for m = 12 (its least eigenvalue is ~1e-16).
    CHECK(spd_di(matrix(12, [](std::size_t a, std::size_t b) {
              const DI h = DI(1.0, 1.0) / DI::point(double(a + b + 1));
              return a == b ? h - DI::point(1e-3) : h;
          })) == Verdict::undecided);
    // An interval matrix containing a singular one: never verified.
    CHECK(spd_di(matrix(2, [](std::size_t a, std::size_t b) { return a == b ? DI(1.0, 1.0) : DI(0.5, 1.0); })) == Verdict::undecided);
}

TEST_CASE("Clenshaw's recurrence with a running error bound contains the exact value", "[recheck]") {
    std::mt19937_64 g(13);
    std::uniform_real_distribution<double> ud(-1.2, 1.2), cd(-2.0, 2.0);
    for (int k = 0; k < 3000; ++k) {
        const std::size_t p = g() % 40;
        std::vector<double> cm(p + 1), cr(p + 1, 0.0);
        for (auto& c : cm) c = cd(g) * (g() % 4 == 0 ? 1e-12 : 1.0);
        const double t0 = ud(g), w = g() % 2 ? 0.0 : std::ldexp(1.0, -30 - static_cast<int>(g() % 20));
        const DI gi = clenshaw_di(DI(t0, t0 + w), cm, cr);
        // The exact sum at both ends of t (T_k by the exact three-term recurrence).
        for (double tv : {t0, t0 + w}) {
            const Q t(tv);
            Q T0 = 1, T1 = t, sum = Q(cm[0]) * T0;
            if (p >= 1) sum += Q(cm[1]) * T1;
            for (std::size_t j = 2; j <= p; ++j) {
                const Q T2 = 2 * t * T1 - T0;
                sum += Q(cm[j]) * T2;
                T0 = T1;
                T1 = T2;
            }
            INFO("p = " << p << ", t = " << tv);
            REQUIRE(contains(gi, sum));
        }
    }
}

TEST_CASE("numbers are read exactly, in every spelling of the format", "[recheck]") {
    auto num = [](const std::string& text) { return read_q(parse_json(text, "t"), "t"); };
    CHECK(num("0.1") == Q(1, 10));
    CHECK(num("\"0.1\"") == Q(1, 10));
    CHECK(num("\"-2.5e-3\"") == Q(-1, 400));
    CHECK(num("1E2") == Q(100));
    CHECK(num("\"-3/7\"") == Q(-3, 7));
    CHECK(num("\"0x1.8p-3\"") == Q(3, 16));
    CHECK(num("\"-0x10p0\"") == Q(-16));
    CHECK(num("\"08\"") == Q(8));        // a leading zero is decimal, not octal
    CHECK(num("\"0008.50\"") == Q(17, 2));
    CHECK(num("\"010/03\"") == Q(10, 3));
    CHECK_THROWS_AS(num("\"1e99999\""), InputError);
    CHECK_THROWS_AS(num("\"1/0\""), InputError);
    CHECK_THROWS_AS(num("\"-inf\""), InputError);
    CHECK_THROWS_AS(num("\"0x1.8\""), InputError);
    CHECK_THROWS_AS(num("\"1.2.3\""), InputError);
    CHECK_THROWS_AS(num("true"), InputError);
    CHECK(read_number(parse_json("\"-inf\"", "t"), "t", true).kind == Number::Kind::neg_inf);
    CHECK(read_number(parse_json("{\"rsqrt\": 128}", "t"), "t").kind == Number::Kind::rsqrt);
    // Malformed JSON is an input error, also when nested deeply.
    CHECK_THROWS_AS(parse_json(std::string(100000, '['), "t"), InputError);
    CHECK_THROWS_AS(parse_json("{\"a\": 1,}", "t"), InputError);
    CHECK_THROWS_AS(parse_json("\"\\ud800\"", "t"), InputError);
}
