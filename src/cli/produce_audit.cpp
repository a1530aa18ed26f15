// rankcert audit / rankcert report (rankcert-produce); see docs/audit.md.
#include "produce.hpp"
#include "rankcert/producer/linalg.hpp"

#include <atomic>
#include <csignal>
#include <fcntl.h>
#include <sys/file.h>
#include <cstdlib>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>

namespace rankcert::cli {

namespace {

std::atomic<bool> g_halt{false}, g_interrupted{false};

extern "C" void on_audit_signal(int sig) {
    g_interrupted.store(true);
    g_halt.store(true);
    std::signal(sig, SIG_DFL);
}

void write_atomic(const fs::path& path, const std::string& text) {
    const fs::path tmp = path.parent_path() / ("." + path.filename().string() + ".tmp");
    {
        std::ofstream out(tmp);
        out << text;
        if (!out) throw std::runtime_error("cannot write " + tmp.string());
    }
    fs::rename(tmp, path);
}

// A result written by an earlier run (or by another machine, for merge):
// checked for shape; null when it is damaged or not a result (resume
// decides such a claim again).
json read_result_or_null(const fs::path& p) {
    try {
        return read_result(p);
    } catch (const InputError&) {
        return json();
    }
}

// One audit at a time per folder: an exclusive lock on DIR/.lock, held until
// the process exits.  A second run on the same folder stops with one line.
void lock_audit_folder(const fs::path& dir) {
    const fs::path lp = dir / ".lock";
    const int fd = ::open(lp.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) throw InputError(lp.string() + ": cannot open the audit folder's lock file");
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0)
        throw InputError(dir.string() + ": another rankcert audit is writing to this folder (wait for it, or use another -o)");
    // fd stays open (and locked) until exit; worker processes inherit it.
}

// Copy a shard's claim folder: regular files only, each confined to both
// folders (a symlink in a shard is refused, never followed).
void copy_claim_folder(const fs::path& from, const fs::path& to, const std::string& shard) {
    std::error_code ec;
    if (fs::is_symlink(from, ec)) throw InputError(from.string() + ": a symlink, not a claim folder");
    try {
        for (auto it = fs::recursive_directory_iterator(from); it != fs::recursive_directory_iterator(); ++it) {
            const fs::path rel = it->path().lexically_relative(from);
            const Where w{shard, "claims/" + from.filename().string() + "/" + rel.generic_string()};
            if (it->is_symlink()) throw InputError(w, "is a symlink (refused)");
            if (it->is_directory()) continue;
            if (!it->is_regular_file()) throw InputError(w, "is not a regular file");
            copy_confined(from, to, rel.generic_string(), w);
        }
    } catch (const fs::filesystem_error& e) {
        throw InputError(from.string() + ": cannot read the claim folder (" + e.code().message() + ")");
    }
}

std::string summary_line(const json& counts) {
    return std::to_string(counts.value("confirmed", 0)) + " confirmed, " + std::to_string(counts.value("refuted", 0)) +
           " refuted, " + std::to_string(counts.value("open", 0)) + " open, " +
           (counts.value("bracketed", 0) ? std::to_string(counts.value("bracketed", 0)) + " bracketed, " : std::string()) +
           std::to_string(counts.value("error", 0)) + " errors";
}

int merge_main(int argc, char** argv) {
    CLI::App app{"rankcert audit merge: join the results of audit shards (folders) into one audit folder.",
                 "rankcert audit merge"};
    std::vector<std::string> sources;
    std::string out;
    app.add_option("sources", sources, "Audit folders written by rankcert audit (e.g. one per shard)")->required();
    app.add_option("-o,--out", out, "Merged audit folder (may be one of the sources)")->required();
    return run_command(app, argc, argv, "rankcert audit merge", [&]() -> int {
        fs::create_directories(fs::path(out) / "results");
        fs::create_directories(fs::path(out) / "claims");
        lock_audit_folder(out);
        int copied = 0;
        for (const auto& src : sources) {
            const fs::path rd = fs::path(src) / "results";
            if (std::error_code ec; !fs::is_directory(rd, ec)) throw InputError(src + ": not an audit folder (no results/)");
            std::error_code ec;
            if (fs::equivalent(src, out, ec)) continue;
            std::vector<fs::path> files;
            try {
                for (const auto& e : fs::directory_iterator(rd)) files.push_back(e.path());
            } catch (const fs::filesystem_error& e) {
                throw InputError(rd.string() + ": cannot read the folder (" + e.code().message() + ")");
            }
            for (const auto& path : files) {
                if (path.extension() != ".json" || path.filename().string()[0] == '.') continue;
                const json r = read_result(path);  // the id is valid and names this file
                const std::string id = r["id"];
                const fs::path dst = fs::path(out) / "results" / (id + ".json");
                if (path_exists(dst)) {
                    const json old = read_result(dst);
                    if (old.value("verdict", "") != r.value("verdict", "") || old.value("lower", 0) != r.value("lower", 0) ||
                        old.value("upper", 0) != r.value("upper", 0))
                        throw InputError(path.string() + ": claim " + id + " has a different result in " + dst.string());
                    continue;
                }
                if (path_exists(fs::path(src) / "claims" / id))
                    copy_claim_folder(fs::path(src) / "claims" / id, fs::path(out) / "claims" / id, src);
                write_atomic(dst, r.dump(1) + "\n");
                ++copied;
            }
        }
        const json doc = collect_audit(out, RANKCERT_VERSION);
        write_atomic(fs::path(out) / "audit.json", dump_document(doc, 1) + "\n");
        std::cout << "merged " << copied << " results from " << sources.size() << " folders; "
                  << doc["counts"].value("total", 0) << " claims: " << summary_line(doc["counts"]) << "; "
                  << (fs::path(out) / "audit.json").string() << "\n";
        return 0;
    });
}

}  // namespace

