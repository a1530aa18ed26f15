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
    // text fit for a file name ("1/2" -> "1_2")
    std::string file_text() const {
        std::string s = text;
        for (char& c : s)
            if (c == '/') c = '_';
        return s;
    }
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
    // false: no search of its own (no SVD, no growth): the hints, the trivial
    // lower bound and phase 4 only (constructions whose hints are the best
    // certificates known, at sizes where the SVD alone takes minutes).
    bool search = true;
    // After the first bracket, spend the whole budget on lower bounds (no
    // factor search): for refreshing brackets whose upper end is known to be
    // tight, starting from their best certificates given as hints.
    bool lower_focus = false;
    // The opposite: after the first bracket, no lower-bound search (phase 2
    // and 3b), the whole budget to the factor search.  For refreshing
    // brackets whose lower end an earlier run has grown as far as it goes
    // (full512 L4 H0 from its committed bundle, eps 0.1, 90 s: the growth
    // took 44 s and admitted no row).
    bool upper_focus = false;
    bool lp = true;
    // Anytime search: the whole run's budget in seconds (0: the default of
    // default_time_budget), and at most this much per eps for the factor
    // search (0: an even share of what is left).  A run always finishes its
    // first bracket at every eps, however short the budget.
    double time_budget = 0, eps_budget = 0;
    // Set by a signal handler: finish the current step, keep what is
    // published, remove scratch files, return.
    const std::atomic<bool>* stop = nullptr;
    // L-BFGS steps per rank tried (3x for the last step; phase 3c, with
    // the time left, 9x and then three times more per round).
    int smooth_iterations = 300;
    // Seed of phase 3c's Gaussian starts (start_factor): a run is
    // reproducible, and a refresh with another seed tries other starts.
    std::uint64_t seed = 0;
    // Spend a few more smooth steps on each winning factor so that it can be
    // stored as float16 (a quarter of float64).
    bool half = true;
    // Greedy row-interpolative search only up to this many entries n N.
    std::uint64_t interpolative_max_entries = 160 * 160;
    std::function<void(const std::string&)> progress;
    // One line per finished lower-bound search (rows before and after, moves
    // made); `rankcert bracket --log` prints them to stderr.
    std::function<void(const std::string&)> search_log;
    // Called after every published bundle with its eps and certified [L, U]
    // (the checker's numbers).  `rankcert audit` uses it to stop a search as
    // soon as the claim it tests is decided (by setting *stop).
    std::function<void(const std::string& eps, std::uint64_t lower, std::uint64_t upper)> on_publish;
};

// 20 s per eps at 512 x 512, growing like sqrt(n N), at most 450 s.
double default_time_budget(std::uint64_t n, std::uint64_t N, std::size_t eps_count);

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
// At most max_eps_values values; errors name `field` ("--eps", or a claims column).
inline constexpr std::size_t max_eps_values = 256;
std::vector<EpsValue> parse_eps_list(const std::string& text, const std::string& field = "--eps");

// Read a tensor given as PATH (.npy), PATH:NAME (.npz member or safetensors
// tensor).  Exact values, via the checker's loaders.
Matrix read_tensor(const std::string& spec, bool allow_neg_inf = false);
// Write an exact matrix as a bundle array: a float64 .npy sidecar in dir when
// every entry is a double, else inline exact rationals.
json exact_array_json(const Matrix& m, const std::string& dir, const std::string& name);

}  // namespace rankcert::producer
