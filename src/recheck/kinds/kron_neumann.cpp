// rankcert-recheck: lower `kron_neumann` on a kronecker instance: per factor
// k, rows I_k and R_k give d_k[t] = (A_k R_k)_{tt} and l_k[t] = its row's l1
// norm; with rho = prod_k max_j sum_u |R_k,ju| (exact), every multi-index t has
//   |1 - prod_k d_k[t_k]| + prod_k l_k[t_k] - prod_k |d_k[t_k]| < 1 - eps rho.
#include "../recheck.hpp"

namespace recheck {

Outcome check_kron_neumann(const Context& c) {
    const Instance& inst = c.inst;
    const Json& fj = c.cert.at("factors", c.where);
    if (!fj.is_array() || fj.items.size() != inst.factors.size())
        throw InputError(c.where + ".factors: needs one entry per factor of the instance");
    std::vector<std::vector<std::size_t>> rows;
    std::vector<Array> rs;
    Q rho = 1;
    std::size_t total = 1;
    for (std::size_t k = 0; k < inst.factors.size(); ++k) {
        const Instance& f = inst.factors[k];
        const std::string w = c.where + ".factors[" + std::to_string(k) + "]";
        rows.push_back(indices(fj.items[k].at("rows", w), w + ".rows", f.n, true));
        if (rows.back().empty()) throw InputError(w + ".rows: empty");
        Context sub{f, c.sc, c.eps, fj.items[k], w, {}, nullptr};
        rs.push_back(dense(sub, "r", f.N, rows.back().size()));
        rho *= row_l1_max(rs.back());
        total *= rows.back().size();
        if (total > (1u << 22)) throw InputError(c.where + ".factors: prod m_k beyond 2^22");
    }
    if (rank_of(c.cert, c.where) != total) throw InputError(c.where + ".rank: is not the product of the factors' row counts");
    const Q thr = 1 - c.eps * rho;
    Outcome o;
    o.rank = total;
    if (thr <= 0) {
        o.verdict = Verdict::refuted;
        return o;
    }
    std::vector<Columns> cols;
    for (const auto& r : rs) cols.emplace_back(r);
    // d_k and l_k per tier (DI once; MI at each precision of the ladder).
    auto tables = [&]<class I>(I zero) {
        std::vector<std::vector<I>> ds, ls;
        for (std::size_t k = 0; k < rows.size(); ++k) {
            std::vector<I> d, l;
            for (std::size_t t = 0; t < rows[k].size(); ++t) {
                const std::vector<I> v = cols[k].apply(inst.factors[k].row<I>(rows[k][t]));
                d.push_back(v[t]);
                I s = zero;
                for (const auto& x : v) s += iabs(x);
                l.push_back(s);
            }
            ds.push_back(std::move(d));
            ls.push_back(std::move(l));
        }
        return std::make_pair(ds, ls);
    };
    const auto dl = tables(DI::point(0));
    PerBits<std::pair<std::vector<std::vector<MI>>, std::vector<std::vector<MI>>>> ml;
    auto value = [&](const auto& ds, const auto& ls, std::size_t flat) {
        using I = std::decay_t<decltype(ds[0][0])>;
        I pd = from_double<I>(1), pl = pd, pa = pd;
        for (std::size_t k = rows.size(); k-- > 0;) {
            const std::size_t tk = flat % rows[k].size();
            flat /= rows[k].size();
            pd = pd * ds[k][tk];
            pl = pl * ls[k][tk];
            pa = pa * iabs(ds[k][tk]);
        }
        return iabs(from_double<I>(1) - pd) + pl - pa;
    };
    RowFn di = [&](std::size_t t) { return value(dl.first, dl.second, t); };
    RowFnMI mi = [&](std::size_t t) {
        const auto& m = ml.get([&] { return tables(to_mi(0.0)); });
        return value(m.first, m.second, t);
    };
    RowClaim claim = c.claim;
    if (c.decisive)
        if (const Json* t = c.decisive->find("t"); t && t->is_array() && t->items.size() == rows.size()) {
            std::size_t flat = 0;
            bool ok = true;
            for (std::size_t k = 0; k < rows.size(); ++k) {
                const std::size_t v = t->items[k].index(c.where + ".decisive.t");
                ok = ok && v < rows[k].size();
                flat = flat * rows[k].size() + v;
            }
            if (ok) claim.decisive = flat;
        }
    Outcome r = run_rows(total, Test{Test::Rel::lt, thr}, di, mi, claim);
    r.rank = total;
    return r;
}

}  // namespace recheck
