// neumann: a right inverse of the rows A_I (docs/theory.md, "Lower bounds").
//
// With delta = ||I_m - A_I R||_inf and rho = ||R||_inf, checked:
// delta + eps rho < 1, row by row: for every t,
// sum_u |[t = u] - (A_I R)_tu| < 1 - eps rho.  Then every B within eps has
// B_I R = I - X with ||X|| < 1 (Neumann series), so rank B >= m.  rho is exact;
// eps rho >= 1 refutes without computing anything.
#include "common.hpp"
#include "units.hpp"

#include "rankcert/fast.hpp"

#include <cmath>
#include <memory>

namespace rankcert::cert {

namespace {

class NeumannRows : public rows::RowQuantity {
public:
    // rho = ||R||_inf, exact (computed once by the check).
    NeumannRows(const Instance& I, const NeumannCert& c, const Rat& rho) : I_(I), c_(c), rho_(rho) {}
    std::size_t count() const override { return c_.rows.size(); }
    void prepare(slong prec) override {
        enc_ = std::make_unique<RowEncloser>(I_, prec);
        r_ = BallVec(c_.r.entries.size());
        for (std::size_t e = 0; e < c_.r.entries.size(); ++e) arb_set_fmpq(r_[e], c_.r.entries[e].val.get(), prec);
        prec_ = prec;
    }
    void eval(std::size_t t, arb_ptr out) const override {
        const std::size_t N = I_.N, m = c_.rows.size();
        BallVec a(N), row(m);
        enc_->row(c_.rows[t], a.data());
        for (std::size_t e = 0; e < c_.r.entries.size(); ++e) {
            const auto& en = c_.r.entries[e];
            arb_addmul(row[en.col], a[en.row], r_[e], prec_);
        }
        arb_sub_ui(row[t], row[t], 1, prec_);  // (A_I R - I)_tt; abs below
        arb_zero(out);
        for (std::size_t u = 0; u < m; ++u) {
            arb_abs(row[u], row[u]);
            arb_add(out, out, row[u], prec_);
        }
    }
    bool has_exact() const override { return !I_.is_softmax(); }
    void exact(std::size_t t, std::vector<Rat>& out) const override {
        std::vector<Rat> row(c_.rows.size());
        for (const auto& en : c_.r.entries) fmpq_addmul(row[en.col].get(), I_.a(c_.rows[t], en.row).get(), en.val.get());
        fmpq_sub_ui(row[t].get(), row[t].get(), 1);
        Rat acc;
        for (auto& v : row) acc = acc + v.abs();
        out[0] = acc;
    }

