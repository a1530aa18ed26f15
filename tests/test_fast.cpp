// The binary64 tier: its exp error bound recomputed in Arb, exp and whole
// softmax rows contained against high-precision Arb on adversarial inputs,
// and decisions near the boundary: the tier decides what its bounds settle
// and defers the rest, never deciding wrongly.
#include "helpers.hpp"
#include "../src/checker/cert/combination.hpp"
#include "../src/checker/cert/zonal.hpp"
#include "rankcert/fast.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>

using namespace rankcert;
using namespace rankcert::test;
using fast::exp_constants;

namespace {

Ball from_double(double x) {
    Ball b;
    arb_set_d(b.get(), x);
    return b;
}

Ball from_rat(const Rat& q, slong prec) {
    Ball b;
    arb_set_fmpq(b.get(), q.get(), prec);
    return b;
}

// Is the ball certainly <= the double t?
bool certainly_le(arb_srcptr x, double t) { return decide_le(x, fast::exact(t)) == Verdict::verified; }

}  // namespace

TEST_CASE("fast exp: the error bound exp_rel, recomputed in Arb", "[fast]") {
    const slong prec = 256;
    // ln2_hi has at most 32 significant bits (k * ln2_hi exact for |k| < 2^21).
    {
        arf_t h;
        arf_init(h);
        arf_set_d(h, exp_constants::ln2_hi);
        REQUIRE(arf_bits(h) <= 32);
        arf_clear(h);
    }
    // |ln2 - ln2_hi - ln2_lo| < 1.2e-26.
    Ball split, t;
    arb_const_log2(split.get(), prec);
    arb_sub(split.get(), split.get(), from_double(exp_constants::ln2_hi).get(), prec);
    arb_sub(split.get(), split.get(), from_double(exp_constants::ln2_lo).get(), prec);
    arb_abs(split.get(), split.get());
    REQUIRE(certainly_le(split.get(), 1.2e-26));
    // Each coefficient is within u / i! of 1 / i!.
    Ball coef_err;  // sum_i |c_i - 1/i!| r_max^i, bounded by u e^{r_max} below
    for (int i = 0; i <= exp_constants::degree; ++i) {
        Ball f, d;
        arb_fac_ui(f.get(), static_cast<ulong>(i), prec);
        arb_inv(f.get(), f.get(), prec);
        arb_sub(d.get(), from_double(exp_constants::coef[i]).get(), f.get(), prec);
        arb_abs(d.get(), d.get());
        arb_mul_2exp_si(f.get(), f.get(), -53);  // u / i!
        REQUIRE(arb_le(d.get(), f.get()));
    }
    // The total relative error for |r| <= r_max (docs/theory.md, "The fast tier"):
    //   truncation  r^14/14! e^r,  Horner  gamma_26 e^r,  coefficients  u e^r,
    // all over e^{-r_max}, plus the reduction error delta (relative 2 delta):
    //   delta <= u (2 r_max + 1011 ln2_lo) + 1011 * 1.2e-26.
    const Rat rmax = fast::exact(exp_constants::r_max);
    Ball r = from_rat(rmax, prec), er, emr, trunc, horner, coeff, delta, total, u;
    arb_one(u.get());
    arb_mul_2exp_si(u.get(), u.get(), -53);
    arb_exp(er.get(), r.get(), prec);
    arb_neg(emr.get(), r.get());
    arb_exp(emr.get(), emr.get(), prec);
    arb_pow_ui(trunc.get(), r.get(), 14, prec);
    Ball f14;
    arb_fac_ui(f14.get(), 14, prec);
    arb_div(trunc.get(), trunc.get(), f14.get(), prec);
    arb_mul(trunc.get(), trunc.get(), er.get(), prec);
    // gamma_26 = 26 u / (1 - 26 u)
    Ball g, one;
    arb_one(one.get());
    arb_mul_ui(g.get(), u.get(), 26, prec);
    arb_sub(t.get(), one.get(), g.get(), prec);
    arb_div(g.get(), g.get(), t.get(), prec);
    arb_mul(horner.get(), g.get(), er.get(), prec);
    arb_mul(coeff.get(), u.get(), er.get(), prec);
    arb_add(total.get(), trunc.get(), horner.get(), prec);
    arb_add(total.get(), total.get(), coeff.get(), prec);
    arb_div(total.get(), total.get(), emr.get(), prec);
    arb_mul_ui(t.get(), r.get(), 2, prec);
    arb_add(t.get(), t.get(), Ball(from_double(1011 * exp_constants::ln2_lo)).get(), prec);
    arb_mul(delta.get(), u.get(), t.get(), prec);
    arb_add(delta.get(), delta.get(), from_double(1011 * 1.2e-26).get(), prec);
    arb_mul_ui(t.get(), delta.get(), 2, prec);
    arb_add(total.get(), total.get(), t.get(), prec);
    INFO("proven relative error bound of exp_neg: " << arb_get_str(total.get(), 6, 0));
    // exp_rel = 2^-45 leaves a factor of 4 over the proven bound.
    arb_mul_ui(t.get(), total.get(), 4, prec);
    REQUIRE(certainly_le(t.get(), fast::exp_rel));
}

