// rankcert-recheck: upper `factor` (FORMAT.md): every row's l1 error
// sum_j |A_ij - (U W^T)_ij| is at most eps.
#include "../recheck.hpp"

namespace recheck {

Outcome factor_rows(const Instance& inst, const Array& u, const Array& w, const Test& test, const RowClaim& claim) {
    const std::size_t k = u.cols, N = inst.N;
    const Rows ur(u, false), wr(w, false);
    // Row i in binary64: with D_j = fl(U_i . W_j), |B_ij - D_j| <= rho_j (dot_enclose's bound)
    // and A_ij in am_j +- ar_j,
    //   | sum_j |A_ij - B_ij| - sum_j |am_j - D_j| | <= sum_j ar_j + sum_j rho_j,
    // and the two round-to-nearest sums of N non-negative terms (one rounding
    // each before) are within gamma_{N+1} <= 2 (N + 1) u of their values.
    const double c = 2.0 * static_cast<double>(k) * 0x1p-53, c2 = 2.0 * static_cast<double>(N + 1) * 0x1p-53;
    RowFn di = [&](std::size_t i) -> DI {
        if (c > 0.125 || c2 > 0.125) return {NAN, NAN};
        std::vector<double> am, ar;
        mid_rad(inst.row_di(i), am, ar);
        const double* ui = ur.m(i);
        double S = 0, R = 0;
        for (std::size_t j = 0; j < N; ++j) {
            S += std::abs(am[j] - dot_rn(ui, wr.m(j), k));
            R += ar[j];
        }
        if (!std::isfinite(S) || !std::isfinite(R)) return {NAN, NAN};
        // sum_j rho_j <= c |U_i| sum |W_j| + |U_i|_rad (sum |W_j| + sum |W_j|_rad) + |U_i| sum |W_j|_rad + N 2^-1000
        const double nu = ur.nmid[i], nr = ur.nrad[i];
        double P = up(c * up(nu * wr.sum_nmid));
        P = up(P + up(nr * up(wr.sum_nmid + wr.sum_nrad)));
        P = up(P + up(nu * wr.sum_nrad));
        P = up(P + static_cast<double>(N) * 0x1p-1000);
        const double slack = up(up(up(R * up(1 + c2)) + P) + 0x1p-1000);
        return {down(down(S * down(1 - c2)) - slack), up(up(S * up(1 + c2)) + slack)};
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
