// The producer (rankcert bracket): every bundle it writes passes the checker,
// and on instances with known answers the bracket closes at the known value.
#include "helpers.hpp"
#include "rankcert/producer/bracket.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>

using namespace rankcert;
using namespace rankcert::test;
using namespace rankcert::producer;

namespace {

std::vector<BracketResult> bracket(const TempDir& dir, const json& inst, const std::string& eps) {
    BracketOptions opt;
    opt.eps = parse_eps_list(eps);
    opt.out_dir = dir.path.string();
    opt.stem = std::string(1, 't');  // (GCC 12 -Wrestrict false positive on = "t")
    return run_bracket(inst, opt);
}

json logits_json(std::size_t n, std::size_t N, const std::function<double(std::size_t, std::size_t)>& f) {
    std::vector<json> d;
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < N; ++j) d.push_back(exact_text(f(i, j)));
    return {{"kind", "logits"}, {"logits", dense(n, N, d)}};
}

// Every bundle the producer wrote verifies again, from its file, with a
// fresh checker run.
void reverify(const std::vector<BracketResult>& rs) {
    for (const auto& r : rs) {
        INFO(r.bundle_path);
        Bundle b = load_bundle(r.bundle_path, r.bundle_path);
        Report rep = verify(b, {});
        REQUIRE(rep.verdict == Verdict::verified);
        REQUIRE(rep.lower == r.lower);
        REQUIRE(rep.upper == r.upper);
        for (const auto& c : rep.certificates) REQUIRE(c.verdict == Verdict::verified);
    }
}

}  // namespace

TEST_CASE("bracket closes at n on the identity and on a sharp diagonal", "[bracket]") {
    TempDir dir;
    auto rs = bracket(dir, {{"kind", "matrix"}, {"a", identity(12)}}, "0.05,0.5");
    reverify(rs);
    for (const auto& r : rs) {
        REQUIRE(r.closed);
        REQUIRE(r.lower == 12);
    }
    TempDir dir2;
    auto rs2 = bracket(dir2, logits_json(16, 16, [](auto i, auto j) { return i == j ? 10.0 : 0.0; }), "0.1");
    reverify(rs2);
    REQUIRE(rs2[0].closed);
    REQUIRE(rs2[0].lower == 16);
}

TEST_CASE("bracket closes at the number of blocks on a block-diagonal matrix", "[bracket]") {
    TempDir dir;
    // 5 uniform 4 x 4 blocks: rows within a block are equal, so r_eps = 5.
    const std::size_t b = 4, k = 5, n = b * k;
    std::vector<json> d(n * n, 0);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j)
            if (i / b == j / b) d[i * n + j] = "1/4";
    auto rs = bracket(dir, {{"kind", "matrix"}, {"a", dense(n, n, d)}}, "0.1");
    reverify(rs);
    REQUIRE(rs[0].closed);
    REQUIRE(rs[0].lower == k);
}

TEST_CASE("bracket closes at 1 on rank-one plus small noise", "[bracket]") {
    TempDir dir;
    auto inst = logits_json(24, 30, [](auto i, auto j) {
        return std::sin(0.7 * static_cast<double>(j)) + 1e-3 * std::cos(1.3 * static_cast<double>(i * j));
    });
    auto rs = bracket(dir, inst, "0.1,0.2");
    reverify(rs);
    for (const auto& r : rs) {
        REQUIRE(r.closed);
        REQUIRE(r.upper == 1);
    }
}

TEST_CASE("bracket from .npy arrays writes bundles that rankcert verify accepts", "[bracket]") {
    TempDir dir;
    // Gaussian-like Q, K (deterministic), causal mask.
    std::vector<double> q, k;
    for (int i = 0; i < 20 * 4; ++i) q.push_back(std::sin(1.7 * i) * 2);
    for (int i = 0; i < 20 * 4; ++i) k.push_back(std::cos(0.9 * i + 0.3) * 2);
    dir.file("q.npy", npy_bytes("<f8", {20, 4}, f64_data(q)));
    dir.file("k.npy", npy_bytes("<f8", {20, 4}, f64_data(k)));
    const char* exe = std::getenv("RANKCERT_EXE");
    REQUIRE(exe != nullptr);
    const std::string out = (dir.path / "out").string();
    const std::string cmd = std::string(exe) + " bracket --q " + (dir.path / "q.npy").string() + " --k " +
                            (dir.path / "k.npy").string() + " --scale rsqrt:4 --mask causal --eps 0.1,0.2 --out " + out +
                            " -q > /dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    const std::string ver = std::string(exe) + " verify --quiet " + out + " > /dev/null";
    REQUIRE(std::system(ver.c_str()) == 0);
    // Tampering with what bracket wrote is caught.
    std::ifstream in(dir.path / "out" / "q-eps0.1.json");
    json b = json::parse(in);
    in.close();
    for (auto& c : b["certificates"])
        if (c["kind"] == "factor" && c["u"].contains("data")) c["u"]["data"][0] = "0.75";
    b["eps"] = "0.0001";
    std::ofstream(dir.path / "out" / "q-eps0.1.json") << b.dump();
    const int rc = std::system(ver.c_str());
    REQUIRE(WEXITSTATUS(rc) == 1);
}
