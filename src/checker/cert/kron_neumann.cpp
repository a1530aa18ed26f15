// kron_neumann: a neumann certificate for a kronecker instance, one factor at
// a time (docs/theory.md, "Kronecker instances").
//
// With M_k = (A_k)_{I_k} R_k, d_k(t) = (M_k)_tt, l_k(t) = sum_s |(M_k)_ts| and
// rho = prod_k ||R_k||_inf, checked for every multi-index t = (t_1, ..., t_r):
// |1 - prod d_k(t_k)| + prod l_k(t_k) - prod |d_k(t_k)| < 1 - eps rho,
// which is row t of delta + eps rho < 1 for the rows I_1 x ... x I_r and
// R = R_1 (x) ... (x) R_r, evaluated exactly for the product.  rho is exact
// (eps rho >= 1 refutes at once); the M_k are enclosed on the precision
// ladder, or computed exactly when every factor is rational.
#include "common.hpp"
#include "units.hpp"

namespace rankcert::cert {

namespace {

constexpr std::uint64_t max_multi = 1ull << 22;  // prod m_k

// Visit every multi-index (t_1, .., t_r) in Kronecker order; fn(t, flat).
template <class Fn>
void for_each_multi(const std::vector<std::size_t>& m, Fn fn) {
    std::vector<std::size_t> t(m.size(), 0);
    std::uint64_t total = 1;
    for (auto x : m) total *= x;
    for (std::uint64_t flat = 0; flat < total; ++flat) {
        if (!fn(t, flat)) return;
        for (std::size_t k = m.size(); k-- > 0;) {
            if (++t[k] < m[k]) break;
            t[k] = 0;
        }
    }
}

}  // namespace

void parse_kron_neumann(const json& c, const Where& w, const Instance& I, ArrayLoader& L, Certificate& cert) {
    const json& fs = kron_factor_list(c, w, I, "{rows, r}");
    KronNeumannCert kc;
    std::uint64_t rank = 1;
    for (std::size_t k = 0; k < fs.size(); ++k) {
        const Where wk = w.key("factors").index(k);
        const Instance& f = I.factors[k];
        NeumannCert nc;
        nc.rows = parse_rows(require(fs[k], "rows", wk), wk.key("rows"), f.n);
        nc.r = L.load_sparse(require(fs[k], "r", wk), wk.key("r"));
        if (nc.r.rows != f.N || nc.r.cols != nc.rows.size())
            throw InputError(wk.key("r"), "shape [" + std::to_string(nc.r.rows) + ", " + std::to_string(nc.r.cols) +
                                              "] does not match N_k x m_k [" + std::to_string(f.N) + ", " +
                                              std::to_string(nc.rows.size()) + "]");
        if (nc.rows.empty()) throw InputError(wk.key("rows"), "must name at least one row");
        rank *= nc.rows.size();
        if (rank > max_multi)
            throw InputError(wk.key("rows"), "the product of the row counts exceeds the limit of " +
                                                 std::to_string(max_multi));
        kc.factors.push_back(std::move(nc));
    }
    check_rank(c, w, rank, cert, true);
    cert.data = std::move(kc);
}

namespace {

json multi_json(const std::vector<std::size_t>& t) {
    json j = json::array();
    for (auto x : t) j.push_back(x);
    return j;
}

// Every factor rational: d_k, l_k exactly, then every multi-index.
void decide_exact(const Instance& I, const KronNeumannCert& kc, const std::vector<std::size_t>& m, const Rat& thr,
                  CertResult& res) {
    const std::size_t r = m.size();
    std::vector<std::vector<Rat>> d(r), l(r);
    for (std::size_t k = 0; k < r; ++k) {
        const auto& nc = kc.factors[k];
        const Instance& f = I.factors[k];
        d[k].resize(m[k]);
        l[k].resize(m[k]);
        for (std::size_t t = 0; t < m[k]; ++t) {
            std::vector<Rat> row(m[k]);
            for (const auto& en : nc.r.entries) fmpq_addmul(row[en.col].get(), f.a(nc.rows[t], en.row).get(), en.val.get());
            d[k][t] = row[t];
            for (auto& v : row) l[k][t] = l[k][t] + v.abs();
        }
    }
    Rat worst(-1);
    std::vector<std::size_t> worst_t;
    for_each_multi(m, [&](const std::vector<std::size_t>& t, std::uint64_t) {
        Rat pd(1), pl(1), pa(1);
        for (std::size_t k = 0; k < r; ++k) {
            pd = pd * d[k][t[k]];
            pl = pl * l[k][t[k]];
            pa = pa * d[k][t[k]].abs();
        }
        const Rat v = (Rat(1) - pd).abs() + pl - pa;
        if (v > worst) {
            worst = v;
            worst_t = t;
        }
        return v < thr;
    });
    res.precision = "exact";
    res.verdict = worst < thr ? Verdict::verified : Verdict::refuted;
    res.decisive["t"] = multi_json(worst_t);
    res.decisive["enclosure"] = endpoints_json(Endpoints{worst, worst, true});
    res.detail = "delta (row t) = " + exact_text(worst) + (res.verdict == Verdict::verified ? " < " : " >= ") +
                 "1 - eps*rho = " + exact_text(thr);
}

// Balls at one precision: d_k(t), l_k(t), |d_k(t)| of one factor.
void enclose_factor(const Instance& f, const NeumannCert& nc, slong prec, const CheckOptions& opt,
                    const std::string& label, BallVec& d, BallVec& l, BallVec& ad) {
    const std::size_t m = nc.rows.size();
    RowEncloser enc(f, prec);
    BallVec rv(nc.r.entries.size());
    for (std::size_t e = 0; e < nc.r.entries.size(); ++e) arb_set_fmpq(rv[e], nc.r.entries[e].val.get(), prec);
    rows::parallel_for(m, opt, label, prec, [&](std::size_t t) {
        BallVec a(f.N), row(m);
        enc.row(nc.rows[t], a.data());
        for (std::size_t e = 0; e < nc.r.entries.size(); ++e) {
            const auto& en = nc.r.entries[e];
            arb_addmul(row[en.col], a[en.row], rv[e], prec);
        }
        arb_set(d[t], row[t]);
        arb_abs(ad[t], row[t]);
        for (std::size_t s = 0; s < m; ++s) {
            arb_abs(row[s], row[s]);
            arb_add(l[t], l[t], row[s], prec);
        }
        return true;
    });
}

// One rung of the ladder: verified when every multi-index is certainly
// below thr (the reported t is the one with the largest upper end), refuted
// at the first certainly at or above it.
Verdict decide_at(const Instance& I, const KronNeumannCert& kc, const std::vector<std::size_t>& m, const Rat& thr,
                  slong prec, const CheckOptions& opt, std::vector<std::size_t>& decisive_t, Endpoints& decisive_e) {
    const std::size_t r = m.size();
    std::vector<BallVec> d, l, ad;
    for (std::size_t k = 0; k < r; ++k) {
        d.emplace_back(m[k]);
        l.emplace_back(m[k]);
        ad.emplace_back(m[k]);
        enclose_factor(I.factors[k], kc.factors[k], prec, opt, "kron_neumann " + std::to_string(k), d.back(), l.back(),
                       ad.back());
    }
    Verdict verdict = Verdict::verified;
    arf_t worst_hi, hi;
    arf_init(worst_hi);
    arf_init(hi);
    bool have_worst = false;
    Ball pd, pl, pa, v;
    for_each_multi(m, [&](const std::vector<std::size_t>& t, std::uint64_t) {
        arb_one(pd.get());
        arb_one(pl.get());
        arb_one(pa.get());
        for (std::size_t k = 0; k < r; ++k) {
            arb_mul(pd.get(), pd.get(), d[k][t[k]], prec);
            arb_mul(pl.get(), pl.get(), l[k][t[k]], prec);
            arb_mul(pa.get(), pa.get(), ad[k][t[k]], prec);
        }
        arb_sub_ui(v.get(), pd.get(), 1, prec);
        arb_abs(v.get(), v.get());
        arb_add(v.get(), v.get(), pl.get(), prec);
        arb_sub(v.get(), v.get(), pa.get(), prec);
        const Verdict vt = decide_lt(v.get(), thr);
        if (vt == Verdict::refuted || (vt == Verdict::undecided && verdict == Verdict::verified)) {
            verdict = vt;
            decisive_t = t;
            decisive_e = endpoints(v.get());
            return vt != Verdict::refuted;
        }
        if (verdict == Verdict::verified) {
            arb_get_ubound_arf(hi, v.get(), prec);
            if (!have_worst || arf_cmp(hi, worst_hi) > 0) {
                arf_set(worst_hi, hi);
                have_worst = true;
                decisive_t = t;
                decisive_e = endpoints(v.get());
            }
        }
        return true;
    });
    arf_clear(worst_hi);
    arf_clear(hi);
    return verdict;
}

}  // namespace

CertResult check_kron_neumann(const Instance& I, const Rat& eps, const Certificate& c, const CheckOptions& opt) {
    const auto& kc = c.as<KronNeumannCert>();
    CertResult res = result_for(c);
    std::vector<std::size_t> m;
    Rat rho(1);
    json rhos = json::array();
    for (const auto& f : kc.factors) {
        m.push_back(f.rows.size());
        const Rat rk = row_sum_norm(f.r);
        rhos.push_back(rk.str());
        rho = rho * rk;
    }
    const Rat thr = Rat(1) - eps * rho;
    res.decisive = {{"quantity", "delta_row"}, {"rho", rho.str()}, {"rho_factors", rhos},
                    {"relation", "delta + eps*rho < 1"}, {"threshold", thr.str()}};
    if (thr.sign() <= 0) {
        res.verdict = Verdict::refuted;
        res.precision = "exact";
        res.detail = "eps * prod ||R_k||_inf = " + exact_text(eps * rho) + " >= 1";
        return res;
    }
    if (std::none_of(I.factors.begin(), I.factors.end(), [](const Instance& f) { return f.is_softmax(); })) {
        decide_exact(I, kc, m, thr, res);
        return res;
    }
    for (slong prec : rows::ladder(opt)) {
        std::vector<std::size_t> t;
        Endpoints e;
        res.verdict = decide_at(I, kc, m, thr, prec, opt, t, e);
        res.precision = std::to_string(prec);
        res.decisive["t"] = multi_json(t);
        res.decisive["enclosure"] = endpoints_json(e);
        const std::string what = "delta (row t) in " + interval_text(e);
        if (res.verdict == Verdict::verified) {
            res.detail = what + ", rho = " + exact_text(rho) + ": delta + eps*rho < 1";
            break;
        }
        if (res.verdict == Verdict::refuted) {
            res.detail = what + " >= 1 - eps*rho = " + exact_text(thr);
            break;
        }
        res.detail = what + " undecided at " + std::to_string(prec) + " bits";
        if (opt.progress) opt.progress("kron_neumann: undecided at " + std::to_string(prec) + " bits, raising precision");
    }
    return res;
}

std::string describe_kron_neumann(const Certificate& c) {
    const auto& kc = c.as<KronNeumannCert>();
    std::string s;
    for (std::size_t k = 0; k < kc.factors.size(); ++k)
        s += (k ? " (x) " : "") + std::to_string(kc.factors[k].rows.size()) + " rows";
    return s;
}

}  // namespace rankcert::cert
