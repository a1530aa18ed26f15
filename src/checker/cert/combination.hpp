// Rows of an upper certificate B = C Beta, a combination of k basis rows:
// factor (C = U, Beta = W^T) and row_interpolative (C = X, Beta = A_I).
// Checked: every row's l1 error sum_j |A_ij - B_ij| <= eps (docs/theory.md,
// "Upper bounds"), on the fast tier, the ladder, and exactly for rational A.
// Internal to the checker; used by cert/factor.cpp and
// cert/row_interpolative.cpp.
#pragma once

#include "common.hpp"
#include "rankcert/fast.hpp"

#include <memory>

namespace rankcert::cert {

class CombinationRows : public rows::RowQuantity {
public:
    // Basis rows: W^T (w given N x k) when w is set, else the rows A_{rows[t]}.
    CombinationRows(const Instance& I, const Matrix& coef, std::size_t k, const Matrix* w,
                    const std::vector<std::size_t>* rows);
    std::size_t count() const override { return I_.n; }
    void prepare(slong prec) override;
    void eval(std::size_t i, arb_ptr out) const override;
    // Exact for rational A; and for k = 0 on softmax rows, whose error is
    // ||A_i||_1 = 1 exactly (rows are probability vectors).
    bool has_exact() const override { return !I_.is_softmax() || k_ == 0; }
    void exact(std::size_t i, std::vector<Rat>& out) const override;
    bool fast_prepare() override;
    bool fast(std::size_t i, double* lo, double* hi) const override;

private:
    const Rat& basis_exact(std::size_t t, std::size_t j) const { return w_ ? (*w_)(j, t) : I_.a((*rows_)[t], j); }
    const Instance& I_;
    const Matrix& coef_;
    const std::size_t k_;
    const Matrix* w_;
    const std::vector<std::size_t>* rows_;
    // the ladder
    std::unique_ptr<RowEncloser> enc_;
    BallVec c_, basis_;  // n x k, k x N
    slong prec_ = 64;
    // the fast tier
    std::unique_ptr<fast::SoftmaxRows> soft_;
    std::unique_ptr<fast::Dense> fc_;
    std::vector<double> fbasis_, weight_;  // k x N; per basis row t, (1 + in_rel) e_t + (in_rel + gamma_k) L_t
};

}  // namespace rankcert::cert
