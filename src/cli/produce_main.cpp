// rankcert-produce: the untrusted producer commands, run as
//   rankcert bracket ...   find and certify the tightest brackets it can for
//                          one instance and several eps;
//   rankcert extract ...   run a llama2.c checkpoint over a text and write
//                          every head's post-RoPE Q, K as instances.
//
// This program links the untrusted producer (Eigen, GLPK) next to the trusted
// checker; `rankcert` itself never does.  Every bundle written here is
// verified from its file by the checker, and can be re-verified separately
// with `rankcert verify`.
#include "rankcert/producer/bracket.hpp"
#include "rankcert/producer/construct.hpp"
#include "rankcert/producer/llama2.hpp"
#include "rankcert/producer/profile.hpp"
#include "rankcert/profile.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <unistd.h>

#ifndef RANKCERT_VERSION
#define RANKCERT_VERSION "unknown"
#endif

namespace fs = std::filesystem;
using namespace rankcert;
using namespace rankcert::producer;

namespace {

// Copy the sidecars an instance refers to into the output folder.
void copy_sidecars(const json& inst, const fs::path& from, const fs::path& to) {
    for (const char* key : {"q", "k", "key_bias", "mask", "logits", "a"}) {
        if (!inst.contains(key) || !inst[key].is_object()) continue;
        for (const char* f : {"npy", "safetensors"}) {
            if (!inst[key].contains(f)) continue;
            const fs::path src = from / inst[key][f].get<std::string>();
            const fs::path dst = to / inst[key][f].get<std::string>();
            std::error_code ec;
            if (fs::equivalent(src, dst, ec)) continue;
            fs::create_directories(dst.parent_path());
            fs::copy_file(src, dst, fs::copy_options::overwrite_existing);
        }
    }
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
    slong max_prec = PrecisionLadder::default_max_bits;
    unsigned threads = 0;
    app.add_option("--instance", instance, "Bundle or bundle-style instance JSON (its sidecars are copied)");
    app.add_option("--q", q, "Queries: Q.npy, F.npz:NAME or F.safetensors:NAME");
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
    app.add_option("--refits", refits, "Alternating L1 refits of the factor per rank tried (default 1)");
    app.add_option("--lp-budget", lp_budget, "Seconds of LP growth per eps (default 4)");
    app.add_flag("-q,--quiet", quiet, "No progress output");
    app.add_option("--max-prec", max_prec, "Highest checker precision in bits")->check(CLI::Range(64, 1 << 16));
    app.add_option("--threads", threads, "Checker threads (default: one per core)");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);
        std::cerr << "rankcert bracket: " << e.what() << " (see rankcert bracket --help)\n";
        return 3;
    }
    try {
        const int sources = !instance.empty() + !q.empty() + !logits.empty() + !matrix.empty();
        if (sources != 1) throw InputError("rankcert bracket: give exactly one of --instance, --q/--k, --logits, --matrix");
        fs::create_directories(out);
        BracketOptions opt;
        opt.eps = parse_eps_list(eps_text);
        opt.out_dir = out;
        opt.check.max_prec = max_prec;
        opt.check.threads = threads;
        opt.tail = !no_tail;
        opt.lp = !no_lp && lp_budget > 0;
        opt.lower.lp_budget = lp_budget;
        opt.upper.alternations = refits;
        const auto start = std::chrono::steady_clock::now();
        auto stamp = [start]() {
            std::ostringstream o;
            o << "[" << std::fixed << std::setprecision(1)
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << "s] ";
            return o.str();
        };
        if (!quiet && isatty(STDERR_FILENO))
            opt.progress = [stamp](const std::string& s) { std::cerr << "\r\033[K" << stamp() << s << std::flush; };
        else if (!quiet)
            opt.progress = [stamp](const std::string& s) { std::cerr << stamp() << s << "\n"; };
        json inst;
        std::string stem = name;
        if (!instance.empty()) {
            json doc = read_json_file(instance, instance);
            inst = doc.contains("instance") ? doc["instance"] : doc;
            if (doc.contains("provenance") && provenance.empty()) opt.provenance = doc["provenance"];
            copy_sidecars(inst, fs::path(instance).parent_path(), out);
            if (stem.empty()) stem = fs::path(instance).stem().string();
        } else if (!q.empty()) {
            if (k.empty() || scale.empty()) throw InputError("rankcert bracket: --q needs --k and --scale");
            if (stem.empty()) stem = fs::path(q.substr(0, q.find(':'))).stem().string();
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
            if (stem.empty()) stem = fs::path(logits.substr(0, logits.find(':'))).stem().string();
            inst = {{"kind", "logits"}, {"logits", exact_array_json(read_tensor(logits, true), out, stem + ".logits.npy")}};
        } else {
            if (stem.empty()) stem = fs::path(matrix.substr(0, matrix.find(':'))).stem().string();
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
        auto results = run_bracket(inst, opt);
        if (opt.progress && isatty(STDERR_FILENO)) std::cerr << "\r\033[K" << std::flush;
        int worst = 0;
        json all = json::array();
        if (!json_out) {
            std::cout << std::left << std::setw(8) << "eps" << std::setw(12) << "bracket" << std::setw(8) << "closed"
                      << std::setw(20) << "lower by" << std::setw(20) << "upper by" << std::setw(10) << "verdict"
                      << "time    bundle\n";
        }
        for (const auto& r : results) {
            if (r.verdict != Verdict::verified) worst = std::max(worst, r.verdict == Verdict::refuted ? 1 : 2);
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
    } catch (const InputError& e) {
        std::cerr << e.what() << "\n";
        return 3;
    } catch (const std::exception& e) {
        std::cerr << "rankcert bracket: internal error: " << e.what() << "\n";
        return 4;
    }
}

namespace {

void write_f32_npy(const std::string& path, const std::vector<float>& v, std::size_t rows, std::size_t cols) {
    Mat m(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = v[i * cols + j];
    write_npy(path, m, true);
}

}  // namespace

int extract_main(int argc, char** argv) {
    CLI::App app{"rankcert extract: run a llama2.c checkpoint over a text and write, for every layer and query head, "
                 "the post-RoPE Q and K with the causal mask as an instance (JSON + .npy sidecars).",
                 "rankcert extract"};
    std::string checkpoint, tokenizer, text, text_file, out = ".", name = "text", generate;
    int steps = 64;
    app.add_option("--checkpoint", checkpoint, "llama2.c checkpoint (.bin)")->required();
    app.add_option("--tokenizer", tokenizer, "llama2.c tokenizer (tok*.bin)")->required();
    app.add_option("--text", text, "Text to run the model over");
    app.add_option("--text-file", text_file, "File holding the text");
    app.add_option("--out", out, "Output folder");
    app.add_option("--name", name, "Stem of the written files (default text)");
    app.add_option("--generate", generate, "Instead: print the greedy continuation of this prompt");
    app.add_option("--steps", steps, "Tokens to generate with --generate");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);
        std::cerr << "rankcert extract: " << e.what() << " (see rankcert extract --help)\n";
        return 3;
    }
    try {
        Llama2Model model(checkpoint);
        const auto& c = model.config();
        Llama2Tokenizer tok(tokenizer, c.vocab_size);
        if (!generate.empty()) {
            auto toks = model.greedy(tok.encode(generate), steps);
            std::string s;
            for (std::size_t i = 1; i < toks.size(); ++i) s += tok.decode(toks[i - 1], toks[i]);
            std::cout << s << "\n";
            return 0;
        }
        if (!text_file.empty()) {
            std::ifstream in(text_file);
            if (!in) throw InputError(text_file + ": cannot open file");
            text.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
        }
        if (text.empty()) throw InputError("rankcert extract: give --text or --text-file");
        const auto tokens = tok.encode(text);
        if (tokens.size() > static_cast<std::size_t>(c.seq_len))
            throw InputError("text: " + std::to_string(tokens.size()) + " tokens exceed seq_len " + std::to_string(c.seq_len));
        model.forward(tokens, true);
        fs::create_directories(out);
        const std::size_t T = tokens.size(), hs = static_cast<std::size_t>(c.head_size()),
                          dim = static_cast<std::size_t>(c.dim), kv = static_cast<std::size_t>(c.kv_dim());
        const int kv_mul = c.n_heads / c.n_kv_heads;
        auto file_sha = [](const std::string& path) {
            std::ifstream in(path, std::ios::binary);
            return sha256_hex(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
        };
        const std::string ck_sha = file_sha(checkpoint);
        int written = 0;
        for (int l = 0; l < c.n_layers; ++l) {
            const auto& Q = model.recorded_q()[static_cast<std::size_t>(l)];
            const auto& K = model.recorded_k()[static_cast<std::size_t>(l)];
            for (int g = 0; g < c.n_kv_heads; ++g) {
                std::vector<float> kh(T * hs);
                for (std::size_t t = 0; t < T; ++t)
                    for (std::size_t i = 0; i < hs; ++i) kh[t * hs + i] = K[t * kv + static_cast<std::size_t>(g) * hs + i];
                write_f32_npy(out + "/" + name + "-L" + std::to_string(l) + "-KV" + std::to_string(g) + ".k.npy", kh, T, hs);
            }
            for (int h = 0; h < c.n_heads; ++h) {
                std::vector<float> qh(T * hs);
                for (std::size_t t = 0; t < T; ++t)
                    for (std::size_t i = 0; i < hs; ++i) qh[t * hs + i] = Q[t * dim + static_cast<std::size_t>(h) * hs + i];
                const std::string stem = name + "-L" + std::to_string(l) + "-H" + std::to_string(h);
                const std::string qfile = stem + ".q.npy";
                const std::string kfile = name + "-L" + std::to_string(l) + "-KV" + std::to_string(h / kv_mul) + ".k.npy";
                write_f32_npy(out + "/" + qfile, qh, T, hs);
                auto sha = [&](const std::string& f) { return file_sha(out + "/" + f); };
                json inst = {{"kind", "qk"},
                             {"q", {{"npy", qfile}, {"sha256", sha(qfile)}}},
                             {"k", {{"npy", kfile}, {"sha256", sha(kfile)}}},
                             {"scale", {{"rsqrt", hs}}},
                             {"mask", "causal"}};
                json prov = {{"model", fs::path(checkpoint).filename().string()},
                             {"checkpoint_sha256", ck_sha},
                             {"layer", l},
                             {"head", h},
                             {"kv_head", h / kv_mul},
                             {"text", text},
                             {"tokens", T},
                             {"q", "post-RoPE float32 queries of this head (llama2.c forward pass, rankcert extract)"},
                             {"k", "post-RoPE float32 keys of its key head"}};
                std::ofstream(out + "/" + stem + ".json") << json{{"instance", inst}, {"provenance", prov}}.dump(1) << "\n";
                ++written;
            }
        }
        std::cout << "wrote " << written << " instances (" << c.n_layers << " layers x " << c.n_heads << " heads, " << T
                  << " tokens) to " << out << "\n";
        return 0;
    } catch (const InputError& e) {
        std::cerr << e.what() << "\n";
        return 3;
    } catch (const std::exception& e) {
        std::cerr << "rankcert extract: internal error: " << e.what() << "\n";
        return 4;
    }
}

namespace {

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::size_t p = 0;
    while (p <= s.size()) {
        std::size_t q = s.find(',', p);
        if (q == std::string::npos) q = s.size();
        if (q > p) out.push_back(s.substr(p, q - p));
        p = q + 1;
    }
    return out;
}

// A rational interval [floor(x * 10^4), ceil(x * 10^4)] / 10^4 around x.
json slope_interval(double x) {
    const long lo = static_cast<long>(std::floor(x * 1e4)), hi = static_cast<long>(std::ceil(x * 1e4));
    return json::array({Rat(lo, 10000).str(), Rat(hi == lo ? hi + 1 : hi, 10000).str()});
}

void sweep_svg(const std::string& path, const std::string& title, const std::vector<double>& x,
               const std::vector<double>& L, const std::vector<double>& U, double theory, const std::string& xlabel,
               std::size_t fit_from) {
    double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
    for (std::size_t i = 0; i < x.size(); ++i) {
        x0 = std::min(x0, std::log(x[i])); x1 = std::max(x1, std::log(x[i]));
        y0 = std::min(y0, std::log(std::max(1.0, L[i]))); y1 = std::max(y1, std::log(U[i]));
    }
    if (x1 <= x0) x1 = x0 + 1;
    if (y1 <= y0) y1 = y0 + 1;
    const double W = 560, H = 400, ml = 60, mr = 20, mt = 40, mb = 50;
    auto X = [&](double v) { return ml + (std::log(v) - x0) / (x1 - x0) * (W - ml - mr); };
    auto Y = [&](double v) { return mt + (1 - (std::log(std::max(v, 1.0)) - y0) / (y1 - y0)) * (H - mt - mb); };
    std::ostringstream o;
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"" << W << "\" height=\"" << H << "\" fill=\"white\"/>\n";
    o << "<text x=\"" << ml << "\" y=\"22\" font-size=\"14\">" << title << "</text>\n";
    for (std::size_t i = 0; i < x.size(); ++i) {
        o << "<line x1=\"" << X(x[i]) << "\" x2=\"" << X(x[i]) << "\" y1=\"" << mt << "\" y2=\"" << H - mb << "\" stroke=\"#eee\"/>\n";
        o << "<text x=\"" << X(x[i]) - 10 << "\" y=\"" << H - mb + 16 << "\">" << x[i] << "</text>\n";
    }
    for (double v = 1; v <= std::exp(y1) * 1.01; v *= 2)
        if (std::log(v) >= y0 - 1e-9)
            o << "<text x=\"" << ml - 40 << "\" y=\"" << Y(v) + 4 << "\">" << v << "</text><line x1=\"" << ml << "\" x2=\"" << W - mr
              << "\" y1=\"" << Y(v) << "\" y2=\"" << Y(v) << "\" stroke=\"#eee\"/>\n";
    auto line = [&](const std::vector<double>& v, const char* col, const char* dash) {
        o << "<polyline fill=\"none\" stroke=\"" << col << "\" stroke-width=\"2\"" << dash << " points=\"";
        for (std::size_t i = 0; i < x.size(); ++i) o << X(x[i]) << "," << Y(v[i]) << " ";
        o << "\"/>\n";
        for (std::size_t i = 0; i < x.size(); ++i) o << "<circle cx=\"" << X(x[i]) << "\" cy=\"" << Y(v[i]) << "\" r=\"3\" fill=\"" << col << "\"/>\n";
    };
    line(U, "#d95f02", "");
    line(L, "#1b9e77", "");
    // Theoretical slope through the last upper point, over the fitted range.
    const std::size_t a = fit_from, b = x.size() - 1;
    const double ya = U[b] * std::exp(theory * (std::log(x[a]) - std::log(x[b])));
    o << "<line x1=\"" << X(x[a]) << "\" y1=\"" << Y(ya) << "\" x2=\"" << X(x[b]) << "\" y2=\"" << Y(U[b])
      << "\" stroke=\"#555\" stroke-dasharray=\"6,4\"/>\n";
    o << "<text x=\"" << ml + 10 << "\" y=\"" << mt + 14 << "\" fill=\"#d95f02\">certified upper U</text>\n";
    o << "<text x=\"" << ml + 10 << "\" y=\"" << mt + 30 << "\" fill=\"#1b9e77\">certified lower L</text>\n";
    o << "<text x=\"" << ml + 10 << "\" y=\"" << mt + 46 << "\" fill=\"#555\">theoretical slope " << theory << "</text>\n";
    o << "<text x=\"" << (W - ml) / 2 << "\" y=\"" << H - 10 << "\">" << xlabel << " (log scale)</text>\n</svg>\n";
    std::ofstream(path) << o.str();
}

}  // namespace

