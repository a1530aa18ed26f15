// `rankcert audit` (UNTRUSTED orchestration); see audit.hpp and docs/audit.md.
#include "rankcert/producer/audit.hpp"

#include "rankcert/bundle.hpp"
#include "rankcert/check.hpp"
#include "rankcert/paths.hpp"
#include "rankcert/producer/bracket.hpp"
#include "rankcert/producer/llama2.hpp"
#include "rankcert/producer/tensor.hpp"
#include "rankcert/result.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

namespace rankcert::producer {

namespace fs = std::filesystem;

namespace {

// llama2.c models and their forward passes, kept for the claims that follow.
struct ModelCache {
    std::map<std::string, std::shared_ptr<Llama2Model>> models;
    std::map<std::string, std::shared_ptr<Llama2Tokenizer>> tokenizers;
    std::string last_key;
    std::size_t last_T = 0;
};
ModelCache& model_cache() {
    static ModelCache c;
    return c;
}

// The instance of one head of a llama2.c model over a text (as rankcert extract writes it).
json extract_instance(const std::map<std::string, std::string>& f, const fs::path& base, const fs::path& dir, const std::string& id) {
    auto get = [&](const std::string& k) {
        auto it = f.find(k);
        if (it == f.end() || it->second.empty()) throw InputError(k + ": needed with checkpoint");
        return it->second;
    };
    const std::string ck = (base / get("checkpoint")).string(), tk = (base / get("tokenizer")).string();
    std::string text = f.count("text_file") && !f.at("text_file").empty() ? read_file_bytes((base / f.at("text_file")).string()) : get("text");
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    auto& cache = model_cache();
    if (!cache.models.count(ck)) cache.models[ck] = std::make_shared<Llama2Model>(ck);
    Llama2Model& m = *cache.models[ck];
    const auto& c = m.config();
    if (!cache.tokenizers.count(tk)) cache.tokenizers[tk] = std::make_shared<Llama2Tokenizer>(tk, c.vocab_size);
    const std::uint64_t layer = parse_claim_count(get("layer"), "layer"), head = parse_claim_count(get("head"), "head");
    if (layer >= static_cast<std::uint64_t>(c.n_layers)) throw InputError("layer: " + std::to_string(layer) + " out of range (the model has " + std::to_string(c.n_layers) + ")");
    if (head >= static_cast<std::uint64_t>(c.n_heads)) throw InputError("head: " + std::to_string(head) + " out of range (the model has " + std::to_string(c.n_heads) + ")");
    const std::string key = ck + "\n" + text;
    if (cache.last_key != key) {
        const auto tokens = cache.tokenizers[tk]->encode(text);
        if (tokens.size() > static_cast<std::size_t>(c.seq_len)) throw InputError("text: longer than the model's seq_len");
        m.forward(tokens, true);
        cache.last_key = key;
        cache.last_T = tokens.size();
    }
    const std::size_t T = cache.last_T, hs = static_cast<std::size_t>(c.head_size());
    const std::size_t g = static_cast<std::size_t>(head) / static_cast<std::size_t>(c.n_heads / c.n_kv_heads);
    Mat Q(static_cast<Eigen::Index>(T), static_cast<Eigen::Index>(hs)), K(static_cast<Eigen::Index>(T), static_cast<Eigen::Index>(hs));
    const auto& rq = m.recorded_q()[layer];
    const auto& rk = m.recorded_k()[layer];
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t i = 0; i < hs; ++i) {
            Q(static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(i)) = rq[t * static_cast<std::size_t>(c.dim) + head * hs + i];
            K(static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(i)) = rk[t * static_cast<std::size_t>(c.kv_dim()) + g * hs + i];
        }
    return {{"kind", "qk"},
            {"q", array_json(Q, dir.string(), id + ".q.npy", 0)},
            {"k", array_json(K, dir.string(), id + ".k.npy", 0)},
            {"scale", {{"rsqrt", hs}}},
            {"mask", "causal"}};
}

// The instance a claim names, with its sidecars in dir.  An instance file's
// own provenance (model, tokens, checkpoint hash, ...) goes to *source_prov.
json claim_instance(const std::map<std::string, std::string>& f, const fs::path& base, const fs::path& dir, const std::string& id,
                    json* source_prov) {
    auto has = [&](const std::string& k) { return f.count(k) && !f.at(k).empty(); };
    const int sources = has("instance") + has("q") + has("logits") + has("matrix") + has("checkpoint");
    if (sources != 1) throw InputError("give exactly one of instance, q (with k, scale), logits, matrix, checkpoint");
    auto tensor = [&](const std::string& k, bool neg_inf = false) {
        return read_tensor((base / f.at(k)).string(), neg_inf);
    };
    if (has("instance")) {
        const fs::path p = base / f.at("instance");
        json doc = read_document(p, p.string());
        json inst = doc.contains("instance") ? doc["instance"] : doc;
        if (!inst.is_object()) throw InputError(p.string() + ": no instance object");
        if (source_prov && doc.contains("instance") && doc.contains("provenance") && doc["provenance"].is_object())
            *source_prov = doc["provenance"];
        copy_instance_sidecars(inst, p.parent_path(), dir, p.string());
        if (has("temperature")) {
            if (inst.value("kind", "") != "qk") throw InputError("temperature: applies to qk instances; " + p.string() + " is not one");
            inst["temperature"] = f.at("temperature");
        }
        return inst;
    }
    if (has("checkpoint")) return extract_instance(f, base, dir, id);
    if (has("logits")) return {{"kind", "logits"}, {"logits", exact_array_json(tensor("logits", true), dir.string(), id + ".logits.npy")}};
    if (has("matrix")) return {{"kind", "matrix"}, {"a", exact_array_json(tensor("matrix"), dir.string(), id + ".a.npy")}};
    if (!has("k") || !has("scale")) throw InputError("q needs k and scale");
    json inst = {{"kind", "qk"},
                 {"q", exact_array_json(tensor("q"), dir.string(), id + ".q.npy")},
                 {"k", exact_array_json(tensor("k"), dir.string(), id + ".k.npy")}};
    const std::string sc = f.at("scale");
    if (sc.rfind("rsqrt:", 0) == 0) inst["scale"] = {{"rsqrt", parse_claim_count(sc.substr(6), "scale")}};
    else inst["scale"] = sc;
    if (has("temperature")) inst["temperature"] = f.at("temperature");
    if (has("key_bias")) inst["key_bias"] = exact_array_json(tensor("key_bias"), dir.string(), id + ".key_bias.npy");
    if (has("mask")) {
        const std::string mk = f.at("mask");
        if (mk == "none" || mk == "causal") inst["mask"] = mk;
        else inst["mask"] = exact_array_json(tensor("mask"), dir.string(), id + ".mask.npy");
    }
    return inst;
}

std::string rel(const fs::path& p, const std::string& root) { return fs::relative(p, root).generic_string(); }

}  // namespace