TEST_CASE("fast exp: contained within exp_rel of Arb's exp on adversarial arguments", "[fast]") {
    std::vector<double> xs = {0.0, -0.0, -0x1p-1074, -1e-300, -1e-17, 0.5, 0.34657359027997264, -0.34657359027997264,
                              -0.3465735902799726, -0.34657359027997270, -700.0, -699.9999999999999, -1.0, -2.0};
    for (int k = 1; k <= 1009; ++k) {  // both sides of every multiple of ln2/2
        const double c = -0.5 * k * 0.6931471805599453;
        xs.push_back(c);
        xs.push_back(std::nextafter(c, 0.0));
        xs.push_back(std::nextafter(c, -1.0));
    }
    std::mt19937_64 gen(5);
    std::uniform_real_distribution<double> wide(-700.0, 0.5), narrow(-1.0, 0.0);
    for (int s = 0; s < 20000; ++s) xs.push_back(s % 2 ? wide(gen) : narrow(gen));
    double worst = 0;
    for (double x : xs) {
        if (x < -700) continue;
        const double e = fast::exp_neg(x);
        INFO("x = " << x);
        REQUIRE(std::isfinite(e));
        Ball ex, d;
        arb_exp(ex.get(), from_double(x).get(), 200);
        arb_sub(d.get(), from_double(e).get(), ex.get(), 200);
        arb_abs(d.get(), d.get());
        arb_div(d.get(), d.get(), ex.get(), 200);  // relative error
        REQUIRE(certainly_le(d.get(), fast::exp_rel));
        worst = std::max(worst, arf_get_d(arb_midref(d.get()), ARF_RND_NEAR));
    }
    WARN("exp_neg: largest relative error observed " << worst << " (bound " << fast::exp_rel << ")");
    REQUIRE(std::isnan(fast::exp_neg(-701)));
    REQUIRE(std::isnan(fast::exp_neg(0.6)));
    REQUIRE(std::isnan(fast::exp_neg(std::nan(""))));
}

namespace {

// A random exact rational with the given number of significant decimal digits
// in [-scale, scale] (mostly not dyadic: 1/10^k is not a double).
Rat decimal(std::mt19937_64& gen, double scale, int digits = 7) {
    std::uniform_int_distribution<long> dist(-9999999, 9999999);
    Rat q(dist(gen), 9999999ul);
    const double s = scale * (digits > 0 ? 1 : 1);
    return q * fast::exact(s);
}

json rat_matrix(std::mt19937_64& gen, std::size_t r, std::size_t c, double scale) {
    std::vector<json> d(r * c);
    for (auto& x : d) x = decimal(gen, scale).str();
    return dense(r, c, d);
}

}  // namespace

