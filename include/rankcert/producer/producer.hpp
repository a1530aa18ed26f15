// The certificate producer (UNTRUSTED).
//
// Everything here searches for certificates in floating point: SVD, L1
// refits, greedy row selection, linear programs.  None of it is trusted.  The
// producer only proposes; what it proposes is serialised as a bundle and
// decided by the checker (rankcert_checker), which never sees these objects.
#pragma once

#include "rankcert/bundle.hpp"

#include <Eigen/Dense>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace rankcert::producer {

using Mat = Eigen::MatrixXd;
using Vec = Eigen::VectorXd;

// When a search must stop: a point in time, and a flag a signal handler may
// set (SIGINT, SIGTERM).  The default never expires.
struct Deadline {
    using Clock = std::chrono::steady_clock;
    Clock::time_point end = Clock::time_point::max();
    const std::atomic<bool>* stop = nullptr;
    bool stopped() const { return stop != nullptr && stop->load(); }
    bool expired() const { return stopped() || Clock::now() >= end; }
    // Seconds left (0 when expired; a large number when unbounded).
    double left() const {
        if (stopped()) return 0;
        if (end == Clock::time_point::max()) return 1e300;
        return std::max(0.0, std::chrono::duration<double>(end - Clock::now()).count());
    }
    // The sooner of this deadline and `seconds` from now.  More than a year
    // counts as unbounded: a fraction of an unbounded deadline's left()
    // (1e300) would overflow the clock's integer ticks.
    Deadline within(double seconds) const {
        Deadline d = *this;
        if (seconds < left() && seconds < 3.2e7) d.end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
        return d;
    }
};

// Q, K and the logit coefficient (temperature * scale) of a qk instance in
// floating point; with centre, P_n Q and P_N K.
struct FloatQK {
    Mat Q, K;
    double coef = 1;
};
FloatQK float_qk(const Instance& inst, bool centre = false);

// A float approximation of the attention matrix (no error control).
Mat approximate_attention(const Instance& inst);

// Max-row-l1 norm of a matrix, in floating point (no error control).
double max_row_l1(const Mat& m);

// ---- upper bounds ------------------------------------------------------------
struct FactorCandidate {
    std::size_t k = 0;
    Mat U, W;              // A ~ U W^T
    double float_error = 0;  // max row l1 error in floating point
    std::string method;      // "svd", "svd+l1", "l1-alternating"
};

struct RowInterpCandidate {
    std::vector<std::size_t> rows;
    Mat X;  // n x k
    double float_error = 0;
};

struct UpperOptions {
    double margin = 1e-9;     // relative safety margin on eps
    int lad_iterations = 30;  // IRLS steps per row
    Deadline deadline;        // the greedy row selection stops at it
    std::function<void(const std::string&)> progress;
};

class UpperSearch {
public:
    UpperSearch(const Mat& A, const UpperOptions& opt);
    // The float row error of the rank-k truncated SVD.
    double svd_error(std::size_t k) const;
    // The least k whose truncated SVD has float worst row l1 error <= target
    // (bisection, taking the error as monotone in k, inside the range that
    // the rows' l2 residuals allow).
    std::size_t least_svd_rank(double target) const;
    // Rows chosen greedily: a row joins when its L1 fit onto the rows
    // already chosen misses the target (k <= n).  When the deadline passes
    // first: no rows and float_error = infinity.
    RowInterpCandidate greedy_row_interpolative(double target, const std::vector<std::size_t>& seed = {}) const;
    // The rank-k truncated SVD as a factor, balanced (U = U_k S^1/2, W = V_k S^1/2).
    FactorCandidate svd_factor(std::size_t k) const;
    std::size_t max_rank() const { return std::min<std::size_t>(A_.rows(), A_.cols()); }

private:
    const Mat& A_;
    UpperOptions opt_;
    Mat Usv_, Vsv_;  // U * S and V of the thin SVD
    Vec sv_;
};

