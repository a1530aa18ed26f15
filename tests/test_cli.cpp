// The command line as a user runs it: exit codes, one-line errors, folders,
// --json and --witness.  Runs the real build/rankcert (path from the
// RANKCERT_EXE environment variable, set by meson test).
#include "helpers.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstdlib>
#include <sys/wait.h>

using namespace rankcert;
using namespace rankcert::test;

namespace {

struct Run {
    int code;
    std::string out, err;
};

Run cli(const TempDir& dir, const std::string& args) {
    const char* exe = std::getenv("RANKCERT_EXE");
    REQUIRE(exe != nullptr);
    const std::string err_file = (dir.path / "stderr.txt").string();
    const std::string cmd = std::string(exe) + " " + args + " 2>" + err_file;
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    std::string out;
    std::array<char, 4096> buf;
    std::size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    int status = pclose(p);
    std::ifstream e(err_file);
    std::string err((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
    REQUIRE(WIFEXITED(status));  // never a crash
    return {WEXITSTATUS(status), out, err};
}

json good_bundle() {
    return bundle_json({{"kind", "matrix"}, {"a", identity(3)}}, Rat(1, 2),
                       {{{"bound", "upper"}, {"kind", "factor"}, {"rank", 3}, {"u", identity(3)}, {"w", identity(3)}},
                        {{"bound", "lower"}, {"kind", "trivial"}, {"rank", 1}}},
                       {{"lower", 1}, {"upper", 3}});
}

}  // namespace

TEST_CASE("verify: exit codes 0, 1, 2 and >= 3 with one-line errors", "[cli]") {
    TempDir dir;
    dir.file("good.json", good_bundle().dump());
    Run r = cli(dir, "verify " + (dir.path / "good.json").string());
    REQUIRE(r.code == 0);
    REQUIRE(r.out.find("verified") != std::string::npos);

    json refuted = good_bundle();
    refuted["eps"] = "0";
    refuted["certificates"][0]["u"]["data"][0] = "0.9";
    dir.file("refuted.json", refuted.dump());
    REQUIRE(cli(dir, "verify " + (dir.path / "refuted.json").string()).code == 1);

    json undecided = good_bundle();
    undecided["claim"]["lower"] = 3;  // only rank >= 1 is certified
    dir.file("undecided.json", undecided.dump());
    REQUIRE(cli(dir, "verify " + (dir.path / "undecided.json").string()).code == 2);

    const std::vector<std::pair<std::string, std::string>> bad = {
        {"{\"format\":", "malformed JSON"},
        {R"({"format":"rankcert/1","instance":{"kind":"matrix","a":{"shape":[2,2],"data":[1,2,3]}},"eps":1,"certificates":[]})",
         "instance.a.data"},
        {R"({"format":"rankcert/1","instance":{"kind":"matrix","a":{"npy":"../x.npy","sha256":"0"}},"eps":1,"certificates":[]})",
         "instance.a.npy"},
    };
    for (const auto& [text, field] : bad) {
        dir.file("bad.json", text);
        Run b = cli(dir, "verify " + (dir.path / "bad.json").string());
        INFO(b.err);
        REQUIRE(b.code >= 3);
        REQUIRE(std::count(b.err.begin(), b.err.end(), '\n') == 1);
        REQUIRE(b.err.find("bad.json") != std::string::npos);
        REQUIRE(b.err.find(field) != std::string::npos);
    }
    // Usage errors.
    REQUIRE(cli(dir, "verify").code >= 3);
    REQUIRE(cli(dir, "verify /nonexistent/bundle.json").code >= 3);
    REQUIRE(cli(dir, "frobnicate").code >= 3);
    REQUIRE(cli(dir, "--version").out.find("rankcert ") == 0);
}

TEST_CASE("verify: a folder reports every bundle and the worst status", "[cli]") {
    TempDir dir;
    dir.file("sub/a.json", good_bundle().dump());
    dir.file("b.json", good_bundle().dump());
    dir.file("notes.json", R"({"format": "something-else"})");
    Run r = cli(dir, "verify " + dir.path.string());
    REQUIRE(r.code == 0);
    REQUIRE(r.out.find("a.json") != std::string::npos);
    REQUIRE(r.out.find("b.json") != std::string::npos);
    REQUIRE(r.out.find("notes.json") == std::string::npos);
    json ref = good_bundle();
    ref["claim"]["upper"] = 2;
    dir.file("c.json", ref.dump());
    REQUIRE(cli(dir, "verify " + dir.path.string()).code == 2);
    dir.file("d.json", "{broken");
    Run worst = cli(dir, "verify " + dir.path.string());
    REQUIRE(worst.code == 3);
    REQUIRE(worst.out.find("b.json") != std::string::npos);  // others still checked
}

TEST_CASE("verify --json and --witness", "[cli]") {
    TempDir dir;
    std::string npy = npy_bytes("<f8", {3, 3}, f64_data({1, 0, 0, 0, 1, 0, 0, 0, 1}));
    dir.file("a.npy", npy);
    json b = good_bundle();
    b["instance"]["a"] = {{"npy", "a.npy"}, {"sha256", sha256_hex(npy)}};
    const std::string text = b.dump();
    dir.file("b.json", text);
    const std::string wpath = (dir.path / "w.json").string();
    Run r = cli(dir, "verify --json --witness " + wpath + " " + (dir.path / "b.json").string());
    REQUIRE(r.code == 0);
    json j = json::parse(r.out);
    REQUIRE(j["verdict"] == "verified");
    REQUIRE(j["lower"] == 1);
    REQUIRE(j["upper"] == 3);
    REQUIRE(j["closed"] == false);
    REQUIRE(j["certificates"].size() == 2);
    REQUIRE(j["certificates"][0]["kind"] == "factor");
    REQUIRE(j["certificates"][0]["verdict"] == "verified");
    std::ifstream wf(wpath);
    json w = json::parse(wf);
    REQUIRE(w["format"] == "rankcert-witness/1");
    REQUIRE(w["bundle"]["sha256"] == sha256_hex(text));
    REQUIRE(w["sidecars"][0]["sha256"] == sha256_hex(npy));
    REQUIRE(w["eps"] == "1/2");
    REQUIRE(w["tool"]["name"] == "rankcert");
    // The decisive quantity is given exactly: re-check it here.
    const json& d = w["certificates"][0]["decisive"];
    Rat hi = parse_rational_text(d["enclosure"][1].get<std::string>(), {});
    REQUIRE(hi <= parse_rational_text(d["threshold"].get<std::string>(), {}));
}

TEST_CASE("show prints back what was parsed", "[cli]") {
    TempDir dir;
    dir.file("b.json", good_bundle().dump());
    Run r = cli(dir, "show " + (dir.path / "b.json").string());
    REQUIRE(r.code == 0);
    REQUIRE(r.out.find("matrix: n = 3, N = 3") != std::string::npos);
    REQUIRE(r.out.find("upper factor rank 3") != std::string::npos);
    REQUIRE(r.out.find("eps         1/2") != std::string::npos);
}

TEST_CASE("verify: a folder checks every file once; --quiet prints only the summary", "[cli]") {
    TempDir dir;
    // A sweep that sorts before the bundles it lists ("a-sweep" < "b...").
    json points = json::array();
    for (int t = 0; t < 3; ++t) {
        const std::string name = std::string("b").append(std::to_string(t)).append(".json"), text = good_bundle().dump();
        dir.file(name, text);
        points.push_back({{"beta", t + 1}, {"bundle", name}, {"sha256", sha256_hex(text)}, {"L", 1}, {"U", 3}});
    }
    const json sweep = {{"format", "rankcert-sweep/1"}, {"parameter", "beta"}, {"points", points},
                        {"fit", {{"points", {0, 1, 2}}, {"slope_L", {"-1", "1"}}, {"slope_U", {"-1", "1"}}}}};
    dir.file("a-sweep.json", sweep.dump());
    Run j = cli(dir, "verify --json " + dir.path.string());
    REQUIRE(j.code == 0);
    REQUIRE(j.out.rfind("{\n  \"format\": \"rankcert-result/1\",\n  \"tool\":", 0) == 0);  // the format key first
    const json doc = json::parse(j.out);
    REQUIRE(doc["bundles"].size() == 4);  // the sweep and its three bundles
    REQUIRE(doc["bundles_read"] == 3);    // each bundle read once
    Run q = cli(dir, "verify --quiet " + dir.path.string());
    REQUIRE(q.code == 0);
    REQUIRE(q.out.find('\n') == q.out.size() - 1);  // one line
    REQUIRE(q.out.rfind("4 files: 4 verified, 0 refuted, 0 undecided, 0 errors; 0 brackets closed; 3 bundles read;", 0) == 0);
    Run one = cli(dir, "verify --json " + (dir.path / "b0.json").string());
    REQUIRE(json::parse(one.out)["format"] == "rankcert-result/1");
}

// Regressions from an attacker's session (issue 16): each gets a verdict or
// exit 3 with one short line, within a bounded time, never a crash, an
// abort, exit 4 or a read outside the bundle's folder.
TEST_CASE("hostile input: nesting, huge spreads, broken .npy headers, escapes, symlinks, total work", "[cli]") {
    TempDir dir;
    SECTION("10^5 nested objects in provenance: exit 3, one line") {
        std::string deep = good_bundle().dump();
        deep.pop_back();
        deep += ",\"provenance\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
        dir.file("deep.json", deep);
        Run r = cli(dir, "verify " + (dir.path / "deep.json").string());
        REQUIRE(r.code == 3);
        REQUIRE(r.err.find("nested deeper than") != std::string::npos);
        REQUIRE(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
    SECTION("a logit spread of 1e12: decided, with a small witness, with and without the fast tier") {
        const json b = bundle_json({{"kind", "logits"}, {"logits", dense(2, 2, {0, "1e12", "-1e12", 0})}}, Rat(1, 10),
                                   // both rows are (e^-1e12, 1) / (1 + e^-1e12): B = rows (0, 1), error 2 e^-1e12 / (1 + ...)
                                   {{{"bound", "upper"}, {"kind", "factor"}, {"rank", 1}, {"u", dense(2, 1, {1, 1})},
                                     {"w", dense(2, 1, {0, 1})}}},
                                   {{"upper", 1}});
        dir.file("spread.json", b.dump());
        for (const char* opt : {"", "--no-fast "}) {
            const std::string w = (dir.path / "w.json").string();
            Run r = cli(dir, std::string("verify ") + opt + "--witness " + w + " " + (dir.path / "spread.json").string());
            INFO(opt << r.out << r.err);
            REQUIRE(r.code == 0);
            REQUIRE(std::filesystem::file_size(w) < 20000);
        }
    }
    SECTION("a .npy header with an empty shape: exit 3") {
        std::string npy = npy_bytes("<f8", {3, 3}, f64_data({1, 0, 0, 0, 1, 0, 0, 0, 1}));
        const auto at = npy.find("'shape': (");
        REQUIRE(at != std::string::npos);
        npy.replace(at, 16, "'shape': ,      ");
        dir.file("a.npy", npy);
        json b = good_bundle();
        b["instance"]["a"] = {{"npy", "a.npy"}, {"sha256", sha256_hex(npy)}};
        dir.file("b.json", b.dump());
        dir.file("c.json", good_bundle().dump());
        Run r = cli(dir, "verify " + dir.path.string());
        REQUIRE(r.code == 3);
        REQUIRE(r.err.find("bad .npy header") != std::string::npos);
        REQUIRE(r.out.find("c.json") != std::string::npos);  // the walk went on
    }
    SECTION("control characters in the input are not echoed raw") {
        json b = good_bundle();
        b["eps"] = "0.1\n\x1b[31mred";
        dir.file("esc.json", b.dump());
        Run r = cli(dir, "verify " + (dir.path / "esc.json").string());
        REQUIRE(r.code == 3);
        REQUIRE(r.err.find('\x1b') == std::string::npos);
        REQUIRE(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        REQUIRE(r.err.size() < 400);
    }
    SECTION("a sidecar symlink out of the folder, the bundle named without a folder: refused") {
        const std::string npy = npy_bytes("<f8", {3, 3}, f64_data({1, 0, 0, 0, 1, 0, 0, 0, 1}));
        const auto outside = dir.file("outside.npy", npy);
        std::filesystem::create_directories(dir.path / "in");
        std::filesystem::create_symlink(outside, dir.path / "in" / "a.npy");
        json b = good_bundle();
        b["instance"]["a"] = {{"npy", "a.npy"}, {"sha256", sha256_hex(npy)}};
        dir.file("in/b.json", b.dump());
        const char* exe = std::getenv("RANKCERT_EXE");
        const std::string cmd = "cd " + (dir.path / "in").string() + " && " + exe + " verify b.json 2>&1";
        FILE* p = popen(cmd.c_str(), "r");
        std::string out;
        std::array<char, 4096> buf;
        std::size_t n;
        while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
        const int status = pclose(p);
        REQUIRE(WIFEXITED(status));
        REQUIRE(WEXITSTATUS(status) == 3);
        REQUIRE(out.find("resolves outside the bundle's folder") != std::string::npos);
        REQUIRE(out.find(sha256_hex(npy)) == std::string::npos);  // nothing of the outside file is shown
    }
    SECTION("n x N beyond the work limit: exit 3 at once") {
        const std::size_t rows = std::size_t{1} << 18;
        const std::string q = npy_bytes("<f4", {rows, 1}, std::string(rows * 4, '\0'));
        dir.file("q.npy", q);
        const json b = bundle_json({{"kind", "qk"}, {"q", {{"npy", "q.npy"}, {"sha256", sha256_hex(q)}}},
                                    {"k", {{"npy", "q.npy"}, {"sha256", sha256_hex(q)}}}, {"scale", 1}},
                                   Rat(1, 10), {});
        dir.file("big.json", b.dump());
        Run r = cli(dir, "verify " + (dir.path / "big.json").string());
        REQUIRE(r.code == 3);
        REQUIRE(r.err.find("attention entries") != std::string::npos);
    }
}
