// rankcert construct: the constructions are exact (points on the sphere have
// norm exactly 1, ball weights are exactly -beta |y|^2 / 2), and a sweep
// written by construct verifies, while a tampered one is refused.
#include "helpers.hpp"
#include "rankcert/producer/construct.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <set>

using namespace rankcert;
using namespace rankcert::test;
using namespace rankcert::producer;

TEST_CASE("sphere points are exactly on the unit sphere", "[construct]") {
    for (int d : {2, 3, 4}) {
        Construction c = sphere(d, 50, "8");
        const json& q = c.instance["q"];
        REQUIRE(q["shape"][0] == 50);
        REQUIRE(q["shape"][1] == d);
        for (int i = 0; i < 50; ++i) {
            Rat s;
            for (int t = 0; t < d; ++t) {
                Rat x = parse_rational(q["data"][static_cast<std::size_t>(i * d + t)], {});
                s = s + x * x;
            }
            INFO("d = " << d << ", point " << i);
            REQUIRE(s == Rat(1));
        }
        REQUIRE(c.instance["k"] == q);
        REQUIRE(c.theory == Approx((d - 1) / 2.0));
    }
}

TEST_CASE("ball weights are exactly -beta |y|^2 / 2", "[construct]") {
    Construction c = ball(2, "1/8", "3/2");
    const json& k = c.instance["k"];
    const std::size_t N = k["shape"][0];
    REQUIRE(N == 121);  // 11 x 11 grid: |k| h <= 0.9/sqrt(2) for |k| <= 5
    for (std::size_t j = 0; j < N; ++j) {
        Rat y0 = parse_rational(k["data"][2 * j], {}), y1 = parse_rational(k["data"][2 * j + 1], {});
        Rat b = parse_rational(c.instance["key_bias"]["data"][j], {});
        REQUIRE(b == -(Rat(3, 2) * (y0 * y0 + y1 * y1)) / Rat(2));
    }
    // The unweighted variant repeats keys instead.
    Construction u = ball(1, "1/8", "2", 10);
    REQUIRE(!u.instance.contains("key_bias"));
    REQUIRE(u.instance["k"]["shape"][0].get<std::size_t>() > u.instance["q"]["shape"][0].get<std::size_t>());
}

TEST_CASE("a construct sweep verifies; a tampered witness is refused", "[construct]") {
    TempDir dir;
    const char* exe = std::getenv("RANKCERT_EXE");
    REQUIRE(exe != nullptr);
    const std::string out = (dir.path / "s").string();
    const std::string cmd = std::string(exe) + " construct sphere --d 2 --n 40 --betas 2,4,8 --eps 0.2 --out " + out +
                            " -q > /dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    const std::string sweep = out + "/sphere-d2-eps0.2-beta-sweep.json";
    const std::string ver = std::string(exe) + " verify --quiet " + sweep + " > /dev/null";
    REQUIRE(std::system(ver.c_str()) == 0);
    std::ifstream in(sweep);
    json s = json::parse(in);
    in.close();
    s["fit"]["slope_U"] = {"5", "6"};
    std::ofstream(sweep) << s.dump();
    REQUIRE(WEXITSTATUS(std::system(ver.c_str())) == 1);
}

TEST_CASE("the Kronecker ball is the dense ball up to point order, and its bundle verifies", "[construct]") {
    // Logits of the dense r = 2 ball, S_ij = beta <x_i, y_j> - beta |y_j|^2 / 2,
    // equal the sums of the one-axis logits (exactly, as rationals) when points
    // are matched by their coordinates: so the Kronecker power is the same
    // matrix, rows and columns permuted alike.
    TempDir dir;
    const Rat beta(3, 2);
    Construction c = ball(2, "1/8", "3/2");
    const EpsValue ev = parse_eps_list("0.1").at(0);
    const KronPoint kp = kron_ball(2, "1/8", "3/2", ev, dir.path.string(), "kb", json::object());
    REQUIRE(kp.verdict == Verdict::verified);
    REQUIRE(kp.axis_points == 11);
    REQUIRE(kp.lower >= 1);
    REQUIRE(kp.lower <= kp.upper);
    const json doc = read_document(kp.bundle_path, kp.bundle_path);
    const json& f = doc["instance"]["factors"];
    REQUIRE(f.size() == 2);
    REQUIRE(f[0] == f[1]);
    std::vector<Rat> ax, bias1;
    for (std::size_t t = 0; t < 11; ++t) {
        ax.push_back(parse_rational(f[0]["q"]["data"][t], {}));
        bias1.push_back(parse_rational(f[0]["key_bias"]["data"][t], {}));
        REQUIRE(parse_rational(f[0]["k"]["data"][t], {}) == ax[t]);
    }
    auto axis_index = [&](const Rat& v) {
        for (std::size_t t = 0; t < ax.size(); ++t)
            if (ax[t] == v) return t;
        FAIL("coordinate not on the axis grid");
        return std::size_t{0};
    };
    const json& q = c.instance["q"];
    const std::size_t n = q["shape"][0];
    REQUIRE(n == 121);
    for (std::size_t i = 0; i < n; i += 7)
        for (std::size_t j = 0; j < n; ++j) {
            const Rat x0 = parse_rational(q["data"][2 * i], {}), x1 = parse_rational(q["data"][2 * i + 1], {});
            const Rat y0 = parse_rational(q["data"][2 * j], {}), y1 = parse_rational(q["data"][2 * j + 1], {});
            const Rat dense_logit = beta * (x0 * y0 + x1 * y1) + parse_rational(c.instance["key_bias"]["data"][j], {});
            const Rat kron_logit = beta * x0 * y0 + bias1[axis_index(y0)] + beta * x1 * y1 + bias1[axis_index(y1)];
            REQUIRE(dense_logit == kron_logit);
        }
    // The written bundle verifies from its file, and its claim is the bracket.
    Bundle b = load_bundle(kp.bundle_path, kp.bundle_path);
    Report r = verify(b, CheckOptions{});
    REQUIRE(r.verdict == Verdict::verified);
    REQUIRE(r.lower == kp.lower);
    REQUIRE(r.upper == kp.upper);
}

