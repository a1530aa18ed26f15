// Profile certificates: known answers (a rank-one interaction with kappa = 1,
// the two-point oscillation where tau = 2 tanh(omega/4)), gauge invariance,
// and tampered claims that must be refused.
#include "helpers.hpp"
#include "rankcert/profile.hpp"

#include <catch2/catch.hpp>

using namespace rankcert;
using namespace rankcert::test;

namespace {

json vec(const std::vector<json>& v) { return {{"shape", {v.size()}}, {"data", v}}; }

// Q = (1, 0, -1)^T, K = (2, 0, -2)^T, scale 1/2: C = x y^T with x = y = (1, 0, -1).
json rank_one_instance() {
    return {{"kind", "qk"}, {"q", dense(3, 1, {1, 0, -1})}, {"k", dense(3, 1, {2, 0, -2})}, {"scale", "1/2"}};
}

json rank_one_profile() {
    return {{"bound", "profile"}, {"kind", "profile"}, {"r", 1},
            {"x", dense(3, 1, {1, 0, -1})}, {"y", dense(3, 1, {1, 0, -1})},
            {"gauge", dense(1, 1, {1})},
            {"lambda", vec({"1/2", 0, "1/2"})}, {"mu", vec({"1/2", 0, "1/2"})},
            {"zu", dense(3, 1, {1, 0, -1})}, {"zv", dense(3, 1, {1, 0, -1})},
            {"z_norm_sq", "4.000001"},
            {"claims", {{"q", {0, "0.001"}}, {"tau", {0, "0.001"}}, {"kappa", {"0.999", 1}}, {"visible_dim", 1}}}};
}

Verdict profile_verdict(const TempDir& dir, const json& inst, const json& cert, const Rat& eps = Rat(1, 2)) {
    Report r = run(dir, bundle_json(inst, eps, {cert}));
    return r.certificates.at(0).verdict;
}

}  // namespace

TEST_CASE("profile: a rank-one interaction has kappa = 1, tau = 0, visible dimension 1", "[profile][kind:profile][known-answer]") {
    TempDir dir;
    Report r = run(dir, bundle_json(rank_one_instance(), Rat(1, 2), {rank_one_profile()}));
    INFO(r.certificates[0].detail);
    REQUIRE(r.certificates[0].verdict == Verdict::verified);
    REQUIRE(r.verdict == Verdict::verified);
    REQUIRE(r.lower == 0);  // a profile is not a rank bound
    // P = (1 + kappa / eps^2)^{1/2} in [sqrt(1 + 0.999 * 4), sqrt(1 + 4)] at eps 1/2.
    const json& P = r.certificates[0].decisive["profile_P"];
    REQUIRE(parse_rational_text(P[0].get<std::string>(), {}) * parse_rational_text(P[0].get<std::string>(), {}) <= Rat(4996, 1000));
    REQUIRE(parse_rational_text(P[1].get<std::string>(), {}) * parse_rational_text(P[1].get<std::string>(), {}) >= Rat(5));
}

TEST_CASE("profile: tampered claims are refused", "[profile][kind:profile][tampering]") {
    TempDir dir;
    const json inst = rank_one_instance();
    auto with = [&](const std::function<void(json&)>& f) {
        json c = rank_one_profile();
        f(c);
        return profile_verdict(dir, inst, c);
    };
    REQUIRE(with([](json& c) { c["claims"]["kappa"] = {"0.9", "0.99"}; }) == Verdict::refuted);   // gauge gives 1
    REQUIRE(with([](json& c) { c["claims"]["kappa"] = {"1.01", "2"}; }) == Verdict::refuted);     // dual gives < 1.01
    REQUIRE(with([](json& c) { c["claims"]["visible_dim"] = 2; }) == Verdict::refuted);
    REQUIRE(with([](json& c) { c["claims"]["q"] = {"0.1", "1"}; }) == Verdict::refuted);
    REQUIRE(with([](json& c) { c["lambda"] = vec({"1/2", 0, "1/3"}); }) == Verdict::refuted);    // not a probability vector
    REQUIRE(with([](json& c) { c["z_norm_sq"] = "3"; }) == Verdict::refuted);                    // ||Z||^2 = 4 > 3
    REQUIRE(with([](json& c) { c["gauge"] = dense(1, 1, {0}); }) == Verdict::refuted);           // singular
    REQUIRE(with([](json& c) { c["x"] = dense(3, 1, {1, 0, "-0.5"}); }) == Verdict::refuted);    // T != C: q > 0.001
}