int audit_main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "merge") return merge_main(argc - 1, argv + 1);
    CLI::App app{"rankcert audit: decide every claim of a claims file (CSV or JSON Lines; docs/audit.md) as confirmed, "
                 "refuted or open, each from bundles the checker verified.  Resumable: a rerun skips claims already "
                 "decided.  `rankcert audit merge -o DIR SHARD...` joins shard folders.",
                 "rankcert audit"};
    std::string claims, out, shard;
    unsigned jobs = 1;
    double budget = 0;
    bool quiet = false, verbose = false;
    app.add_option("claims", claims, "Claims file (.csv, or .jsonl: one JSON object per line)")->required();
    app.add_option("-o,--out", out, "Audit folder (results/, claims/, audit.json)")->required();
    app.add_option("--jobs", jobs, "Claims decided in parallel (processes; default 1)")->check(CLI::Range(1, 256));
    app.add_option("--shard", shard,
                   "Only claims i, i+n, i+2n, ... (0-based i/n); default from SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN "
                   "and SLURM_ARRAY_TASK_COUNT when set");
    app.add_option("--time-budget", budget,
                   "Seconds of search per claim that stays open (default: rankcert bracket's default for one eps)")
        ->check(CLI::NonNegativeNumber);
    app.add_flag("-q,--quiet", quiet, "Only the summary line");
    app.add_flag("-v,--verbose", verbose, "The search's progress lines too");
    return run_command(app, argc, argv, "rankcert audit", [&]() -> int {
        const auto start = std::chrono::steady_clock::now();
        std::size_t si = 0, sn = 1;
        if (shard.empty() && std::getenv("SLURM_ARRAY_TASK_ID") && std::getenv("SLURM_ARRAY_TASK_COUNT")) {
            const long id = std::atol(std::getenv("SLURM_ARRAY_TASK_ID")), count = std::atol(std::getenv("SLURM_ARRAY_TASK_COUNT"));
            const long min = std::getenv("SLURM_ARRAY_TASK_MIN") ? std::atol(std::getenv("SLURM_ARRAY_TASK_MIN")) : 0;
            if (count < 1 || id - min < 0 || id - min >= count) throw InputError("SLURM_ARRAY_TASK_*: inconsistent array task numbers");
            si = static_cast<std::size_t>(id - min);
            sn = static_cast<std::size_t>(count);
        } else if (!shard.empty()) {
            const auto slash = shard.find('/');
            try {
                if (slash == std::string::npos) throw std::invalid_argument("");
                si = std::stoul(shard.substr(0, slash));
                sn = std::stoul(shard.substr(slash + 1));
            } catch (const std::exception&) {
                throw InputError("--shard: \"" + shard + "\" is not i/n");
            }
            if (sn == 0 || si >= sn) throw InputError("--shard: need 0 <= i < n, found " + shard);
        }
        const auto rows = read_claims(claims);
        const fs::path rdir = fs::path(out) / "results";
        fs::create_directories(rdir);
        lock_audit_folder(out);
        std::vector<std::size_t> todo;
        std::size_t skipped = 0;
        for (std::size_t i = 0; i < rows.size(); ++i) {
            if (i % sn != si) continue;
            const fs::path rp = rdir / (rows[i].id + ".json");
            if (path_exists(rp)) {
                const json old = read_result_or_null(rp);
                if (!old.is_null() && old.value("verdict", "error") != "error") {
                    ++skipped;
                    continue;
                }
                if (std::error_code ec; fs::is_symlink(rp, ec) || !fs::is_regular_file(rp, ec))
                    throw InputError(rp.string() + ": not a result file (remove it and rerun)");
                fs::remove(rp);
            }
            todo.push_back(i);
        }
        if (!quiet)
            std::cerr << "rankcert audit: " << rows.size() << " claims in " << claims << "; this run: " << todo.size()
                      << (sn > 1 ? " (shard " + std::to_string(si) + "/" + std::to_string(sn) + ")" : std::string())
                      << (skipped ? ", " + std::to_string(skipped) + " already decided" : std::string()) << "\n";
        AuditOptions opt;
        opt.claims_path = claims;
        opt.out_dir = out;
        opt.time_budget = budget;
        opt.threads = jobs > 1 ? 1 : 0;
        opt.stop = &g_halt;
        if (verbose) opt.progress = [](const std::string& s) { std::cerr << "  " << s << "\n"; };
        std::signal(SIGINT, on_audit_signal);
        std::signal(SIGTERM, on_audit_signal);
        auto decide = [&](std::size_t i) {
            g_halt.store(g_interrupted.load());
            if (g_interrupted.load()) return;
            json r = run_claim(rows[i], opt);
            if (g_interrupted.load()) return;  // stopped mid-claim: leave it for the next run
            if (r["verdict"] == "error") std::cerr << claims << ":" << rows[i].row << ": " << r.value("error", "") << "\n";
            write_atomic(rdir / (rows[i].id + ".json"), r.dump(1) + "\n");
        };
        // Progress: counts of the results this run wrote, and the time per claim.
        std::size_t shown = 0;
        json counts = {{"confirmed", 0}, {"refuted", 0}, {"open", 0}, {"bracketed", 0}, {"error", 0}};
        std::set<std::size_t> seen;
        auto poll = [&](bool final) {
            for (std::size_t i : todo) {
                if (seen.count(i) || !path_exists(rdir / (rows[i].id + ".json"))) continue;
                const json r = read_result_or_null(rdir / (rows[i].id + ".json"));
                if (r.is_null()) continue;  // not yet complete
                seen.insert(i);
                const std::string v = r.value("verdict", "error");
                counts[v] = counts.value(v, 0) + 1;
            }
            if (quiet || (seen.size() == shown && !(final && isatty(STDERR_FILENO)))) return;
            shown = seen.size();
            const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            std::ostringstream line;
            line << "[" << seen.size() << "/" << todo.size() << "] " << summary_line(counts) << "; "
                 << std::fixed << std::setprecision(1) << (seen.empty() ? 0.0 : t / static_cast<double>(seen.size()))
                 << " s per claim, " << t << " s";
            if (isatty(STDERR_FILENO)) std::cerr << "\r\033[K" << line.str() << (final ? "\n" : "") << std::flush;
            else std::cerr << line.str() << "\n";
        };
        if (jobs <= 1 || todo.size() <= 1) {
            for (std::size_t i : todo) {
                decide(i);
                poll(false);
                if (g_interrupted.load()) break;
            }
        } else {
            // Worker processes take the next claim from a shared counter.
            void* mem = mmap(nullptr, sizeof(std::atomic<std::size_t>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
            if (mem == MAP_FAILED) throw std::runtime_error("mmap failed");
            auto* next = new (mem) std::atomic<std::size_t>(0);
            static_assert(std::atomic<std::size_t>::is_always_lock_free);
            std::cout.flush();
            std::cerr.flush();
            std::vector<pid_t> kids;
            for (unsigned j = 0; j < std::min<std::size_t>(jobs, todo.size()); ++j) {
                const pid_t pid = fork();
                if (pid < 0) throw std::runtime_error("fork failed");
                if (pid == 0) {
                    int rc = 0;
                    try {
                        // One OpenBLAS thread per worker (unless
                        // OPENBLAS_NUM_THREADS is set): with two workers on
                        // two cores each worker's BLAS threads spun in
                        // sched_yield against the other worker.  Survey of
                        // the 40 heads of fresh seed 21 at eps 0.1, 4 s,
                        // --jobs 2: 41.5 s of system time against 3.8 s, and
                        // L +51, U -4 in sum, one more bracket closed.
                        const producer::BlasOnCaller one_blas_thread;
                        for (std::size_t k; (k = next->fetch_add(1)) < todo.size() && !g_interrupted.load();) decide(todo[k]);
                    } catch (const std::exception& e) {
                        std::cerr << "rankcert audit: worker: " << e.what() << "\n";
                        rc = 4;
                    }
                    std::cerr.flush();
                    _exit(rc);
                }
                kids.push_back(pid);
            }
            int worst = 0;
            for (std::size_t alive = kids.size(); alive > 0;) {
                int status = 0;
                const pid_t p = waitpid(-1, &status, WNOHANG);
                if (p > 0) {
                    --alive;
                    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) worst = 4;
                } else if (p < 0 && errno != EINTR) {
                    break;
                } else {
                    poll(false);
                    std::this_thread::sleep_for(std::chrono::milliseconds(300));
                }
            }
            munmap(mem, sizeof(std::atomic<std::size_t>));
            if (worst) throw std::runtime_error("a worker process failed (see above)");
        }
        poll(true);
        const json doc = collect_audit(out, RANKCERT_VERSION);
        write_atomic(fs::path(out) / "audit.json", dump_document(doc, 1) + "\n");
        const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::cout << doc["counts"].value("total", 0) << " claims: " << summary_line(doc["counts"]) << "; " << std::fixed
                  << std::setprecision(1) << t << " s; " << (fs::path(out) / "audit.json").string() << "\n";
        if (g_interrupted.load()) {
            std::cerr << "rankcert audit: stopped by a signal; rerun the same command to decide the remaining claims\n";
            return exit_undecided;
        }
        return doc["counts"].value("error", 0) > 0 ? exit_input : exit_verified;
    });
}

