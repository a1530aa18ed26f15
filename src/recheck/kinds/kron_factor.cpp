// rankcert-recheck: upper `kron_factor` on a kronecker instance (docs/theory.md,
// "Kronecker instances"): with a_k = 1 for a softmax factor (else its largest
// row l1 norm, exact) and e_k the worst row error of factor k's own factor,
//   E = sum_k prod_{j<k} (a_j + e_j) e_k prod_{j>k} a_j <= eps.
// E increases with every e_k, so the rows' enclosures bound it.
#include "../recheck.hpp"

namespace recheck {

Outcome check_kron_factor(const Context& c) {
    const Instance& inst = c.inst;
    const Json& fj = c.cert.at("factors", c.where);
    if (!fj.is_array() || fj.items.size() != inst.factors.size())
        throw InputError(c.where + ".factors: needs one entry per factor of the instance");
    std::vector<Q> norms;
    std::vector<Array> us, ws;
    std::size_t rank = 1;
    for (std::size_t k = 0; k < inst.factors.size(); ++k) {
        const Instance& f = inst.factors[k];
        const std::string w = c.where + ".factors[" + std::to_string(k) + "]";
        Context sub{f, c.sc, c.eps, fj.items[k], w, {}, nullptr};
        us.push_back(dense(sub, "u", f.n, SIZE_MAX));
        ws.push_back(dense(sub, "w", f.N, us.back().cols));
        if (us.back().cols > std::min(f.n, f.N)) throw InputError(w + ".u: more columns than min(n_k, N_k)");
        rank *= us.back().cols;
        Q a = 1;
        if (!f.softmax()) {
            a = 0;
            for (std::size_t i = 0; i < f.n; ++i) {
                Q s = 0;
                for (std::size_t j = 0; j < f.N; ++j) s += abs(f.a.at(i, j));
                if (s > a) a = s;
            }
            if (a == 0) throw InputError(c.where + ": factor " + std::to_string(k) + " of the instance is the zero matrix");
        }
        norms.push_back(a);
    }
    if (rank_of(c.cert, c.where) != rank) throw InputError(c.where + ".rank: is not the product of the factors' ranks");
    auto tele = [&](const std::vector<Q>& e) {
        Q total = 0, prefix = 1;
        for (std::size_t k = 0; k < e.size(); ++k) {
            Q rest = 1;
            for (std::size_t j = k + 1; j < norms.size(); ++j) rest *= norms[j];
            total += prefix * e[k] * rest;
            prefix *= norms[k] + e[k];
        }
        return total;
    };
    Outcome o;
    o.rank = rank;
    const Q huge = Q(Z(1) << 200);
    for (int tier = -1; tier < 3; ++tier) {
        std::vector<Q> lo, hi;
        bool finite = true;
        for (std::size_t k = 0; k < inst.factors.size(); ++k) {
            Test t{Test::Rel::le, huge, tier < 0 ? 0 : ladder[tier]};
            const Outcome r = factor_rows(inst.factors[k], us[k], ws[k], t, {});
            o.rows_checked += r.rows_checked;
            o.mpfr_rows += r.mpfr_rows;
            if (r.max_lo.nan || r.max_hi.nan || r.max_hi.inf || r.max_lo.inf) {
                finite = false;
                break;
            }
            lo.push_back(r.max_lo.v > 0 ? r.max_lo.v : Q(0));
            hi.push_back(r.max_hi.v);
        }
        if (!finite) continue;
        const Q L = tele(lo), H = tele(hi);
        o.decisive = Encl{End{0, false, L}, End{0, false, H}};
        o.verdict = H <= c.eps ? Verdict::verified : L > c.eps ? Verdict::refuted : Verdict::undecided;
        if (o.verdict != Verdict::undecided) break;
    }
    return o;
}

}  // namespace recheck