TEST_CASE("profile: tau = 2 tanh(omega / 4) on the two-point oscillation", "[profile]") {
    TempDir dir;
    // S = [[1, -1], [-1, 1]] is already double-centred: C = S, each row has
    // oscillation 2; with T = 0, q = 2 and tau = 2 tanh(1/2).
    const json inst = {{"kind", "logits"}, {"logits", dense(2, 2, {1, -1, -1, 1})}};
    auto [lo, hi] = tanh_half();
    const Rat g = pow10neg(30);
    json c = {{"bound", "profile"}, {"kind", "profile"}, {"r", 1},
              {"x", dense(2, 1, {0, 0})}, {"y", dense(2, 1, {0, 0})}, {"gauge", dense(1, 1, {1})},
              {"lambda", vec({"1/2", "1/2"})}, {"mu", vec({"1/2", "1/2"})},
              {"zu", dense(2, 1, {1, 0})}, {"zv", dense(2, 1, {1, 0})}, {"z_norm_sq", 2},
              {"claims", {{"q", {2, 2}}, {"tau", {(Rat(2) * lo - g).str(), (Rat(2) * hi + g).str()}}, {"kappa", {0, 0}},
                          {"visible_dim", 1}}}};
    REQUIRE(profile_verdict(dir, inst, c) == Verdict::verified);
    // The exact induced error: A~ is uniform, A_0 = softmax(1, -1), so
    // tau* = (e^2 - 1)/(e^2 + 1) = tanh(1) < tau.
    auto [e2lo, e2hi] = exp_enclosure(Rat(2), 400);
    const Rat t1lo = (e2lo - Rat(1)) / (e2lo + Rat(1)), t1hi = (e2hi - Rat(1)) / (e2hi + Rat(1));
    c["claims"]["tau_star"] = {(t1lo - g).str(), (t1hi + g).str()};
    REQUIRE(profile_verdict(dir, inst, c) == Verdict::verified);
    c["claims"]["tau_star"] = {(t1hi + g).str(), "1"};
    REQUIRE(profile_verdict(dir, inst, c) == Verdict::refuted);
    c["claims"].erase("tau_star");
    c["claims"]["tau"] = {(Rat(2) * hi + g).str(), "1"};
    REQUIRE(profile_verdict(dir, inst, c) == Verdict::refuted);
}