TEST_CASE("inverse cells R = P M^-1 certify rows where 0/1 cells on the same centres fail (r = 2 ball); tampered, they are refuted", "[construct]") {
    // On a square lattice of cells the diagonal neighbours of a centre carry
    // mass of its own sign, so ||M^{-1}|| is far below what diagonal
    // dominance allows: the inverse form certifies more rows than any 0/1
    // cell partition the same search finds (2 (1 - own) + eps < 1).
    TempDir dir;
    Construction c = ball(2, "1/16", "32");  // 21 x 21 grid, row width about 3 grid steps
    Bundle parsed = parse_instance(c.instance, dir.path.string(), "b");
    const Mat A = approximate_attention(parsed.instance);
    const double eps = 0.1;
    auto cp = cell_partition(A, c.queries, c.keys, eps);
    REQUIRE(cp.has_value());
    CHECK(cp->method == "cell-partition-inverse");
    // Every 0/1 candidate of the same search: the own-mass condition must
    // fail at this count (else the search would have returned the 0/1 form).
    const std::size_t m = cp->rows.size();
    REQUIRE(m >= 20);
    const Rat e(1, 10);
    json cert = neumann_json(*cp, dir.path.string(), "cells");
    Report r = run(dir, bundle_json(c.instance, e, {cert}));
    REQUIRE(r.verdict == Verdict::verified);
    REQUIRE(r.lower == m);
    // Tampered: R's first two columns swapped (A_I R is then a permutation
    // matrix away from I: delta = 2), and R scaled by 3 (delta = 2).
    auto cp2 = *cp;
    for (auto& en : cp2.r) en.t = en.t == 0 ? 1 : en.t == 1 ? 0 : en.t;
    Report r2 = run(dir, bundle_json(c.instance, e, {neumann_json(cp2, dir.path.string(), "swapped")}));
    REQUIRE(r2.verdict == Verdict::refuted);
    auto cp3 = *cp;
    for (auto& en : cp3.r) en.v *= 3;
    Report r3 = run(dir, bundle_json(c.instance, e, {neumann_json(cp3, dir.path.string(), "scaled")}));
    REQUIRE(r3.verdict == Verdict::refuted);
}

TEST_CASE("neumann_admm: an identity certifies every row, a rank-one matrix never two", "[construct]") {
    const Deadline dl = Deadline{}.within(30);
    // A = I (5 x 5): R = I has delta 0 and eps rho = eps, so all 5 rows pass.
    const Mat I5 = Mat::Identity(5, 5);
    auto c = neumann_admm(I5, 0.1, {0, 1, 2, 3, 4}, 0.97, 2000, 1e-6, dl);
    REQUIRE(c.has_value());
    CHECK(c->method == "admm");
    CHECK(c->float_value < 1);
    // Rank one (every row the same distribution): r_eps(A) <= 1 for any eps,
    // so no neumann certificate of rank 2 exists and none may be returned.
    Mat A1(4, 6);
    for (Eigen::Index i = 0; i < 4; ++i) A1.row(i) << 0.3, 0.2, 0.2, 0.1, 0.1, 0.1;
    CHECK_FALSE(neumann_admm(A1, 0.1, {0, 1}, 0.97, 2000, 1e-6, dl).has_value());
    CHECK_FALSE(neumann_admm(A1, 0.1, {}, 0.97, 2000, 1e-6, dl).has_value());
}

