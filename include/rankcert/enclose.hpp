// Rigorous enclosures of the attention matrix, one row at a time.
//
// This is the checker's one arithmetic interface.  Everything it decides is
// computed from (a) rows of A enclosed by RowEncloser and (b) a handful of
// ball kernels below; all of them take a precision and return Arb balls that
// contain the exact real values.  A faster tier (e.g. verified double
// intervals) can be added beneath this interface without touching the
// certificate logic.
//
// Theorem relied on: Arb's operations (dot, exp, div, ...) return balls that
// contain the exact result for every input point of their argument balls
// (Johansson, "Arb: efficient arbitrary-precision midpoint-radius interval
// arithmetic", IEEE TC 2017).  The softmax is enclosed by evaluating
// exp(S_ij - c) / sum_l exp(S_il - c) in ball arithmetic for an exact dyadic
// shift c (any real c gives the same value), so every entry's ball contains
// A_ij; masked entries are exactly zero.
#pragma once

#include "rankcert/bundle.hpp"

#include <vector>

namespace rankcert {

// The precisions tried while a decision stays undecided.
struct PrecisionLadder {
    std::vector<slong> bits;
    // 64, 128, 256, ... up to max_bits (at least 64).
    static PrecisionLadder up_to(slong max_bits);
    static constexpr slong default_max_bits = 2048;
};

// Exact matrix -> balls (row-major) at precision prec.
void enclose_matrix(const Matrix& m, slong prec, BallVec& out);

// In place: logits (entries with allowed[j] != 0) -> row softmax; masked
// entries become exact zeros.  At least one entry must be allowed.
void enclose_softmax(arb_ptr row, const std::uint8_t* allowed, std::size_t N, slong prec);

// The logit coefficient temperature * scale of a qk instance (scale = q or
// 1/sqrt(q)), enclosed.
void enclose_logit_coefficient(const Instance& inst, slong prec, arb_ptr out);

// res = sum_j |a_j - b_j|
void enclose_l1_distance(arb_ptr res, arb_srcptr a, arb_srcptr b, std::size_t N, slong prec);

class RowEncloser {
public:
    RowEncloser(const Instance& inst, slong prec);
    slong prec() const { return prec_; }
    std::size_t cols() const { return inst_.N; }
    // Enclose the logits of row i (qk, logits kinds); masked entries are left
    // as zero and flagged in allowed[] (size N).
    void logits(std::size_t i, arb_ptr out, std::uint8_t* allowed) const;
    // Enclose row i of A into out[0..N).
    void row(std::size_t i, arb_ptr out) const;

private:
    const Instance& inst_;
    slong prec_;
    BallVec q_, k_, bias_;
    Ball coef_;  // temperature * scale
};

}  // namespace rankcert