TEST_CASE("profile: invertible gauges of Q, K leave C, the visible dimension and kappa unchanged", "[profile]") {
    TempDir dir;
    Rng rng(21);
    // Q, K of dimension d = 3 with a rank-2 interaction (third columns zero
    // for K); Q' = Q G, K' = K G^{-T} for a rational G.
    std::vector<json> q, k;
    std::vector<Rat> Q, K;
    for (int i = 0; i < 5 * 3; ++i) Q.push_back(rng.rational_in(8, 2));
    for (int j = 0; j < 4; ++j) {
        K.push_back(rng.rational_in(8, 2));
        K.push_back(rng.rational_in(8, 2));
        K.push_back(Rat(0));
    }
    for (auto& x : Q) q.push_back(x.str());
    for (auto& x : K) k.push_back(x.str());
    const json inst = {{"kind", "qk"}, {"q", dense(5, 3, q)}, {"k", dense(4, 3, k)}, {"scale", "1"}};
    // G = [[2, 1, 0], [0, 1, 0], [1, 0, 1]], G^{-T} computed exactly.
    const Rat G[3][3] = {{Rat(2), Rat(1), Rat(0)}, {Rat(0), Rat(1), Rat(0)}, {Rat(1), Rat(0), Rat(1)}};
    // inverse of G: [[1/2, -1/2, 0], [0, 1, 0], [-1/2, 1/2, 1]]; G^{-T} is its transpose.
    const Rat Gi[3][3] = {{Rat(1, 2), Rat(-1, 2), Rat(0)}, {Rat(0), Rat(1), Rat(0)}, {Rat(-1, 2), Rat(1, 2), Rat(1)}};
    std::vector<json> q2, k2;
    for (int i = 0; i < 5; ++i)
        for (int c = 0; c < 3; ++c) {
            Rat s;
            for (int t = 0; t < 3; ++t) s = s + Q[static_cast<std::size_t>(i * 3 + t)] * G[t][c];
            q2.push_back(s.str());
        }
    for (int j = 0; j < 4; ++j)
        for (int c = 0; c < 3; ++c) {
            Rat s;
            for (int t = 0; t < 3; ++t) s = s + K[static_cast<std::size_t>(j * 3 + t)] * Gi[c][t];  // (G^{-T})_{t c} = Gi[c][t]
            k2.push_back(s.str());
        }
    const json inst2 = {{"kind", "qk"}, {"q", dense(5, 3, q2)}, {"k", dense(4, 3, k2)}, {"scale", "1"}};
    Bundle a = load(dir, bundle_json(inst, Rat(1, 2), {}), "a.json"), b = load(dir, bundle_json(inst2, Rat(1, 2), {}), "b.json");
    REQUIRE(exact_visible_dimension(a.instance) == 2);
    REQUIRE(exact_visible_dimension(b.instance) == 2);
    // C is the same: a profile certificate with T = C (X = P_n Q restricted, exact) verifies for both.
    // X = centred Q (5 x 3), Y = centred K (4 x 3): T = X Y^T = C exactly, q = 0.
    auto centred_json = [](const std::vector<Rat>& M, int rows) {
        std::vector<json> out;
        for (int c = 0; c < 3; ++c) {
            Rat mean;
            for (int i = 0; i < rows; ++i) mean = mean + M[static_cast<std::size_t>(i * 3 + c)];
            mean = mean / Rat(rows);
            for (int i = 0; i < rows; ++i) out.push_back(json());
            for (int i = 0; i < rows; ++i) out[static_cast<std::size_t>(c * rows + i)] = (M[static_cast<std::size_t>(i * 3 + c)] - mean).str();
        }
        std::vector<json> rowmajor(static_cast<std::size_t>(rows * 3));
        for (int i = 0; i < rows; ++i)
            for (int c = 0; c < 3; ++c) rowmajor[static_cast<std::size_t>(i * 3 + c)] = out[static_cast<std::size_t>(c * rows + i)];
        return dense(static_cast<std::size_t>(rows), 3, rowmajor);
    };
    json cert = {{"bound", "profile"}, {"kind", "profile"}, {"r", 3},
                 {"x", centred_json(Q, 5)}, {"y", centred_json(K, 4)}, {"gauge", identity(3)},
                 {"lambda", vec({"1/5", "1/5", "1/5", "1/5", "1/5"})}, {"mu", vec({"1/4", "1/4", "1/4", "1/4"})},
                 {"zu", dense(5, 1, {1, 0, 0, 0, 0})}, {"zv", dense(4, 1, {1, 0, 0, 0})}, {"z_norm_sq", 2},
                 // q = 0 exactly, but its enclosure straddles 0: a claim [0, h] stays undecided, so claim [-h, h].
                 {"claims", {{"q", {"-1e-20", "1e-20"}}, {"tau", {"-1e-20", "1e-20"}}, {"kappa", {"-1000", "1000"}}, {"visible_dim", 2}}}};
    REQUIRE(profile_verdict(dir, inst, cert) == Verdict::verified);
    REQUIRE(profile_verdict(dir, inst2, cert) == Verdict::verified);  // same C for the gauged Q, K
}

TEST_CASE("sandwich: a factor for the Gibbs matrix of T certifies an upper bound for A", "[profile][kind:sandwich][known-answer][tampering]") {
    TempDir dir;
    const json inst = rank_one_instance();
    // T = C exactly, so A~ = A; a factor B ~ A (U = I, W = A~^T to 2^-200).
    Bundle b0 = load(dir, bundle_json(inst, Rat(1), {}), "b0.json");
    RowEncloser enc(b0.instance, 256);
    BallVec row(3);
    std::vector<json> w(9);
    for (std::size_t i = 0; i < 3; ++i) {
        enc.row(i, row.data());
        for (std::size_t j = 0; j < 3; ++j) {
            Rat q;
            arf_get_fmpq(q.get(), arb_midref(row[j]));
            w[j * 3 + i] = q.str();
        }
    }
    json cert = {{"bound", "upper"}, {"kind", "sandwich"}, {"rank", 3}, {"r", 1},
                 {"x", dense(3, 1, {1, 0, -1})}, {"y", dense(3, 1, {1, 0, -1})}, {"tau_star", "1e-9"},
                 {"u", identity(3)}, {"w", dense(3, 3, w)}};
    Report r = run(dir, bundle_json(inst, pow10neg(6), {cert}, {{"upper", 3}}));
    INFO(r.certificates[0].detail);
    REQUIRE(r.certificates[0].verdict == Verdict::verified);
    REQUIRE(r.upper == 3);
    SECTION("tau* bound above eps") {
        cert["tau_star"] = "0.1";
        REQUIRE(profile_verdict(dir, inst, cert, pow10neg(6)) == Verdict::refuted);
    }
    SECTION("a factor entry changed") {
        cert["w"]["data"][0] = "0.5";
        REQUIRE(profile_verdict(dir, inst, cert, pow10neg(6)) == Verdict::refuted);
    }
    SECTION("T far from C: tau* exceeds the stated bound") {
        cert["x"] = dense(3, 1, {"1/2", 0, "-1/2"});
        REQUIRE(profile_verdict(dir, inst, cert, pow10neg(6)) == Verdict::refuted);
    }
}