json run_claim(const ClaimRow& row, const AuditOptions& opt) {
    const auto start = std::chrono::steady_clock::now();
    json r = {{"id", row.id}, {"line", row.row}};
    for (const char* k : {"model", "layer", "head", "text", "label", "note", "eps", "claim"})
        if (row.f.count(k)) r[k] = row.f.at(k);
    auto say = [&](const std::string& s) {
        if (opt.progress) opt.progress(row.id + ": " + s);
    };
    try {
        if (!row.error.empty()) throw InputError(row.error);
        const auto eps_list = parse_eps_list(row.f.at("eps"), "eps");
        if (eps_list.size() != 1) throw InputError("eps: one value per claim");
        const EpsValue& eps = eps_list[0];
        const Claim claim = parse_claim(row.f.at("claim"));
        r["claimed"] = {{"lower", claim.lower ? json(*claim.lower) : json(nullptr)},
                        {"upper", claim.upper ? json(*claim.upper) : json(nullptr)}};
        const fs::path dir = fs::path(opt.out_dir) / "claims" / row.id;
        std::error_code ec;
        fs::remove_all(dir, ec);
        fs::create_directories(dir);
        const fs::path base = fs::path(opt.claims_path).parent_path();
        json prov = json::object();
        const json inst = claim_instance(row.f, base, dir, row.id, &prov);
        prov.update({{"audit_claim", row.id}, {"claims_file", fs::path(opt.claims_path).filename().string()}, {"line", row.row}});
        for (const char* k : {"model", "layer", "head", "text", "note"})
            if (row.f.count(k) && !prov.contains(k)) prov[k] = row.f.at(k);  // the instance file's own values win
        CheckOptions check;
        check.threads = opt.threads;
        std::vector<json> hints;
        std::optional<Report> given;
        fs::path given_path;
        if (row.f.count("u") || row.f.count("w")) {
            if (!row.f.count("u") || !row.f.count("w")) throw InputError("u, w: give both factors of the claimant's U W^T");
            const Matrix Ut = read_tensor((base / row.f.at("u")).string()), Wt = read_tensor((base / row.f.at("w")).string());
            if (Ut.cols != Wt.cols) throw InputError("u, w: " + std::to_string(Ut.cols) + " and " + std::to_string(Wt.cols) + " columns");
            json cert = {{"bound", "upper"}, {"kind", "factor"}, {"rank", Ut.cols},
                         {"u", exact_array_json(Ut, dir.string(), row.id + ".given.u.npy")},
                         {"w", exact_array_json(Wt, dir.string(), row.id + ".given.w.npy")},
                         {"producer", {{"method", "claimant's factor, checked as given"}}}};
            given_path = dir / (row.id + "-given.json");
            std::ofstream(given_path) << json{{"format", "rankcert/1"}, {"instance", inst}, {"eps", eps.text},
                                              {"certificates", json::array({cert})}, {"provenance", prov}}.dump(1) << "\n";
            say("checking the given factor (rank " + std::to_string(Ut.cols) + ")");
            Bundle gb = load_bundle(given_path, rel(given_path, opt.out_dir));
            given = verify(gb, check);
            r["given_factor"] = {{"rank", Ut.cols}, {"verdict", to_string(given->verdict)},
                                 {"bundle", rel(given_path, opt.out_dir)}};
            if (given->verdict == Verdict::verified) hints.push_back(cert);
        }
        fs::path bundle_path;
        Report rep;
        if (given && given->verdict == Verdict::verified && decide_claim(claim, 0, given->upper) == "confirmed") {
            bundle_path = given_path;
            rep = *given;
            r["decided_by"] = "the given factor";
        } else {
            BracketOptions bo;
            bo.eps = eps_list;
            bo.out_dir = dir.string();
            // The bracket appends -eps<eps> to its files; an id that already
            // ends so (rankcert survey's) is not given it twice.
            bo.stem = row.id;
            const std::string suffix = "-eps" + eps.file_text();
            if (bo.stem.size() > suffix.size() && bo.stem.compare(bo.stem.size() - suffix.size(), suffix.size(), suffix) == 0)
                bo.stem.resize(bo.stem.size() - suffix.size());
            bo.provenance = prov;
            bo.check = check;
            bo.hints = hints;
            bo.time_budget = opt.time_budget;
            bo.stop = opt.stop;
            bo.progress = opt.progress ? [&](const std::string& s) { say(s); } : std::function<void(const std::string&)>();
            bo.on_publish = [&](const std::string&, std::uint64_t L, std::uint64_t U) {
                if (decided(decide_claim(claim, L, U)) && opt.stop) opt.stop->store(true);
            };
            const auto res = run_bracket(inst, bo);
            if (res.empty()) throw InputError("no bundle was published (stopped before the first bracket)");
            bundle_path = res[0].bundle_path;
            r["decided_by"] = "certified bracket";
        }
        // The verdict rests on the checker's reading of the file, not on the producer's numbers.
        const Bundle b = load_bundle(bundle_path, rel(bundle_path, opt.out_dir));
        rep = verify(b, check);
        if (rep.verdict != Verdict::verified) throw std::runtime_error(bundle_path.string() + ": bundle did not verify");
        const fs::path wpath = fs::path(bundle_path).replace_extension(".witness.json");
        std::ofstream(wpath) << dump_document(witness_json(b, rep, "audit"), 1) << "\n";
        const std::string verdict = decide_claim(claim, rep.lower, rep.upper);
        std::string reason;
        const std::uint64_t lo = claim.lower.value_or(0), hi = claim.upper.value_or(UINT64_MAX);
        if (verdict == "refuted")
            reason = rep.lower > hi ? "certified lower bound " + std::to_string(rep.lower) + " > claimed " + std::to_string(hi)
                                    : "certified upper bound " + std::to_string(rep.upper) + " < claimed " + std::to_string(lo);
        else if (verdict == "bracketed")
            reason = "certified [" + std::to_string(rep.lower) + ", " + std::to_string(rep.upper) + "] (no claim: bracket only)";
        else if (verdict == "confirmed")
            reason = "certified [" + std::to_string(rep.lower) + ", " + std::to_string(rep.upper) + "] lies inside the claim";
        else
            reason = "certified [" + std::to_string(rep.lower) + ", " + std::to_string(rep.upper) + "] neither inside nor outside the claim";
        std::string lower_kind = "-", upper_kind = "-";
        for (const auto& c : rep.certificates) {
            if (c.verdict != Verdict::verified) continue;
            if (c.bound == Bound::upper && c.rank == rep.upper) upper_kind = to_string(c.kind);
            if (c.bound == Bound::lower && c.rank == rep.lower) lower_kind = to_string(c.kind);
        }
        r.update({{"verdict", verdict}, {"reason", reason}, {"lower", rep.lower}, {"upper", rep.upper},
                  {"closed", rep.lower == rep.upper}, {"lower_kind", lower_kind}, {"upper_kind", upper_kind},
                  {"n", b.instance.n}, {"N", b.instance.N}, {"eps", eps.text},
                  {"bundle", rel(bundle_path, opt.out_dir)}, {"witness", rel(wpath, opt.out_dir)},
                  {"bundle_sha256", b.sha256}});
    } catch (const InputError& e) {
        std::string m = e.what();
        for (char& c : m)
            if (c == '\n' || c == '\r') c = ' ';
        r["verdict"] = "error";
        r["error"] = m;
    }
    r["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
}

json collect_audit(const std::string& dir, const std::string& tool_version) {
    std::vector<json> claims;
    const fs::path rd = fs::path(dir) / "results";
    if (path_exists(rd))
        for (const auto& e : fs::directory_iterator(rd)) {
            if (e.path().extension() != ".json" || e.path().filename().string()[0] == '.') continue;
            claims.push_back(read_result(e.path()));
        }
    std::sort(claims.begin(), claims.end(), [](const json& a, const json& b) {
        return std::make_pair(a.value("line", 0), a.value("id", "")) < std::make_pair(b.value("line", 0), b.value("id", ""));
    });
    json counts = {{"confirmed", 0}, {"refuted", 0}, {"open", 0}, {"bracketed", 0}, {"error", 0}};
    for (const auto& c : claims) counts[c.value("verdict", "error")] = counts.value(c.value("verdict", "error"), 0) + 1;
    counts["total"] = claims.size();
    return {{"format", result_format}, {"tool", {{"name", "rankcert"}, {"version", tool_version}}}, {"kind", "audit"},
            {"counts", counts}, {"claims", claims}};
}

}  // namespace rankcert::producer
