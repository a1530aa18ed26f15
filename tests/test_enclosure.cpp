// Containment: every enclosure routine against exact rational arithmetic.
//
// Inputs are random exact rationals (2-200 bits).  The exact value (or an
// exact rational interval of width far below the ball's radius, for the
// transcendental exp and softmax) must lie inside the checker's ball, at
// every precision of the ladder.  A failure prints the inputs.
#include "helpers.hpp"

#include <catch2/catch.hpp>

using namespace rankcert;
using namespace rankcert::test;

namespace {
const slong precisions[] = {64, 128, 256, 512, 1024};

std::string show(const Rat& q) { return q.str(); }
}  // namespace

TEST_CASE("exact rationals enter balls by containment", "[enclosure]") {
    Rng rng(11);
    for (int it = 0; it < 200; ++it) {
        Rat q = rng.rational(2 + rng.below(199));
        for (slong p : precisions) {
            Ball b;
            ball_set(b.get(), q, p);
            INFO("q = " << show(q) << ", prec = " << p);
            REQUIRE(arb_contains_fmpq(b.get(), q.get()));
        }
    }
}

TEST_CASE("dot products and logits contain the exact rational value", "[enclosure]") {
    Rng rng(12);
    for (int it = 0; it < 40; ++it) {
        const std::size_t n = 1 + rng.below(4), N = 1 + rng.below(6), d = 1 + rng.below(5);
        Instance I;
        I.kind = InstanceKind::qk;
        I.n = n;
        I.N = N;
        I.q.rows = n; I.q.cols = d; I.k.rows = N; I.k.cols = d;
        for (std::size_t s = 0; s < n * d; ++s) I.q.v.push_back(rng.rational(2 + rng.below(199)));
        for (std::size_t s = 0; s < N * d; ++s) I.k.v.push_back(rng.rational(2 + rng.below(199)));
        I.scale.q = rng.rational(2 + rng.below(60)).abs() + Rat(1, 1000);
        I.temperature = rng.rational(2 + rng.below(30)).abs() + Rat(1, 7);
        for (std::size_t j = 0; j < N; ++j) I.key_bias.push_back(rng.rational(2 + rng.below(100)));
        for (slong p : precisions) {
            RowEncloser enc(I, p);
            BallVec row(N);
            std::vector<std::uint8_t> allowed(N);
            for (std::size_t i = 0; i < n; ++i) {
                enc.logits(i, row.data(), allowed.data());
                for (std::size_t j = 0; j < N; ++j) {
                    Rat dot;
                    for (std::size_t t = 0; t < d; ++t) fmpq_addmul(dot.get(), I.q(i, t).get(), I.k(j, t).get());
                    Rat s = I.temperature * I.scale.q * dot + I.key_bias[j];
                    INFO("prec " << p << " row " << i << " col " << j << " exact logit " << show(s));
                    REQUIRE(allowed[j]);
                    REQUIRE(arb_contains_fmpq(row[j], s.get()));
                }
            }
        }
    }
}

TEST_CASE("rsqrt scales enclose 1/sqrt(r)", "[enclosure]") {
    Rng rng(13);
    for (int it = 0; it < 50; ++it) {
        Rat r = rng.rational(2 + rng.below(100)).abs() + Rat(1, 3);
        for (slong p : precisions) {
            Ball b;
            arb_set_fmpq(b.get(), r.get(), p);
            arb_rsqrt(b.get(), b.get(), p);
            Endpoints e = endpoints(b.get());
            REQUIRE(e.bounded);
            INFO("r = " << show(r) << ", prec " << p);
            // lo <= 1/sqrt(r) <= hi  <=>  lo^2 r <= 1 <= hi^2 r  (lo >= 0)
            REQUIRE(e.lo.sign() >= 0);
            REQUIRE(e.lo * e.lo * r <= Rat(1));
            REQUIRE(e.hi * e.hi * r >= Rat(1));
        }
    }
}

TEST_CASE("exp contains an exact Taylor enclosure", "[enclosure]") {
    Rng rng(14);
    for (int it = 0; it < 100; ++it) {
        Rat x = rng.rational_in(2 + rng.below(199), 20);
        auto [lo, hi] = exp_enclosure(x, 1200);
        for (slong p : precisions) {
            Ball b;
            arb_set_fmpq(b.get(), x.get(), p);
            arb_exp(b.get(), b.get(), p);
            INFO("x = " << show(x) << ", prec " << p);
            REQUIRE(ball_contains(b.get(), lo, hi));
        }
    }
}

// Exact rational enclosure of a softmax row from exp enclosures: the entry
// e_j / (e_j + sum_{l != j} e_l) is increasing in e_j and decreasing in e_l.
static std::vector<std::pair<Rat, Rat>> softmax_reference(const std::vector<Rat>& s, const std::vector<bool>& allowed) {
    std::vector<std::pair<Rat, Rat>> e(s.size()), out(s.size());
    for (std::size_t j = 0; j < s.size(); ++j)
        if (allowed[j]) e[j] = exp_enclosure(s[j], 1200);
    for (std::size_t j = 0; j < s.size(); ++j) {
        if (!allowed[j]) continue;
        Rat rest_lo, rest_hi;
        for (std::size_t l = 0; l < s.size(); ++l)
            if (l != j && allowed[l]) {
                rest_lo = rest_lo + e[l].first;
                rest_hi = rest_hi + e[l].second;
            }
        out[j] = {e[j].first / (e[j].first + rest_hi), e[j].second / (e[j].second + rest_lo)};
    }
    return out;
}

