// block_neumann: vertex preimages for blocks of mixed rows (docs/theory.md,
// "Lower bounds", block Neumann).
//
// P = Lambda A_I (m x N; Lambda absent = identity, m = |I|).  The rows
// 0..m-1 of P are partitioned into blocks; block b of size s lists 2^(s-1)
// vectors v_{b,s} (columns of v, N x V), one per sign vector s on the block
// with s = +1 at its first row (v_{b,-s} = -v_{b,s} is implied).  With
//   c       = max_j sum_b max_s |v_{b,s}[j]|                 (exact)
//   l_t     = ||Lambda_t||_1                                  (exact)
//   kappa_t = sum_b max_s |[t in b] s_t - (P v_{b,s})_t|      (enclosed)
// checked, row by row: kappa_t + eps c l_t < 1.  Then r_eps(A) >= m.
// Singleton blocks with Lambda = identity are exactly the neumann kind
// (v = the columns of R, c = ||R||_inf); one block over all rows is the exact
// test min_y ||A_I^T y||_1 / ||y||_1 > eps.
#include "common.hpp"
#include "units.hpp"

#include <map>
#include <memory>

namespace rankcert::cert {

namespace {

constexpr std::size_t kMaxBlock = 20;  // 2^19 vectors in one block at most

// Row t's sign in vertex k of its block (position pos in the block).
int vertex_sign(std::size_t pos, std::size_t k) { return pos == 0 ? 1 : ((k >> (pos - 1)) & 1u ? -1 : 1); }

struct Layout {
    std::vector<std::size_t> block_of, pos_of;    // per row t of P
    std::vector<std::size_t> first;               // first column of each block; first.back() = V
};

Layout layout(const BlockNeumannCert& c) {
    Layout L;
    std::size_t m = 0;
    for (const auto& b : c.blocks) m += b.size();
    L.block_of.assign(m, 0);
    L.pos_of.assign(m, 0);
    L.first.push_back(0);
    for (std::size_t b = 0; b < c.blocks.size(); ++b) {
        for (std::size_t p = 0; p < c.blocks[b].size(); ++p) {
            L.block_of[c.blocks[b][p]] = b;
            L.pos_of[c.blocks[b][p]] = p;
        }
        L.first.push_back(L.first.back() + (std::size_t{1} << (c.blocks[b].size() - 1)));
    }
    return L;
}

class BlockRows : public rows::RowQuantity {
public:
    // ecl[t] = eps c l_t, exact.
    BlockRows(const Instance& I, const BlockNeumannCert& c, std::vector<Rat> ecl)
        : I_(I), c_(c), L_(layout(c)), ecl_(std::move(ecl)) {}
    std::size_t count() const override { return L_.block_of.size(); }
    void prepare(slong prec) override {
        enc_ = std::make_unique<RowEncloser>(I_, prec);
        prec_ = prec;
        v_ = BallVec(c_.v.entries.size());
        for (std::size_t e = 0; e < c_.v.entries.size(); ++e) arb_set_fmpq(v_[e], c_.v.entries[e].val.get(), prec);
        if (c_.lambda) {  // P = Lambda A_I, once per precision
            const std::size_t N = I_.N, m = count(), p = c_.rows.size();
            p_ = BallVec(m * N);
            BallVec a(N);
            Ball l;
            for (std::size_t i = 0; i < p; ++i) {
                enc_->row(c_.rows[i], a.data());
                for (std::size_t t = 0; t < m; ++t) {
                    const Rat& lam = (*c_.lambda)(t, i);
                    if (lam.sign() == 0) continue;
                    arb_set_fmpq(l.get(), lam.get(), prec);
                    for (std::size_t j = 0; j < N; ++j) arb_addmul(p_[t * N + j], a[j], l.get(), prec);
                }
            }
        }
    }
    void eval(std::size_t t, arb_ptr out) const override {
        const std::size_t N = I_.N, V = L_.first.back();
        BallVec row, dot(V);
        arb_srcptr pt;
        if (c_.lambda) {
            pt = p_[t * N];
        } else {
            row = BallVec(N);
            enc_->row(c_.rows[t], row.data());
            pt = row[0];
        }
        for (std::size_t e = 0; e < c_.v.entries.size(); ++e) {
            const auto& en = c_.v.entries[e];
            arb_addmul(dot[en.col], pt + en.row, v_[e], prec_);
        }
        Ball mx, r;
        arb_zero(out);
        for (std::size_t b = 0; b < c_.blocks.size(); ++b) {
            arb_zero(mx.get());
            for (std::size_t k = L_.first[b]; k < L_.first[b + 1]; ++k) {
                arb_neg(r.get(), dot[k]);
                if (L_.block_of[t] == b) arb_add_si(r.get(), r.get(), vertex_sign(L_.pos_of[t], k - L_.first[b]), prec_);
                arb_abs(r.get(), r.get());
                arb_max(mx.get(), mx.get(), r.get(), prec_);
            }
            arb_add(out, out, mx.get(), prec_);
        }
        Ball e;
        arb_set_fmpq(e.get(), ecl_[t].get(), prec_);
        arb_add(out, out, e.get(), prec_);
    }
    bool has_exact() const override { return !I_.is_softmax(); }
    void exact(std::size_t t, std::vector<Rat>& out) const override {
        const std::size_t N = I_.N, V = L_.first.back();
        std::vector<Rat> pt(N), dot(V);
        if (c_.lambda) {
            for (std::size_t i = 0; i < c_.rows.size(); ++i) {
                const Rat& lam = (*c_.lambda)(t, i);
                if (lam.sign() == 0) continue;
                for (std::size_t j = 0; j < N; ++j) fmpq_addmul(pt[j].get(), lam.get(), I_.a(c_.rows[i], j).get());
            }
        } else {
            for (std::size_t j = 0; j < N; ++j) pt[j] = I_.a(c_.rows[t], j);
        }
        for (const auto& en : c_.v.entries) fmpq_addmul(dot[en.col].get(), pt[en.row].get(), en.val.get());
        Rat acc = ecl_[t];
        for (std::size_t b = 0; b < c_.blocks.size(); ++b) {
            Rat mx;
            for (std::size_t k = L_.first[b]; k < L_.first[b + 1]; ++k) {
                Rat r = -dot[k];
                if (L_.block_of[t] == b) r = r + Rat(vertex_sign(L_.pos_of[t], k - L_.first[b]));
                r = r.abs();
                if (r > mx) mx = r;
            }
            acc = acc + mx;
        }
        out[0] = acc;
    }

private:
    const Instance& I_;
    const BlockNeumannCert& c_;
    Layout L_;
    std::vector<Rat> ecl_;
    std::unique_ptr<RowEncloser> enc_;
    BallVec v_, p_;
    slong prec_ = 64;
};

// c = max_j sum_b max_{k in b} |v[j, k]|, exactly.
Rat preimage_norm(const BlockNeumannCert& c, const Layout& L) {
    std::vector<std::size_t> block_of_col(L.first.back());
    for (std::size_t b = 0; b + 1 < L.first.size(); ++b)
        for (std::size_t k = L.first[b]; k < L.first[b + 1]; ++k) block_of_col[k] = b;
    return grouped_row_norm(c.v, block_of_col);
}

}  // namespace

void parse_block_neumann(const json& c, const Where& w, const Instance& I, ArrayLoader& L, Certificate& cert) {
    BlockNeumannCert bc;
    bc.rows = parse_rows(require(c, "rows", w), w.key("rows"), I.n);
    const json& blocks = require(c, "blocks", w);
    const Where wb = w.key("blocks");
    if (!blocks.is_array() || blocks.empty()) throw InputError(wb, "must be a non-empty array of blocks");
    std::size_t m = 0;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        const Where wi = wb.index(b);
        if (!blocks[b].is_array() || blocks[b].empty() || blocks[b].size() > kMaxBlock)
            throw InputError(wi, "must be an array of 1 to " + std::to_string(kMaxBlock) + " row indices of P");
        m += blocks[b].size();
    }
    std::vector<std::uint8_t> seen(m, 0);
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        std::vector<std::size_t> blk;
        for (std::size_t q = 0; q < blocks[b].size(); ++q) {
            const json& x = blocks[b][q];
            const Where wq = wb.index(b).index(q);
            if (!x.is_number_unsigned() || x.get<std::uint64_t>() >= m)
                throw InputError(wq, "must be an index in [0, " + std::to_string(m) + ") (the rows of P)");
            const auto t = static_cast<std::size_t>(x.get<std::uint64_t>());
            if (seen[t]) throw InputError(wq, "row " + std::to_string(t) + " of P is in two blocks");
            seen[t] = 1;
            blk.push_back(t);
        }
        bc.blocks.push_back(std::move(blk));
    }
    if (c.contains("lambda")) {
        bc.lambda = load_shaped(c, "lambda", w, L, m, bc.rows.size(), "m x p (blocks' rows x rows)");
    } else if (m != bc.rows.size()) {
        throw InputError(wb, "cover " + std::to_string(m) + " rows of P but there are " +
                                 std::to_string(bc.rows.size()) + " rows (without lambda, P = A_I)");
    }
    std::size_t V = 0;
    for (const auto& b : bc.blocks) V += std::size_t{1} << (b.size() - 1);
    bc.v = L.load_sparse(require(c, "v", w), w.key("v"));
    if (bc.v.rows != I.N || bc.v.cols != V)
        throw InputError(w.key("v"), "shape [" + std::to_string(bc.v.rows) + ", " + std::to_string(bc.v.cols) +
                                         "] does not match N x V [" + std::to_string(I.N) + ", " +
                                         std::to_string(V) + "] (V = sum over blocks of 2^(size - 1))");
    check_rank(c, w, m, cert, true);
    cert.data = std::move(bc);
}