int construct_main(int argc, char** argv) {
    CLI::App app{"rankcert construct: exact sphere and ball families, certified sweeps over beta (or eps), "
                 "fitted growth exponents, and a sweep witness that rankcert verify re-checks.",
                 "rankcert construct"};
    std::string family, betas, beta, eps = "0.1", eps_sweep, h = "1/64", out = ".";
    int dim = 2;
    std::size_t n = 400, fit_top = 0;
    bool quiet = false;
    app.add_option("family", family, "sphere or ball")->required()->check(CLI::IsMember({"sphere", "ball"}));
    app.add_option("--d,--r", dim, "Dimension: d for the sphere S^{d-1}, r for the ball");
    app.add_option("--n", n, "Points on the sphere (default 400)");
    app.add_option("--h", h, "Grid spacing of the ball (default 1/64)");
    long unweighted = 0;
    app.add_option("--unweighted", unweighted, "Ball: key multiplicities round(M exp(-beta |y|^2/2)) instead of weights");
    app.add_option("--betas", betas, "Beta sweep, comma separated (e.g. 16,32,64,128)");
    app.add_option("--beta", beta, "Fixed beta for an eps sweep");
    app.add_option("--eps", eps, "eps for a beta sweep (default 0.1)");
    app.add_option("--eps-sweep", eps_sweep, "eps values for a sweep at fixed --beta");
    app.add_option("--fit-top", fit_top, "Fit the slope over this many largest parameter values (default: half, at least 3)");
    app.add_option("--out", out, "Output folder");
    app.add_flag("-q,--quiet", quiet, "No progress output");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);
        std::cerr << "rankcert construct: " << e.what() << " (see rankcert construct --help)\n";
        return 3;
    }
    try {
        const bool beta_sweep = eps_sweep.empty();
        if (beta_sweep && betas.empty()) throw InputError("rankcert construct: give --betas, or --beta with --eps-sweep");
        if (!beta_sweep && beta.empty()) throw InputError("rankcert construct: --eps-sweep needs --beta");
        fs::create_directories(out);
        const std::vector<std::string> params = beta_sweep ? split(betas) : split(eps_sweep);
        const std::string base = family + (unweighted > 0 ? "-unweighted" : "") + "-" + (family == "sphere" ? "d" : "r") +
                                 std::to_string(dim);
        const std::string tag = base + (beta_sweep ? "-eps" + eps + "-beta-sweep" : "-beta" + beta + "-eps-sweep");
        std::vector<double> xs, Ls, Us;
        json points = json::array();
        double theory = 0;
        const auto start = std::chrono::steady_clock::now();
        for (std::size_t p = 0; p < params.size(); ++p) {
            const std::string b = beta_sweep ? params[p] : beta;
            const std::string e = beta_sweep ? eps : params[p];
            Construction c = family == "sphere" ? sphere(dim, n, b) : ball(dim, h, b, unweighted);
            theory = beta_sweep ? c.theory : 2 * c.theory;  // eps sweeps: growth like eps^{-r} (ball), eps^{-(d-1)} (sphere)
            const std::string stem = base + "-beta" + b;
            BracketOptions opt;
            opt.eps = parse_eps_list(e);
            opt.out_dir = out;
            opt.stem = stem;
            opt.lp = false;
            opt.interpolative = false;
            opt.upper.alternations = 0;
            opt.upper.l1_refit = c.queries.rows() <= 300 && c.keys.rows() <= 600;
            opt.provenance = {{"construction", c.family}, {"dimension", c.dim}, {"beta", b},
                              {"points", c.queries.rows()}, {"producer", std::string("rankcert construct ") + RANKCERT_VERSION}};
            if (c.family == "ball") opt.provenance["grid_spacing"] = h;
            Bundle parsed = parse_instance(c.instance, out, stem);
            const Mat A = approximate_attention(parsed.instance);
            for (const auto& ev : opt.eps)
                if (auto cp = cell_partition(A, c.queries, c.keys, ev.approx)) opt.hints.push_back(neumann_json(*cp, out, stem + "-eps" + ev.text + ".cells"));
            if (!quiet)
                std::cerr << "[" << std::fixed << std::setprecision(1)
                          << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << "s] " << stem
                          << " (n = " << c.queries.rows() << "), eps " << e << "\n";
            auto res = run_bracket(c.instance, opt).at(0);
            if (res.verdict != Verdict::verified) throw std::runtime_error(res.bundle_path + " did not verify");
            const fs::path rel = fs::relative(res.bundle_path, out);
            std::ifstream in(res.bundle_path, std::ios::binary);
            const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            points.push_back({{"beta", b}, {"eps", e}, {"bundle", rel.string()}, {"sha256", sha256_hex(bytes)},
                              {"L", res.lower}, {"U", res.upper}, {"lower_kind", res.lower_kind}, {"upper_kind", res.upper_kind}});
            xs.push_back(beta_sweep ? fmpq_get_d(parse_rational_text(b, {}).get())
                                    : 1.0 / fmpq_get_d(parse_rational_text(e, {}).get()));
            Ls.push_back(static_cast<double>(std::max<std::uint64_t>(res.lower, 1)));
            Us.push_back(static_cast<double>(res.upper));
            if (!quiet) std::cerr << "    L = " << res.lower << ", U = " << res.upper << "\n";
        }
        const std::size_t k = xs.size();
        std::size_t top = fit_top ? std::min(fit_top, k) : std::max<std::size_t>(std::min<std::size_t>(3, k), (k + 1) / 2);
        const std::size_t from = k - top;
        std::vector<double> fx(xs.begin() + static_cast<std::ptrdiff_t>(from), xs.end()),
            fl(Ls.begin() + static_cast<std::ptrdiff_t>(from), Ls.end()), fu(Us.begin() + static_cast<std::ptrdiff_t>(from), Us.end());
        const double sl = loglog_slope(fx, fl), su = loglog_slope(fx, fu);
        json fit_idx = json::array();
        for (std::size_t i = from; i < k; ++i) fit_idx.push_back(i);
        json sweep = {{"format", "rankcert-sweep/1"},
                      {"family", unweighted > 0 ? family + "-unweighted" : family},
                      {"dimension", dim},
                      {"parameter", beta_sweep ? "beta" : "eps"},
                      {"x", beta_sweep ? "log beta" : "log(1/eps)"},
                      {"fixed", beta_sweep ? json{{"eps", eps}} : json{{"beta", beta}}},
                      {"theory_exponent", theory},
                      {"points", points},
                      {"fit", {{"points", fit_idx}, {"slope_L", slope_interval(sl)}, {"slope_U", slope_interval(su)}}},
                      {"producer", std::string("rankcert construct ") + RANKCERT_VERSION}};
        const std::string sweep_path = out + "/" + tag + ".json";
        std::ofstream(sweep_path) << sweep.dump(1) << "\n";
        sweep_svg(out + "/" + tag + ".svg", family + (family == "sphere" ? " S^" + std::to_string(dim - 1) : " r=" + std::to_string(dim)) +
                  ": certified L and U, " + (beta_sweep ? "eps " + eps : "beta " + beta), xs, Ls, Us, theory,
                  beta_sweep ? "beta" : "1/eps", from);
        std::cout << tag << ": fitted slope of L " << std::setprecision(3) << sl << ", of U " << su << " (theory " << theory
                  << ") over " << top << " points; " << sweep_path << "\n";
        return 0;
    } catch (const InputError& e) {
        std::cerr << e.what() << "\n";
        return 3;
    } catch (const std::exception& e) {
        std::cerr << "rankcert construct: " << e.what() << "\n";
        return 4;
    }
}

