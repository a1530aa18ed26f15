// row_interpolative: B = X A_I (docs/theory.md, "Upper bounds").
//
// B has rank at most |I| = k; checked, as for factor: every row's l1 error
// sum_j |A_ij - (X A_I)_ij| <= eps.
#include "common.hpp"
#include "units.hpp"

#include "rankcert/fast.hpp"

#include <cmath>
#include <memory>

namespace rankcert::cert {

namespace {

class RowInterpRows : public rows::RowQuantity {
public:
    RowInterpRows(const Instance& I, const RowInterpolativeCert& c) : I_(I), c_(c) {}
    std::size_t count() const override { return I_.n; }
    void prepare(slong prec) override {
        enc_ = std::make_unique<RowEncloser>(I_, prec);
        enclose_matrix(c_.x, prec, x_);
        ai_ = BallVec(c_.rows.size() * I_.N);
        for (std::size_t t = 0; t < c_.rows.size(); ++t) enc_->row(c_.rows[t], ai_.data() + t * I_.N);
        prec_ = prec;
    }
    void eval(std::size_t i, arb_ptr out) const override {
        const std::size_t N = I_.N, k = c_.rows.size();
        BallVec a(N);
        enc_->row(i, a.data());
        Ball t;
        arb_zero(out);
        for (std::size_t j = 0; j < N; ++j) {
            arb_dot(t.get(), a[j], 1, x_.data() + i * k, 1, ai_.data() + j, static_cast<slong>(N), static_cast<slong>(k), prec_);
            arb_abs(t.get(), t.get());
            arb_add(out, out, t.get(), prec_);
        }
    }
    bool has_exact() const override { return !I_.is_softmax(); }
    void exact(std::size_t i, std::vector<Rat>& out) const override {
        const std::size_t k = c_.rows.size();
        Rat acc, b;
        for (std::size_t j = 0; j < I_.N; ++j) {
            fmpq_zero(b.get());
            for (std::size_t t = 0; t < k; ++t) fmpq_addmul(b.get(), c_.x(i, t).get(), I_.a(c_.rows[t], j).get());
            acc = acc + (I_.a(i, j) - b).abs();
        }
        out[0] = acc;
    }

    // Row error in binary64.  With a~_t the computed rows A_I (errors errA_t)
    // and b = fl(x~_i a~), sum_j |B_ij - b_j| <= sum_t |x~_it| ((1 + in_rel)
    // errA_t + (in_rel + gamma_k)(1 + errA_t)) (sum_j a~_tj <= 1 + errA_t).
    bool fast_prepare() override {
        if (!I_.is_softmax()) return false;
        soft_ = std::make_unique<fast::SoftmaxRows>(I_);
        fx_ = std::make_unique<fast::Dense>(c_.x);
        const std::size_t k = c_.rows.size(), N = I_.N;
        if (!soft_->ok() || !fx_->ok) return false;
        fai_.assign(k * N, 0);
        erri_.assign(k, 0);
        for (std::size_t t = 0; t < k; ++t)
            if (!soft_->row(c_.rows[t], fai_.data() + t * N, erri_[t])) return false;
        return true;
    }
    bool fast(std::size_t i, double* lo, double* hi) const override {
        const std::size_t N = I_.N, k = c_.rows.size();
        thread_local std::vector<double> a, b;
        a.resize(N);
        b.resize(N);
        double errA = 0;
        if (!soft_->row(i, a.data(), errA)) return false;
        const double* xi = fx_->v.data() + i * k;
        fast::axpy_rows(xi, fai_.data(), k, N, b.data());
        double R = 0, errB = 0;
        for (std::size_t j = 0; j < N; ++j) R += std::fabs(a[j] - b[j]);
        const double g = fast::in_rel + fast::gamma(k);
        for (std::size_t t = 0; t < k; ++t) errB += std::fabs(xi[t]) * ((1 + fast::in_rel) * erri_[t] + g * (1 + erri_[t]));
        const double rad = (fast::gamma(N + 2) * R + errA + errB) * fast::inflate + fast::tiny;
        lo[0] = fast::down(R, rad);
        hi[0] = fast::up(R, rad);
        return std::isfinite(hi[0]);
    }

private:
    const Instance& I_;
    const RowInterpolativeCert& c_;
    std::unique_ptr<fast::SoftmaxRows> soft_;
    std::unique_ptr<fast::Dense> fx_;
    std::vector<double> fai_, erri_;  // rows A_I (k x N) in binary64 and their error bounds
    std::unique_ptr<RowEncloser> enc_;
    BallVec x_, ai_;
    slong prec_ = 64;
};

}  // namespace

void parse_row_interpolative(const json& c, const Where& w, const Instance& I, ArrayLoader& L, Certificate& cert) {
    RowInterpolativeCert ri;
    ri.rows = parse_rows(require(c, "rows", w), w.key("rows"), I.n);
    ri.x = load_shaped(c, "x", w, L, I.n, ri.rows.size(), "n x k");
    check_rank(c, w, ri.rows.size(), cert, false);
    cert.data = std::move(ri);
}

CertResult check_row_interpolative(const Instance& I, const Rat& eps, const Certificate& c, const CheckOptions& opt) {
    RowInterpRows q(I, c.as<RowInterpolativeCert>());
    return check_row_errors(q, eps, c, opt);
}

std::string describe_row_interpolative(const Certificate& c) {
    const auto& ri = c.as<RowInterpolativeCert>();
    return std::to_string(ri.rows.size()) + " rows, x " + std::to_string(ri.x.rows) + "x" + std::to_string(ri.x.cols);
}

}  // namespace rankcert::cert
