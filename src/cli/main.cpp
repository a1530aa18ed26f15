// The `rankcert` command line.
//
//   rankcert verify PATH... [--json] [--witness OUT] [--max-prec BITS] [--threads T]
//   rankcert show BUNDLE
//
// Exit status of verify (docs/format.md, "rankcert verify"): 0 verified, 1 refuted, 2 undecided,
// 3 input or usage error, 4 internal error.  A folder is walked recursively;
// the exit status is the worst met (input error, refuted, undecided, verified).
#include "rankcert/check.hpp"
#include "rankcert/exit.hpp"
#include "rankcert/result.hpp"
#include "rankcert/sweep.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <unistd.h>

#ifndef RANKCERT_VERSION
#define RANKCERT_VERSION "unknown"
#endif

namespace fs = std::filesystem;
using namespace rankcert;

namespace {

struct Row {
    std::string bundle, eps, bracket, closed, verdict, time;
};

void print_table(const std::vector<Row>& rows) {
    std::vector<Row> all;
    all.push_back({"bundle", "eps", "bracket", "closed", "verdict", "time"});
    all.insert(all.end(), rows.begin(), rows.end());
    std::size_t w[6] = {0, 0, 0, 0, 0, 0};
    for (const auto& r : all) {
        const std::string* f[6] = {&r.bundle, &r.eps, &r.bracket, &r.closed, &r.verdict, &r.time};
        for (int i = 0; i < 6; ++i) w[i] = std::max(w[i], f[i]->size());
    }
    for (std::size_t k = 0; k < all.size(); ++k) {
        const auto& r = all[k];
        const std::string* f[6] = {&r.bundle, &r.eps, &r.bracket, &r.closed, &r.verdict, &r.time};
        std::ostringstream line;
        for (int i = 0; i < 6; ++i) {
            line << std::left << std::setw(static_cast<int>(w[i])) << *f[i];
            if (i < 5) line << "  ";
        }
        std::string s = line.str();
        while (!s.empty() && s.back() == ' ') s.pop_back();
        std::cout << s << "\n";
        if (k == 0) std::cout << std::string(s.size(), '-') << "\n";
    }
}

std::string fixed(double x, int digits) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(digits) << x;
    return o.str();
}

std::string eps_text(const Rat& eps) {
    // Show the exact value; add a decimal approximation when it is not short.
    std::string s = eps.str();
    if (s.size() <= 12) return s;
    Ball b;
    arb_set_fmpq(b.get(), eps.get(), 64);
    char* c = arb_get_str(b.get(), 6, ARB_STR_NO_RADIUS);
    std::string out = std::string("~") + c;
    flint_free(c);
    return out;
}

std::string approx(const Endpoints& e) {
    if (!e.bounded) return "?";
    std::ostringstream o;
    o << std::setprecision(4) << (fmpq_get_d(e.lo.get()) + fmpq_get_d(e.hi.get())) / 2;
    return o.str();
}

void write_json_file(const fs::path& p, const json& j) {
    std::error_code ec;
    if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
    std::ofstream out(p);
    if (!out) throw InputError(p.string() + ": cannot write witness file");
    out << dump_document(j) << "\n";
    if (!out) throw InputError(p.string() + ": cannot write witness file");
}

struct VerifyArgs {
    std::vector<std::string> paths;
    bool json_out = false;
    bool quiet = false;
    std::string witness;
    slong max_prec = PrecisionLadder::default_max_bits;
    unsigned threads = 0;
    bool no_fast = false;
};

// A file named on the command line or found in a folder.
struct Item {
    fs::path path;
    std::string display;
    fs::path rel;  // for witness naming inside a folder
    bool from_folder;
};

// What checking one file gave.  Every bundle and sweep is checked once per
// run, whether it is met in a folder walk, named by a sweep, or both.
struct Entry {
    int status = exit_verified;
    bool skipped = false;  // JSON that is neither a bundle nor a sweep (witnesses, summaries)
    Row row;
    json result;                  // element of the result document
    std::string text;             // details for the terminal
    std::optional<json> witness;  // bundles, when --witness
    Report report;                // bundles: what a sweep needs
    std::string sha256;
    std::string error;  // input or internal error (one line)
};

class VerifySession {
public:
    explicit VerifySession(const VerifyArgs& a) : a_(a), tty_(isatty(STDERR_FILENO)) {
        opt_.max_prec = a.max_prec;
        opt_.threads = a.threads;
        opt_.fast_tier = !a.no_fast;
    }

