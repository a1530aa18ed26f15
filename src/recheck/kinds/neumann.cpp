// rankcert-recheck: lower `neumann` (THEORY.md): with rho = max_j sum_u
// |R_ju| (exact), every row t of I has sum_u |delta_tu - (A_I R)_tu| <
// 1 - eps rho.
#include "../recheck.hpp"

namespace recheck {

namespace {

template <class I> I delta(const std::vector<I>& v, std::size_t t) {
    I total = from_double<I>(0);
    for (std::size_t u = 0; u < v.size(); ++u) total += iabs(u == t ? v[u] - from_double<I>(1) : v[u]);
    return total;
}

}  // namespace

Outcome check_neumann(const Context& c) {
    const Instance& inst = c.inst;
    const auto rows = indices(c.cert.at("rows", c.where), c.where + ".rows", inst.n, true);
    const std::size_t m = rows.size();
    if (rank_of(c.cert, c.where) != m) throw InputError(c.where + ".rank: is not the number of rows");
    if (m == 0) throw InputError(c.where + ".rows: empty");
    const Array r = dense(c, "r", inst.N, m);
    const Q thr = 1 - c.eps * row_l1_max(r);
    if (thr <= 0) {
        Outcome o;
        o.verdict = Verdict::refuted;
        return o;
    }
    const Columns cols(r);
    RowFn di = [&](std::size_t t) { return delta(cols.apply(inst.row_di(rows[t])), t); };
    RowFnMI mi = [&](std::size_t t) { return delta(cols.apply(inst.row<MI>(rows[t])), t); };
    RowFnQ exact;
    if (inst.kind == "matrix")
        exact = [&](std::size_t t) {
            Q total = 0;
            for (std::size_t u = 0; u < m; ++u) {
                Q v = u == t ? Q(-1) : Q(0);
                for (std::size_t j = 0; j < inst.N; ++j) v += inst.a.at(rows[t], j) * r.q[j * m + u];
                total += abs(v);
            }
            return total;
        };
    return run_rows(m, Test{Test::Rel::lt, thr}, di, mi, c.claim, exact);
}

}  // namespace recheck
