// Sweep witnesses `rankcert-sweep/1`: a list of certified brackets over a
// parameter (beta, or eps) and the fitted growth exponents.
//
// Verifying a sweep verifies every bundle it lists (whose sha256 must match),
// checks that the listed L and U are the certified ones, and recomputes the
// least-squares slopes of log L and log U against log beta (or log 1/eps)
// over the fitted points in ball arithmetic: a stated slope interval is
// verified only if it contains the whole enclosure of the exact slope.
#pragma once

#include "rankcert/check.hpp"

#include <filesystem>
#include <functional>

namespace rankcert {

struct SweepPointResult {
    std::string bundle;
    Verdict verdict = Verdict::undecided;
    std::uint64_t L = 0, U = 0;
    std::string detail;
};

struct SweepReport {
    Verdict verdict = Verdict::undecided;
    std::vector<SweepPointResult> points;
    Endpoints slope_L, slope_U;  // enclosures of the exact least-squares slopes
    Verdict fit_L = Verdict::undecided, fit_U = Verdict::undecided;
    std::string detail;
};

// verify_bundle(path) returns the checker's report for a bundle file, and
// its sha256 (so that callers can cache reports across a folder).
using BundleVerifier = std::function<std::pair<Report, std::string>(const std::filesystem::path&)>;

SweepReport verify_sweep(const json& doc, const std::filesystem::path& dir, const std::string& display,
                         const BundleVerifier& verify_bundle);

}  // namespace rankcert