// Smooth minimax refit of both factors (L-BFGS; src/producer/smooth.cpp).
struct SmoothOptions {
    int iterations = 400;  // L-BFGS steps over all stages
    // Stop early when the last 50 steps gained too little to reach the
    // target at that rate in the steps left (the error has plateaued).
    bool give_up = true;
    Deadline deadline;
    std::function<void(const std::string&)> progress;
    // When set, told whether a failed search used all its iterations (more
    // steps from the same start may still help) or stopped on a plateau
    // first (they will not: try another start).
    bool* out_of_steps = nullptr;
    // When set, lowered to the least worst row error (single precision, an
    // estimate) the search reached, found or not.
    double* best_error = nullptr;
    // When set, receives the iterate with the least worst row error when that
    // error is below best_miss->float_error (a near miss to start again from).
    FactorCandidate* best_miss = nullptr;
    // The smoothing stage to begin with (0: the smoothest; 2: tau = 100),
    // for a start that is already near a minimum.
    int first_stage = 0;
    // A search that ends with its best worst row error within this factor of
    // the target refits the rows above the target exactly (lad_lp, W kept)
    // before it gives up (smooth.cpp, "polish"); 0: never.
    double polish_within = 1.02;
    // The last stage, ending at its step cap within this factor of the
    // target and on course to reach it in one more cap at the rate of its
    // last 50 steps, gets another cap of steps, at most `extensions` times
    // (smooth.cpp); 0 extensions: never.
    double extend_within = 1.02;
    int extensions = 2;
};
// A factor of U's rank whose worst row error, in double precision, is <= target
// (the search itself runs its products in single precision), started from
// (U, W), or nothing when the iterations or the deadline run out first.
std::optional<FactorCandidate> smooth_factor(const Mat& A, Mat U, Mat W, double target, const SmoothOptions& opt);
// The best rank-k approximation of U W^T, as a balanced factor.
void truncate_factor(const Mat& U, const Mat& W, std::size_t k, Mat& Uk, Mat& Wk);
// Start number `variant` for a rank-k factor search near A: 0 the balanced
// truncation of (U, W), 1 the same with the singular values all on the U
// side, 2 all on the W side (the same product, another L-BFGS path), and
// from 3 on Gaussian factors (seeded by variant and seed; each entry of U W^T of the
// order of A's root mean square entry).  Measured on the 47-token heads
// (docs/producer.md, phase 3c): from one product, the three splits end in
// different local minima, and the Gaussian starts on some heads in lower ones.
void start_factor(const Mat& A, const Mat& U, const Mat& W, std::size_t k, int variant, Mat& Uk, Mat& Wk,
                  std::uint64_t seed = 0);

// A start near a failed search's closest miss (U, W): its balanced form with
// Gaussian noise of 2, 4 or 6% (by `count`) of the factors' root mean
// square entry added to every entry (the phase 3c kicks, bracket.cpp).
void kick_factor(const Mat& U, const Mat& W, int count, std::uint64_t seed, Mat& Uk, Mat& Wk);

// min_u ||a - W u||_1 by iteratively reweighted least squares, started at x0.
Vec lad_fit(const Mat& W, const Vec& a, const Vec& x0, int iterations);
// The same minimum by an LP (GLPK dual simplex), or with `weights` that of
// sum_j w_j |a_j - (W u)_j|: exact up to the solver's tolerances; nothing
// when GLPK fails, the data are not finite or `seconds` (> 0) run out.
std::optional<Vec> lad_lp(const Mat& W, const Vec& a, double seconds = 0, const Vec* weights = nullptr);

// ---- lower bounds ------------------------------------------------------------
struct NeumannCandidate {
    std::vector<std::size_t> rows;
    // R as triplets (key j, column t, value).
    struct Entry {
        std::size_t j, t;
        double v;
    };
    std::size_t N = 0;
    std::vector<Entry> r;
    double float_value = 0;  // delta + eps * rho in floating point
    std::string method;      // "inverse", "lp"
};

struct TailCandidate {
    std::vector<std::size_t> rows;
    std::size_t N = 0, p = 0;
    std::vector<NeumannCandidate::Entry> r;  // R (N x p)
    std::size_t k = 0;
    double mu = 0;
    Mat F;  // m x f
    double float_slack = 0;  // ||M||_F^2 - k mu - ||F||^2 - m (eps rho)^2
    std::string method;
};

