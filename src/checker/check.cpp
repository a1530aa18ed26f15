// The bundle verdict (docs/theory.md, "Verdicts and precision").
//
// Each certificate is checked by its kind's unit (src/checker/cert/); a
// verified upper certificate of rank k gives U <= k, a verified lower one
// L >= k.  The bundle is verified when every certificate is and the claim lies
// inside [L, U]; refuted when a certificate is refuted or the claim is
// impossible; undecided otherwise.
#include "rankcert/check.hpp"

#include "rankcert/kinds.hpp"

#include <algorithm>
#include <chrono>

namespace rankcert {

CertResult check_certificate(const Instance& I, const Rat& eps, const Certificate& c, const CheckOptions& opt) {
    return kind_info(c.kind()).check(I, eps, c, opt);
}

namespace {

// Is the claim possible, and is it inside the certified bracket?
void decide_claim(const Bundle& b, Report& r, bool& impossible) {
    const std::uint64_t full = std::min(b.instance.n, b.instance.N);
    std::string why;
    impossible = false;
    if (b.claim_lower && b.claim_upper && *b.claim_lower > *b.claim_upper) {
        impossible = true;
        why = "claim lower > claim upper";
    }
    if (b.claim_lower && *b.claim_lower > full) {
        impossible = true;
        why = "claim lower exceeds min(n, N) = " + std::to_string(full);
    }
    if (b.claim_upper && *b.claim_upper > full) {
        impossible = true;
        why = "claim upper exceeds min(n, N) = " + std::to_string(full);
    }
    r.claim_supported = !impossible && (!b.claim_lower || *b.claim_lower <= r.lower) &&
                        (!b.claim_upper || *b.claim_upper >= r.upper);
    if (impossible) r.claim_detail = "impossible claim: " + why;
    else if (r.claim_supported) r.claim_detail = "claim supported by the certified bracket";
    else
        r.claim_detail = "claim [" + (b.claim_lower ? std::to_string(*b.claim_lower) : std::string("-")) + ", " +
                         (b.claim_upper ? std::to_string(*b.claim_upper) : std::string("-")) +
                         "] not supported by certified [" + std::to_string(r.lower) + ", " + std::to_string(r.upper) + "]";
}

}  // namespace

Report verify(const Bundle& b, const CheckOptions& opt) {
    const auto t0 = std::chrono::steady_clock::now();
    Report r;
    r.lower = 0;
    r.upper = std::min(b.instance.n, b.instance.N);  // B = A
    bool any_refuted = false, all_verified = true;
    for (std::size_t i = 0; i < b.certificates.size(); ++i) {
        const Certificate& c = b.certificates[i];
        CheckOptions o = opt;
        if (opt.progress) o.progress = [&, i](const std::string& s) { opt.progress("cert " + std::to_string(i) + " " + s); };
        CertResult cr = check_certificate(b.instance, b.eps, c, o);
        cr.index = i;
        if (cr.verdict == Verdict::verified) {
            if (c.bound == Bound::upper) r.upper = std::min<std::uint64_t>(r.upper, c.rank);
            else if (c.bound == Bound::lower) r.lower = std::max<std::uint64_t>(r.lower, c.rank);
        } else {
            all_verified = false;
            if (cr.verdict == Verdict::refuted) any_refuted = true;
        }
        r.certificates.push_back(std::move(cr));
    }
    if (r.lower > r.upper)
        throw std::logic_error("verified certificates contradict each other (lower " + std::to_string(r.lower) +
                               " > upper " + std::to_string(r.upper) + "): please report this checker bug");
    r.closed = r.lower == r.upper;
    bool impossible = false;
    decide_claim(b, r, impossible);
    if (any_refuted || impossible) r.verdict = Verdict::refuted;
    else if (all_verified && r.claim_supported) r.verdict = Verdict::verified;
    else r.verdict = Verdict::undecided;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace rankcert