    // How a file was met: named on the command line, found in a folder walk
    // (other JSON is skipped, not an error), or listed by a sweep (bundles only).
    enum class Met { named, walked, in_sweep };

    // Check a file, once per run.
    const Entry& check(const fs::path& path, const std::string& display, Met met) {
        std::error_code ec;
        const std::string key = fs::weakly_canonical(path, ec).string();
        if (auto f = cache_.find(key); f != cache_.end()) return f->second;
        Entry e;
        try {
            std::string sha;
            const json doc = read_document(path, display, &sha);
            const std::string format = doc.is_object() && doc.contains("format") && doc["format"].is_string()
                                           ? doc["format"].get<std::string>()
                                           : "";
            if (format == "rankcert/1") {
                ++bundles_read_;
                check_bundle(doc, sha, path, display, e);
            }
            else if (met == Met::in_sweep) throw InputError(display + ": format: a sweep lists rankcert/1 bundles only");
            else if (format == "rankcert-sweep/1") check_sweep(doc, path, display, e);
            else if (met == Met::walked) e.skipped = true;
            else throw InputError(display + ": format: not a rankcert/1 bundle or rankcert-sweep/1 witness");
        } catch (const InputError& err) {
            failed(e, display, exit_input, "input error", err.what());
        } catch (const std::bad_alloc&) {
            failed(e, display, exit_internal, "internal error", display + ": out of memory while checking");
        } catch (const std::exception& err) {
            // A bug: reported for this file, and the walk goes on.
            failed(e, display, exit_internal, "internal error", display + ": internal error: " + err.what());
        }
        if (tty_ && !a_.quiet) std::cerr << "\r\033[K" << std::flush;
        return cache_[key] = std::move(e);
    }

    std::size_t bundles_read() const { return bundles_read_; }

private:
    void failed(Entry& e, const std::string& display, int status, const std::string& verdict, const std::string& msg) {
        e = Entry{};
        e.status = status;
        e.error = msg;
        e.row = {display, "-", "-", "-", verdict, "-"};
        e.result = error_json(display, verdict, msg);
    }

    void check_bundle(const json& doc, const std::string& sha, const fs::path& path, const std::string& display, Entry& e) {
        Bundle b = parse_bundle(doc, path.parent_path(), display);
        b.sha256 = sha;
        CheckOptions opt = opt_;
        if (tty_ && !a_.quiet)
            opt.progress = [&](const std::string& s) { std::cerr << "\r\033[K" << display << ": " << s << std::flush; };
        const Report r = verify(b, opt);
        e.status = exit_status(r.verdict);
        e.row = {display, eps_text(b.eps), "[" + std::to_string(r.lower) + ", " + std::to_string(r.upper) + "]",
                 r.closed ? "yes" : "no", to_string(r.verdict), fixed(r.seconds, 2) + "s"};
        e.result = report_json(b, r);
        e.text = report_text(r);
        if (!a_.witness.empty()) e.witness = witness_json(b, r, RANKCERT_VERSION);
        e.report = r;
        e.sha256 = sha;
    }

    void check_sweep(const json& doc, const fs::path& path, const std::string& display, Entry& e) {
        const auto t0 = std::chrono::steady_clock::now();
        auto bundle = [&](const fs::path& p) -> std::pair<Report, std::string> {
            const Entry& b = check(p, p.string(), Met::in_sweep);
            if (!b.error.empty()) throw InputError(b.error);
            return {b.report, b.sha256};
        };
        const SweepReport sr = verify_sweep(doc, path.parent_path(), display, bundle);
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        e.status = exit_status(sr.verdict);
        e.row = {display, "sweep", "slopes L " + approx(sr.slope_L) + ", U " + approx(sr.slope_U), "-",
                 to_string(sr.verdict), fixed(secs, 2) + "s"};
        e.result = sweep_json(display, sr, secs);
        e.text = sweep_text(sr);
    }

    const VerifyArgs& a_;
    const bool tty_;
    CheckOptions opt_;
    std::map<std::string, Entry> cache_;
    std::size_t bundles_read_ = 0;
};

