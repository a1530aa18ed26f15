// Rows of a zonal certificate (docs/theory.md, "Upper bounds"): row i's
// error sum_j |A_ij - B_ij| with B_ij = exp(b_j + c) g(<q_i, k_j>) / Z_i and
// g = sum_k c_k T_k, on the Arb ladder and on the fast tier.  Internal to the
// checker; used by cert/zonal.cpp (and tests/test_fast.cpp).
#pragma once

#include "common.hpp"
#include "rankcert/fast.hpp"

#include <memory>

namespace rankcert::cert {

class ZonalRows : public rows::RowQuantity {
public:
    ZonalRows(const Instance& I, const ZonalCert& z) : I_(I), z_(z) {}
    std::size_t count() const override { return I_.n; }
    void prepare(slong prec) override;
    void eval(std::size_t i, arb_ptr out) const override;
    bool fast_prepare() override;
    bool fast(std::size_t i, double* lo, double* hi) const override;

private:
    const Instance& I_;
    const ZonalCert& z_;
    // the ladder
    BallVec q_, k_, eb_, cheb_;
    Ball sigma_, shift_;
    slong prec_ = 64;
    // the fast tier
    std::unique_ptr<fast::SoftmaxRows> soft_;
    std::vector<double> fq_, fk_, feb_, fc_;  // q~ (n x d), k~ (N x d), e^{b_j}~, c_k~
    double eta_b_ = 0;                        // |e^{b_j} - e^{b_j}~| <= eta_b e^{b_j}~
};

}  // namespace rankcert::cert
