#include "helpers.hpp"

#include "rankcert/result.hpp"

#include <catch2/catch.hpp>
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <stdexcept>

namespace rankcert::test {

TempDir::TempDir() {
    static std::random_device rd;
    for (int tries = 0; tries < 100; ++tries) {
        fs::path p = fs::temp_directory_path() / ("rankcert-test-" + std::to_string(rd()));
        std::error_code ec;
        if (fs::create_directory(p, ec)) {
            path = p;
            return;
        }
    }
    throw std::runtime_error("cannot create a temporary folder");
}

TempDir::~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
}

fs::path TempDir::file(const std::string& name, const std::string& bytes) const {
    fs::path p = path / name;
    fs::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
}

Rng::Rng(unsigned long seed) {
    flint_randinit(state);
    flint_randseed(state, seed, seed * 7919 + 13);
}
Rng::~Rng() { flint_randclear(state); }

Rat Rng::rational(flint_bitcnt_t bits) {
    Rat r;
    fmpq_randtest(r.get(), state, bits);
    return r;
}

Rat Rng::rational_in(flint_bitcnt_t bits, long bound) {
    // x = p / q with q random positive, p uniform-ish in [-bound q, bound q].
    fmpz_t q, p, range;
    fmpz_init(q);
    fmpz_init(p);
    fmpz_init(range);
    fmpz_randtest_unsigned(q, state, bits);
    fmpz_add_ui(q, q, 1);
    fmpz_mul_ui(range, q, static_cast<ulong>(2 * bound));
    fmpz_add_ui(range, range, 1);
    fmpz_randm(p, state, range);
    fmpz_submul_ui(p, q, static_cast<ulong>(bound));
    Rat r;
    fmpq_set_fmpz_frac(r.get(), p, q);
    fmpz_clear(range);
    fmpz_clear(p);
    fmpz_clear(q);
    return r;
}

unsigned long Rng::below(unsigned long n) { return n_randint(state, n); }

std::pair<Rat, Rat> exp_enclosure(const Rat& x0, long bits) {
    // Halve until |x| <= 1/2.
    Rat x = x0;
    int halvings = 0;
    while (x.abs() > Rat(1, 2)) {
        fmpq_div_2exp(x.get(), x.get(), 1);
        ++halvings;
    }
    // Taylor: sum_{k<K} x^k/k!, remainder |R| <= 2 |x|^K / K! for |x| <= 1/2.
    Rat sum, term(1);
    long k = 0;
    Rat tol;
    fmpq_set_si(tol.get(), 1, 1);
    fmpq_div_2exp(tol.get(), tol.get(), static_cast<ulong>(bits + 8 + halvings * 2));
    for (;; ++k) {
        sum = sum + term;
        term = term * x / Rat(k + 1);
        if (term.abs() * Rat(2) < tol) break;
    }
    Rat rem = term.abs() * Rat(2);
    Rat lo = sum - rem, hi = sum + rem;
    // Square back: exp(x) = exp(x/2^h)^(2^h); lo > 0 since |x| <= 1/2.
    for (int h = 0; h < halvings; ++h) {
        lo = lo * lo;
        hi = hi * hi;
    }
    return {lo, hi};
}

bool ball_contains(arb_srcptr b, const Rat& lo, const Rat& hi) {
    return arb_contains_fmpq(b, lo.get()) && arb_contains_fmpq(b, hi.get());
}

Rat pow10neg(unsigned e) {
    Rat r(1);
    for (unsigned i = 0; i < e; ++i) r = r / Rat(10);
    return r;
}

std::string npy_bytes(const std::string& descr, const std::vector<std::size_t>& shape, const std::string& data,
                      bool fortran, int version) {
    std::string sh = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) sh += std::to_string(shape[i]) + (shape.size() == 1 ? "," : i + 1 < shape.size() ? ", " : "");
    sh += ")";
    std::string header = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                         ", 'shape': " + sh + ", }";
    const std::size_t pre = version == 1 ? 10 : 12;
    while ((pre + header.size() + 1) % 64) header += ' ';
    header += '\n';
    std::string out = "\x93NUMPY";
    out += static_cast<char>(version);
    out += '\0';
    std::uint32_t len = static_cast<std::uint32_t>(header.size());
    out += static_cast<char>(len & 0xff);
    out += static_cast<char>((len >> 8) & 0xff);
    if (version != 1) {
        out += static_cast<char>((len >> 16) & 0xff);
        out += static_cast<char>((len >> 24) & 0xff);
    }
    return out + header + data;
}