// Files named directly, and every .json under folders (sorted).
bool collect(const VerifyArgs& a, std::vector<Item>& items) {
    for (const auto& p : a.paths) {
        std::error_code ec;
        if (fs::is_directory(p, ec)) {
            std::vector<fs::path> found;
            for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec);
                 it != fs::recursive_directory_iterator(); it.increment(ec)) {
                if (ec) break;
                if (it->is_regular_file(ec) && it->path().extension() == ".json") found.push_back(it->path());
            }
            if (ec) {
                std::cerr << p << ": cannot walk folder: " << ec.message() << "\n";
                return false;
            }
            std::sort(found.begin(), found.end());
            for (auto& f : found) items.push_back({f, f.string(), fs::relative(f, p, ec), true});
        } else if (fs::exists(p, ec)) {
            items.push_back({p, p, fs::path(p).filename(), false});
        } else {
            std::cerr << p << ": no such file or folder\n";
            return false;
        }
    }
    return true;
}

std::string summary_line(const json& all, std::size_t bundles_read, double secs) {
    std::size_t counts[4] = {0, 0, 0, 0}, closed = 0;
    for (const auto& j : all) {
        const std::string v = j["verdict"];
        counts[v == "verified" ? 0 : v == "undecided" ? 1 : v == "refuted" ? 2 : 3]++;
        if (j.contains("closed") && j["closed"].get<bool>()) ++closed;
    }
    return std::to_string(all.size()) + " files: " + std::to_string(counts[0]) + " verified, " + std::to_string(counts[2]) +
           " refuted, " + std::to_string(counts[1]) + " undecided, " + std::to_string(counts[3]) + " errors; " +
           std::to_string(closed) + " brackets closed; " + std::to_string(bundles_read) + " bundles read; " +
           fixed(secs, 1) + "s";
}

int run_verify(const VerifyArgs& a) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Item> items;
    if (!collect(a, items)) return exit_input;
    const bool many = items.size() != 1 || items.front().from_folder;
    if (!a.witness.empty() && many) {
        std::error_code ec;
        fs::create_directories(a.witness, ec);
        if (ec) {
            std::cerr << a.witness << ": cannot create witness folder: " << ec.message() << "\n";
            return exit_input;
        }
    }
    VerifySession session(a);
    int worst = exit_verified;
    std::vector<Row> rows;
    json all = json::array();
    for (const auto& it : items) {
        const Entry& e =
            session.check(it.path, it.display, it.from_folder ? VerifySession::Met::walked : VerifySession::Met::named);
        if (e.skipped) continue;
        worst = worse(worst, e.status);
        rows.push_back(e.row);
        all.push_back(e.result);
        if (!e.error.empty()) std::cerr << e.error << "\n";
        else if (!a.json_out && !a.quiet && (!many || e.status != exit_verified))
            std::cout << (many ? it.display + ":\n" : "") << e.text;
        if (e.witness) {
            try {
                const fs::path out = many ? fs::path(a.witness) / (it.rel.string() + ".witness.json") : fs::path(a.witness);
                write_json_file(out, *e.witness);
            } catch (const InputError& err) {
                std::cerr << err.what() << "\n";
                worst = worse(worst, exit_input);
            }
        }
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (a.json_out) {
        json body;
        if (!many && all.size() == 1) body = all[0];
        else {
            const char* names[] = {"verified", "undecided", "refuted", "input error", "internal error"};
            body = {{"verdict", names[severity(worst)]}, {"bundles", all}, {"bundles_read", session.bundles_read()},
                    {"seconds", secs}};
        }
        std::cout << dump_document(result_document(body, RANKCERT_VERSION)) << "\n";
        return worst;
    }
    if (rows.empty()) {
        std::cerr << "no rankcert/1 bundles found\n";
        return exit_input;
    }
    if (!a.quiet) print_table(rows);
    if (many || a.quiet) std::cout << summary_line(all, session.bundles_read(), secs) << "\n";
    return worst;
}

}  // namespace

// `rankcert bracket|extract ...` run the separate producer program next to
// this one, so that the trusted binary never links producer code.
int exec_producer(int argc, char** argv) {
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    fs::path prog = (ec ? fs::path(argv[0]).parent_path() : self.parent_path()) / "rankcert-produce";
    std::vector<char*> args;
    std::string p = prog.string();
    args.push_back(p.data());
    for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
    args.push_back(nullptr);
    execv(p.c_str(), args.data());
    std::cerr << "rankcert: cannot run " << p << " (build it with ./build.sh build)\n";
    return exit_input;
}

// FLINT and Arb abort the process when an allocation fails (their own
// memory manager, not std::bad_alloc).  Say so in one line and exit with the
// internal-error status instead of dumping core.
[[noreturn]] void on_flint_abort() {
    static const char msg[] = "rankcert: FLINT/Arb failed (out of memory): internal error\n";
    [[maybe_unused]] const auto n = write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(exit_internal);
}