struct LowerOptions {
    double margin = 1e-6;        // required float slack below 1
    std::size_t lp_max_rows = 24;  // LP refinement only for row sets up to this size (GLPK needs > 3 s per LP at 40 rows x 94 keys)
    int smooth_iterations = 200;   // neumann_smooth_grow: L-BFGS steps per candidate row
    double smooth_stall = 0;       // neumann_smooth_grow: stop after this many seconds without admitting a row, once a
                                   // candidate costs more than half of it (0: never)
    double lp_time_limit = 3;      // seconds per LP
    double lp_budget = 4;          // seconds of LP growth per eps
    double lp_reopt_size = 2500;   // neumann_smooth_grow: re-optimise R by the all-keys LP (interior point) at the end of
                                   // each pass, and repeat passes, while rows x keys is at most this (0.3 s at 21 rows x 94
                                   // keys; 0: never, one pass as in phase 2).  Was 6000: at 105 tokens and 40 rows an
                                   // LP costs 1.3 s, and the row search's PDHG does more with that time (L +23 over 40
                                   // fresh heads, docs/producer.md)
    std::size_t lp_try_rows = 64;  // neumann_smooth_grow: rejected rows tried by the LP itself after a pass, at most
    Deadline deadline;             // the run's (LP growth and the cell pass stop at it)
    bool cells = true;             // neumann_greedy: a second pass with key cells for diffuse rows
    // neumann_smooth_grow: the order of the candidate rows.  automatic:
    // by residual (neumann_smooth.cpp) above 128 rows, where a candidate
    // costs tenths of a second; causal up to 128.
    enum class Order { automatic, causal, residual } order = Order::automatic;
    int pdhg_iterations = 3000;    // neumann_smooth_grow: where the exact LP is out of reach, the same LP by PDHG
                                   // (neumann_pdhg) with at most this many steps (0: never)
    int pdhg_candidate_iterations = 400;  // neumann_smooth_grow: PDHG steps per candidate row where PDHG stands in
    bool pdhg_bordered_first = true;      // ... unless the bordered right inverse alone is below the admission level
    double pdhg_candidate_slack = 0.01;   // ... stopping once within this of the set's value before the candidate (0: all steps)
    double pdhg_restore_gap = 0.03;       // ... and a rejection once the value rose this much since the last PDHG run on
                                          // the set runs PDHG on the set again (0: never)
    std::size_t pdhg_min_rows = 257;      // neumann_smooth_grow: PDHG stands in for the LP on instances with this many
                                          // rows or more (measured at 512 tokens only; smaller ones keep the smooth path)
    int smooth_start_iterations = 1600;  // neumann_smooth_grow: a longer search for slack at the start where there is no LP
    std::function<void(const std::string&)> progress;
};

// delta + eps * rho for rows I and R (triplets), in floating point.
double neumann_float_value(const Mat& A, double eps, const std::vector<std::size_t>& rows,
                           const std::vector<NeumannCandidate::Entry>& r, std::size_t N);
// Greedy rows/columns with R = inv(A_IJ) (column-support certificates).
NeumannCandidate neumann_greedy(const Mat& A, double eps, const LowerOptions& opt);
// For a row set, R minimising delta + eps * rho (LP, GLPK).  top8_simplex:
// R supported on the 8 heaviest keys of each row, dual simplex within
// opt.lp_time_limit.  all_keys_interior: R over every key the rows reach,
// interior point method (no time limit: keep m * N small).
enum class LpMode { top8_simplex, all_keys_interior };
std::optional<NeumannCandidate> neumann_lp(const Mat& A, double eps, const std::vector<std::size_t>& rows,
                                           const LowerOptions& opt, LpMode mode = LpMode::top8_simplex);
// Grow a row set with LP-optimised R while the condition holds.
NeumannCandidate neumann_lp_grow(const Mat& A, double eps, NeumannCandidate start, const LowerOptions& opt);
// Grow a row set with R over all keys chosen by smooth minimax (L-BFGS on a
// log-sum-exp surrogate of delta + eps rho), admitting rows in causal order
// or by residual (LowerOptions::order; neumann_smooth.cpp).  The largest row set whose float value is below
// 1 - margin, if any.  With `start_r` (a candidate for exactly the rows
// `start`) the search also starts from its R and keeps the better start.
// With `rejected` (order by residual only), the first pass skips the rows
// listed there, and the list is left holding those and the rows the last
// pass tried and rejected, so that a later call does not try them first again.
// With `resume` (causal order only), the first pass starts at row *resume (wrapping around to
// the rows before it) and *resume is left at the row the search had reached
// when it stopped (the one under way or about to be tried, which a later
// call tries first), so that a later call goes on where this one stopped.
std::optional<NeumannCandidate> neumann_smooth_grow(const Mat& A, double eps, const std::vector<std::size_t>& start,
                                                    const LowerOptions& opt, const Deadline& dl,
                                                    const NeumannCandidate* start_r = nullptr,
                                                    std::size_t* resume = nullptr,
                                                    std::vector<std::size_t>* rejected = nullptr);
