// rankcert-recheck: upper `zonal` (docs/format.md): B_ij = exp(b_j + shift)
// g(<q_i, k_j>) / Z_i with g = sum_k c_k T_k; its rank is recomputed from the
// exact data (the dimension bound of docs/theory.md) and every row's error
//   sum_j e^{b_j} |x_ij - g(t_ij)| / sum_j e^{b_j} x_ij,  x = exp(coef t - shift),
// is at most eps (Clenshaw's recurrence in intervals).
#include "../recheck.hpp"

namespace recheck {

namespace {

Z binom(std::size_t n, std::size_t k) {
    if (k > n) return 0;
    Z r = 1;
    for (std::size_t t = 1; t <= k; ++t) r = r * Z(n - k + t) / Z(t);
    return r;
}

std::size_t zonal_rank(const Instance& inst, const std::vector<Q>& cheb) {
    std::vector<std::size_t> nz;
    for (std::size_t k = 0; k < cheb.size(); ++k)
        if (cheb[k] != 0) nz.push_back(k);
    if (nz.empty()) return 0;
    const std::size_t p = nz.back(), d = inst.d;
    auto on_sphere = [&](const Array& a) {
        for (std::size_t i = 0; i < a.rows; ++i) {
            Q s = 0;
            for (std::size_t t = 0; t < a.cols; ++t) s += a.at(i, t) * a.at(i, t);
            if (s != 1) return false;
        }
        return true;
    };
    Z r;
    if (on_sphere(inst.k) || on_sphere(inst.q)) {
        bool one_parity = true;
        for (auto k : nz) one_parity = one_parity && (k % 2 == p % 2);
        r = binom(p + d - 1, d - 1) + ((p >= 1 && !one_parity) ? binom(p + d - 2, d - 1) : Z(0));
    } else {
        r = binom(p + d, d);
    }
    const Z cap = Z(std::min(inst.n, inst.N));
    return static_cast<std::size_t>(r < cap ? r : cap);
}

}  // namespace

Outcome check_zonal(const Context& c) {
    const Instance& inst = c.inst;
    if (inst.kind != "qk" || !inst.allowed.empty()) throw InputError(c.where + ": zonal applies only to qk instances without a mask");
    const Json& cj = c.cert.at("chebyshev", c.where);
    if (!cj.is_array() || cj.items.empty() || cj.items.size() > 4097) throw InputError(c.where + ".chebyshev: needs 1 to 4097 numbers");
    std::vector<Q> cheb;
    for (std::size_t k = 0; k < cj.items.size(); ++k) cheb.push_back(read_q(cj.items[k], c.where + ".chebyshev[" + std::to_string(k) + "]"));
    const std::size_t rank = zonal_rank(inst, cheb);
    if (rank_of(c.cert, c.where) != rank)
        throw InputError(c.where + ".rank: stated " + std::to_string(rank_of(c.cert, c.where)) + ", the data prove " + std::to_string(rank));
    const Q shift = read_q(c.cert.at("shift", c.where), c.where + ".shift");
    // Per tier: the coefficients and e^{b_j} as intervals.
    auto err = [&]<class I>(std::size_t i, const std::vector<I>& cs, const std::vector<I>& eb, auto dot) {
        const I coef = inst.coef<I>(), sh = from_q<I>(shift), zero = from_double<I>(0), two = from_double<I>(2);
        I num = zero, den = zero;
        for (std::size_t j = 0; j < inst.N; ++j) {
            const I t = dot(i, j);
            const I x = iexp(coef * t - sh);
            I b1 = zero, b2 = zero;
            const I tt = two * t;
            for (std::size_t k = cs.size() - 1; k >= 1; --k) {
                I nb = cs[k] + tt * b1 - b2;
                b2 = std::move(b1);
                b1 = std::move(nb);
            }
            const I g = cs[0] + t * b1 - b2;
            num += eb[j] * iabs(x - g);
            den += eb[j] * x;
        }
        return num / den;
    };
    auto tables = [&]<class I>(std::vector<I>& cs, std::vector<I>& eb) {
        cs.clear();
        eb.clear();
        for (const auto& x : cheb) cs.push_back(from_q<I>(x));
        for (std::size_t j = 0; j < inst.N; ++j)
            eb.push_back(inst.bias.q.empty() ? from_double<I>(1) : iexp(from_q<I>(inst.bias.q[j])));
    };
    std::vector<DI> cs_d, eb_d;
    tables(cs_d, eb_d);
    PerBits<std::pair<std::vector<MI>, std::vector<MI>>> mt;
    auto dot_q = [&](std::size_t i, std::size_t j) {
        Q dot = 0;
        for (std::size_t t = 0; t < inst.d; ++t) dot += inst.q.at(i, t) * inst.k.at(j, t);
        return to_mi(dot);
    };
    RowFn di = [&](std::size_t i) { return err(i, cs_d, eb_d, [&](std::size_t a, std::size_t b) { return inst.qk_di(a, b); }); };
    RowFnMI mi = [&](std::size_t i) {
        const auto& t = mt.get([&] {
            std::pair<std::vector<MI>, std::vector<MI>> p;
            tables(p.first, p.second);
            return p;
        });
        return err(i, t.first, t.second, dot_q);
    };
    return run_rows(inst.n, Test{Test::Rel::le, c.eps}, di, mi, c.claim);
}

}  // namespace recheck