TEST_CASE("fast softmax rows: sum_j |A_ij - a_j| <= err against 256-bit Arb", "[fast]") {
    std::mt19937_64 gen(9);
    TempDir dir;
    struct Case {
        const char* name;
        double qscale, kscale;
        bool causal, bias;
        json scale;
    };
    const std::vector<Case> cases = {
        {"moderate", 1, 1, false, false, {{"rsqrt", 8}}},
        {"causal with bias", 2, 1, true, true, "1/3"},
        {"sharp (logit spread ~1e4)", 30, 30, false, false, "1/2"},
        {"huge spread (~1e12)", 1e6, 1e6, true, false, "1"},
        {"tiny logits (~1e-60)", 1e-30, 1e-30, false, true, "1"},
    };
    for (const auto& c : cases) {
        INFO(c.name);
        const std::size_t n = 12, N = 12, d = 4;
        json inst = {{"kind", "qk"}, {"q", rat_matrix(gen, n, d, c.qscale)}, {"k", rat_matrix(gen, N, d, c.kscale)},
                     {"scale", c.scale}, {"mask", c.causal ? "causal" : "none"}};
        if (c.bias) inst["key_bias"] = rat_matrix(gen, 1, N, 3);
        const Bundle b = load(dir, bundle_json(inst, Rat(1, 10), {}));
        const fast::SoftmaxRows rows(b.instance);
        REQUIRE(rows.ok());
        RowEncloser enc(b.instance, 256);
        std::vector<double> a(N);
        BallVec ex(N), ad(N);
        std::size_t decided = 0;
        for (std::size_t i = 0; i < n; ++i) {
            double err = 0;
            if (!rows.row(i, a.data(), err)) continue;  // declining is always allowed
            ++decided;
            enc.row(i, ex.data());
            for (std::size_t j = 0; j < N; ++j) arb_set_d(ad[j], a[j]);
            Ball dist;
            enclose_l1_distance(dist.get(), ex.data(), ad.data(), N, 256);
            INFO("row " << i << ": err " << err << ", Arb distance " << arb_get_str(dist.get(), 5, 0));
            REQUIRE(certainly_le(dist.get(), err));
            if (c.qscale < 100) REQUIRE(err < 1e-11);  // tight enough to decide real rows
        }
        if (c.qscale < 100) REQUIRE(decided == n);
    }
    // Logits instances, with -inf entries and values that are not doubles.
    for (int trial = 0; trial < 20; ++trial) {
        const std::size_t n = 6, N = 9;
        std::vector<json> s(n * N);
        for (std::size_t t = 0; t < s.size(); ++t) s[t] = t % 7 == 3 && t % N != 0 ? json("-inf") : json(decimal(gen, 50).str());
        const Bundle b = load(dir, bundle_json({{"kind", "logits"}, {"logits", dense(n, N, s)}}, Rat(1, 10), {}));
        const fast::SoftmaxRows rows(b.instance);
        REQUIRE(rows.ok());
        RowEncloser enc(b.instance, 256);
        std::vector<double> a(N);
        BallVec ex(N), ad(N);
        for (std::size_t i = 0; i < n; ++i) {
            double err = 0;
            REQUIRE(rows.row(i, a.data(), err));
            enc.row(i, ex.data());
            for (std::size_t j = 0; j < N; ++j) {
                arb_set_d(ad[j], a[j]);
                if (!b.instance.allowed(i, j)) REQUIRE(a[j] == 0.0);
            }
            Ball dist;
            enclose_l1_distance(dist.get(), ex.data(), ad.data(), N, 256);
            REQUIRE(certainly_le(dist.get(), err));
        }
    }
}

TEST_CASE("fast tier: out-of-range inputs make it decline, never decide", "[fast]") {
    TempDir dir;
    for (const char* big : {"1e80", "1e-80"}) {
        const json inst = {{"kind", "qk"}, {"q", dense(2, 1, {big, 1})}, {"k", dense(2, 1, {1, 2})}, {"scale", "1"}};
        const Bundle b = load(dir, bundle_json(inst, Rat(1, 10), {}));
        REQUIRE_FALSE(fast::SoftmaxRows(b.instance).ok());
    }
    double x = 0;
    REQUIRE_FALSE(fast::to_double(Rat(1, 3) * fast::exact(0x1p300), x));
    REQUIRE(fast::to_double(Rat(1, 3), x));
    REQUIRE((fast::exact(x) - Rat(1, 3)).abs() <= fast::exact(x) * fast::exact(fast::in_rel));
}

namespace {

json tanh_half_bundle(const Rat& eps, const json& inst) {
    // Row softmax of (0, 1) is (1, e)/(1 + e); B = (1/2, 1/2): row error tanh(1/2).
    json cert = {{"bound", "upper"}, {"kind", "factor"}, {"rank", 1}, {"u", dense(1, 1, {1})},
                 {"w", dense(2, 1, {"1/2", "1/2"})}};
    return bundle_json(inst, eps, {cert});
}

}  // namespace