// Row-set local search (neumann_search.cpp): best-add and swap moves on
// the row set, each set valued by the all-keys Neumann LP approximated by
// PDHG from warm starts.  Returns the largest set found whose float value
// is below 1 - margin (nullopt if none, e.g. a start above it that no swap
// brings down).
struct SearchOptions {
    int start_steps = 1500;     // PDHG steps on the start set
    int score_steps = 60;       // PDHG steps scoring one outsider (bordered start)
    int refine_steps = 300;     // PDHG steps for the best few outsiders and for each swap
    int polish_steps = 1000;    // PDHG steps on the set after each add, before its outsiders are scored
    int squeeze_steps = 1500;   // PDHG steps for each of the best few outsiders before the search gives up on adds
    std::size_t refine_top = 4;  // outsiders refined per round
    // Score outsiders by the bordered least-norm right inverse alone (no PDHG
    // steps): about 0.1 s per add instead of 0.5 to 1.5 s at 197 tokens.  On
    // the image-like heads it also ranked them better (image 12, eps 0.1:
    // 16 -> 22 rows in the same share); on causal 105-token heads neutral
    // (fresh seed 19: L -2 in sum over 40 heads).  `rankcert bracket` sets
    // it where the instance has no causal order; restarts above
    // restart_all_rows always score this way.
    bool score_least_norm = false;
    // Every add refines the best refine_top outsiders by the exact LP (where
    // `exact` applies) and the best of them joins, instead of the first
    // whose score is admissible: a best-add greedy on the exact value at the
    // cost of refine_top LPs per add.  The restarts set it where n is at
    // most restart_all_rows (docs/producer.md, "Restarts").
    bool exact_adds = false;
    std::size_t swap_out = 4;   // rows of I (least dual weight) tried out per round
    std::size_t swap_in = 4;    // best-scored outsiders tried in for each
    double admit = 0.99;        // a row joins when its PDHG value is below this
    double swap_gain = 2e-3;    // a swap is kept when it lowers the value by this much
    double exact_size = 2500;   // refine by the exact LP (GLPK interior point) where rows x keys is at most this, else PDHG
    // When the squeeze leaves the best outsiders below `exact_squeeze_below`
    // but above 1, the best `exact_squeeze_top` get the exact LP where rows x
    // keys is at most `exact_squeeze_size` (0: never).
    double exact_squeeze_size = 5000;
    double squeeze_scale = 1.25;  // the squeeze ranks outsiders at eps / this (values above 1 are flat at eps)
    double exact_squeeze_below = 1.03;
    std::size_t exact_squeeze_top = 2;
    double exact_all_size = 2500;  // refine every outsider (not only the best few) where rows x keys is at most this
    std::size_t exact_all_outsiders = 64;  // ... and there are at most this many outsiders (197-token image head, 7 rows,
                                           // --focus lower: one local search valuing 190 outsiders exactly
                                           // took 39 s and left no time for a restart)
    double margin = 1e-6;
    std::size_t restarts = 1000;         // searches after the first local optimum, while time is left
    std::size_t restart_all_rows = 64;   // up to this many rows every single row is a restart; above, single rows and kicks alternate
    std::size_t single_restart_rows = 64;  // ... single rows only while the best set has at most this many rows
    std::uint64_t seed = 1;             // the restarts' order
    // Threads for the outsiders' scores, the refines, the swaps and the
    // squeeze of one round (0: one per core).  Refines by the exact LP
    // (GLPK) stay on one thread.  Swaps and squeezes try candidates in
    // batches of `batch` (0: the worker count) in their order, and the first
    // that passes in a batch wins, so the moves depend on `batch`, never on
    // `threads`.
    unsigned threads = 0;
    std::size_t batch = 0;
    // Before the first search: greedy runs (least-norm adds only) from the
    // start set and from this many single rows, within greedy_share of the
    // time; the first search goes on from the largest set they reach.
    std::size_t greedy_starts = 0;
    double greedy_share = 0.4;
    bool adds_only = false;  // stop when no outsider's score is below `admit` (no refine, swap or squeeze)
    // The start set is a local optimum already (an earlier search from it
    // ended there): go straight to the restarts.
    bool start_is_local_optimum = false;
    std::function<void(const std::string&)> progress;
};
struct SearchStats {
    std::size_t start_rows = 0, end_rows = 0, adds = 0, swaps = 0, evaluations = 0, restarts = 0;
    double start_value = 0, end_value = 0;
    bool local_optimum = false;  // stopped because no add and no swap helped (not the deadline)
};
std::optional<NeumannCandidate> neumann_local_search(const Mat& A, double eps, const NeumannCandidate& start,
                                                     const SearchOptions& so, const Deadline& dl,
                                                     SearchStats* stats = nullptr);
