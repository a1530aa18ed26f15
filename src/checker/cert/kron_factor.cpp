// kron_factor: B = B_1 (x) ... (x) B_r for a kronecker instance
// (docs/theory.md, "Kronecker instances").
//
// With e_k >= ||A_k - B_k||_inf and a_k >= ||A_k||_inf (1 for softmax
// factors, exact for matrix factors), checked:
// E = sum_k (prod_{j<k} (a_j + e_j)) e_k (prod_{j>k} a_j) <= eps.
// Each e_k is the largest row error of the factor, every row enclosed as in
// `factor` (fast tier, ladder, exact for rational factors).  A factor row with
// error certainly above eps / prod_{j != k} a_j refutes at once (E is at least
// e_k prod_{j != k} a_j); otherwise E is bounded from the rows' enclosures:
// verified when its upper end is <= eps, refuted when its lower end is > eps.
#include "combination.hpp"
#include "units.hpp"

namespace rankcert::cert {

namespace {

// ||A_k||_inf: 1 for softmax rows (a theorem), exact for a matrix factor.
Rat factor_norm(const Instance& f) {
    if (f.is_softmax()) return Rat(1);
    Rat best;
    for (std::size_t i = 0; i < f.n; ++i) {
        Rat s;
        for (std::size_t j = 0; j < f.N; ++j) s = s + f.a(i, j).abs();
        if (s > best) best = s;
    }
    return best;
}

// E from per-factor values e_k and norms a_k (monotone in every e_k).
Rat telescoped(const std::vector<Rat>& e, const std::vector<Rat>& a) {
    Rat total;
    for (std::size_t k = 0; k < e.size(); ++k) {
        Rat term = e[k];
        for (std::size_t j = 0; j < k; ++j) term = term * (a[j] + e[j]);
        for (std::size_t j = k + 1; j < e.size(); ++j) term = term * a[j];
        total = total + term;
    }
    return total;
}

}  // namespace

void parse_kron_factor(const json& c, const Where& w, const Instance& I, ArrayLoader& L, Certificate& cert) {
    const json& fs = kron_factor_list(c, w, I, "{u, w}");
    KronFactorCert kc;
    std::uint64_t rank = 1;
    for (std::size_t k = 0; k < fs.size(); ++k) {
        const Where wk = w.key("factors").index(k);
        const Instance& f = I.factors[k];
        FactorCert fc;
        fc.u = L.load(require(fs[k], "u", wk), wk.key("u"));
        fc.w = L.load(require(fs[k], "w", wk), wk.key("w"));
        std::size_t kk = fc.u.cols;
        if (fc.u.is_vector && fc.u.rows == f.n) kk = 1;
        expect_shape(fc.u, f.n, kk, wk.key("u"), "n_k x k_k");
        expect_shape(fc.w, f.N, kk, wk.key("w"), "N_k x k_k");
        // A factor of rank above min(n_k, N_k) proves nothing; refusing it
        // keeps prod k_k <= prod min(n_k, N_k) <= 2^62 (no wrap-around).
        if (kk > std::min(f.n, f.N))
            throw InputError(wk.key("u"), "has k_k = " + std::to_string(kk) + " columns, more than min(n_k, N_k) = " +
                                              std::to_string(std::min(f.n, f.N)));
        rank *= kk;
        kc.factors.push_back(std::move(fc));
    }
    check_rank(c, w, rank, cert, true);
    cert.data = std::move(kc);
}

CertResult check_kron_factor(const Instance& I, const Rat& eps, const Certificate& c, const CheckOptions& opt) {
    const auto& kc = c.as<KronFactorCert>();
    CertResult res = result_for(c);
    const std::size_t r = I.factors.size();
    std::vector<Rat> a(r), e_lo(r), e_hi(r);
    for (std::size_t k = 0; k < r; ++k) a[k] = factor_norm(I.factors[k]);
    json per = json::array();
    std::string worst_precision = "fast";
    for (std::size_t k = 0; k < r; ++k) {
        Rat others(1);
        for (std::size_t j = 0; j < r; ++j)
            if (j != k) others = others * a[j];  // > 0: zero matrix factors are input errors
        const Rat thr = eps / others;
        const FactorCert& f = kc.factors[k];
        CombinationRows q(I.factors[k], f.u, f.u.cols, &f.w, nullptr);
        const rows::RowOutcome o =
            rows::decide_rows(q, {{thr, false}}, opt, "kron_factor " + std::to_string(k));
        // The highest precision any axis needed ("fast" < bits < "exact").
        if (rows::precision_level(o.precision) > rows::precision_level(worst_precision)) worst_precision = o.precision;
        const std::string encl = o.enclosure.empty() ? "" : interval_text(o.enclosure[0]);
        per.push_back({{"factor", k},
                       {"norm_a", a[k].str()},
                       {"row", o.row},
                       {"e_enclosure", o.enclosure.empty() ? json(nullptr) : endpoints_json(o.enclosure[0])},
                       {"e_upper", o.worst.empty() ? json(nullptr) : endpoints_json(o.worst[0])}});
        if (o.verdict != Verdict::verified) {
            res.verdict = o.verdict;
            res.precision = o.precision;
            res.decisive = {{"quantity", "factor_row_error"}, {"factor", k}, {"row", o.row},
                            {"threshold", thr.str()}, {"factors", per}};
            res.detail = o.verdict == Verdict::refuted
                             ? "factor " + std::to_string(k) + " row " + std::to_string(o.row) + " error in " + encl +
                                   " exceeds eps / prod of the other norms = " + exact_text(thr)
                             : "factor " + std::to_string(k) + ": " + std::to_string(o.undecided_rows) +
                                   " rows undecided at " + o.precision + " bits";
            return res;
        }
        // Verified rows: the worst row's enclosure bounds e_k from below, the
        // largest upper end over all rows bounds it from above.
        if (!o.enclosure[0].bounded || !o.worst[0].bounded) {
            res.verdict = Verdict::undecided;
            res.detail = "factor " + std::to_string(k) + ": unbounded row error enclosure";
            return res;
        }
        e_lo[k] = o.enclosure[0].lo.sign() > 0 ? o.enclosure[0].lo : Rat();
        e_hi[k] = o.worst[0].hi;
    }
    const Rat lo = telescoped(e_lo, a), hi = telescoped(e_hi, a);
    res.precision = worst_precision;
    res.decisive = {{"quantity", "telescoped_error"}, {"enclosure", endpoints_json(Endpoints{lo, hi, true})},
                    {"relation", "<="}, {"threshold", eps.str()}, {"factors", per}};
    const std::string what = "telescoped error in " + interval_text(Endpoints{lo, hi, true});
    if (hi <= eps) {
        res.verdict = Verdict::verified;
        res.detail = what + " <= eps";
    } else if (lo > eps) {
        res.verdict = Verdict::refuted;
        res.detail = what + " exceeds eps = " + exact_text(eps);
    } else {
        res.verdict = Verdict::undecided;
        res.detail = what + " straddles eps = " + exact_text(eps);
    }
    return res;
}

std::string describe_kron_factor(const Certificate& c) {
    const auto& kc = c.as<KronFactorCert>();
    std::string s;
    for (std::size_t k = 0; k < kc.factors.size(); ++k)
        s += (k ? " (x) " : "") + std::string("rank ") + std::to_string(kc.factors[k].u.cols);
    return s;
}

}  // namespace rankcert::cert
