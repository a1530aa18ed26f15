// The one place for the precision ladder, the row-parallel loop and progress.
//
// Every certificate check that runs over rows (factor, row_interpolative,
// neumann, sandwich: all their inequalities; tail and profile: the rows they
// enclose before a global decision) goes through here, so --threads,
// --max-prec and progress mean the same thing for every kind.
// Theory: docs/theory.md, "Verdicts and precision".
#pragma once

#include "rankcert/check.hpp"

#include <functional>
#include <string>
#include <vector>

namespace rankcert::rows {

// Worker threads for `work` items (1 below 64 items).
unsigned worker_count(const CheckOptions& opt, std::size_t work);

// Run fn(t) for every t in items on the option's threads, reporting progress
// as "label: d/total rows at P bits".  fn returns false to stop early (the
// other workers stop soon after).  fn must only write to memory of its own t.
void parallel_for(const std::vector<std::size_t>& items, const CheckOptions& opt, const std::string& label, slong prec,
                  const std::function<bool(std::size_t)>& fn);
// The same over 0..count-1.
void parallel_for(std::size_t count, const CheckOptions& opt, const std::string& label, slong prec,
                  const std::function<bool(std::size_t)>& fn);

// A family of row-wise quantities: row t has values() numbers, each to be
// compared with its own exact threshold.
class RowQuantity {
public:
    virtual ~RowQuantity() = default;
    virtual std::size_t count() const = 0;
    virtual std::size_t values() const { return 1; }
    virtual void prepare(slong prec) = 0;
    // Enclose row t's values into out[0..values()).  Must be safe to call
    // concurrently after prepare().
    virtual void eval(std::size_t t, arb_ptr out) const = 0;
    // Exact values of row t (only when has_exact()).
    virtual bool has_exact() const { return false; }
    virtual void exact(std::size_t, std::vector<Rat>&) const {}
    // The fast tier (rankcert/fast.hpp): prepared once; false when it
    // declines the whole check.  fast(t, lo, hi) gives rigorous binary64
    // bounds lo[v] <= value v <= hi[v] of row t, or false (then the row goes
    // to the Arb ladder).  Must be safe to call concurrently.
    virtual bool fast_prepare() { return false; }
    virtual bool fast(std::size_t, double*, double*) const { return false; }
};

// value < threshold (strict) or value <= threshold.
struct RowTest {
    Rat threshold;
    bool strict = false;
};

struct RowOutcome {
    Verdict verdict = Verdict::undecided;
    std::size_t row = 0;               // the decisive row: refuting, first undecided, or worst (value 0)
    std::vector<Endpoints> enclosure;  // its values' enclosures
    std::vector<Endpoints> worst;      // verified: the largest upper end of each value over all rows
    std::string precision;             // highest precision used: "fast", "64".. or "exact"
    std::size_t undecided_rows = 0;
    std::size_t fast_rows = 0;         // rows decided by the fast tier
};

// Decide every row: rows undecided at one rung are retried at the next, and
// for rational data (has_exact) decided exactly.  A row is verified when all
// its tests are, refuted when one is certainly false.
RowOutcome decide_rows(RowQuantity& q, const std::vector<RowTest>& tests, const CheckOptions& opt,
                       const std::string& label);

// The order of precision names: "" and "fast" lowest, then bits, then "exact".
long precision_level(const std::string& p);

// The precisions of the ladder for these options.
std::vector<slong> ladder(const CheckOptions& opt);

}  // namespace rankcert::rows