// Make a Neumann candidate small on disk (bracket.cpp): drop R's smallest
// entries while the float value keeps half of its slack below 1 - margin, then
// round R to float16 or float32 where the value still passes.
void compact_neumann(const Mat& A, double eps, NeumannCandidate& c, double margin);
// The same smooth minimax for fixed rows I from a given R (N x m): the best
// R found (by the float value delta + eps rho) after at most `iterations`
// L-BFGS steps, stopping once the value is below `enough`; nullopt unless the
// value ends below 1 - margin.
std::optional<NeumannCandidate> neumann_smooth_polish(const Mat& A, double eps, const std::vector<std::size_t>& rows,
                                                      Mat R, int iterations, double enough, double margin,
                                                      const Deadline& dl);
// The Neumann LP for the rows A_I by the primal-dual hybrid gradient method,
// from R (N x m, updated to the best iterate); returns its float value
// delta + eps rho.  Stops after `iterations` steps, at the deadline, or once
// the value is below `enough` (neumann_smooth.cpp).
// `dual`, when given, is the dual start (used when it is m x m) and receives
// the last dual point, for a warm start of the next run.
double neumann_pdhg(const Mat& AI, double eps, Mat& R, int iterations, double enough, const Deadline& dl,
                    Mat* dual = nullptr);
// The float value delta + eps rho of a dense right inverse R (N x m) for the
// rows AI (m x N): ||I - AI R||_inf + eps ||R||_inf.
double neumann_value_dense(const Mat& AI, double eps, const Mat& R);
// A right inverse for fixed rows I by ADMM (neumann_smooth.cpp): R with
// every row's l1 norm at most target / eps and A_I R as close to I as
// `iterations` steps get; nullopt unless delta + eps rho ends below
// 1 - margin (or A_I A_I^T is not positive definite).
std::optional<NeumannCandidate> neumann_admm(const Mat& A, double eps, const std::vector<std::size_t>& rows, double target,
                                             int iterations, double margin, const Deadline& dl);
// Tail certificates: rows I, R = identity or a key partition; largest k.
std::optional<TailCandidate> tail_search(const Mat& A, double eps, const LowerOptions& opt);

// ---- serialisation ------------------------------------------------------------
// Exact spelling of a double (C99 hex float, or "0").
std::string exact_text(double x);

// Copy the sidecars an instance names (q, k, key_bias, mask, logits, a) from
// the folder of the file `display` (where the instance was read) to `to`,
// both ends confined by rankcert/paths.hpp: "../x", an absolute path, or a
// symlink leaving either folder is refused before anything is written.
void copy_instance_sidecars(const json& inst, const std::filesystem::path& from, const std::filesystem::path& to,
                            const std::string& display);
// An array object: inline when small, else an .npy sidecar written to dir.
// (float32 .npy when every entry is a float32, else float64).
json array_json(const Mat& m, const std::string& dir, const std::string& name, std::size_t inline_limit = 256);
json factor_json(const FactorCandidate& c, const std::string& dir, const std::string& stem);
json row_interp_json(const RowInterpCandidate& c, const std::string& dir, const std::string& stem);
json neumann_json(const NeumannCandidate& c, const std::string& dir, const std::string& stem);
json tail_json(const TailCandidate& c, const std::string& dir, const std::string& stem);
// Write a float64 (or float32) .npy file; returns its sha256.
std::string write_npy(const std::string& path, const Mat& m, bool f32 = false);
// The same with 2 (float16), 4 or 8 bytes per entry.
std::string write_npy(const std::string& path, const Mat& m, int bytes_per_entry);
bool is_float32(const Mat& m);
bool is_float16(const Mat& m);
// Entries rounded to the nearest float32 (to make bundles smaller; the
// producer re-checks in floating point before using the rounded version).
Mat round_to_float32(const Mat& m);
Mat round_to_float16(const Mat& m);

}  // namespace rankcert::producer