TEST_CASE("row softmax contains the exact softmax; masked entries are exact zeros", "[enclosure]") {
    Rng rng(15);
    for (int it = 0; it < 30; ++it) {
        const std::size_t N = 1 + rng.below(7);
        std::vector<Rat> s(N);
        std::vector<bool> allowed(N);
        std::vector<std::uint8_t> al(N);
        bool any = false;
        for (std::size_t j = 0; j < N; ++j) {
            s[j] = rng.rational_in(2 + rng.below(199), 12);
            allowed[j] = rng.below(4) != 0;
            any = any || allowed[j];
        }
        if (!any) allowed[0] = true;
        for (std::size_t j = 0; j < N; ++j) al[j] = allowed[j];
        auto ref = softmax_reference(s, allowed);
        for (slong p : precisions) {
            BallVec row(N);
            for (std::size_t j = 0; j < N; ++j) arb_set_fmpq(row[j], s[j].get(), p);
            enclose_softmax(row.data(), al.data(), N, p);
            for (std::size_t j = 0; j < N; ++j) {
                INFO("prec " << p << " entry " << j << " logit " << show(s[j]));
                if (allowed[j]) REQUIRE(ball_contains(row[j], ref[j].first, ref[j].second));
                else REQUIRE(arb_is_zero(row[j]));
            }
        }
    }
}

TEST_CASE("qk rows of A contain the exact softmax of exact logits", "[enclosure]") {
    Rng rng(16);
    for (int it = 0; it < 10; ++it) {
        const std::size_t n = 1 + rng.below(3), N = 2 + rng.below(5), d = 1 + rng.below(3);
        Instance I;
        I.kind = InstanceKind::qk;
        I.n = n; I.N = N;
        I.q.rows = n; I.q.cols = d; I.k.rows = N; I.k.cols = d;
        for (std::size_t s = 0; s < n * d; ++s) I.q.v.push_back(rng.rational_in(2 + rng.below(60), 3));
        for (std::size_t s = 0; s < N * d; ++s) I.k.v.push_back(rng.rational_in(2 + rng.below(60), 3));
        I.scale.q = Rat(1, 2);
        for (slong p : precisions) {
            RowEncloser enc(I, p);
            BallVec row(N);
            for (std::size_t i = 0; i < n; ++i) {
                enc.row(i, row.data());
                std::vector<Rat> s(N);
                for (std::size_t j = 0; j < N; ++j) {
                    Rat dot;
                    for (std::size_t t = 0; t < d; ++t) fmpq_addmul(dot.get(), I.q(i, t).get(), I.k(j, t).get());
                    s[j] = I.scale.q * dot;
                }
                auto ref = softmax_reference(s, std::vector<bool>(N, true));
                for (std::size_t j = 0; j < N; ++j) {
                    INFO("prec " << p << " row " << i << " col " << j);
                    REQUIRE(ball_contains(row[j], ref[j].first, ref[j].second));
                }
            }
        }
    }
}

TEST_CASE("row l1 distances contain the exact rational distance", "[enclosure]") {
    Rng rng(17);
    for (int it = 0; it < 100; ++it) {
        const std::size_t N = 1 + rng.below(9);
        std::vector<Rat> a(N), b(N);
        Rat exact;
        for (std::size_t j = 0; j < N; ++j) {
            a[j] = rng.rational(2 + rng.below(199));
            b[j] = rng.rational(2 + rng.below(199));
            exact = exact + (a[j] - b[j]).abs();
        }
        for (slong p : precisions) {
            BallVec av(N), bv(N);
            for (std::size_t j = 0; j < N; ++j) {
                arb_set_fmpq(av[j], a[j].get(), p);
                arb_set_fmpq(bv[j], b[j].get(), p);
            }
            Ball d;
            enclose_l1_distance(d.get(), av.data(), bv.data(), N, p);
            INFO("prec " << p << " exact " << show(exact));
            REQUIRE(arb_contains_fmpq(d.get(), exact.get()));
        }
    }
}

TEST_CASE("decisions compare ball endpoints with rationals exactly", "[enclosure]") {
    // A ball around 1/3 at 64 bits: neither <= 1/3 nor > 1/3 can be certain.
    Ball b;
    arb_set_fmpq(b.get(), Rat(1, 3).get(), 64);
    REQUIRE(decide_le(b.get(), Rat(1, 3)) == Verdict::undecided);
    // An exact dyadic ball equal to the threshold: <= holds, < does not.
    Ball h;
    arb_set_ui(h.get(), 1);
    arb_mul_2exp_si(h.get(), h.get(), -1);
    REQUIRE(decide_le(h.get(), Rat(1, 2)) == Verdict::verified);
    REQUIRE(decide_lt(h.get(), Rat(1, 2)) == Verdict::refuted);
    REQUIRE(decide_gt(h.get(), Rat(1, 2)) == Verdict::refuted);
    // 10^-40 on either side of a dyadic.
    Rat eps = pow10neg(40);
    REQUIRE(decide_le(h.get(), Rat(1, 2) - eps) == Verdict::refuted);
    REQUIRE(decide_le(h.get(), Rat(1, 2) + eps) == Verdict::verified);
    REQUIRE(decide_lt(h.get(), Rat(1, 2) + eps) == Verdict::verified);
    // A non-finite ball is never decided.
    Ball inf;
    arb_pos_inf(inf.get());
    REQUIRE(decide_le(inf.get(), Rat(1)) == Verdict::undecided);
    REQUIRE(decide_gt(inf.get(), Rat(1)) == Verdict::undecided);
}
