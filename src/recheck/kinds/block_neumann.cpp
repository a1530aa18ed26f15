// rankcert-recheck: lower `block_neumann` (docs/format.md): P = Lambda A_I
// (or A_I), the blocks' vertex preimages v; with c = max_j sum_b max_{k in b}
// |v_jk| (exact), every row t of P has
//   kappa_t + eps c ||Lambda_t||_1 < 1,  kappa_t = sum_b max_{k in b} |s_tk - (P v)_tk|,
// s_tk the sign of row t in vertex k of its own block (0 in other blocks).
#include "../recheck.hpp"

namespace recheck {

Outcome check_block_neumann(const Context& c) {
    const Instance& inst = c.inst;
    const auto rows = indices(c.cert.at("rows", c.where), c.where + ".rows", inst.n, true);
    const std::size_t p = rows.size();
    const bool has_lambda = c.cert.find("lambda") != nullptr;
    Array lam;
    if (has_lambda) lam = dense(c, "lambda", SIZE_MAX, p);
    const std::size_t m = has_lambda ? lam.rows : p;
    const Json& bj = c.cert.at("blocks", c.where);
    if (!bj.is_array() || bj.items.empty()) throw InputError(c.where + ".blocks: needs a list of blocks");
    std::vector<std::vector<std::size_t>> blocks;
    std::vector<std::size_t> first{0};
    std::vector<int> seen(m, 0);
    for (std::size_t b = 0; b < bj.items.size(); ++b) {
        const std::string w = c.where + ".blocks[" + std::to_string(b) + "]";
        blocks.push_back(indices(bj.items[b], w, m, true));
        if (blocks.back().empty() || blocks.back().size() > 20) throw InputError(w + ": a block has 1 to 20 rows");
        for (auto t : blocks.back())
            if (seen[t]++) throw InputError(w + ": row " + std::to_string(t) + " lies in two blocks");
        first.push_back(first.back() + (std::size_t{1} << (blocks.back().size() - 1)));
    }
    for (std::size_t t = 0; t < m; ++t)
        if (!seen[t]) throw InputError(c.where + ".blocks: row " + std::to_string(t) + " lies in no block");
    if (rank_of(c.cert, c.where) != m) throw InputError(c.where + ".rank: is not the number of rows of P");
    const std::size_t V = first.back();
    const Array v = dense(c, "v", inst.N, V);
    std::vector<std::size_t> block_of(V), block_t(m), pos_t(m);
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        for (std::size_t k = first[b]; k < first[b + 1]; ++k) block_of[k] = b;
        for (std::size_t q = 0; q < blocks[b].size(); ++q) {
            block_t[blocks[b][q]] = b;
            pos_t[blocks[b][q]] = q;
        }
    }
    const Q cnorm = block_column_norm(v, block_of, blocks.size());
    std::vector<Q> ecl(m);
    for (std::size_t t = 0; t < m; ++t) {
        Q l = 1;
        if (has_lambda) {
            l = 0;
            for (std::size_t i = 0; i < p; ++i) l += abs(lam.q[t * p + i]);
        }
        ecl[t] = c.eps * cnorm * l;
        if (ecl[t] >= 1) {
            Outcome o;
            o.verdict = Verdict::refuted;
            return o;
        }
    }
    const Columns cols(v);
    auto kappa = [&](auto a_of, std::size_t t, auto zero) {
        using I = decltype(zero);
        std::vector<I> pt;
        if (has_lambda) {
            pt.assign(inst.N, zero);
            for (std::size_t i = 0; i < p; ++i) {
                if (lam.q[t * p + i] == 0) continue;
                const I li = from_q<I>(lam.q[t * p + i]);
                const std::vector<I> a = a_of(rows[i]);
                for (std::size_t j = 0; j < inst.N; ++j) pt[j] += li * a[j];
            }
        } else {
            pt = a_of(rows[t]);
        }
        const std::vector<I> dot = cols.apply(pt);
        I total = from_q<I>(ecl[t]);
        for (std::size_t b = 0; b < blocks.size(); ++b) {
            I mx = zero;
            for (std::size_t k = first[b]; k < first[b + 1]; ++k) {
                int s = 0;
                if (b == block_t[t]) s = pos_t[t] == 0 ? 1 : (((k - first[b]) >> (pos_t[t] - 1)) & 1 ? -1 : 1);
                mx = imax(mx, iabs(from_double<I>(s) - dot[k]));
            }
            total += mx;
        }
        return total;
    };
    RowFn di = [&](std::size_t t) { return kappa([&](std::size_t r) { return inst.row_di(r); }, t, DI::point(0)); };
    RowFnMI mi = [&](std::size_t t) { return kappa([&](std::size_t r) { return inst.row<MI>(r); }, t, to_mi(0.0)); };
    return run_rows(m, Test{Test::Rel::lt, Q(1)}, di, mi, c.claim);
}

}  // namespace recheck