int profile_main(int argc, char** argv) {
    CLI::App app{"rankcert profile: the intrinsic interaction geometry of a head -- visible dimension, and for retained "
                 "ranks r the projective residual q, tau = 2 tanh(q/4), an interval for kappa, and the profile "
                 "P = (1 + kappa/(eps - tau)^2)^{r/2} -- written as profile certificates and verified.",
                 "rankcert profile"};
    std::string instance, rs, eps_text = "0.05,0.1,0.2", out = ".", name;
    bool json_out = false;
    app.add_option("--instance", instance, "Bundle or instance JSON (unmasked)")->required();
    app.add_option("--r", rs, "Retained ranks, comma separated (default: 1, 2, 4, ... up to the visible dimension)");
    app.add_option("--eps", eps_text, "Tolerances for the profile P (default 0.05,0.1,0.2)");
    app.add_option("--out", out, "Output folder");
    app.add_option("--name", name, "File stem (default: from the input)");
    app.add_flag("--json", json_out, "JSON output");
    std::string temperature;
    app.add_option("--temperature", temperature, "Temperature multiplier t for a qk instance");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);
        std::cerr << "rankcert profile: " << e.what() << " (see rankcert profile --help)\n";
        return 3;
    }
    try {
        fs::create_directories(out);
        json doc = read_json_file(instance, instance);
        json inst = doc.contains("instance") ? doc["instance"] : doc;
        copy_sidecars(inst, fs::path(instance).parent_path(), out);
        if (!temperature.empty()) {
            if (inst.value("kind", "") != "qk") throw InputError("rankcert profile: --temperature applies to qk instances");
            inst["temperature"] = temperature;
        }
        const std::string stem = (name.empty() ? fs::path(instance).stem().string() : name) +
                                 (temperature.empty() ? "" : "-t" + temperature) + "-profile";
        Bundle parsed = parse_instance(inst, out, stem);
        const Instance& I = parsed.instance;
        if ((I.kind == InstanceKind::qk && I.mask != MaskKind::none) ||
            (I.kind == InstanceKind::logits && std::count(I.logits.neg_inf.begin(), I.logits.neg_inf.end(), 1) > 0))
            throw InputError(instance + ": instance: a profile needs an unmasked instance (masked rows have no interaction C)");
        const auto eps = parse_eps_list(eps_text);
        const Mat C = interaction(I);
        const Mat Aflt = approximate_attention(I);
        const long vd = exact_visible_dimension(I);
        Eigen::BDCSVD<Mat> svd(C);
        const long float_rank = static_cast<long>((svd.singularValues().array() > 1e-9 * std::max(1.0, svd.singularValues()(0))).count());
        const long visible = vd >= 0 ? vd : float_rank;
        std::vector<std::size_t> ranks;
        if (!rs.empty()) {
            for (const auto& t : split(rs)) ranks.push_back(static_cast<std::size_t>(std::stoul(t)));
        } else {
            for (std::size_t r = 1; r < static_cast<std::size_t>(visible); r *= 2) ranks.push_back(r);
            if (visible > 0) ranks.push_back(static_cast<std::size_t>(visible));
        }
        std::vector<json> certs;
        std::vector<ProfileCandidate> cands;
        for (std::size_t r : ranks) {
            if (r == 0 || r > std::min(I.n, I.N)) throw InputError("--r: " + std::to_string(r) + " is out of range");
            ProfileCandidate pc = profile_candidate(C, r, out, stem + "-r" + std::to_string(r), &Aflt);
            if (vd >= 0) pc.cert["claims"]["visible_dim"] = vd;
            certs.push_back(pc.cert);
            cands.push_back(pc);
        }
        json bundle = {{"format", "rankcert/1"}, {"instance", inst}, {"eps", eps.front().text}, {"claim", json::object()},
                       {"certificates", certs},
                       {"provenance", doc.value("provenance", json::object())}};
        bundle["provenance"]["producer"] = std::string("rankcert profile ") + RANKCERT_VERSION;
        const fs::path path = fs::path(out) / (stem + ".json");
        std::ofstream(path) << bundle.dump() << "\n";
        Bundle b = load_bundle(path, path.string());
        Report rep = verify(b, {});
        json results = json::array();
        if (!json_out) {
            std::cout << "visible dimension " << visible << (vd >= 0 ? " (exact)" : " (float estimate)") << "; bundle " << path.string()
                      << ": " << to_string(rep.verdict) << "\n";
            std::cout << std::left << std::setw(5) << "r" << std::setw(12) << "q" << std::setw(12) << "tau" << std::setw(12)
                      << "tau*" << std::setw(26)
                      << "kappa in" << std::setw(8) << "gap";
            for (const auto& e : eps) std::cout << std::setw(14) << ("P(" + e.text + ")");  // as 1e<log10 P>
            std::cout << std::setw(18) << "native (ratio)" << "verdict\n";
        }
        for (std::size_t t = 0; t < cands.size(); ++t) {
            const auto& pc = cands[t];
            const auto& cr = rep.certificates[t];
            const auto& cl = b.certificates[t].profile;
            const double klo = fmpq_get_d(cl.kappa_lo.get()), khi = fmpq_get_d(cl.kappa_hi.get());
            const double tlo = fmpq_get_d(cl.tau_lo.get()), thi = fmpq_get_d(cl.tau_hi.get());
            json row = {{"r", pc.r}, {"q", pc.q}, {"tau", pc.tau}, {"tau_star", pc.tau_star}, {"kappa", {klo, khi}}, {"verdict", to_string(cr.verdict)},
                        {"visible_dim", visible}};
            std::ostringstream line;
            line << std::left << std::setw(5) << pc.r << std::setw(12) << std::setprecision(4) << pc.q << std::setw(12) << pc.tau
                 << std::setw(12) << pc.tau_star;
            std::ostringstream kv;
            kv << std::setprecision(5) << "[" << klo << ", " << khi << "]";
            std::ostringstream gap;
            gap << std::fixed << std::setprecision(2) << (khi > 0 ? 100 * (khi - klo) / khi : 0) << "%";
            line << std::setw(26) << kv.str() << std::setw(8) << gap.str();
            json P = json::object();
            for (const auto& e : eps) {
                std::ostringstream pv;
                if (thi < e.approx) {
                    // log10 P, which stays finite where P overflows a double.
                    const double lplo = pc.r / 2.0 * std::log10(1 + klo / ((e.approx - tlo) * (e.approx - tlo)));
                    const double lphi = pc.r / 2.0 * std::log10(1 + khi / ((e.approx - thi) * (e.approx - thi)));
                    pv << std::setprecision(4) << "1e" << lphi;
                    P[e.text] = {lplo, lphi};
                } else {
                    pv << "-";
                }
                line << std::setw(14) << pv.str();
            }
            row["log10_P"] = P;
            const double native = native_size(I, C, pc.r);
            if (native > 0) {
                row["native"] = native;
                row["native_over_kappa"] = native / khi;
            }
            {
                std::ostringstream nv;
                if (native > 0) nv << std::setprecision(4) << native << " (x" << std::setprecision(3) << native / khi << ")";
                else nv << "-";
                line << std::setw(18) << nv.str();
            }
            line << to_string(cr.verdict);
            if (!json_out) std::cout << line.str() << "\n";
            results.push_back(row);
        }
        if (json_out) std::cout << json{{"visible_dim", visible}, {"exact", vd >= 0}, {"bundle", path.string()},
                                        {"verdict", to_string(rep.verdict)}, {"profiles", results}}.dump(2) << "\n";
        return rep.verdict == Verdict::verified ? 0 : rep.verdict == Verdict::refuted ? 1 : 2;
    } catch (const InputError& e) {
        std::cerr << e.what() << "\n";
        return 3;
    } catch (const std::exception& e) {
        std::cerr << "rankcert profile: internal error: " << e.what() << "\n";
        return 4;
    }
}

int main(int argc, char** argv) {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "profile") return profile_main(argc - 1, argv + 1);
    if (cmd == "construct") return construct_main(argc - 1, argv + 1);
    if (cmd == "bracket") return bracket_main(argc - 1, argv + 1);
    if (cmd == "extract") return extract_main(argc - 1, argv + 1);
    std::cerr << "usage: rankcert-produce bracket|extract ... (normally run as rankcert bracket / rankcert extract)\n";
    return 3;
}
