// rankcert-recheck: upper `row_interpolative`: B = X A_I, every row's l1
// error at most eps.
#include "../recheck.hpp"

namespace recheck {

Outcome check_row_interpolative(const Context& c) {
    const Instance& inst = c.inst;
    const auto rows = indices(c.cert.at("rows", c.where), c.where + ".rows", inst.n, true);
    const std::size_t k = rows.size(), N = inst.N;
    const Array x = dense(c, "x", inst.n, k);
    if (const Json* r = c.cert.find("rank"); r && r->index(c.where + ".rank") != k)
        throw InputError(c.where + ".rank: is not the number of rows");
    // The rows of A_I by column (N x k), as midpoints and radii with norms.
    Array ai;
    ai.rows = N;
    ai.cols = k;
    ai.mid.resize(N * k);
    ai.rad.resize(N * k);
    ai.points = false;
    for (std::size_t t = 0; t < k; ++t) {
        std::vector<double> m, r;
        mid_rad(inst.row_di(rows[t]), m, r);
        for (std::size_t j = 0; j < N; ++j) {
            ai.mid[j * k + t] = m[j];
            ai.rad[j * k + t] = r[j];
        }
    }
    const Rows ar(ai, false), xr(x, false);
    RowFn di = [&](std::size_t i) {
        const std::vector<DI>& a = inst.row_di(i);
        DI total = DI::point(0);
        for (std::size_t j = 0; j < N; ++j) total += iabs(a[j] - ar.dot(j, xr.m(i), xr.nmid[i], xr.nrad[i]));
        return total;
    };
    PerBits<std::vector<std::vector<MI>>> tables;
    RowFnMI mi = [&](std::size_t i) {
        const auto& arows = tables.get([&] {
            std::vector<std::vector<MI>> t;
            for (auto r : rows) t.push_back(inst.row<MI>(r));
            return t;
        });
        const std::vector<MI> a = inst.row<MI>(i);
        std::vector<MI> xi;
        for (std::size_t t = 0; t < k; ++t) xi.push_back(to_mi(x.q[i * k + t]));
        MI total = to_mi(0.0);
        for (std::size_t j = 0; j < N; ++j) {
            MI b = to_mi(0.0);
            for (std::size_t t = 0; t < k; ++t) b += xi[t] * arows[t][j];
            total += iabs(a[j] - b);
        }
        return total;
    };
    RowFnQ exact;
    if (inst.kind == "matrix")
        exact = [&](std::size_t i) {
            Q total = 0;
            for (std::size_t j = 0; j < N; ++j) {
                Q b = 0;
                for (std::size_t t = 0; t < k; ++t) b += x.q[i * k + t] * inst.a.at(rows[t], j);
                total += abs(inst.a.at(i, j) - b);
            }
            return total;
        };
    return run_rows(inst.n, Test{Test::Rel::le, c.eps}, di, mi, c.claim, exact);
}

}  // namespace recheck