TEST_CASE("fast tier at the boundary: decides at 1e-10, defers at 1e-17 and 1e-40, never wrong", "[fast]") {
    TempDir dir;
    auto [lo, hi] = tanh_half();
    const json logits = {{"kind", "logits"}, {"logits", dense(1, 2, {0, 1})}};
    const json qk = {{"kind", "qk"}, {"q", dense(1, 1, {1})}, {"k", dense(2, 1, {0, 2})}, {"scale", "1/2"}};
    for (const json& inst : {logits, qk}) {
        INFO(inst.dump());
        for (unsigned e : {10u, 17u, 40u}) {
            INFO("gap 1e-" << e);
            const Report above = run(dir, tanh_half_bundle(hi + pow10neg(e), inst));
            const Report below = run(dir, tanh_half_bundle(lo - pow10neg(e), inst));
            REQUIRE(above.certificates[0].verdict == Verdict::verified);
            REQUIRE(below.certificates[0].verdict == Verdict::refuted);
            const bool fast_expected = e == 10;
            REQUIRE((above.certificates[0].precision == "fast") == fast_expected);
            REQUIRE((below.certificates[0].precision == "fast") == fast_expected);
        }
    }
}

TEST_CASE("fast tier: the same verdicts with and without it on random heads", "[fast]") {
    std::mt19937_64 gen(21);
    TempDir dir;
    for (int trial = 0; trial < 12; ++trial) {
        const std::size_t n = 16, d = 3;
        const json inst = {{"kind", "qk"}, {"q", rat_matrix(gen, n, d, 2)}, {"k", rat_matrix(gen, n, d, 2)},
                           {"scale", "1/2"}, {"mask", trial % 2 ? "causal" : "none"}};
        // B = uniform rows (rank 1); eps near the true worst row error so that
        // some trials verify, some refute.
        std::vector<json> u(n, 1), w(n, Rat(1, static_cast<long>(n)).str());
        json cert = {{"bound", "upper"}, {"kind", "factor"}, {"rank", 1}, {"u", dense(n, 1, u)}, {"w", dense(n, 1, w)}};
        const Rat eps = Rat(static_cast<long>(3 + trial), 10);
        const Bundle b = load(dir, bundle_json(inst, eps, {cert}));
        CheckOptions with, without;
        without.fast_tier = false;
        const Report rf = verify(b, with), ra = verify(b, without);
        INFO("trial " << trial << ": " << rf.certificates[0].detail);
        REQUIRE(rf.certificates[0].verdict == ra.certificates[0].verdict);
        REQUIRE(rf.certificates[0].verdict != Verdict::undecided);
    }
}

TEST_CASE("fast tier: tail certificates decided in binary64 agree with the Arb ladder", "[fast]") {
    const char* root = std::getenv("RANKCERT_SOURCE");
    if (!root) {
        WARN("RANKCERT_SOURCE not set: skipping the committed tail certificates");
        return;
    }
    const std::filesystem::path c = std::filesystem::path(root) / "certificates";
    for (const char* f : {"constructions/sphere-d2-eps/sphere-d2-beta128-eps0.05.json",
                          "real/stories260K/short/short-L4-H4-t2-eps0.1.json"}) {
        INFO(f);
        const Bundle b = load_bundle(c / f, f);
        CheckOptions with, without;
        without.fast_tier = false;
        const Report rf = verify(b, with), ra = verify(b, without);
        for (std::size_t i = 0; i < rf.certificates.size(); ++i) {
            REQUIRE(rf.certificates[i].verdict == ra.certificates[i].verdict);
            if (rf.certificates[i].kind == CertKind::tail) {
                REQUIRE(rf.certificates[i].precision == "fast");
                REQUIRE(ra.certificates[i].precision != "fast");
                // Both Frobenius enclosures contain ||A_I R||_F^2: they overlap.
                const json& ef = rf.certificates[i].decisive["frobenius_sq"];
                const json& ea = ra.certificates[i].decisive["frobenius_sq"];
                const Rat flo = parse_rational_text(ef[0].get<std::string>(), {}), fhi = parse_rational_text(ef[1].get<std::string>(), {});
                const Rat alo = parse_rational_text(ea[0].get<std::string>(), {}), ahi = parse_rational_text(ea[1].get<std::string>(), {});
                REQUIRE(flo <= ahi);
                REQUIRE(alo <= fhi);
            }
        }
    }
}

