// factor: B = U W^T (docs/theory.md, "Upper bounds").
//
// Checked: for every row i, sum_j |A_ij - (U W^T)_ij| <= eps.  Then B has
// rank at most k and lies within eps of A, so r_eps(A) <= k.  Rows are
// decided in ball arithmetic on the precision ladder; for rational A, rows
// left undecided are decided exactly.  For k = 0 on softmax rows the error is
// ||A_i||_1 = 1 exactly (rows are probability vectors, a theorem).
#include "common.hpp"
#include "units.hpp"

#include "rankcert/fast.hpp"

#include <cmath>
#include <memory>

namespace rankcert::cert {

namespace {

class FactorRows : public rows::RowQuantity {
public:
    FactorRows(const Instance& I, const FactorCert& c) : I_(I), c_(c), k_(c.u.cols) {}
    std::size_t count() const override { return I_.n; }
    void prepare(slong prec) override {
        enc_ = std::make_unique<RowEncloser>(I_, prec);
        enclose_matrix(c_.u, prec, u_);
        enclose_matrix(c_.w, prec, w_);
        prec_ = prec;
    }
    void eval(std::size_t i, arb_ptr out) const override {
        const std::size_t N = I_.N;
        BallVec a(N);
        enc_->row(i, a.data());
        Ball t;
        arb_zero(out);
        for (std::size_t j = 0; j < N; ++j) {
            // t = A_ij - <u_i, w_j>
            arb_dot(t.get(), a[j], 1, u_.data() + i * k_, 1, w_.data() + j * k_, 1, static_cast<slong>(k_), prec_);
            arb_abs(t.get(), t.get());
            arb_add(out, out, t.get(), prec_);
        }
    }
    bool has_exact() const override { return !I_.is_softmax() || k_ == 0; }
    void exact(std::size_t i, std::vector<Rat>& out) const override {
        if (I_.is_softmax()) {  // k = 0: ||A_i||_1 = 1
            out[0] = Rat(1);
            return;
        }
        Rat acc, b;
        for (std::size_t j = 0; j < I_.N; ++j) {
            fmpq_zero(b.get());
            for (std::size_t t = 0; t < k_; ++t) fmpq_addmul(b.get(), c_.u(i, t).get(), c_.w(j, t).get());
            acc = acc + (I_.a(i, j) - b).abs();
        }
        out[0] = acc;
    }

    // Row error in binary64: |r_i - R~| <= gamma_{N+2} R~ + errA + errB, with
    // errA >= sum_j |A_ij - a_j| (fast::SoftmaxRows) and
    // errB = (gamma_k + 2.01 in_rel) |u_i| sum_j |w_j| >= sum_j |B_ij - b_j|.
    bool fast_prepare() override {
        if (!I_.is_softmax()) return false;
        soft_ = std::make_unique<fast::SoftmaxRows>(I_);
        fu_ = std::make_unique<fast::Dense>(c_.u);
        fw_ = std::make_unique<fast::Dense>(c_.w);
        if (!soft_->ok() || !fu_->ok || !fw_->ok || fu_->cols != k_) return false;
        wt_ = fw_->transposed();
        wsum_ = 0;
        for (double x : fw_->norm) wsum_ += x;
        wsum_ *= fast::inflate;
        return true;
    }
    bool fast(std::size_t i, double* lo, double* hi) const override {
        const std::size_t N = I_.N;
        thread_local std::vector<double> a, b;
        a.resize(N);
        b.resize(N);
        double errA = 0;
        if (!soft_->row(i, a.data(), errA)) return false;
        fast::axpy_rows(fu_->v.data() + i * k_, wt_.data(), k_, N, b.data());
        double R = 0;
        for (std::size_t j = 0; j < N; ++j) R += std::fabs(a[j] - b[j]);
        const double errB = (fast::gamma(k_) + 2.01 * fast::in_rel) * (k_ ? fu_->norm[i] : 0) * wsum_;
        const double rad = (fast::gamma(N + 2) * R + errA + errB) * fast::inflate + fast::tiny;
        lo[0] = fast::down(R, rad);
        hi[0] = fast::up(R, rad);
        return std::isfinite(hi[0]);
    }

private:
    const Instance& I_;
    const FactorCert& c_;
    std::size_t k_;
    std::unique_ptr<fast::SoftmaxRows> soft_;
    std::unique_ptr<fast::Dense> fu_, fw_;
    std::vector<double> wt_;  // W^T (k x N)
    double wsum_ = 0;
    std::unique_ptr<RowEncloser> enc_;
    BallVec u_, w_;
    slong prec_ = 64;
};

}  // namespace

void parse_factor(const json& c, const Where& w, const Instance& I, ArrayLoader& L, Certificate& cert) {
    FactorCert f;
    f.u = L.load(require(c, "u", w), w.key("u"));
    f.w = L.load(require(c, "w", w), w.key("w"));
    std::size_t k = f.u.cols;
    if (f.u.is_vector && f.u.rows == I.n) k = 1;
    expect_shape(f.u, I.n, k, w.key("u"), "n x k");
    expect_shape(f.w, I.N, k, w.key("w"), "N x k");
    check_rank(c, w, k, cert, true);
    cert.data = std::move(f);
}

// The row-wise error check shared by factor and row_interpolative.
CertResult check_row_errors(rows::RowQuantity& q, const Rat& eps, const Certificate& c, const CheckOptions& opt) {
    CertResult res = result_for(c);
    const rows::RowOutcome o = rows::decide_rows(q, {{eps, false}}, opt, to_string(c.kind()));
    fill_rowwise(res, o, "row_l1_error", "<=", eps, "row");
    const std::string row = "row " + std::to_string(o.row);
    const std::string encl = o.enclosure.empty() ? "" : interval_text(o.enclosure[0]);
    if (o.verdict == Verdict::verified)
        res.detail = "every row error <= eps; worst " + row + " in " + encl;
    else if (o.verdict == Verdict::refuted)
        res.detail = row + " error in " + encl + " exceeds eps = " + exact_text(eps);
    else
        res.detail = std::to_string(o.undecided_rows) + " rows undecided at " + o.precision + " bits, e.g. " + row +
                     " error in " + encl;
    return res;
}

CertResult check_factor(const Instance& I, const Rat& eps, const Certificate& c, const CheckOptions& opt) {
    FactorRows q(I, c.as<FactorCert>());
    return check_row_errors(q, eps, c, opt);
}

std::string describe_factor(const Certificate& c) {
    const auto& f = c.as<FactorCert>();
    return "u " + std::to_string(f.u.rows) + "x" + std::to_string(f.u.cols) + ", w " + std::to_string(f.w.rows) + "x" +
           std::to_string(f.w.cols);
}

}  // namespace rankcert::cert
