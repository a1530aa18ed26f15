// The `rankcert` command line.
//
//   rankcert verify PATH... [--json] [--witness OUT] [--max-prec BITS] [--threads T]
//   rankcert show BUNDLE
//
// Exit status of verify (FORMAT.md): 0 verified, 1 refuted, 2 undecided,
// 3 input or usage error, 4 internal error.  A folder is walked recursively;
// the exit status is the worst met (input error, refuted, undecided, verified).
#include "rankcert/check.hpp"
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
#include <sstream>
#include <unistd.h>

#ifndef RANKCERT_VERSION
#define RANKCERT_VERSION "unknown"
#endif

namespace fs = std::filesystem;
using namespace rankcert;

namespace {

constexpr int exit_verified = 0, exit_refuted = 1, exit_undecided = 2, exit_input = 3, exit_internal = 4;

int severity(int code) {
    switch (code) {
    case exit_verified: return 0;
    case exit_undecided: return 1;
    case exit_refuted: return 2;
    case exit_input: return 3;
    default: return 4;
    }
}

int exit_code(Verdict v) {
    switch (v) {
    case Verdict::verified: return exit_verified;
    case Verdict::refuted: return exit_refuted;
    case Verdict::undecided: return exit_undecided;
    }
    return exit_undecided;
}

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

void write_json_file(const fs::path& p, const json& j) {
    std::error_code ec;
    if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
    std::ofstream out(p);
    if (!out) throw InputError(p.string() + ": cannot write witness file");
    out << j.dump(2) << "\n";
    if (!out) throw InputError(p.string() + ": cannot write witness file");
}

struct VerifyArgs {
    std::vector<std::string> paths;
    bool json_out = false;
    bool quiet = false;
    std::string witness;
    slong max_prec = PrecisionLadder::default_max_bits;
    unsigned threads = 0;
};

int run_verify(const VerifyArgs& a) {
    // Collect bundles: files named directly, and every .json under folders.
    struct Item {
        fs::path path;
        std::string display;
        fs::path rel;  // for witness naming inside a folder
        bool from_folder;
    };
    std::vector<Item> items;
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
                return exit_input;
            }
            std::sort(found.begin(), found.end());
            for (auto& f : found) items.push_back({f, f.string(), fs::relative(f, p, ec), true});
        } else if (fs::exists(p, ec)) {
            items.push_back({p, p, fs::path(p).filename(), false});
        } else {
            std::cerr << p << ": no such file or folder\n";
            return exit_input;
        }
    }
    const bool many = items.size() != 1 || items.front().from_folder;
    if (!a.witness.empty() && many) {
        std::error_code ec;
        fs::create_directories(a.witness, ec);
        if (ec) {
            std::cerr << a.witness << ": cannot create witness folder: " << ec.message() << "\n";
            return exit_input;
        }
    }

    CheckOptions opt;
    opt.max_prec = a.max_prec;
    opt.threads = a.threads;
    const bool tty = isatty(STDERR_FILENO);
    int worst = exit_verified;
    std::vector<Row> rows;
    json all = json::array();
    // Reports by file, so that a sweep and a folder walk check each bundle once.
    std::map<std::string, std::pair<Report, std::string>> cache;
    auto verify_file = [&](const fs::path& p) -> std::pair<Report, std::string> {
        std::error_code ec;
        const std::string key = fs::weakly_canonical(p, ec).string();
        if (auto f = cache.find(key); f != cache.end()) return f->second;
        Bundle b = load_bundle(p, p.string());
        Report r = verify(b, opt);
        return cache[key] = {r, b.sha256};
    };
    for (const auto& it : items) {
        int code;
        try {
            std::string sha;
            const json doc = read_document(it.path, it.display, &sha);
            const std::string format = doc.is_object() && doc.contains("format") && doc["format"].is_string()
                                           ? doc["format"].get<std::string>()
                                           : "";
            if (format == "rankcert-sweep/1") {
                const auto t0 = std::chrono::steady_clock::now();
                SweepReport sr = verify_sweep(doc, it.path.parent_path(), it.display, verify_file);
                const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                code = exit_code(sr.verdict);
                auto approx = [](const Endpoints& e) {
                    if (!e.bounded) return std::string("?");
                    std::ostringstream o;
                    o << std::setprecision(4) << (fmpq_get_d(e.lo.get()) + fmpq_get_d(e.hi.get())) / 2;
                    return o.str();
                };
                rows.push_back({it.display, "sweep", "slopes L " + approx(sr.slope_L) + ", U " + approx(sr.slope_U), "-",
                                to_string(sr.verdict), fixed(secs, 2) + "s"});
                json pts = json::array();
                for (const auto& p : sr.points)
                    pts.push_back({{"bundle", p.bundle}, {"verdict", to_string(p.verdict)}, {"lower", p.L}, {"upper", p.U},
                                   {"detail", p.detail}});
                auto ends = [](const Endpoints& e) {
                    return e.bounded ? json::array({e.lo.str(), e.hi.str()}) : json::array({"-inf", "inf"});
                };
                all.push_back({{"sweep", it.display}, {"verdict", to_string(sr.verdict)}, {"points", pts},
                               {"slope_L", ends(sr.slope_L)}, {"slope_U", ends(sr.slope_U)},
                               {"fit_L", to_string(sr.fit_L)}, {"fit_U", to_string(sr.fit_U)}, {"detail", sr.detail},
                               {"seconds", secs}});
                if (!a.json_out && !a.quiet && (!many || sr.verdict != Verdict::verified)) {
                    if (many) std::cout << it.display << ":\n";
                    std::cout << "  " << sr.detail << "\n";
                    for (const auto& p : sr.points)
                        if (p.verdict != Verdict::verified)
                            std::cout << "  " << p.bundle << ": " << to_string(p.verdict) << " " << p.detail << "\n";
                }
                if (severity(code) > severity(worst)) worst = code;
                continue;
            }
            if (format != "rankcert/1") {
                if (it.from_folder) continue;  // witnesses, summaries, instances
                throw InputError(it.display + ": format: not a rankcert/1 bundle or rankcert-sweep/1 witness");
            }
            std::optional<Bundle> b = parse_bundle(doc, it.path.parent_path(), it.display);
            b->sha256 = sha;
            if (tty && !a.quiet)
                opt.progress = [&](const std::string& s) {
                    std::cerr << "\r\033[K" << it.display << ": " << s << std::flush;
                };
            Report r = verify(*b, opt);
            {
                std::error_code ec;
                cache[fs::weakly_canonical(it.path, ec).string()] = {r, sha};
            }
            if (tty && !a.quiet) std::cerr << "\r\033[K" << std::flush;
            code = exit_code(r.verdict);
            rows.push_back({it.display, eps_text(b->eps),
                            "[" + std::to_string(r.lower) + ", " + std::to_string(r.upper) + "]",
                            r.closed ? "yes" : "no", to_string(r.verdict), fixed(r.seconds, 2) + "s"});
            json rj = report_json(*b, r);
            all.push_back(rj);
            if (!a.json_out && !a.quiet && (!many || r.verdict != Verdict::verified)) {
                std::ostringstream o;
                for (const auto& c : r.certificates)
                    o << "  cert[" << c.index << "] " << (c.kind == CertKind::profile ? "" : c.upper ? "upper " : "lower ") << to_string(c.kind) << " rank "
                      << c.rank << ": " << to_string(c.verdict) << " (" << c.precision
                      << (c.precision == "exact" || c.precision == "theorem" ? "" : " bits") << ") " << c.detail << "\n";
                o << "  " << r.claim_detail << "\n";
                if (many) std::cout << it.display << ":\n";
                std::cout << o.str();
            }
            if (!a.witness.empty()) {
                fs::path out = many ? fs::path(a.witness) / (it.rel.string() + ".witness.json") : fs::path(a.witness);
                write_json_file(out, witness_json(*b, r, RANKCERT_VERSION));
            }
        } catch (const InputError& e) {
            if (tty && !a.quiet) std::cerr << "\r\033[K";
            std::cerr << e.what() << "\n";
            code = exit_input;
            rows.push_back({it.display, "-", "-", "-", "input error", "-"});
            all.push_back({{"bundle", it.display}, {"verdict", "input error"}, {"error", e.what()}});
        } catch (const std::bad_alloc&) {
            std::cerr << it.display << ": out of memory while checking\n";
            code = exit_input;
            rows.push_back({it.display, "-", "-", "-", "out of memory", "-"});
            all.push_back({{"bundle", it.display}, {"verdict", "input error"}, {"error", "out of memory"}});
        }
        if (severity(code) > severity(worst)) worst = code;
    }
    if (a.json_out) {
        if (!many && all.size() == 1) {
            std::cout << all[0].dump(2) << "\n";
        } else {
            const char* names[] = {"verified", "undecided", "refuted", "input error", "internal error"};
            std::cout << json{{"verdict", names[severity(worst)]}, {"bundles", all}}.dump(2) << "\n";
        }
    } else {
        if (rows.empty()) {
            std::cerr << "no rankcert/1 bundles found\n";
            return exit_input;
        }
        print_table(rows);
        if (many) {
            std::size_t counts[5] = {0, 0, 0, 0, 0}, closed = 0;
            double secs = 0;
            for (const auto& j : all) {
                const std::string v = j["verdict"];
                counts[v == "verified" ? 0 : v == "undecided" ? 1 : v == "refuted" ? 2 : 3]++;
                if (j.contains("closed") && j["closed"].get<bool>()) ++closed;
                if (j.contains("seconds")) secs += j["seconds"].get<double>();
            }
            std::cout << all.size() << " files: " << counts[0] << " verified, " << counts[2] << " refuted, " << counts[1]
                      << " undecided, " << counts[3] << " input errors; " << closed << " brackets closed; "
                      << fixed(secs, 1) << "s checking\n";
        }
    }
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

int main(int argc, char** argv) {
    if (argc > 1 && (std::string(argv[1]) == "bracket" || std::string(argv[1]) == "extract" ||
                     std::string(argv[1]) == "construct" || std::string(argv[1]) == "profile"))
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
        verify_cmd->add_flag("-q,--quiet", va.quiet, "Only the summary table");

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
                           "Run a llama2.c checkpoint over a text and write every head's Q, K as instances "
                           "(untrusted producer; see rankcert extract --help)");

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
