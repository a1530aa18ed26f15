// rankcert-recheck: upper `zonal` (docs/format.md): B_ij = exp(b_j + shift)
// g(<q_i, k_j>) / Z_i with g = sum_k c_k T_k; its rank is recomputed from the
// exact data (the dimension bound of docs/theory.md) and every row's error
//   sum_j e^{b_j} |x_ij - g(t_ij)| / sum_j e^{b_j} x_ij,  x = exp(coef t - shift),
// is at most eps (Clenshaw's recurrence in intervals).
#include "../recheck.hpp"

#include <type_traits>

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

// g(t) = sum_k c_k T_k(t) for t in [t~ - tau, t~ + tau] and c_k in c~_k +-
// gamma_k, by Clenshaw's recurrence in round-to-nearest on t~ and c~ with a
// running error bound.  With b_k = c_k + 2 t b_{k+1} - b_{k+2} exactly and
// x1 = fl(2 t~ b~_{k+1}), x2 = fl(x1 - b~_{k+2}), b~_k = fl(c~_k + x2):
//   |b_k - b~_k| <= E_k = gamma_k + 2 (|t~| + tau) E_{k+1} + 2 tau |b~_{k+1}| + E_{k+2}
//                         + u (|x1| + |x2| + |b~_k|) + eta
// (|fl(x) - x| <= u |fl(x)| for each rounding, eta for an underflowing
// product), and the same with factor 1 for g = c_0 + t b_1 - b_2.  E is
// computed in round-to-nearest from non-negative terms along at most 6 (p + 2)
// roundings, so multiplying it by 1 + 16 (p + 2) u (with (p + 2) u <= 0.1)
// and adding 2^-1000 for the underflows bounds the exact E.
}  // namespace

DI clenshaw_di(const DI& t, const std::vector<double>& cm, const std::vector<double>& cr) {
    const double u = 0x1p-53, eta = 0x1p-1074;
    const double tm = mid(t), tau = std::max(up(t.hi - tm), up(tm - t.lo));
    const double at = std::abs(tm) + tau, tt = 2 * tm;
    const std::size_t p = cm.size() - 1;
    double b1 = 0, b2 = 0, E1 = 0, E2 = 0;
    for (std::size_t k = p; k >= 1; --k) {
        const double x1 = tt * b1, x2 = x1 - b2, b = cm[k] + x2;
        const double E = cr[k] + 2 * at * E1 + 2 * tau * std::abs(b1) + E2 + u * (std::abs(x1) + std::abs(x2) + std::abs(b)) + eta;
        b2 = b1;
        b1 = b;
        E2 = E1;
        E1 = E;
    }
    const double x1 = tm * b1, x2 = x1 - b2, g = cm[0] + x2;
    double E = cr[0] + at * E1 + tau * std::abs(b1) + E2 + u * (std::abs(x1) + std::abs(x2) + std::abs(g)) + eta;
    const double f = static_cast<double>(p + 2) * u;
    if (f > 0.1 || !std::isfinite(E) || !std::isfinite(g)) return {NAN, NAN};
    E = up(up(E * up(1 + 16 * f)) + 0x1p-1000);
    return {down(g - E), up(g + E)};
}

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
    std::vector<double> cm, cr;  // the coefficients as midpoints and radii (binary64 tier)
    // Per tier: the coefficients and e^{b_j} as intervals.
    auto err = [&]<class I>(std::size_t i, const std::vector<I>& cs, const std::vector<I>& eb, auto dot) {
        const I coef = inst.coef<I>(), sh = from_q<I>(shift), zero = from_double<I>(0), two = from_double<I>(2);
        I num = zero, den = zero;
        for (std::size_t j = 0; j < inst.N; ++j) {
            const I t = dot(i, j);
            const I x = iexp(coef * t - sh);
            I g;
            if constexpr (std::is_same_v<I, DI>) {
                g = clenshaw_di(t, cm, cr);
            } else {
                I b1 = zero, b2 = zero;
                const I tt = two * t;
                for (std::size_t k = cs.size() - 1; k >= 1; --k) {
                    I nb = cs[k] + tt * b1 - b2;
                    b2 = std::move(b1);
                    b1 = std::move(nb);
                }
                g = cs[0] + t * b1 - b2;
            }
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
    mid_rad(cs_d, cm, cr);
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
