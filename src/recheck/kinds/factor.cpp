// rankcert-recheck: upper `factor` (FORMAT.md): every row's l1 error
// sum_j |A_ij - (U W^T)_ij| is at most eps.
#include "../recheck.hpp"

namespace recheck {

Outcome factor_rows(const Instance& inst, const Array& u, const Array& w, const Test& test, const RowClaim& claim) {
    const std::size_t k = u.cols, N = inst.N;
    const Rows ur(u, false), wr(w, false);
    RowFn di = [&](std::size_t i) {
        const std::vector<DI>& a = inst.row_di(i);
        DI total = DI::point(0);
        for (std::size_t j = 0; j < N; ++j) total += iabs(a[j] - wr.dot(j, ur.m(i), ur.nmid[i], ur.nrad[i]));
        return total;
    };
    RowFnMI mi = [&](std::size_t i) {
        const std::vector<MI> a = inst.row<MI>(i);
        MI total = to_mi(0.0);
        for (std::size_t j = 0; j < N; ++j) {
            Q b = 0;  // (U W^T)_ij exactly
            for (std::size_t t = 0; t < k; ++t) b += u.q[i * k + t] * w.q[j * k + t];
            total += iabs(a[j] - to_mi(b));
        }
        return total;
    };
    RowFnQ exact;
    if (k == 0 && inst.softmax())
        exact = [](std::size_t) { return Q(1); };  // B = 0: the error is the row's l1 norm, 1 for softmax rows
    else if (inst.kind == "matrix")
        exact = [&](std::size_t i) {
            Q total = 0;
            for (std::size_t j = 0; j < N; ++j) {
                Q b = 0;
                for (std::size_t t = 0; t < k; ++t) b += u.q[i * k + t] * w.q[j * k + t];
                total += abs(inst.a.at(i, j) - b);
            }
            return total;
        };
    return run_rows(inst.n, test, di, mi, claim, exact);
}

Outcome check_factor(const Context& c) {
    const Array u = dense(c, "u", c.inst.n, SIZE_MAX);
    const Array w = dense(c, "w", c.inst.N, u.cols);
    if (rank_of(c.cert, c.where) != u.cols) throw InputError(c.where + ".rank: is not the number of columns of u");
    return factor_rows(c.inst, u, w, Test{Test::Rel::le, c.eps}, c.claim);
}

}  // namespace recheck
