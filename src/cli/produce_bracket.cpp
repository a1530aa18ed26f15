// rankcert bracket (rankcert-produce); see src/cli/produce_main.cpp.
#include "produce.hpp"

#include <atomic>
#include <csignal>
#include <fstream>
#include <set>

namespace rankcert::cli {

namespace {

// SIGINT / SIGTERM: the search stops at its next step, keeps the bundles it
// has published, removes its scratch files and prints its results.  A second
// signal ends the process at once.
std::atomic<bool> stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_stop_signal(int sig) {
    stop_requested.store(true);
    std::signal(sig, SIG_DFL);
}

// File stem for the bundles of a tensor spec: "heads.npy[0,3]" -> "heads-0-3".
std::string tensor_stem(const std::string& spec) {
    const TensorSpec t = parse_tensor_spec(spec);
    std::string stem = fs::path(t.path).stem().string();
    for (auto i : t.index) stem += "-" + std::to_string(i);
    return stem;
}

// The certificates of an earlier bundle of the same instance (same n, N,
// temperature) as hints: neumann and factor rewritten with sidecars in out,
// kinds without sidecars (zonal) as they are.  The checker decides them
// again like any candidate.
// Whether j names a sidecar anywhere ({"npy": ...} or {"safetensors": ...}):
// such a certificate's paths are relative to its own bundle, not to out.
bool refers_to_file(const json& j) {
    if (j.is_object()) {
        if (j.contains("npy") || j.contains("safetensors")) return true;
        for (const auto& [k, v] : j.items())
            if (refers_to_file(v)) return true;
    } else if (j.is_array()) {
        for (const auto& v : j)
            if (refers_to_file(v)) return true;
    }
    return false;
}

void add_start_hints(const std::string& path, const json& inst, const std::string& out, const std::string& stem,
                     std::vector<json>& hints) {
    const Bundle b = load_bundle(path, path);
    const Bundle now = parse_instance(inst, out, stem);
    const Instance &was = b.instance, &is = now.instance;
    if (was.n != is.n || was.N != is.N || !(was.temperature == is.temperature) || was.kind != is.kind)
        throw InputError(path + ": --start-from needs a bundle of the same instance (n, N, temperature)");
    // A tag no file in out starts with: the hints never overwrite a sidecar
    // that a bundle already in the folder (an earlier run's) refers to.
    std::string tag;
    for (std::size_t t = hints.size();; ++t) {
        tag = stem + ".start" + std::to_string(t) + "-";
        bool clash = false;
        for (const auto& e : fs::directory_iterator(out))
            if (e.path().filename().string().rfind(tag, 0) == 0) clash = true;
        if (!clash) break;
    }
    for (std::size_t c = 0; c < b.certificates.size(); ++c) {
        const Certificate& cert = b.certificates[c];
        const std::string name = tag + std::to_string(c);
        if (cert.kind() == CertKind::neumann) {
            const auto& nc = cert.as<NeumannCert>();
            NeumannCandidate cand;
            cand.rows = nc.rows;
            cand.N = is.N;
            for (const auto& e : nc.r.entries) cand.r.push_back({e.row, e.col, fmpq_get_d(e.val.get())});
            cand.method = "start";
            hints.push_back(neumann_json(cand, out, name));
        } else if (cert.kind() == CertKind::factor) {
            const auto& fc = cert.as<FactorCert>();
            FactorCandidate cand;
            cand.k = cert.rank;
            cand.U = Mat(static_cast<Eigen::Index>(fc.u.rows), static_cast<Eigen::Index>(cand.k));
            cand.W = Mat(static_cast<Eigen::Index>(fc.w.rows), static_cast<Eigen::Index>(cand.k));
            for (std::size_t i = 0; i < fc.u.rows; ++i)
                for (std::size_t t = 0; t < cand.k; ++t) cand.U(i, t) = fmpq_get_d(fc.u(i, t).get());
            for (std::size_t j = 0; j < fc.w.rows; ++j)
                for (std::size_t t = 0; t < cand.k; ++t) cand.W(j, t) = fmpq_get_d(fc.w(j, t).get());
            cand.method = "start";
            hints.push_back(factor_json(cand, out, name));
        }
    }
    // Certificates of the other kinds that need no sidecar (zonal: p + 2
    // numbers) go in as they are; without them a sphere bundle's zonal U
    // (49 at 300 points, beta 8) came back as the factor search's 62.
    std::ifstream in(path);
    const json doc = json::parse(in, nullptr, false);
    if (doc.is_object() && doc.contains("certificates") && doc["certificates"].is_array())
        for (const auto& c : doc["certificates"]) {
            if (!c.is_object() || !c.contains("kind") || !c.contains("bound") || !c.contains("rank")) continue;
            const std::string kind = c["kind"].is_string() ? c["kind"].get<std::string>() : "";
            if (kind == "neumann" || kind == "factor" || kind == "trivial" || refers_to_file(c)) continue;
            hints.push_back(c);
        }
}

// Every {"npy": name} below j.
void npy_names(const json& j, std::set<std::string>& out) {
    if (j.is_object()) {
        if (auto it = j.find("npy"); it != j.end() && it->is_string()) out.insert(it->get<std::string>());
        for (const auto& v : j) npy_names(v, out);
    } else if (j.is_array()) {
        for (const auto& v : j) npy_names(v, out);
    }
}

// The start hints' sidecars that no bundle in out names: neither one this
// run published (also when the run ended by an exception, after publishing
// some) nor one that was there before.  The hints' names are fresh, so
// everything removed here was written by this run.
void remove_unused_start_sidecars(const std::vector<json>& hints, const std::string& out) {
    std::set<std::string> written, used;
    for (const auto& h : hints) npy_names(h, written);
    if (written.empty()) return;
    for (const auto& e : fs::directory_iterator(out)) {
        if (e.path().extension() != ".json") continue;
        try {
            npy_names(read_document(e.path().string(), e.path().string()), used);
        } catch (const std::exception&) {  // not a JSON document: names nothing
        }
    }
    for (const auto& f : written)
        if (!used.count(f)) fs::remove(fs::path(out) / f);
}

}  // namespace

int bracket_main(int argc, char** argv) {
    CLI::App app{"rankcert bracket: find certificates for L <= r_eps(A) <= U, verify them with the trusted checker, "
                 "and write one rankcert/1 bundle per eps.",
                 "rankcert bracket"};
    app.set_version_flag("--version", std::string("rankcert ") + RANKCERT_VERSION);
    std::string instance, q, k, logits, matrix, scale = "", mask, temperature, key_bias, eps_text = "0.1", out = ".",
                                                              name = "", provenance;
    bool json_out = false, no_tail = false, no_lp = false, quiet = false;
    std::vector<std::string> start_from;
    std::string focus = "both";
    slong max_prec = PrecisionLadder::default_max_bits;
    unsigned threads = 0;
    std::uint64_t seed = 0;
    app.add_option("--instance", instance, "Bundle or bundle-style instance JSON (its sidecars are copied)");
    app.add_option("--q", q, "Queries: Q.npy, F.npz:NAME or F.safetensors:NAME; a trailing [i,j] selects a slice of a stacked tensor (F.npy[0,3]: batch 0, head 3)");
    app.add_option("--k", k, "Keys (same forms)");
    app.add_option("--scale", scale, "Logit scale: a number (1/8, 0.125) or rsqrt:D for 1/sqrt(D)");
    app.add_option("--mask", mask, "none, causal, or a boolean tensor");
    app.add_option("--temperature", temperature, "Temperature multiplier t (logits t*s*<q,k>)");
    app.add_option("--key-bias", key_bias, "Key log-weights (tensor of length N)");
    app.add_option("--logits", logits, "Logits tensor (n x N; -inf masks)");
    app.add_option("--matrix", matrix, "Attention matrix tensor (n x N)");
    app.add_option("--eps", eps_text, "Tolerances, comma separated (default 0.1)");
    app.add_option("--out", out, "Output folder (default .)");
    app.add_option("--name", name, "File stem of the bundles (default: from the input)");
    app.add_option("--provenance", provenance, "JSON object recorded as the bundles' provenance");
    app.add_flag("--json", json_out, "Print the results as JSON");
    app.add_flag("--no-tail", no_tail, "Skip tail certificates");
    app.add_flag("--no-lp", no_lp, "Skip the LP growth of Neumann certificates");
    double lp_budget = 4;
    int refits = 1;
    app.add_option("--refits", refits, "Ignored (the per-row L1 refits it counted gave way to the smooth factor search)");
    app.add_option("--lp-budget", lp_budget, "Seconds of LP growth per eps (default 4)");
    double time_budget = 0, eps_budget = 0;
    app.add_option("--time-budget", time_budget,
                   "Seconds for the whole run (default per eps: 20, or 0.07 per token where that is more, "
                   "i.e. 36 at 512 tokens; at most 450 in all); the first bracket at every eps is always completed")
        ->check(seconds_check());
    app.add_option("--eps-budget", eps_budget, "At most this many seconds of factor search per eps")
        ->check(seconds_check());
    bool no_interpolative = false;
    app.add_flag("--no-interpolative", no_interpolative, "Skip the greedy row-interpolative search (small instances)");
    app.add_flag("-q,--quiet", quiet, "No progress output");
    bool search_log = false;
    app.add_flag("--log", search_log, "One line per lower-bound search on stderr (rows before and after, moves made) and, per open bracket, the factor search's closest miss at U - 1; also with -q");
    app.add_option("--start-from", start_from,
                   "Bundles of the same instance (e.g. an earlier run's): their neumann and factor certificates, and those of other kinds without sidecars (zonal), "
                   "are offered to the checker first, and the search grows from the best of them");
    app.add_option("--focus", focus, "both (default), lower or upper: after the first bracket, the whole budget goes to "
                                     "lower bounds, or to the factor search")
        ->check(CLI::IsMember({"both", "lower", "upper"}));
    app.add_option("--max-prec", max_prec, "Highest checker precision in bits")->check(CLI::Range(64, 1 << 16));
    app.add_option("--threads", threads, "Threads of the checker and of the row search (default: one per core)")->check(CLI::Range(0, 64));
    app.add_option("--seed", seed, "Seed of the Gaussian starts of the late factor search (default 0; the same seed "
                                   "repeats the same starts, another tries new ones)");
    return run_command(app, argc, argv, "rankcert bracket", [&]() -> int {
        const int sources = !instance.empty() + !q.empty() + !logits.empty() + !matrix.empty();
        if (sources != 1) throw InputError("rankcert bracket: give exactly one of --instance, --q/--k, --logits, --matrix");
        ensure_output_folder(out, "--out");
        BracketOptions opt;
        opt.eps = parse_eps_list(eps_text);
        opt.out_dir = out;
        opt.check.max_prec = max_prec;
        opt.check.threads = threads;
        opt.tail = !no_tail;
        opt.lp = !no_lp && lp_budget > 0;
        opt.lower.lp_budget = lp_budget;
        (void)refits;
        opt.time_budget = time_budget;
        opt.eps_budget = eps_budget;
        opt.interpolative = !no_interpolative;
        opt.stop = &stop_requested;
        std::signal(SIGINT, on_stop_signal);
        std::signal(SIGTERM, on_stop_signal);
        const auto start = std::chrono::steady_clock::now();
        auto stamp = [start]() {
            std::ostringstream o;
            o << "[" << std::fixed << std::setprecision(1)
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << "s] ";
            return o.str();
        };
        if (search_log) opt.search_log = [](const std::string& s) { std::cerr << "rankcert bracket: " << s << "\n"; };
        if (!quiet && isatty(STDERR_FILENO))
            opt.progress = [stamp](const std::string& s) { std::cerr << "\r\033[K" << stamp() << s << std::flush; };
        else if (!quiet)
            opt.progress = [stamp](const std::string& s) { std::cerr << stamp() << s << "\n"; };
        json inst;
        std::string stem = name;
        if (!instance.empty()) {
            json doc = read_document(instance, instance);
            inst = doc.contains("instance") ? doc["instance"] : doc;
            if (doc.contains("provenance") && provenance.empty()) opt.provenance = doc["provenance"];
            copy_instance_sidecars(inst, fs::path(instance).parent_path(), out, instance);
            if (stem.empty()) {
                // A bundle's file is named after its eps (NAME-eps0.1.json):
                // the new bundles get NAME-epsE.json, not NAME-eps0.1-epsE.json.
                stem = fs::path(instance).stem().string();
                const std::string tail = doc.contains("eps") && doc["eps"].is_string()
                                             ? "-eps" + doc["eps"].get<std::string>()
                                             : std::string();
                if (!tail.empty() && stem.size() > tail.size() &&
                    stem.compare(stem.size() - tail.size(), tail.size(), tail) == 0)
                    stem.erase(stem.size() - tail.size());
            }
        } else if (!q.empty()) {
            if (k.empty() || scale.empty()) throw InputError("rankcert bracket: --q needs --k and --scale");
            if (stem.empty()) stem = tensor_stem(q);
            inst = {{"kind", "qk"},
                    {"q", exact_array_json(read_tensor(q), out, stem + ".q.npy")},
                    {"k", exact_array_json(read_tensor(k), out, stem + ".k.npy")}};
            if (scale.rfind("rsqrt:", 0) == 0) inst["scale"] = {{"rsqrt", scale.substr(6)}};
            else inst["scale"] = scale;
            if (!key_bias.empty()) inst["key_bias"] = exact_array_json(read_tensor(key_bias), out, stem + ".key_bias.npy");
            if (!mask.empty()) {
                if (mask == "none" || mask == "causal") inst["mask"] = mask;
                else inst["mask"] = exact_array_json(read_tensor(mask), out, stem + ".mask.npy");
            }
        } else if (!logits.empty()) {
            if (stem.empty()) stem = tensor_stem(logits);
            inst = {{"kind", "logits"}, {"logits", exact_array_json(read_tensor(logits, true), out, stem + ".logits.npy")}};
        } else {
            if (stem.empty()) stem = tensor_stem(matrix);
            inst = {{"kind", "matrix"}, {"a", exact_array_json(read_tensor(matrix), out, stem + ".a.npy")}};
        }
        if (!temperature.empty()) {
            if (inst.value("kind", "") != "qk") throw InputError("rankcert bracket: --temperature applies to qk instances");
            inst["temperature"] = temperature;
            stem += "-t" + temperature;
        }
        if (!provenance.empty()) opt.provenance = parse_json_text(provenance, "--provenance");
        opt.provenance["producer"] = std::string("rankcert bracket ") + RANKCERT_VERSION;
        opt.stem = stem;
        opt.lower_focus = focus == "lower";
        opt.upper_focus = focus == "upper";
        opt.seed = seed;
        std::vector<BracketResult> results;
        try {
            for (const auto& path : start_from) add_start_hints(path, inst, out, stem, opt.hints);
            results = run_bracket(inst, opt);
        } catch (...) {
            remove_unused_start_sidecars(opt.hints, out);
            throw;
        }
        remove_unused_start_sidecars(opt.hints, out);
        if (opt.progress && isatty(STDERR_FILENO)) std::cerr << "\r\033[K" << std::flush;
        if (stop_requested.load() && !quiet)
            std::cerr << "rankcert bracket: stopped by a signal; the bundles below hold the best brackets certified so far\n";
        // Stopped before the first bundle: nothing is certified, say so.
        int worst = results.empty() ? exit_undecided : exit_verified;
        json all = json::array();
        if (!json_out) {
            std::cout << std::left << std::setw(8) << "eps" << std::setw(12) << "bracket" << std::setw(8) << "closed"
                      << std::setw(20) << "lower by" << std::setw(20) << "upper by" << std::setw(10) << "verdict"
                      << "time    bundle\n";
        }
        for (const auto& r : results) {
            worst = worse(worst, exit_status(r.verdict));
            const std::string br = "[" + std::to_string(r.lower) + ", " + std::to_string(r.upper) + "]";
            if (json_out) {
                all.push_back({{"eps", r.eps_text}, {"lower", r.lower}, {"upper", r.upper}, {"closed", r.closed},
                               {"lower_kind", r.lower_kind}, {"upper_kind", r.upper_kind},
                               {"verdict", to_string(r.verdict)}, {"seconds", r.seconds}, {"bundle", r.bundle_path},
                               {"svd_rank", r.svd_rank}});
            } else {
                std::ostringstream t;
                t << std::fixed << std::setprecision(2) << r.seconds << "s";
                std::cout << std::left << std::setw(8) << r.eps_text << std::setw(12) << br << std::setw(8)
                          << (r.closed ? "yes" : "no") << std::setw(20) << r.lower_kind << std::setw(20) << r.upper_kind
                          << std::setw(10) << to_string(r.verdict) << std::setw(8) << t.str() << r.bundle_path << "\n";
            }
        }
        if (json_out) std::cout << json{{"results", all}}.dump(2) << "\n";
        return worst;
    });
}

}  // namespace rankcert::cli