CertResult check_block_neumann(const Instance& I, const Rat& eps, const Certificate& c, const CheckOptions& opt) {
    const auto& bc = c.as<BlockNeumannCert>();
    CertResult res = result_for(c);
    const Layout L = layout(bc);
    const std::size_t m = L.block_of.size();
    const Rat cn = preimage_norm(bc, L);
    std::vector<Rat> ecl(m);
    std::size_t worst = 0;
    for (std::size_t t = 0; t < m; ++t) {
        Rat l(1);
        if (bc.lambda) {
            l = Rat(0);
            for (std::size_t i = 0; i < bc.rows.size(); ++i) l = l + (*bc.lambda)(t, i).abs();
        }
        ecl[t] = eps * cn * l;
        if (ecl[t] > ecl[worst]) worst = t;
    }
    res.decisive = {{"quantity", "kappa + eps*c*l"}, {"c", cn.str()}, {"relation", "kappa_t + eps*c*l_t < 1"}};
    if (ecl[worst] >= Rat(1)) {
        res.verdict = Verdict::refuted;
        res.precision = "exact";
        res.detail = "eps * c * ||Lambda_t||_1 = " + exact_text(ecl[worst]) + " >= 1 at row t = " + std::to_string(worst);
        res.decisive["t"] = worst;
        return res;
    }
    BlockRows q(I, bc, std::move(ecl));
    const rows::RowOutcome o = rows::decide_rows(q, {{Rat(1), true}}, opt, "block_neumann");
    fill_rowwise(res, o, "kappa_plus_eps_c_l", "<", Rat(1), "t");
    res.decisive["c"] = cn.str();  // (fill_rowwise replaces the fields set above)
    const Endpoints e = o.enclosure.empty() ? Endpoints{} : o.enclosure[0];
    const std::string what = "kappa + eps*c*l (row t = " + std::to_string(o.row) + ") in " + interval_text(e);
    res.detail = rowwise_detail(o, what, ", c = " + exact_text(cn) + ": < 1", " >= 1");
    return res;
}

std::string describe_block_neumann(const Certificate& c) {
    const auto& bc = c.as<BlockNeumannCert>();
    std::size_t big = 0;
    for (const auto& b : bc.blocks) big = std::max(big, b.size());
    return std::to_string(bc.rows.size()) + " rows" + (bc.lambda ? " mixed by lambda" : "") + ", " +
           std::to_string(bc.blocks.size()) + " blocks (largest " + std::to_string(big) + "), v " +
           std::to_string(bc.v.rows) + "x" + std::to_string(bc.v.cols) + " with " +
           std::to_string(bc.v.entries.size()) + " nonzeros";
}

}  // namespace rankcert::cert