int report_main(int argc, char** argv) {
    CLI::App app{"rankcert report: one self-contained HTML page (inline SVG, no outside resources) for an audit folder: "
                 "the verdict table with filters, certified L and U against eps per head with the claims, heatmaps.",
                 "rankcert report"};
    std::string dir, out;
    app.add_option("dir", dir, "Audit folder (written by rankcert audit)")->required();
    app.add_option("-o,--out", out, "HTML file (default DIR/report.html)");
    return run_command(app, argc, argv, "rankcert report", [&]() -> int {
        if (std::error_code ec; !fs::is_directory(fs::path(dir) / "results", ec)) throw InputError(dir + ": not an audit folder (no results/)");
        lock_audit_folder(dir);
        if (out.empty()) out = (fs::path(dir) / "report.html").string();
        const json doc = collect_audit(dir, RANKCERT_VERSION);
        write_atomic(fs::path(dir) / "audit.json", dump_document(doc, 1) + "\n");
        const fs::path op = fs::absolute(out);
        fs::create_directories(op.parent_path());
        write_atomic(op, audit_report_html(doc, dir, op.parent_path().string()));
        std::cout << "wrote " << out << " (" << doc["counts"].value("total", 0) << " claims: " << summary_line(doc["counts"]) << ")\n";
        return 0;
    });
}