TEST_CASE("profile: q and the dual bound match exact rational arithmetic", "[profile]") {
    // Random exact logits (no -inf) and a random rational T: C = P_n S P_N and
    // q(C - T) are rational, and with lambda, mu and z_norm_sq squares of
    // rationals the dual bound <Z, D^1/2 T D^1/2> / |Z| is rational too.
    Rng rng(31);
    for (int it = 0; it < 6; ++it) {
        TempDir dir;
        const std::size_t n = 3, N = 4;
        std::vector<Rat> S(n * N), x(n), y(N);
        for (auto& v : S) v = rng.rational_in(10, 3);
        for (auto& v : x) v = rng.rational_in(10, 2);
        for (auto& v : y) v = rng.rational_in(10, 2);
        // Exact C and q.
        std::vector<Rat> rowm(n), colm(N);
        Rat all;
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < N; ++j) {
                rowm[i] = rowm[i] + S[i * N + j];
                colm[j] = colm[j] + S[i * N + j];
                all = all + S[i * N + j];
            }
        Rat q;
        for (std::size_t i = 0; i < n; ++i) {
            Rat mx, mn;
            for (std::size_t j = 0; j < N; ++j) {
                const Rat c = S[i * N + j] - rowm[i] / Rat(static_cast<long>(N)) - colm[j] / Rat(static_cast<long>(n)) +
                              all / Rat(static_cast<long>(n * N));
                const Rat v = c - x[i] * y[j];
                if (j == 0 || v > mx) mx = v;
                if (j == 0 || v < mn) mn = v;
            }
            if (i == 0 || mx - mn > q) q = mx - mn;
        }
        // lambda = (1/4, 9/16, 3/16)... use squares: (1/4, 1/4, 1/2) has sqrt(1/2) irrational, so
        // lambda = (9/25, 16/25, 0), mu = (1/4, 1/4, 1/4, 1/4); z = x-row signs e_0 e_0^T: Z = e0 e0^T, |Z| = 1.
        // Dual = sqrt(9/25) x_0 y_0 sqrt(1/4) = (3/5)(1/2) x_0 y_0.
        const Rat dual = Rat(3, 10) * x[0] * y[0];
        std::vector<json> sd, xd, yd;
        for (auto& v : S) sd.push_back(v.str());
        for (auto& v : x) xd.push_back(v.str());
        for (auto& v : y) yd.push_back(v.str());
        const json inst = {{"kind", "logits"}, {"logits", dense(n, N, sd)}};
        const Rat g = pow10neg(30);
        json c = {{"bound", "profile"}, {"kind", "profile"}, {"r", 1},
                  {"x", dense(n, 1, xd)}, {"y", dense(N, 1, yd)}, {"gauge", dense(1, 1, {1})},
                  {"lambda", vec({"9/25", "16/25", 0})}, {"mu", vec({"1/4", "1/4", "1/4", "1/4"})},
                  {"zu", dense(n, 1, {1, 0, 0})}, {"zv", dense(N, 1, {1, 0, 0, 0})}, {"z_norm_sq", "1.000000000000000000000000000000000000001"},
                  {"claims", {{"q", {(q - g).str(), (q + g).str()}}, {"tau", {-1, 2}}, {"kappa", {-100, 100}}}}};
        INFO("iteration " << it << ", exact q " << q.str() << ", dual " << dual.str());
        REQUIRE(profile_verdict(dir, inst, c) == Verdict::verified);
        json c2 = c;
        c2["claims"]["q"] = {(q + g).str(), (q + Rat(1)).str()};
        REQUIRE(profile_verdict(dir, inst, c2) == Verdict::refuted);
        // The dual reaches kappa_lo just below dual / sqrt(z_norm_sq) and not just above dual.
        if (dual.sign() > 0) {
            json c3 = c;
            c3["claims"]["kappa"] = {(dual - pow10neg(20)).str(), 100};
            REQUIRE(profile_verdict(dir, inst, c3) == Verdict::verified);
            c3["claims"]["kappa"] = {(dual + g).str(), 100};
            REQUIRE(profile_verdict(dir, inst, c3) == Verdict::refuted);
        }
    }
}