TEST_CASE("fast tier: factor and row-interpolative row bounds contain the 256-bit Arb row error", "[fast]") {
    std::mt19937_64 gen(33);
    TempDir dir;
    for (int trial = 0; trial < 8; ++trial) {
        const std::size_t n = 20, d = 3, k = 4;
        const json inst = {{"kind", "qk"}, {"q", rat_matrix(gen, n, d, 2)}, {"k", rat_matrix(gen, n, d, 2)},
                           {"scale", {{"rsqrt", 3}}}, {"mask", trial % 2 ? "causal" : "none"}};
        const json u = rat_matrix(gen, n, k, 1), w = rat_matrix(gen, n, k, 0.1);
        const Bundle b = load(dir, bundle_json(inst, Rat(1, 10), {}));
        ArrayLoader L(dir.path, "t");
        const Matrix U = L.load(u, {"t", "u"}), W = L.load(w, {"t", "w"}), X = L.load(rat_matrix(gen, n, k, 1), {"t", "x"});
        const std::vector<std::size_t> rows = {0, 3, 7, 19};
        cert::CombinationRows factor(b.instance, U, k, &W, nullptr), interp(b.instance, X, k, nullptr, &rows);
        for (cert::CombinationRows* q : {&factor, &interp}) {
            REQUIRE(q->fast_prepare());
            q->prepare(256);
            for (std::size_t i = 0; i < n; ++i) {
                double lo = 0, hi = 0;
                REQUIRE(q->fast(i, &lo, &hi));
                Ball e;
                q->eval(i, e.get());
                INFO("trial " << trial << " row " << i << ": [" << lo << ", " << hi << "]");
                REQUIRE(decide_le(e.get(), fast::exact(hi)) == Verdict::verified);  // the exact value is <= hi
                REQUIRE(decide_ge(e.get(), fast::exact(lo)) == Verdict::verified);  // and >= lo
                REQUIRE(hi - lo < 1e-9);  // tight enough to decide real rows
            }
        }
    }
}

TEST_CASE("fast tier: zonal row bounds contain the 256-bit Arb row error", "[fast]") {
    std::mt19937_64 gen(41);
    TempDir dir;
    for (int trial = 0; trial < 8; ++trial) {
        // Random rational queries and keys (not on the sphere: the tier does
        // not care), key biases on odd trials, a temperature, and Chebyshev
        // coefficients of mixed size up to degree 5 + 4 trial.
        const std::size_t n = 15, N = 18, d = 3, p = 5 + 4 * static_cast<std::size_t>(trial);
        json inst = {{"kind", "qk"}, {"q", rat_matrix(gen, n, d, 0.6)}, {"k", rat_matrix(gen, N, d, 0.6)},
                     {"scale", trial % 3 ? json("5/2") : json{{"rsqrt", 3}}}, {"temperature", "3/2"}};
        if (trial % 2) {
            inst["key_bias"] = rat_matrix(gen, 1, N, 2);
        }
        json cs = json::array();
        for (std::size_t k = 0; k <= p; ++k) cs.push_back(decimal(gen, 1.0 / static_cast<double>(k + 1)).str());
        const std::string shift = trial % 4 == 3 ? "-7/3" : "2";
        Bundle b = load(dir, bundle_json(inst, Rat(1, 10), {}));
        ZonalCert z;
        for (const auto& c : cs) z.cheb.push_back(parse_rational(c, {"t", "c"}));
        z.shift = parse_rational(json(shift), {"t", "shift"});
        z.degree = p;
        cert::ZonalRows q(b.instance, z);
        REQUIRE(q.fast_prepare());
        q.prepare(256);
        for (std::size_t i = 0; i < n; ++i) {
            double lo = 0, hi = 0;
            REQUIRE(q.fast(i, &lo, &hi));
            Ball e;
            q.eval(i, e.get());
            INFO("trial " << trial << " row " << i << ": [" << lo << ", " << hi << "]");
            REQUIRE(decide_le(e.get(), fast::exact(hi)) == Verdict::verified);  // the exact value is <= hi
            REQUIRE(decide_ge(e.get(), fast::exact(lo)) == Verdict::verified);  // and >= lo
            REQUIRE(hi - lo < 1e-8 * std::max(1.0, hi));  // tight enough to decide real rows (margins ~1e-6)
        }
        // A shift far above every logit makes F~ / Z~ huge: the tier declines
        // (an underflowing G~ eb~ would be scaled past its 2^-1000 allowance).
        ZonalCert far = z;
        far.shift = Rat(200);
        cert::ZonalRows qf(b.instance, far);
        REQUIRE(qf.fast_prepare());
        double lo = 0, hi = 0;
        CHECK_FALSE(qf.fast(0, &lo, &hi));
    }
}
