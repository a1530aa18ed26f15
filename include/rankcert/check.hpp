// The trusted checker: certificate checks and the bundle verdict.
//
// rankcert prints "verified" for a bundle only if every certificate's
// defining inequality (docs/theory.md, "Upper bounds", "Lower bounds") holds
// for every point of rigorous enclosures of the exact instance, and the claim
// lies inside the certified bracket.  Each certificate kind is one unit under
// src/checker/cert/ (see rankcert/kinds.hpp); this header is what they share.
#pragma once

#include "rankcert/bundle.hpp"
#include "rankcert/enclose.hpp"

#include <functional>
#include <string>
#include <vector>

namespace rankcert {

struct CheckOptions {
    slong max_prec = PrecisionLadder::default_max_bits;
    unsigned threads = 0;  // 0: one per core (at most 8)
    bool fast_tier = true;  // decide rows in binary64 with rigorous bounds first (rankcert/fast.hpp)
    // Called now and then on long checks with a short status text.
    std::function<void(const std::string&)> progress;
};

struct CertResult {
    std::size_t index = 0;
    CertKind kind = CertKind::trivial;
    Bound bound = Bound::lower;
    std::uint64_t rank = 0;
    Verdict verdict = Verdict::undecided;
    std::string detail;     // one human-readable sentence
    std::string precision;  // "64" .. bits, "exact", or "theorem"
    json decisive;          // the decisive quantities as exact numbers (witness)
};

struct Report {
    Verdict verdict = Verdict::undecided;
    std::uint64_t lower = 0, upper = 0;  // certified bracket
    bool closed = false;
    bool claim_supported = false;
    std::string claim_detail;
    std::vector<CertResult> certificates;
    double seconds = 0;
};

CertResult check_certificate(const Instance& inst, const Rat& eps, const Certificate& cert, const CheckOptions& opt);
Report verify(const Bundle& b, const CheckOptions& opt);

}  // namespace rankcert
