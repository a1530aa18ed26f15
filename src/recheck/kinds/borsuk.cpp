// rankcert-recheck: lower `borsuk` (docs/format.md, docs/theory.md).  The
// exact polytope test of every block (its facets are the boundary of
// conv(+-vertices)), then for every row t that labels a facet vertex:
//   eps c + max over its labels (s, facet F of block b) of
//       (sum_{b' != b} max_{F' in b'} |a_t . v_F'| - s a_t . v_F) < 0,
// c = max_j sum_b max_{F in b} |v_jF| (exact).
#include "../recheck.hpp"

#include <set>

namespace recheck {

namespace {

// The exact polytope test of one block; an InputError names the facet or ridge.
void polytope(const Json& blk, const std::string& where, std::size_t n_rows, std::size_t& V, std::size_t& k) {
    const Json& vj = blk.at("vertices", where);
    if (!vj.is_array() || vj.items.empty() || vj.items.size() > 4096) throw InputError(where + ".vertices: needs 1 to 4096 vertices");
    V = vj.items.size();
    std::vector<std::vector<Q>> pts;
    for (std::size_t q = 0; q < V; ++q) {
        const Json& u = vj.items[q];
        if (!u.is_array() || u.items.empty() || u.items.size() > 12) throw InputError(where + ".vertices: dimension 1 to 12");
        std::vector<Q> x;
        for (std::size_t t = 0; t < u.items.size(); ++t) x.push_back(read_q(u.items[t], where + ".vertices[" + std::to_string(q) + "]"));
        pts.push_back(std::move(x));
    }
    k = pts[0].size();
    for (const auto& x : pts)
        if (x.size() != k) throw InputError(where + ".vertices: needs 1 or more vertices of one dimension");
    const Json& lj = blk.at("labels", where);
    if (!lj.is_array() || lj.items.size() != V) throw InputError(where + ".labels: needs one [row, 1 or -1] per vertex");
    for (std::size_t q = 0; q < V; ++q) {
        const Json& l = lj.items[q];
        if (!l.is_array() || l.items.size() != 2 || l.items[0].index(where + ".labels") >= n_rows ||
            (l.items[1].text != "1" && l.items[1].text != "-1"))
            throw InputError(where + ".labels: needs one [row in [0, " + std::to_string(n_rows) + "), 1 or -1] per vertex");
    }
    for (std::size_t q = 0; q < V; ++q) {
        std::vector<Q> neg;
        for (const auto& x : pts[q]) neg.push_back(-x);
        pts.push_back(std::move(neg));
    }
    auto opp = [V](std::size_t q) { return q < V ? q + V : q - V; };
    const Json& fj = blk.at("facets", where);
    if (!fj.is_array() || fj.items.empty() || fj.items.size() > 65536) throw InputError(where + ".facets: needs 1 to 65536 facets");
    if (fj.items.size() * V > (1u << 22)) throw InputError(where + ".facets: facets x vertices beyond 2^22");
    std::map<std::vector<std::size_t>, int> ridges;
    for (std::size_t f = 0; f < fj.items.size(); ++f) {
        const std::string wf = where + ".facets[" + std::to_string(f) + "]";
        const auto F = indices(fj.items[f], wf, 2 * V, true);
        if (F.size() != k) throw InputError(wf + ": needs " + std::to_string(k) + " distinct indices in [0, " + std::to_string(2 * V) + ")");
        // Solve P w = 1 exactly (Gauss-Jordan).
        std::vector<std::vector<Q>> M;
        for (auto q : F) {
            auto row = pts[q];
            row.push_back(1);
            M.push_back(std::move(row));
        }
        for (std::size_t col = 0; col < k; ++col) {
            std::size_t piv = col;
            while (piv < k && M[piv][col] == 0) ++piv;
            if (piv == k) throw InputError(wf + ": its vertices are linearly dependent");
            std::swap(M[col], M[piv]);
            for (std::size_t r = 0; r < k; ++r) {
                if (r == col || M[r][col] == 0) continue;
                const Q fac = M[r][col] / M[col][col];
                for (std::size_t t = col; t <= k; ++t) M[r][t] -= fac * M[col][t];
            }
        }
        std::vector<Q> w(k);
        for (std::size_t r = 0; r < k; ++r) w[r] = M[r][k] / M[r][r];
        const std::set<std::size_t> inF(F.begin(), F.end());
        for (std::size_t q = 0; q < 2 * V; ++q) {
            if (inF.count(q)) continue;
            Q s = 0;
            for (std::size_t t = 0; t < k; ++t) s += w[t] * pts[q][t];
            if (s >= 1) throw InputError(wf + ": vertex " + std::to_string(q) + " lies on or beyond this facet's hyperplane");
        }
        for (int sign = 0; sign < 2; ++sign) {
            std::vector<std::size_t> G;
            for (auto q : F) G.push_back(sign ? opp(q) : q);
            for (std::size_t drop = 0; drop < k; ++drop) {
                std::vector<std::size_t> key;
                for (std::size_t t = 0; t < k; ++t)
                    if (t != drop) key.push_back(G[t]);
                std::sort(key.begin(), key.end());
                ++ridges[key];
            }
        }
    }
    for (const auto& [r, cnt] : ridges)
        if (cnt != 2) throw InputError(where + ".facets: a ridge lies in " + std::to_string(cnt) + " of the facets +-F, not 2");
}

struct Use {
    std::size_t col, block;
    int sign;
    bool operator<(const Use& o) const { return std::tie(col, block, sign) < std::tie(o.col, o.block, o.sign); }
};

}  // namespace

Outcome check_borsuk(const Context& c) {
    const Instance& inst = c.inst;
    const Json& bj = c.cert.at("blocks", c.where);
    if (!bj.is_array() || bj.items.empty()) throw InputError(c.where + ".blocks: needs a list of blocks");
    std::vector<std::size_t> cols;  // block of each facet column
    std::map<std::size_t, std::set<Use>> uses;
    std::size_t dim = 0;
    for (std::size_t b = 0; b < bj.items.size(); ++b) {
        const Json& blk = bj.items[b];
        const std::string w = c.where + ".blocks[" + std::to_string(b) + "]";
        std::size_t V = 0, k = 0;
        polytope(blk, w, inst.n, V, k);
        dim += k;
        const Json& labels = blk.at("labels", w);
        for (const auto& F : blk.at("facets", w).items) {
            for (const auto& qj : F.items) {
                const std::size_t q = qj.index(w);
                const Json& lb = labels.items[q < V ? q : q - V];
                const std::size_t t = lb.items[0].index(w);
                const int sg = lb.items[1].text == "1" ? 1 : -1;
                uses[t].insert(Use{cols.size(), b, q < V ? sg : -sg});
            }
            cols.push_back(b);
        }
    }
    if (rank_of(c.cert, c.where) != dim) throw InputError(c.where + ".rank: is not the sum of the blocks' dimensions");
    const std::size_t Fn = cols.size(), nb = bj.items.size();
    const Array v = dense(c, "v", inst.N, Fn);
    const Q cnorm = block_column_norm(v, cols, nb);
    const Q ec = c.eps * cnorm;
    std::vector<std::size_t> label_rows;
    for (const auto& [t, u] : uses) label_rows.push_back(t);
    const Columns vc(v);
    auto row_value = [&]<class I>(const std::vector<I>& a, std::size_t t) {
        const std::vector<I> d = vc.apply(a);
        std::vector<I> mx(nb, from_double<I>(0));
        for (std::size_t f = 0; f < Fn; ++f) mx[cols[f]] = imax(mx[cols[f]], iabs(d[f]));
        I total = from_double<I>(0);
        for (const auto& x : mx) total += x;
        std::optional<I> worst;
        for (const Use& u : uses.at(label_rows[t])) {
            I x = total - mx[u.block] - (u.sign > 0 ? d[u.col] : -d[u.col]);
            worst = worst ? imax(*worst, x) : x;
        }
        return from_q<I>(ec) + *worst;
    };
    RowFn di = [&](std::size_t t) { return row_value(inst.row_di(label_rows[t]), t); };
    RowFnMI mi = [&](std::size_t t) { return row_value(inst.row<MI>(label_rows[t]), t); };
    return run_rows(label_rows.size(), Test{Test::Rel::lt, Q(0)}, di, mi, c.claim);
}

}  // namespace recheck