    // delta_t in binary64: with v~ = a~ R~ accumulated per column,
    // |d_t - D~| <= errA rho + (gamma_c + 2.01 in_rel)(1 + errA) rho + gamma_{m+2} D~,
    // rho = ||R||_inf (exact, rounded up), c = the most entries in one column of R.
    bool fast_prepare() override {
        if (!I_.is_softmax()) return false;
        soft_ = std::make_unique<fast::SoftmaxRows>(I_);
        if (!soft_->ok()) return false;
        r_d_.resize(c_.r.entries.size());
        std::vector<std::size_t> per_col(c_.rows.size(), 0);
        for (std::size_t e = 0; e < c_.r.entries.size(); ++e) {
            if (!fast::to_double(c_.r.entries[e].val, r_d_[e])) return false;
            ++per_col[c_.r.entries[e].col];
        }
        cmax_ = 0;
        for (auto c : per_col) cmax_ = std::max(cmax_, c);
        // A dense enough R is kept as a dense N x m array: v = a~ R~ then runs
        // as contiguous axpys (zeros add nothing; gamma_N covers every column).
        const std::size_t m = c_.rows.size();
        if (m && c_.r.entries.size() >= I_.N * m / 4) {
            dense_.assign(I_.N * m, 0);
            for (std::size_t e = 0; e < c_.r.entries.size(); ++e)
                dense_[c_.r.entries[e].row * m + c_.r.entries[e].col] = r_d_[e];
            cmax_ = I_.N;
        }
        double rho = 0;
        if (!fast::to_double(rho_, rho)) return false;
        rho_up_ = rho * (1 + 0x1p-50);  // >= ||R||_inf: to_double is within 2^-52
        return true;
    }
    bool fast(std::size_t t, double* lo, double* hi) const override {
        const std::size_t N = I_.N, m = c_.rows.size();
        thread_local std::vector<double> a, v;
        a.resize(N);
        v.assign(m, 0);
        double errA = 0;
        if (!soft_->row(c_.rows[t], a.data(), errA)) return false;
        if (!dense_.empty()) {
            fast::axpy_rows(a.data(), dense_.data(), N, m, v.data());
        } else {
            for (std::size_t e = 0; e < c_.r.entries.size(); ++e) {
                const auto& en = c_.r.entries[e];
                v[en.col] += a[en.row] * r_d_[e];
            }
        }
        v[t] -= 1;
        double D = 0;
        for (double x : v) D += std::fabs(x);
        const double rad = (errA * rho_up_ + (fast::gamma(cmax_) + 2.01 * fast::in_rel) * (1 + errA) * rho_up_ +
                            fast::gamma(m + 2) * D) * fast::inflate + fast::tiny;
        lo[0] = fast::down(D, rad);
        hi[0] = fast::up(D, rad);
        return std::isfinite(hi[0]);
    }

private:
    const Instance& I_;
    const NeumannCert& c_;
    const Rat& rho_;
    std::unique_ptr<fast::SoftmaxRows> soft_;
    std::vector<double> r_d_, dense_;  // R's entries in binary64; R dense (N x m) when most entries are nonzero
    std::size_t cmax_ = 0;
    double rho_up_ = 0;
    std::unique_ptr<RowEncloser> enc_;
    BallVec r_;
    slong prec_ = 64;
};

}  // namespace

void parse_neumann(const json& c, const Where& w, const Instance& I, ArrayLoader& L, Certificate& cert) {
    NeumannCert nc;
    nc.rows = parse_rows(require(c, "rows", w), w.key("rows"), I.n);
    nc.r = L.load_sparse(require(c, "r", w), w.key("r"));
    if (nc.r.rows != I.N || nc.r.cols != nc.rows.size())
        throw InputError(w.key("r"), "shape [" + std::to_string(nc.r.rows) + ", " + std::to_string(nc.r.cols) +
                                         "] does not match N x m [" + std::to_string(I.N) + ", " +
                                         std::to_string(nc.rows.size()) + "]");
    check_rank(c, w, nc.rows.size(), cert, true);
    cert.data = std::move(nc);
}

CertResult check_neumann(const Instance& I, const Rat& eps, const Certificate& c, const CheckOptions& opt) {
    const auto& nc = c.as<NeumannCert>();
    CertResult res = result_for(c);
    const Rat rho = row_sum_norm(nc.r);
    const Rat thr = Rat(1) - eps * rho;
    if (thr.sign() <= 0) {
        res.verdict = Verdict::refuted;
        res.precision = "exact";
        res.detail = "eps * ||R||_inf = " + exact_text(eps * rho) + " >= 1";
        res.decisive = {{"quantity", "delta"}, {"rho", rho.str()}, {"eps_rho", (eps * rho).str()},
                        {"relation", "delta + eps*rho < 1"}};
        return res;
    }
    NeumannRows q(I, nc, rho);
    const rows::RowOutcome o = rows::decide_rows(q, {{thr, true}}, opt, "neumann");
    fill_rowwise(res, o, "delta_row", "<", thr, "t");
    const Endpoints delta = o.enclosure.empty() ? Endpoints{} : o.enclosure[0];
    res.decisive["rho"] = rho.str();
    res.decisive["delta"] = endpoints_json(delta);
    res.decisive["row_of_a"] = nc.rows.empty() ? 0 : nc.rows[o.row];
    const std::string what = "delta (row t = " + std::to_string(o.row) + ") in " + interval_text(delta);
    res.detail = rowwise_detail(o, what, ", rho = " + exact_text(rho) + ": delta + eps*rho < 1",
                                " >= 1 - eps*rho = " + exact_text(thr));
    return res;
}

std::string describe_neumann(const Certificate& c) {
    const auto& nc = c.as<NeumannCert>();
    return std::to_string(nc.rows.size()) + " rows, r " + std::to_string(nc.r.rows) + "x" + std::to_string(nc.r.cols) +
           " with " + std::to_string(nc.r.entries.size()) + " nonzeros";
}

}  // namespace rankcert::cert
