// rankcert-recheck: the second checker.  It shares no source with
// src/checker/ and no arithmetic library with it (Boost.Multiprecision's
// gmp_rational and MPFR here; FLINT and Arb there), reads bundles with its
// own readers, recomputes every certificate's inequalities on every row, and
// compares with rankcert's witness (docs/trust.md).
#pragma once

#include "input.hpp"

#include <functional>
#include <memory>
#include <mutex>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace recheck {

// ---- sums with an a priori error bound (binary64 tier) -------------------------------

// Round-to-nearest sum_t x_t y_t (four partial sums, so that it vectorizes;
// the error bound below holds for any order of summation).
inline double dot_rn(const double* x, const double* y, std::size_t K) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    std::size_t t = 0;
    for (; t + 4 <= K; t += 4) {
        s0 += x[t] * y[t];
        s1 += x[t + 1] * y[t + 1];
        s2 += x[t + 2] * y[t + 2];
        s3 += x[t + 3] * y[t + 3];
    }
    for (; t < K; ++t) s0 += x[t] * y[t];
    return (s0 + s1) + (s2 + s3);
}
// A rigorous upper bound of the Euclidean norm of x.
double norm_up(const double* x, std::size_t K);
// An enclosure of sum_t x_t y_t for x_t in xm_t +- xr_t and y_t in ym_t +-
// yr_t, given D = dot_rn(xm, ym) and upper bounds of the norms of xm, xr, ym
// and yr.  With gamma_K = K u / (1 - K u) (Higham, Accuracy and Stability,
// 3.1; any order of summation) and Cauchy-Schwarz,
//   |D - xm.ym| <= gamma_K |xm| |ym| + K 2^-1074,
//   |x.y - xm.ym| <= |xr| (|ym| + |yr|) + |xm| |yr|,
// every product and sum of the bound rounded up.
DI dot_enclose(double D, std::size_t K, double nxm, double nxr, double nym, double nyr);
// Midpoints and radii of DI values (radii rounded up).
void mid_rad(const std::vector<DI>& x, std::vector<double>& m, std::vector<double>& r);

// Rows of a matrix (or of its transpose) with their norms, for dot_enclose.
struct Rows {
    Rows() = default;
    // The rows of `a` (transposed: its columns).
    Rows(const Array& a, bool transposed);
    std::size_t count = 0, K = 0;
    std::vector<double> mid, rad;  // count x K
    std::vector<double> nmid, nrad;
    double sum_nmid = 0, sum_nrad = 0;  // upper bounds of the sums of the norms
    const double* m(std::size_t i) const { return mid.data() + i * K; }
    DI dot(std::size_t i, const double* xm, double nxm, double nxr) const {
        return dot_enclose(dot_rn(xm, m(i), K), K, nxm, nxr, nmid[i], nrad[i]);
    }
};

// ---- the instance (FORMAT.md, "Instance") ---------------------------------------

struct Instance {
    std::string kind;  // qk, logits, matrix, kronecker
    std::size_t n = 0, N = 0;
    Array a;           // matrix
    Array s;           // logits
    Array q, k, bias;  // qk (bias empty: none)
    std::size_t d = 0;
    Number scale;
    Q temperature = 1;
    std::vector<char> allowed;  // n x N, empty: every entry
    std::vector<Instance> factors;  // kronecker

    bool softmax() const;  // rows have l1 norm 1
    bool is_allowed(std::size_t i, std::size_t j) const { return allowed.empty() || allowed[i * N + j]; }
    bool masked() const { return !allowed.empty() || (kind == "logits" && !s.neg_inf.empty()); }
    // temperature * scale as an interval (qk).
    template <class I> I coef() const;
    // Row i of the logits (qk, logits); masked entries are flagged in `ok`.
    template <class I> std::vector<I> logits(std::size_t i, std::vector<char>& ok) const;
    // Row i of A.  The DI rows are cached (every certificate of a bundle
    // reads them).
    template <class I> std::vector<I> row(std::size_t i) const;
    const std::vector<DI>& row_di(std::size_t i) const;
    // <q_i, k_j> enclosed (binary64 tier).
    DI qk_di(std::size_t i, std::size_t j) const;

    // Call once the instance is read: the tables the row functions share
    // between threads (q and k with their norms, the DI row cache).
    void prepare();
    std::vector<std::vector<DI>> di_cache;  // filled once per row (di_once), from any thread
    std::unique_ptr<std::once_flag[]> di_once;
    Rows qrows, krows;  // q and k with their norms (binary64 tier)
};

Instance read_instance(const Json& j, Sidecars& sc, const std::string& where);

// Row softmax of logits (masked entries 0); the shift is the largest
// midpoint, so the exponentials stay at most about 1.
template <class I> std::vector<I> softmax(const std::vector<I>& s, const std::vector<char>& ok);

// ---- the row loop with its precision ladder --------------------------------------------

// How rows are tested against the threshold.
struct Test {
    enum class Rel { le, lt } rel = Rel::le;
    Q threshold;
    mpfr_prec_t only_bits = 0;  // nonzero: every row by MPFR at this precision only
    template <class I> Verdict operator()(const I& x) const { return rel == Rel::le ? le(x, threshold) : lt(x, threshold); }
};