int main(int argc, char** argv) {
    flint_set_abort(on_flint_abort);
    if (argc > 1 && (std::string(argv[1]) == "bracket" || std::string(argv[1]) == "extract" ||
                     std::string(argv[1]) == "construct" || std::string(argv[1]) == "profile" ||
                     std::string(argv[1]) == "audit" || std::string(argv[1]) == "report" ||
                     std::string(argv[1]) == "survey"))
        return exec_producer(argc, argv);
    try {
        CLI::App app{"rankcert: a proof checker for the low-rank complexity of softmax attention.\n"
                     "Verifies certified brackets L <= r_eps(A) <= U with exact and ball arithmetic.",
                     "rankcert"};
        app.set_version_flag("--version", std::string("rankcert ") + RANKCERT_VERSION);
        app.require_subcommand(1);

        VerifyArgs va;
        auto* verify_cmd = app.add_subcommand(
            "verify", "Check certificate bundles (files, or folders walked recursively). Exit 0 verified, 1 refuted, "
                      "2 undecided, 3 input error.");
        verify_cmd->add_option("paths", va.paths, "Bundle files or folders")->required();
        verify_cmd->add_flag("--json", va.json_out, "Print one JSON object on standard output");
        verify_cmd->add_option("--witness", va.witness,
                               "Write a witness file (for a folder: a folder of witnesses, one per bundle)");
        verify_cmd->add_option("--max-prec", va.max_prec, "Highest ball precision in bits (default 2048)")
            ->check(CLI::Range(64, 1 << 16));
        verify_cmd->add_option("--threads", va.threads, "Worker threads (default: one per core)")->check(CLI::Range(0, 64));
        verify_cmd->add_flag("--no-fast", va.no_fast, "Skip the binary64 tier: decide every row on the Arb ladder");
        verify_cmd->add_flag("-q,--quiet", va.quiet, "Print only the summary line (and errors)");

        app.add_subcommand("bracket",
                           "Find and certify brackets for an instance (runs the separate, untrusted producer "
                           "rankcert-produce; see rankcert bracket --help)");
        app.add_subcommand("construct",
                           "Exact sphere and ball families with certified sweeps over beta or eps "
                           "(untrusted producer; see rankcert construct --help)");
        app.add_subcommand("profile",
                           "Intrinsic interaction geometry of a head with certified enclosures "
                           "(untrusted producer; see rankcert profile --help)");
        app.add_subcommand("extract",
                           "Run a llama2.c checkpoint or a HuggingFace folder over a text and write every head's Q, K "
                           "as instances (untrusted producer; see rankcert extract --help)");
        app.add_subcommand("audit",
                           "Decide a table of rank claims (confirmed / refuted / open) with verified certificates "
                           "(untrusted producer; see rankcert audit --help)");
        app.add_subcommand("survey",
                           "Bracket every head of a model (a folder of instances from rankcert extract) at several eps, "
                           "with jobs, resume and shards; rankcert report draws it (see rankcert survey --help)");
        app.add_subcommand("report", "One self-contained HTML page for an audit or survey (see rankcert report --help)");

        std::string show_path;
        auto* show_cmd = app.add_subcommand("show", "Print back what was parsed from a bundle (shapes, eps, certificates)");
        show_cmd->add_option("bundle", show_path, "Bundle file")->required();

        try {
            app.parse(argc, argv);
        } catch (const CLI::CallForHelp& e) {
            return app.exit(e);
        } catch (const CLI::CallForAllHelp& e) {
            return app.exit(e);
        } catch (const CLI::CallForVersion& e) {
            return app.exit(e);
        } catch (const CLI::ParseError& e) {
            std::cerr << "rankcert: " << e.what() << " (see rankcert --help)\n";
            return exit_input;
        }
        if (*verify_cmd) return run_verify(va);
        if (*show_cmd) {
            try {
                Bundle b = load_bundle(show_path, show_path);
                std::cout << describe(b);
                return 0;
            } catch (const InputError& e) {
                std::cerr << e.what() << "\n";
                return exit_input;
            }
        }
        return exit_input;
    } catch (const std::logic_error& e) {
        std::cerr << "rankcert: internal error: " << e.what() << "\n";
        return exit_internal;
    } catch (const std::exception& e) {
        std::cerr << "rankcert: internal error: " << e.what() << "\n";
        return exit_internal;
    }
}
