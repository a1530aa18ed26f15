// borsuk: a Borsuk-Ulam lower bound on a join of labelled polytopes
// (docs/theory.md, "Lower bounds", borsuk).
//
// Block b is a centrally symmetric simplicial polytope P_b in R^{k_b}: stored
// vertices u (and their negatives), a label (row t, sign s) per vertex (-u
// carries (t, -s)), one facet of each antipodal pair and a witness v_{b,F}
// (a column of v, N x F) per stored facet.  Parsing checks, exactly, that
// the facets are the boundary complex of conv(+-u) with 0 inside: each
// facet's hyperplane w.x = 1 has every other vertex strictly below it, and
// every ridge lies in exactly two of the facets +-F.  The check, row by row
// over the rows t that label some facet vertex:
//   d_{t,F} = a_t . v_F,  M_{t,b} = max_{F in b} |d_{t,F}|,
//   c = max_j sum_b max_{F in b} |v_F[j]|                          (exact)
//   value_t = eps c + max over labels (t, s) on facets F of block b of
//             (sum_{b' != b} M_{t,b'} - s d_{t,F})  <  0.
// Then r_eps(A) >= sum_b k_b.
#include "common.hpp"
#include "units.hpp"

#include <flint/fmpq_mat.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

namespace rankcert::cert {

namespace {

constexpr std::size_t kMaxDim = 12;               // a block's dimension
constexpr std::size_t kMaxVertices = 4096;        // stored vertices of one block
constexpr std::size_t kMaxFacets = 1u << 16;      // stored facets of one block
constexpr std::uint64_t kMaxWork = 1ull << 22;    // sum over blocks of facets x vertices (the polytope test)

// One occurrence of a label on a stored facet: the facet's column in v, its
// block, and the sign the label asks of a_t . v_F.
struct Use {
    std::size_t col, block;
    int sign;
};

struct Layout {
    std::vector<std::size_t> rows;               // the rows of A that label a facet vertex, ascending
    std::vector<std::vector<Use>> uses;          // per entry of rows
    std::vector<std::size_t> block_of_col;       // per column of v
    std::size_t blocks = 0;
};

Layout layout(const BorsukCert& c) {
    Layout L;
    L.blocks = c.blocks.size();
    std::map<std::size_t, std::set<std::tuple<std::size_t, std::size_t, int>>> uses;
    std::size_t col = 0;
    for (std::size_t b = 0; b < c.blocks.size(); ++b) {
        const auto& blk = c.blocks[b];
        const std::size_t V = blk.vertices.size();
        for (const auto& f : blk.facets) {
            for (std::size_t q : f) {
                const bool neg = q >= V;
                const auto& [t, s] = blk.labels[neg ? q - V : q];
                uses[t].insert({col, b, neg ? -s : s});
            }
            L.block_of_col.push_back(b);
            ++col;
        }
    }
    for (const auto& [t, us] : uses) {
        L.rows.push_back(t);
        std::vector<Use> u;
        for (const auto& [cl, b, s] : us) u.push_back({cl, b, s});
        L.uses.push_back(std::move(u));
    }
    return L;
}

class BorsukRows : public rows::RowQuantity {
public:
    BorsukRows(const Instance& I, const BorsukCert& c, const Layout& L, Rat ec) : I_(I), c_(c), L_(L), ec_(std::move(ec)) {}
    std::size_t count() const override { return L_.rows.size(); }
    void prepare(slong prec) override {
        enc_ = std::make_unique<RowEncloser>(I_, prec);
        prec_ = prec;
        v_ = BallVec(c_.v.entries.size());
        for (std::size_t e = 0; e < c_.v.entries.size(); ++e) arb_set_fmpq(v_[e], c_.v.entries[e].val.get(), prec);
    }
    void eval(std::size_t t, arb_ptr out) const override {
        const std::size_t N = I_.N, F = L_.block_of_col.size();
        BallVec row(N), dot(F), mx(L_.blocks);
        enc_->row(L_.rows[t], row.data());
        for (std::size_t e = 0; e < c_.v.entries.size(); ++e) {
            const auto& en = c_.v.entries[e];
            arb_addmul(dot[en.col], row[en.row], v_[e], prec_);
        }
        Ball a, total, worst, x;
        for (std::size_t f = 0; f < F; ++f) {
            arb_abs(a.get(), dot[f]);
            arb_max(mx[L_.block_of_col[f]], mx[L_.block_of_col[f]], a.get(), prec_);
        }
        for (std::size_t b = 0; b < L_.blocks; ++b) arb_add(total.get(), total.get(), mx[b], prec_);
        bool first = true;
        for (const auto& u : L_.uses[t]) {
            // sum_{b' != b} M_{t,b'} - s d_{t,F}
            arb_sub(x.get(), total.get(), mx[u.block], prec_);
            if (u.sign > 0) arb_sub(x.get(), x.get(), dot[u.col], prec_);
            else arb_add(x.get(), x.get(), dot[u.col], prec_);
            if (first) arb_set(worst.get(), x.get());
            else arb_max(worst.get(), worst.get(), x.get(), prec_);
            first = false;
        }
        Ball e;
        arb_set_fmpq(e.get(), ec_.get(), prec_);
        arb_add(out, worst.get(), e.get(), prec_);
    }
    bool has_exact() const override { return !I_.is_softmax(); }
    void exact(std::size_t t, std::vector<Rat>& out) const override {
        const std::size_t F = L_.block_of_col.size();
        std::vector<Rat> dot(F), mx(L_.blocks);
        for (const auto& en : c_.v.entries) fmpq_addmul(dot[en.col].get(), I_.a(L_.rows[t], en.row).get(), en.val.get());
        Rat total;
        for (std::size_t f = 0; f < F; ++f) {
            const Rat a = dot[f].abs();
            if (a > mx[L_.block_of_col[f]]) mx[L_.block_of_col[f]] = a;
        }
        for (const auto& m : mx) total = total + m;
        Rat worst;
        bool first = true;
        for (const auto& u : L_.uses[t]) {
            const Rat x = total - mx[u.block] - (u.sign > 0 ? dot[u.col] : -dot[u.col]);
            if (first || x > worst) worst = x;
            first = false;
        }
        out[0] = ec_ + worst;
    }

private:
    const Instance& I_;
    const BorsukCert& c_;
    const Layout& L_;
    Rat ec_;
    std::unique_ptr<RowEncloser> enc_;
    BallVec v_;
    slong prec_ = 64;
};

// The polytope test of one block (exact): every stored facet is a facet of
// conv(+-u) (its hyperplane w.x = 1 through its vertices, every other vertex
// strictly below), and every ridge of the facets +-F lies in exactly two of them.
void check_polytope(const BorsukBlock& blk, const Where& w) {
    const std::size_t k = blk.dim, V = blk.vertices.size();
    auto neg = [V](std::size_t q) { return q < V ? q + V : q - V; };
    auto coord = [&](std::size_t q, std::size_t i) { return q < V ? blk.vertices[q][i] : -blk.vertices[q - V][i]; };
    fmpq_mat_t P, W, one;
    fmpq_mat_init(P, static_cast<slong>(k), static_cast<slong>(k));
    fmpq_mat_init(W, static_cast<slong>(k), 1);
    fmpq_mat_init(one, static_cast<slong>(k), 1);
    struct Clear {
        fmpq_mat_struct *a, *b, *c;
        ~Clear() { fmpq_mat_clear(a); fmpq_mat_clear(b); fmpq_mat_clear(c); }
    } clear{P, W, one};
    for (std::size_t i = 0; i < k; ++i) fmpq_one(fmpq_mat_entry(one, static_cast<slong>(i), 0));
    std::map<std::vector<std::size_t>, int> ridges;
    for (std::size_t f = 0; f < blk.facets.size(); ++f) {
        const auto& F = blk.facets[f];
        const Where wf = w.key("facets").index(f);
        for (std::size_t r = 0; r < k; ++r)
            for (std::size_t i = 0; i < k; ++i)
                fmpq_set(fmpq_mat_entry(P, static_cast<slong>(r), static_cast<slong>(i)), coord(F[r], i).get());
        if (!fmpq_mat_solve_fraction_free(W, P, one))
            throw InputError(wf, "its vertices are linearly dependent (a facet must be a simplex off the origin)");
        std::vector<std::uint8_t> in(2 * V, 0);
        for (std::size_t q : F) in[q] = 1;
        for (std::size_t q = 0; q < V; ++q) {
            Rat d;
            for (std::size_t i = 0; i < k; ++i)
                fmpq_addmul(d.get(), fmpq_mat_entry(W, static_cast<slong>(i), 0), blk.vertices[q][i].get());
            // w.u < 1 for u not in F, and w.(-u) = -w.u < 1 for -u not in F.
            if ((!in[q] && d >= Rat(1)) || (!in[q + V] && -d >= Rat(1)))
                throw InputError(wf, "vertex " + std::to_string(!in[q] && d >= Rat(1) ? q : q + V) +
                                         " lies on or beyond this facet's hyperplane (not a facet of the convex hull)");
        }
        for (int side = 0; side < 2; ++side) {
            std::vector<std::size_t> G(F);
            if (side) for (auto& q : G) q = neg(q);
            for (std::size_t drop = 0; drop < k; ++drop) {
                std::vector<std::size_t> ridge;
                for (std::size_t r = 0; r < k; ++r)
                    if (r != drop) ridge.push_back(G[r]);
                std::sort(ridge.begin(), ridge.end());
                ++ridges[ridge];
            }
        }
    }
    for (const auto& [ridge, count] : ridges) {
        if (count == 2) continue;
        std::string s;
        for (std::size_t q : ridge) {
            if (!s.empty()) s.push_back(' ');
            s.append(std::to_string(q));
        }
        throw InputError(w.key("facets"), "the ridge {" + s + "} lies in " + std::to_string(count) +
                                              " of the facets +-F, not 2 (the facets must close up into a sphere)");
    }
}

BorsukBlock parse_block(const json& j, const Where& w, const Instance& I) {
    BorsukBlock blk;
    if (!j.is_object()) throw InputError(w, "must be an object with vertices, labels and facets");
    const json& vs = require(j, "vertices", w);
    const Where wv = w.key("vertices");
    if (!vs.is_array() || vs.empty() || vs.size() > kMaxVertices)
        throw InputError(wv, "must be a list of 1 to " + std::to_string(kMaxVertices) + " vertices");
    for (std::size_t q = 0; q < vs.size(); ++q) {
        const Where wq = wv.index(q);
        if (!vs[q].is_array() || vs[q].empty() || vs[q].size() > kMaxDim)
            throw InputError(wq, "must be a list of 1 to " + std::to_string(kMaxDim) + " coordinates");
        if (q == 0) blk.dim = vs[q].size();
        if (vs[q].size() != blk.dim)
            throw InputError(wq, "has " + std::to_string(vs[q].size()) + " coordinates but vertex 0 has " +
                                     std::to_string(blk.dim));
        std::vector<Rat> u;
        for (std::size_t i = 0; i < blk.dim; ++i) u.push_back(parse_rational(vs[q][i], wq.index(i)));
        blk.vertices.push_back(std::move(u));
    }
    const std::size_t V = blk.vertices.size();
    const json& ls = require(j, "labels", w);
    const Where wl = w.key("labels");
    if (!ls.is_array() || ls.size() != V)
        throw InputError(wl, "must list one [row, sign] per vertex (" + std::to_string(V) + ")");
    for (std::size_t q = 0; q < V; ++q) {
        const Where wq = wl.index(q);
        if (!ls[q].is_array() || ls[q].size() != 2) throw InputError(wq, "must be [row, sign]");
        const auto t = static_cast<std::size_t>(parse_index(ls[q][0], wq.index(0), I.n));
        const json& s = ls[q][1];
        if (!s.is_number_integer() || (s.get<std::int64_t>() != 1 && s.get<std::int64_t>() != -1))
            throw InputError(wq.index(1), "must be 1 or -1");
        blk.labels.push_back({t, static_cast<int>(s.get<std::int64_t>())});
    }
    const json& fs = require(j, "facets", w);
    const Where wf = w.key("facets");
    if (!fs.is_array() || fs.empty() || fs.size() > kMaxFacets)
        throw InputError(wf, "must be a list of 1 to " + std::to_string(kMaxFacets) + " facets");
    for (std::size_t f = 0; f < fs.size(); ++f) {
        const Where wi = wf.index(f);
        if (!fs[f].is_array() || fs[f].size() != blk.dim)
            throw InputError(wi, "must list " + std::to_string(blk.dim) + " vertex indices (the block's dimension)");
        std::vector<std::size_t> F;
        std::set<std::size_t> seen;
        for (std::size_t r = 0; r < blk.dim; ++r) {
            const auto q = static_cast<std::size_t>(parse_index(fs[f][r], wi.index(r), 2 * V));
            if (!seen.insert(q).second) throw InputError(wi.index(r), "vertex " + std::to_string(q) + " repeated");
            F.push_back(q);
        }
        blk.facets.push_back(std::move(F));
    }
    return blk;
}

}  // namespace

void parse_borsuk(const json& c, const Where& w, const Instance& I, ArrayLoader& L, Certificate& cert) {
    BorsukCert bc;
    const json& blocks = require(c, "blocks", w);
    const Where wb = w.key("blocks");
    if (!blocks.is_array() || blocks.empty()) throw InputError(wb, "must be a non-empty array of blocks");
    std::uint64_t m = 0, work = 0;
    std::size_t F = 0;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        BorsukBlock blk = parse_block(blocks[b], wb.index(b), I);
        m += blk.dim;
        work += static_cast<std::uint64_t>(blk.facets.size()) * blk.vertices.size();
        if (m > std::min(I.n, I.N))
            throw InputError(wb.index(b), "the blocks' dimensions add up to more than min(n, N) = " +
                                              std::to_string(std::min(I.n, I.N)));
        if (work > kMaxWork)
            throw InputError(wb.index(b), "facets x vertices over the blocks exceed " + std::to_string(kMaxWork));
        F += blk.facets.size();
        bc.blocks.push_back(std::move(blk));
    }
    for (std::size_t b = 0; b < bc.blocks.size(); ++b) check_polytope(bc.blocks[b], wb.index(b));
    bc.v = L.load_sparse(require(c, "v", w), w.key("v"));
    if (bc.v.rows != I.N || bc.v.cols != F)
        throw InputError(w.key("v"), "shape [" + std::to_string(bc.v.rows) + ", " + std::to_string(bc.v.cols) +
                                         "] does not match N x F [" + std::to_string(I.N) + ", " + std::to_string(F) +
                                         "] (F = the blocks' stored facets)");
    check_rank(c, w, m, cert, true);
    cert.data = std::move(bc);
}