// What the witness says about the rows of one certificate: the bound W on
// every row's value of a verified row-wise check, and the decisive row.
struct RowClaim {
    std::optional<Q> every_row_at_most;
    std::optional<std::size_t> decisive;
};

struct Outcome {
    Verdict verdict = Verdict::undecided;
    bool unsupported = false;
    std::size_t rows_checked = 0;
    std::size_t mpfr_rows = 0;       // rows the binary64 tier left to MPFR
    std::optional<std::size_t> above;  // a row certainly above the witness's W
    std::optional<Encl> decisive;      // our enclosure of the decisive quantity
    std::map<std::string, Encl> named; // global quantities (frobenius_sq, q, tau, ...)
    std::map<std::string, Q> exact;    // exact quantities (kappa_gauge_sq, visible_dim)
    std::map<std::string, std::size_t> above_named;  // sandwich: rows above a stated worst-row bound
    End max_lo, max_hi;                // the largest ends over the rows checked
    std::size_t rank = 0;              // the rank the certificate proves
};

// Runs value<DI>(t) for every t < count, and value<MI>(t) at 128, 512 and
// 2048 bits for the rows the binary64 tier leaves undecided.  Stops at the
// first refuted row (the decisive row is still evaluated).
using RowFn = std::function<DI(std::size_t)>;
using RowFnMI = std::function<MI(std::size_t)>;
// Rows of a matrix instance (exact rationals) have an exact value too; it
// decides what no precision can (a row error exactly equal to eps).
using RowFnQ = std::function<Q(std::size_t)>;
Outcome run_rows(std::size_t count, const Test& test, const RowFn& di, const RowFnMI& mi, const RowClaim& claim,
                 const RowFnQ& exact = {});

// Worker threads for the rows of one certificate (set by main).
extern unsigned row_threads;

// Tables an MPFR row function builds once per precision, shared by the
// row threads.
template <class T> class PerBits {
public:
    template <class F> const T& get(F make) {
        std::lock_guard<std::mutex> g(mu_);
        auto it = m_.find(get_mi_bits());
        if (it == m_.end()) it = m_.emplace(get_mi_bits(), make()).first;
        return it->second;
    }

private:
    std::mutex mu_;
    std::map<mpfr_prec_t, T> m_;
};

// The precisions of the MPFR ladder, in bits.
inline constexpr mpfr_prec_t ladder[] = {128, 512, 2048};

// ---- certificate kinds (one file each) ------------------------------------------

struct Context {
    const Instance& inst;
    Sidecars& sc;
    Q eps;
    const Json& cert;
    std::string where;  // certificates[i]
    RowClaim claim;
    const Json* decisive;  // the witness's decisive object (may be null)
};

Outcome check_factor(const Context& c);
Outcome check_row_interpolative(const Context& c);
Outcome check_neumann(const Context& c);
Outcome check_block_neumann(const Context& c);
Outcome check_borsuk(const Context& c);
Outcome check_tail(const Context& c);
Outcome check_trivial(const Context& c);
Outcome check_zonal(const Context& c);
Outcome check_kron_factor(const Context& c);
Outcome check_kron_neumann(const Context& c);
Outcome check_sandwich(const Context& c);
Outcome check_profile(const Context& c);

// Every row's error sum_j |A_ij - (U W^T)_ij| against `test` (kron_factor
// uses it for each factor).
Outcome factor_rows(const Instance& inst, const Array& u, const Array& w, const Test& test, const RowClaim& claim);

// A matrix R (N x m) applied to rows of A: v_u = sum_j a_j R_ju.  The
// binary64 tier keeps R transposed and sums with dot_ap; MPFR per entry.
struct Columns {
    explicit Columns(const Array& R);
    std::vector<DI> apply(const std::vector<DI>& a) const;
    std::vector<MI> apply(const std::vector<MI>& a) const;
    std::size_t N, m;
    Rows t;  // the columns of R
    const Array& r;
};
// Positive definiteness of a symmetric interval matrix (lower triangle
// given) in binary64: verified or undecided (kinds/tail.cpp).
Verdict spd_di(const std::vector<std::vector<DI>>& H);

// sum_k c_k T_k(t), t in the interval, c_k in cm_k +- cr_k: Clenshaw's
// recurrence in binary64 with a running error bound (kinds/zonal.cpp).
DI clenshaw_di(const DI& t, const std::vector<double>& cm, const std::vector<double>& cr);

// max_j sum_b max_{k in block b} |v_jk|, exactly (block_neumann, borsuk:
// block_of[k] is the block of column k).
Q block_column_norm(const Array& v, const std::vector<std::size_t>& block_of, std::size_t blocks);

// max_j sum_u |R_ju|, exactly.
Q row_l1_max(const Array& r);

// The rank an instance's rows and certificates claim, as a size.
std::size_t rank_of(const Json& cert, const std::string& where);
// Certificate dense arrays, with a shape check.
Array dense(const Context& c, const char* key, std::size_t rows, std::size_t cols);
std::vector<std::size_t> indices(const Json& j, const std::string& where, std::size_t below, bool distinct);

}  // namespace recheck
