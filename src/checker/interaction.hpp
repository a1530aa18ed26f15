// Rows of the residual C - T and of the Gibbs matrix of T = X Y^T, enclosed
// in balls (docs/theory.md, "Extensions: profile and sandwich
// certificates").  Internal to the checker; shared by the profile and
// sandwich units.
//
// For an unmasked instance with logits S (qk: S = c Q K^T + bias), the double
// centring C = P_n S P_N removes the row and key terms, which do not change
// the softmax; for a matrix instance C = P_n (log A) P_N.  The Gibbs row of T
// is A~_i = softmax(log A_i - (C - T)_i): the same key weights as A,
// potentials T.
#pragma once

#include "rankcert/enclose.hpp"

#include <vector>

namespace rankcert {

// Exact products: A B for A (a x b), B (b x c), and the transpose of A (a x b);
// row-major.
std::vector<Rat> rat_mul(const std::vector<Rat>& A, const std::vector<Rat>& B, std::size_t a, std::size_t b, std::size_t c);
std::vector<Rat> rat_transpose(const std::vector<Rat>& A, std::size_t a, std::size_t b);

// Exact C = P_n S P_N of a logits matrix (row-major n x N).
std::vector<Rat> centred_logits(const Matrix& S);

class InteractionRows {
public:
    // Cexact: centred_logits(S) for a logits instance, else unused.
    InteractionRows(const Instance& I, const Matrix& X, const Matrix& Y, std::size_t r, slong prec,
                    const std::vector<Rat>& Cexact);
    // out[j] = (C - T)_ij
    void residual(std::size_t i, arb_ptr out) const;
    // A_i and the Gibbs row A~_i of T, from the residual row R.
    void gibbs(std::size_t i, arb_srcptr R, arb_ptr A, arb_ptr At) const;

private:
    const Instance& I_;
    std::size_t r_;
    slong prec_;
    const std::vector<Rat>& Cexact_;
    RowEncloser enc_;
    BallVec X_, Y_, Qc_, Kc_, Lg_, LogA_;
    Ball coef_;
};

}  // namespace rankcert
