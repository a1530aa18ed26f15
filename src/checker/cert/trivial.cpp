// trivial: r_eps(A) >= 1 iff some row has l1 norm > eps (docs/theory.md,
// "Lower bounds").  Softmax rows have l1 norm exactly 1 (a theorem: rows are
// probability vectors), so the check is eps < 1; for a `matrix` instance the
// row norms are computed exactly.
#include "common.hpp"
#include "units.hpp"

namespace rankcert::cert {

void parse_trivial(const json& c, const Where& w, const Instance&, ArrayLoader&, Certificate& cert) {
    check_rank(c, w, 1, cert, true);
    cert.data = TrivialCert{};
}

CertResult check_trivial(const Instance& I, const Rat& eps, const Certificate& c, const CheckOptions&) {
    CertResult res = result_for(c);
    std::size_t best = 0;
    Rat best_norm(1);
    res.precision = "theorem";
    if (!I.is_softmax()) {
        res.precision = "exact";
        for (std::size_t i = 0; i < I.n; ++i) {
            Rat s;
            for (std::size_t j = 0; j < I.N; ++j) s = s + I.a(i, j).abs();
            if (i == 0 || s > best_norm) {
                best_norm = s;
                best = i;
            }
        }
    }
    res.verdict = best_norm > eps ? Verdict::verified : Verdict::refuted;
    res.decisive = {{"quantity", "row_l1_norm"}, {"row", best}, {"enclosure", endpoints_json({best_norm, best_norm, true})},
                    {"relation", ">"}, {"threshold", eps.str()}};
    const std::string rel = res.verdict == Verdict::verified ? " > eps" : " <= eps";
    res.detail = I.is_softmax() ? "softmax rows have l1 norm 1" + rel
                                : "largest row l1 norm (row " + std::to_string(best) + ") = " + exact_text(best_norm) + rel;
    return res;
}

std::string describe_trivial(const Certificate&) { return ""; }

}  // namespace rankcert::cert