std::string f64_data(const std::vector<double>& v) {
    std::string s(v.size() * 8, '\0');
    std::memcpy(s.data(), v.data(), s.size());  // x86-64 is little-endian
    return s;
}

json dense(std::size_t r, std::size_t c, const std::vector<json>& data) {
    return {{"shape", {r, c}}, {"data", data}};
}

json identity(std::size_t n) {
    std::vector<json> d(n * n, 0);
    for (std::size_t i = 0; i < n; ++i) d[i * n + i] = 1;
    return dense(n, n, d);
}

json bundle_json(const json& instance, const Rat& eps, const std::vector<json>& certs, const json& claim) {
    return {{"format", "rankcert/1"}, {"instance", instance}, {"eps", eps.str()}, {"claim", claim}, {"certificates", json(certs)}};
}

json matrix_instance(const json& a) { return {{"kind", "matrix"}, {"a", a}}; }

json coo_columns(std::size_t N, const std::vector<std::vector<json>>& cols) {
    json r = json::array(), c = json::array(), v = json::array();
    for (std::size_t k = 0; k < cols.size(); ++k)
        for (std::size_t j = 0; j < N; ++j) {
            if (cols[k][j] == json(0)) continue;
            r.push_back(j);
            c.push_back(k);
            v.push_back(cols[k][j]);
        }
    return {{"shape", {N, cols.size()}}, {"coo", {{"row", r}, {"col", c}, {"val", v}}}};
}

Verdict verdict_of(const TempDir& dir, const json& inst, const Rat& eps, const json& cert) {
    return run(dir, bundle_json(inst, eps, {cert})).certificates.at(0).verdict;
}

Bundle load(const TempDir& dir, const json& doc, const std::string& name) {
    fs::path p = dir.file(name, doc.dump());
    return load_bundle(p, name);
}

RecheckTally& recheck_tally() {
    // Printed when the test program ends: how many bundles the second
    // checker saw (so that a run where it never ran is visible).
    struct Printed : RecheckTally {
        ~Printed() {
            if (runs) std::fprintf(stderr, "rankcert-recheck: %zu bundles re-checked, %zu undecided, %zu not agreeing\n", runs, undecided, failures.size());
        }
    };
    static Printed t;
    return t;
}

int second_opinion(const TempDir& dir, const Bundle& b, const Report& r) {
    const char* exe = std::getenv("RANKCERT_RECHECK_EXE");
    if (!exe || !*exe || !fs::exists(exe)) return -1;
    const fs::path w = dir.file("b.json.witness.json", witness_json(b, r, "test").dump());
    const std::string cmd = std::string("'") + exe + "' '" + (dir.path / "b.json").string() + "' '" + w.string() + "' > '" +
                            (dir.path / "recheck.log").string() + "' 2>&1";
    const int st = std::system(cmd.c_str());
    const int code = WIFEXITED(st) ? WEXITSTATUS(st) : 99;
    auto& t = recheck_tally();
    ++t.runs;
    if (code == 2) {
        ++t.undecided;
        if (std::getenv("RANKCERT_RECHECK_SHOW")) {
            std::ifstream in(dir.path / "recheck.log");
            std::error_code ec;
            fs::copy_file(dir.path / "b.json", fs::path(std::getenv("RANKCERT_RECHECK_SHOW")) / ("undecided-" + std::to_string(t.undecided) + ".json"),
                          fs::copy_options::overwrite_existing, ec);
            std::fprintf(stderr, "rankcert-recheck undecided: %s\n", std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()).c_str());
        }
    }
    if (code != 0 && code != 2) {
        std::ifstream in(dir.path / "recheck.log");
        std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        t.failures.push_back(b.display + " (exit " + std::to_string(code) + "): " + log);
    }
    return code;
}

Report run(const TempDir& dir, const json& doc, slong max_prec) {
    Bundle b = load(dir, doc);
    CheckOptions opt;
    opt.max_prec = max_prec;
    Report r = verify(b, opt);
    // The second checker's opinion on the same bundle (tests/meson.build sets
    // RANKCERT_RECHECK_EXE): it must agree, or at most be undecided.
    const int code = second_opinion(dir, b, r);
    INFO("rankcert-recheck: " << (recheck_tally().failures.empty() ? std::string() : recheck_tally().failures.back()));
    CHECK((code == -1 || code == 0 || code == 2));
    return r;
}

std::pair<Rat, Rat> tanh_half() {
    auto [lo, hi] = exp_enclosure(Rat(1), 400);
    // (e - 1)/(e + 1) is increasing in e.
    return {(lo - Rat(1)) / (lo + Rat(1)), (hi - Rat(1)) / (hi + Rat(1))};
}

}  // namespace rankcert::test