TEST_CASE("even centres with the ADMM right inverse beat the cells on S^2, and the checker verifies them; tampered, refused", "[construct]") {
    // S^2 on 300 points at beta 8: cells alone (no smooth time) against
    // Riesz-code rows with the ADMM right inverse over all keys.
    TempDir dir;
    Construction c = sphere(3, 300, "8");
    Bundle parsed = parse_instance(c.instance, dir.path.string(), "s");
    const Mat A = approximate_attention(parsed.instance);
    const double eps = 0.1;
    auto cells = cell_partition(A, c.queries, c.keys, eps);
    REQUIRE(cells.has_value());
    const std::size_t m = cells->rows.size() + 1;
    const auto rows = even_centres(c.queries, m);
    REQUIRE(rows.size() == m);
    REQUIRE(std::set<std::size_t>(rows.begin(), rows.end()).size() == m);
    auto ad = neumann_admm(A, eps, rows, 0.97, 3000, 1e-6, Deadline{}.within(60));
    REQUIRE(ad.has_value());
    const Rat e(1, 10);
    Report r = run(dir, bundle_json(c.instance, e, {neumann_json(*ad, dir.path.string(), "admm")}));
    REQUIRE(r.verdict == Verdict::verified);
    REQUIRE(r.lower == m);
    auto bad = *ad;
    for (auto& en : bad.r) en.v *= 1.2;  // eps rho 0.97 -> 1.16 > 1
    Report r2 = run(dir, bundle_json(c.instance, e, {neumann_json(bad, dir.path.string(), "scaled")}));
    REQUIRE(r2.verdict == Verdict::refuted);
    // No even centre set off the sphere and the plane.
    CHECK(even_centres(Mat::Random(10, 3), 4).empty());
}

TEST_CASE("keep_tighter takes the better end of an earlier bundle, never a refuted or foreign one", "[construct]") {
    // Identity 4 x 4 at eps 1/2: r_eps = 4.  The fresh bundle proves [1, 4]
    // (trivial, identity factor); the earlier one a neumann certificate of
    // rank 4 with R in an .npy sidecar.
    TempDir fresh_dir, prev_dir;
    const json inst = {{"kind", "matrix"}, {"a", identity(4)}};
    const Rat eps(1, 2);
    const json trivial = {{"bound", "lower"}, {"kind", "trivial"}, {"rank", 1}};
    const json factor = {{"bound", "upper"}, {"kind", "factor"}, {"rank", 4}, {"u", identity(4)}, {"w", identity(4)}};
    auto neumann = [&](double scale) {
        Mat R = scale * Mat::Identity(4, 4);
        return json{{"bound", "lower"}, {"kind", "neumann"}, {"rank", 4}, {"rows", {0, 1, 2, 3}},
                    {"r", array_json(R, prev_dir.path.string(), "b.r.npy", 0)}};
    };
    auto write = [](const TempDir& d, const json& doc) { return d.file("b.json", doc.dump()).string(); };
    const std::string prev = write(prev_dir, bundle_json(inst, eps, {neumann(1), factor}));
    std::string fresh = write(fresh_dir, bundle_json(inst, eps, {trivial, factor}));
    // What the caller knows of the fresh bundle: its checker's bracket.
    const KeptBracket now{1, 4, "trivial", "factor"};
    REQUIRE(verify(load_bundle(fresh, fresh), CheckOptions{}).lower == now.lower);
    KeptBracket k = keep_tighter(fresh, now, prev);
    CHECK(k.took_lower);
    CHECK(!k.took_upper);
    CHECK(k.lower == 4);
    CHECK(k.upper == 4);
    CHECK(k.lower_kind == "neumann");
    REQUIRE(fs::exists(fresh_dir.path / "b.kept.r.npy"));
    Report r = verify(load_bundle(fresh, fresh), CheckOptions{});
    REQUIRE(r.verdict == Verdict::verified);
    REQUIRE(r.lower == 4);
    REQUIRE(read_document(fresh, fresh)["claim"]["lower"] == 4);

    // A refuted earlier certificate (R = 3 I: delta = 2) certifies nothing: not taken.
    write(prev_dir, bundle_json(inst, eps, {neumann(3), factor}));
    fresh = write(fresh_dir, bundle_json(inst, eps, {trivial, factor}));
    k = keep_tighter(fresh, now, prev);
    CHECK(!k.took_lower);
    CHECK(k.lower == 1);
    // Another eps or another instance: not taken either.
    write(prev_dir, bundle_json(inst, Rat(1, 4), {neumann(1), factor}));
    k = keep_tighter(fresh, now, prev);
    CHECK(!k.took_lower);
    json other = inst;
    other["a"] = dense(4, 4, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, json("1/2")});
    write(prev_dir, bundle_json(other, eps, {neumann(1), factor}));
    k = keep_tighter(fresh, now, prev);
    CHECK(!k.took_lower);
    CHECK(k.lower == 1);
}
