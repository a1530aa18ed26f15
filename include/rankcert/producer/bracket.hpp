// `rankcert bracket`: find certificates, have the checker decide them, write
// bundles whose claims are the certified brackets (UNTRUSTED search, trusted
// verdicts).
#pragma once

#include "rankcert/check.hpp"
#include "rankcert/producer/producer.hpp"

#include <string>
#include <vector>

namespace rankcert::producer {

struct EpsValue {
    std::string text;  // as given ("0.1")
    Rat exact;
    double approx = 0;
};

struct BracketOptions {
    std::vector<EpsValue> eps;
    std::string out_dir;
    std::string stem = "bundle";
    json provenance = json::object();
    CheckOptions check;
    UpperOptions upper;
    LowerOptions lower;
    bool tail = true;
    bool interpolative = true;
    // Extra candidate certificates (e.g. from a construction), offered to the
    // checker before the search; the best verified ones compete as usual.
    std::vector<json> hints;
    bool lp = true;
    std::function<void(const std::string&)> progress;
};

struct BracketResult {
    std::string eps_text;
    std::string bundle_path;
    std::uint64_t lower = 0, upper = 0;
    bool closed = false;
    Verdict verdict = Verdict::undecided;
    std::string lower_kind, upper_kind;  // winning certificate kinds ("-" if none)
    double seconds = 0;
    double svd_rank = 0;  // rank the plain SVD needed (for reports)
};

// Run the search for every eps on the instance described by `instance_json`
// (whose sidecars already sit in opt.out_dir).  Each bundle written is
// verified by the checker from its file; its claim is the certified bracket.
std::vector<BracketResult> run_bracket(const json& instance_json, const BracketOptions& opt);

// Parse an instance exactly as the checker does (via a bundle file in dir).
Bundle parse_instance(const json& instance_json, const std::string& dir, const std::string& stem);

// Parse "0.05,0.1,0.2" into exact values.
std::vector<EpsValue> parse_eps_list(const std::string& text);

// Read a tensor given as PATH (.npy), PATH:NAME (.npz member or safetensors
// tensor).  Exact values, via the checker's loaders.
Matrix read_tensor(const std::string& spec, bool allow_neg_inf = false);
// Write an exact matrix as a bundle array: a float64 .npy sidecar in dir when
// every entry is a double, else inline exact rationals.
json exact_array_json(const Matrix& m, const std::string& dir, const std::string& name);

}  // namespace rankcert::producer
