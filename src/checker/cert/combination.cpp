// B = C Beta row by row (see combination.hpp).
//
// Fast tier (docs/theory.md, "The fast tier"): with b = fl(c~_i Beta~), a
// basis row t of l1 norm L_t (computed, rounded up) and error e_t >=
// sum_j |Beta_tj - Beta~_tj| (W^T: in_rel L_t; A_I: the softmax bound),
//   sum_j |B_ij - b_j| <= sum_t |c~_it| ((1 + in_rel) e_t + (in_rel + gamma_k) L_t),
// from |c_it| <= (1 + in_rel)|c~_it| and the k-term dot products' gamma_k.
// Then |r_i - R~| <= gamma_{N+2} R~ + errA + errB for R~ = fl(sum_j |a_j - b_j|).
#include "combination.hpp"

#include <cmath>

namespace rankcert::cert {

CombinationRows::CombinationRows(const Instance& I, const Matrix& coef, std::size_t k, const Matrix* w,
                                 const std::vector<std::size_t>* rows)
    : I_(I), coef_(coef), k_(k), w_(w), rows_(rows) {}

void CombinationRows::prepare(slong prec) {
    const std::size_t N = I_.N;
    enc_ = std::make_unique<RowEncloser>(I_, prec);
    enclose_matrix(coef_, prec, c_);
    basis_ = BallVec(k_ * N);
    for (std::size_t t = 0; t < k_; ++t) {
        if (w_)
            for (std::size_t j = 0; j < N; ++j) arb_set_fmpq(basis_[t * N + j], (*w_)(j, t).get(), prec);
        else
            enc_->row((*rows_)[t], basis_.data() + t * N);
    }
    prec_ = prec;
}

void CombinationRows::eval(std::size_t i, arb_ptr out) const {
    const std::size_t N = I_.N;
    BallVec a(N);
    enc_->row(i, a.data());
    Ball t;
    arb_zero(out);
    for (std::size_t j = 0; j < N; ++j) {
        // t = A_ij - <c_i, Beta_:j>
        arb_dot(t.get(), a[j], 1, c_.data() + i * k_, 1, basis_.data() + j, static_cast<slong>(N), static_cast<slong>(k_), prec_);
        arb_abs(t.get(), t.get());
        arb_add(out, out, t.get(), prec_);
    }
}

void CombinationRows::exact(std::size_t i, std::vector<Rat>& out) const {
    if (I_.is_softmax()) {  // k = 0: ||A_i||_1 = 1
        out[0] = Rat(1);
        return;
    }
    Rat acc, b;
    for (std::size_t j = 0; j < I_.N; ++j) {
        fmpq_zero(b.get());
        for (std::size_t t = 0; t < k_; ++t) fmpq_addmul(b.get(), coef_(i, t).get(), basis_exact(t, j).get());
        acc = acc + (I_.a(i, j) - b).abs();
    }
    out[0] = acc;
}

bool CombinationRows::fast_prepare() {
    if (!I_.is_softmax()) return false;
    const std::size_t N = I_.N;
    soft_ = std::make_unique<fast::SoftmaxRows>(I_);
    fc_ = std::make_unique<fast::Dense>(coef_);
    if (!soft_->ok() || !fc_->ok || (k_ && fc_->cols != k_)) return false;
    fbasis_.assign(k_ * N, 0);
    weight_.assign(k_, 0);
    const double g = fast::in_rel + fast::gamma(k_);
    for (std::size_t t = 0; t < k_; ++t) {
        double* row = fbasis_.data() + t * N;
        double e = 0, L = 0;
        if (w_) {
            for (std::size_t j = 0; j < N; ++j)
                if (!fast::to_double((*w_)(j, t), row[j])) return false;
        } else if (!soft_->row((*rows_)[t], row, e)) {
            return false;
        }
        for (std::size_t j = 0; j < N; ++j) L += std::fabs(row[j]);
        L *= fast::inflate;
        if (w_) e = fast::in_rel * L;
        weight_[t] = ((1 + fast::in_rel) * e + g * L) * fast::inflate;
    }
    return true;
}

bool CombinationRows::fast(std::size_t i, double* lo, double* hi) const {
    const std::size_t N = I_.N;
    thread_local std::vector<double> a, b;
    a.resize(N);
    b.resize(N);
    double errA = 0;
    if (!soft_->row(i, a.data(), errA)) return false;
    const double* ci = fc_->v.data() + i * k_;
    fast::axpy_rows(ci, fbasis_.data(), k_, N, b.data());
    double R = 0, errB = 0;
    for (std::size_t j = 0; j < N; ++j) R += std::fabs(a[j] - b[j]);
    for (std::size_t t = 0; t < k_; ++t) errB += std::fabs(ci[t]) * weight_[t];
    const double rad = (fast::gamma(N + 2) * R + errA + errB * fast::inflate) * fast::inflate + fast::tiny;
    lo[0] = fast::down(R, rad);
    hi[0] = fast::up(R, rad);
    return std::isfinite(hi[0]);
}

}  // namespace rankcert::cert
