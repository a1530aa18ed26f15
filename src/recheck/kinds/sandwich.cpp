// rankcert-recheck: upper `sandwich` (docs/profile.md): for T = X Y^T and
// its Gibbs matrix A~, every row has
//   |A_i - A~_i|_1 <= t   and   |A~_i - (U W^T)_i|_1 <= eps - t.
#include "../interaction.hpp"

namespace recheck {

Outcome check_sandwich(const Context& c) {
    const Instance& inst = c.inst;
    if (inst.masked()) throw InputError(c.where + ": sandwich applies only to unmasked instances");
    const std::size_t r = c.cert.at("r", c.where).index(c.where + ".r");
    const Array x = dense(c, "x", inst.n, r), y = dense(c, "y", inst.N, r);
    const Array u = dense(c, "u", inst.n, SIZE_MAX);
    const Array w = dense(c, "w", inst.N, u.cols);
    if (rank_of(c.cert, c.where) != u.cols) throw InputError(c.where + ".rank: is not the number of columns of u");
    const Q t = read_q(c.cert.at("tau_star", c.where), c.where + ".tau_star");
    const Q rest = c.eps - t;
    Outcome o;
    o.rank = u.cols;
    if (rest < 0) {
        o.verdict = Verdict::refuted;
        return o;
    }
    const Interaction ia(inst, x, y, r);
    const std::size_t k = u.cols;
    auto two = [&]<class I>(std::size_t i, I zero) {
        const auto [A, At] = ia.gibbs<I>(i, ia.residual<I>(i));
        I e1 = zero, e2 = zero;
        for (std::size_t j = 0; j < inst.N; ++j) {
            Q b = 0;
            for (std::size_t s = 0; s < k; ++s) b += u.q[i * k + s] * w.q[j * k + s];
            e1 += iabs(A[j] - At[j]);
            e2 += iabs(At[j] - from_q<I>(b));
        }
        return std::make_pair(e1, e2);
    };
    // The witness's worst-row bounds (a verified witness).
    std::optional<Q> b1, b2;
    if (c.decisive)
        for (auto [key, dst] : {std::pair{"worst_a_minus_gibbs", &b1}, std::pair{"worst_gibbs_minus_b", &b2}})
            if (const Json* j = c.decisive->find(key); j && j->is_array() && j->items.size() == 2 && j->items[1].text != "inf")
                *dst = read_q(j->items[1], c.where + ".decisive." + key);
    o.verdict = Verdict::verified;
    for (std::size_t i = 0; i < inst.n; ++i) {
        auto [e1, e2] = two(i, DI::point(0));
        Verdict v = combine(le(e1, t), le(e2, rest));
        Encl x1 = encl(e1), x2 = encl(e2);
        for (std::size_t tier = 0; tier < 3 && v == Verdict::undecided; ++tier) {
            const mpfr_prec_t keep = get_mi_bits();
            set_mi_bits(ladder[tier]);
            auto [m1, m2] = two(i, to_mi(0.0));
            v = combine(le(m1, t), le(m2, rest));
            x1 = encl(m1);
            x2 = encl(m2);
            set_mi_bits(keep);
            ++o.mpfr_rows;
        }
        ++o.rows_checked;
        o.verdict = combine(o.verdict, v);
        if (b1 && end_gt(x1.lo, *b1) && !o.above_named.count("worst_a_minus_gibbs")) o.above_named["worst_a_minus_gibbs"] = i;
        if (b2 && end_gt(x2.lo, *b2) && !o.above_named.count("worst_gibbs_minus_b")) o.above_named["worst_gibbs_minus_b"] = i;
        if (v == Verdict::refuted) break;
    }
    return o;
}

}  // namespace recheck