CertResult check_borsuk(const Instance& I, const Rat& eps, const Certificate& c, const CheckOptions& opt) {
    const auto& bc = c.as<BorsukCert>();
    CertResult res = result_for(c);
    const Layout L = layout(bc);
    const Rat cn = grouped_row_norm(bc.v, L.block_of_col);  // c = max_j sum_b max_{F in b} |v[j, F]|
    BorsukRows q(I, bc, L, eps * cn);
    const rows::RowOutcome o = rows::decide_rows(q, {{Rat(0), true}}, opt, "borsuk");
    fill_rowwise(res, o, "eps_c_plus_leak_minus_margin", "<", Rat(0), "t");
    res.decisive["row_of_a"] = L.rows[o.row];
    res.decisive["c"] = cn.str();
    const Endpoints e = o.enclosure.empty() ? Endpoints{} : o.enclosure[0];
    const std::string what = "eps c + max(leak - s a_t v_F) (row " + std::to_string(L.rows[o.row]) + ") in " +
                             interval_text(e);
    res.detail = rowwise_detail(o, what, ", c = " + exact_text(cn) + ": < 0", " >= 0");
    return res;
}

std::string describe_borsuk(const Certificate& c) {
    const auto& bc = c.as<BorsukCert>();
    std::size_t V = 0, F = 0, big = 0;
    for (const auto& b : bc.blocks) {
        V += 2 * b.vertices.size();
        F += 2 * b.facets.size();
        big = std::max(big, b.dim);
    }
    return std::to_string(bc.blocks.size()) + " blocks (largest dimension " + std::to_string(big) + "), " +
           std::to_string(V) + " vertices, " + std::to_string(F) + " facets, v " + std::to_string(bc.v.rows) + "x" +
           std::to_string(bc.v.cols) + " with " + std::to_string(bc.v.entries.size()) + " nonzeros";
}

}  // namespace rankcert::cert