// rankcert survey: every instance of a folder (rankcert extract --out) x
// every eps as a claims file with the claim "none", decided by audit_main
// (same jobs, resume, shards, merge and report).
int survey_main(int argc, char** argv) {
    CLI::App app{"rankcert survey: bracket every head of a model at several eps.  HEADS are folders of instances as "
                 "rankcert extract writes them, or instance files; the survey is an audit without claims: "
                 "OUT/survey.jsonl lists one row per head and eps with the claim \"none\", each row gets its whole "
                 "time budget and the verdict \"bracketed\" with its certified [L, U].  Resumable, --jobs, --shard "
                 "and Slurm arrays as for rankcert audit; rankcert report OUT draws L and U against eps per head.",
                 "rankcert survey"};
    std::vector<std::string> heads;
    std::string out, shard, eps_text = "0.05,0.1,0.2", temps_text;
    unsigned jobs = 1;
    double budget = 0;
    bool quiet = false, verbose = false;
    app.add_option("heads", heads, "Folders of instance files (rankcert extract --out; bundles in them are skipped), or instance files")
        ->required();
    app.add_option("--eps", eps_text, "Tolerances, comma separated (default 0.05,0.1,0.2)");
    app.add_option("--temperature", temps_text,
                   "Temperature multipliers t, comma separated (logits t*s*<q,k>; qk instances); each head is bracketed "
                   "at every t (default: the instance as written)");
    app.add_option("-o,--out", out, "Survey folder (survey.jsonl, results/, claims/, audit.json)")->required();
    app.add_option("--jobs", jobs, "Brackets run in parallel (processes; default 1)")->check(CLI::Range(1, 256));
    app.add_option("--shard", shard, "Only rows i, i+n, ... (0-based i/n); default from SLURM_ARRAY_TASK_* when set");
    app.add_option("--time-budget", budget, "Seconds per head and eps (default: rankcert bracket's default for one eps)")
        ->check(CLI::NonNegativeNumber);
    app.add_flag("-q,--quiet", quiet, "Only the summary line");
    app.add_flag("-v,--verbose", verbose, "The search's progress lines too");
    return run_command(app, argc, argv, "rankcert survey", [&]() -> int {
        const auto eps_list = parse_eps_list(eps_text, "--eps");
        // Temperatures are exact numbers like eps (positive), kept as written.
        std::vector<std::string> temps;
        if (temps_text.empty()) temps.push_back("");
        else
            for (const auto& t : parse_eps_list(temps_text, "--temperature")) {
                if (t.exact.sign() == 0) throw InputError("--temperature: " + t.text + ": must be > 0");
                temps.push_back(t.text);
            }
        // Folders give their instance files (bundles in them are skipped: an
        // extract folder may hold the bundles of earlier runs); a file is taken as named.
        std::vector<fs::path> files;
        std::set<fs::path> from_folder;
        for (const auto& h : heads) {
            if (!path_exists(h)) throw InputError(h + ": no such file or folder");
            std::error_code ec;
            if (fs::is_directory(h, ec)) {
                std::vector<fs::path> here;
                try {
                    for (const auto& e : fs::directory_iterator(h))
                        if (e.path().extension() == ".json" && e.is_regular_file()) here.push_back(e.path());
                } catch (const fs::filesystem_error& e) {
                    throw InputError(h + ": cannot read the folder (" + e.code().message() + ")");
                }
                std::sort(here.begin(), here.end());
                for (const auto& f : here) from_folder.insert(f);
                files.insert(files.end(), here.begin(), here.end());
            } else {
                files.push_back(h);
            }
        }
        std::ostringstream rows;
        std::size_t n = 0;
        std::set<std::string> stems;  // file names that sanitise alike ("a b", "a_b") get -2, -3, ...
        for (const auto& f : files) {
            json doc = read_document(f, f.string());
            if (!doc.is_object() || !doc.contains("instance")) continue;  // not an instance (e.g. a witness)
            if (doc.contains("certificates") && from_folder.count(f)) continue;  // a bundle beside the instances
            const json prov = doc.contains("provenance") && doc["provenance"].is_object() ? doc["provenance"] : json::object();
            std::string stem = f.stem().string();
            for (char& c : stem)
                if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
            if (stem.empty() || stem[0] == '.' || stem[0] == '-') stem = "h" + stem;
            stem = stem.substr(0, 72);
            for (int k = 2; stems.count(stem); ++k) stem = stem.substr(0, 72) + "-" + std::to_string(k);
            stems.insert(stem);
            for (const auto& t : temps)
            for (const auto& e : eps_list) {
                json r = {{"id", stem + (t.empty() ? "" : "-t" + t) + "-eps" + e.file_text()}, {"eps", e.text}, {"claim", "none"},
                          {"instance", fs::absolute(f).string()}};
                if (!t.empty()) r["temperature"] = t;
                for (const char* k : {"model", "layer", "head"})
                    if (prov.contains(k) && (prov[k].is_string() || prov[k].is_number_integer()))
                        r[k] = prov[k].is_string() ? prov[k].get<std::string>() : std::to_string(prov[k].get<long long>());
                rows << r.dump() << "\n";
                ++n;
            }
        }
        if (n == 0) throw InputError(heads[0] + (heads.size() > 1 ? " ...": "") + ": no instance files (*.json with an \"instance\" object)");
        fs::create_directories(out);
        const fs::path list = fs::path(out) / "survey.jsonl";
        write_atomic(list, rows.str());
        if (!quiet)
            std::cerr << "rankcert survey: " << n / eps_list.size() / temps.size() << " heads x "
                      << (temps.size() > 1 ? std::to_string(temps.size()) + " temperatures x " : "") << eps_list.size() << " eps = " << n << " brackets in "
                      << list.string() << "\n";
        std::vector<std::string> args = {"rankcert survey", list.string(), "-o", out, "--jobs", std::to_string(jobs)};
        if (!shard.empty()) args.insert(args.end(), {"--shard", shard});
        if (budget > 0) args.insert(args.end(), {"--time-budget", std::to_string(budget)});
        if (quiet) args.push_back("-q");
        if (verbose) args.push_back("-v");
        std::vector<char*> av;
        for (auto& a : args) av.push_back(a.data());
        return audit_main(static_cast<int>(av.size()), av.data());
    });
}

}  // namespace rankcert::cli
