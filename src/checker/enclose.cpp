// Ball enclosures of logits and of the row softmax (see enclose.hpp).
#include "rankcert/enclose.hpp"

#include <algorithm>
#include <vector>

namespace rankcert {

PrecisionLadder PrecisionLadder::up_to(slong max_bits) {
    PrecisionLadder l;
    slong p = 64;
    l.bits.push_back(p);
    while (p * 2 <= max_bits) {
        p *= 2;
        l.bits.push_back(p);
    }
    if (l.bits.back() < max_bits) l.bits.push_back(max_bits);
    return l;
}

void enclose_matrix(const Matrix& m, slong prec, BallVec& out) {
    out = BallVec(m.size());
    for (std::size_t s = 0; s < m.size(); ++s) arb_set_fmpq(out[s], m.v[s].get(), prec);
}

void enclose_softmax(arb_ptr row, const std::uint8_t* allowed, std::size_t N, slong prec) {
    // Shift by the midpoint of the largest allowed logit (exact dyadic): the
    // exponentials are then at most about 1, so nothing overflows.
    arf_t c;
    arf_init(c);
    bool have = false;
    for (std::size_t j = 0; j < N; ++j) {
        if (!allowed[j]) continue;
        if (!have || arf_cmp(arb_midref(row + j), c) > 0) arf_set(c, arb_midref(row + j));
        have = true;
    }
    arb_t sum;
    arb_init(sum);
    for (std::size_t j = 0; j < N; ++j) {
        if (!allowed[j]) continue;
        arb_sub_arf(row + j, row + j, c, prec);
        arb_exp(row + j, row + j, prec);
        arb_add(sum, sum, row + j, prec);
    }
    for (std::size_t j = 0; j < N; ++j) {
        if (allowed[j]) arb_div(row + j, row + j, sum, prec);
        else arb_zero(row + j);
    }
    arb_clear(sum);
    arf_clear(c);
}

void enclose_l1_distance(arb_ptr res, arb_srcptr a, arb_srcptr b, std::size_t N, slong prec) {
    arb_t t;
    arb_init(t);
    arb_zero(res);
    for (std::size_t j = 0; j < N; ++j) {
        arb_sub(t, a + j, b + j, prec);
        arb_abs(t, t);
        arb_add(res, res, t, prec);
    }
    arb_clear(t);
}

RowEncloser::RowEncloser(const Instance& inst, slong prec) : inst_(inst), prec_(prec) {
    if (inst.kind != InstanceKind::qk) return;
    enclose_matrix(inst.q, prec, q_);
    enclose_matrix(inst.k, prec, k_);
    if (!inst.key_bias.empty()) {
        bias_ = BallVec(inst.N);
        for (std::size_t j = 0; j < inst.N; ++j) arb_set_fmpq(bias_[j], inst.key_bias[j].get(), prec);
    }
    enclose_logit_coefficient(inst, prec, coef_.get());
}

void enclose_logit_coefficient(const Instance& inst, slong prec, arb_ptr out) {
    arb_set_fmpq(out, inst.scale.q.get(), prec);
    if (inst.scale.kind == Number::Kind::rsqrt) arb_rsqrt(out, out, prec);
    Ball t;
    arb_set_fmpq(t.get(), inst.temperature.get(), prec);
    arb_mul(out, out, t.get(), prec);
}

void RowEncloser::logits(std::size_t i, arb_ptr out, std::uint8_t* allowed) const {
    const std::size_t N = inst_.N;
    if (inst_.kind == InstanceKind::logits) {
        for (std::size_t j = 0; j < N; ++j) {
            allowed[j] = !inst_.logits.is_neg_inf(i, j);
            if (allowed[j]) arb_set_fmpq(out + j, inst_.logits(i, j).get(), prec_);
            else arb_zero(out + j);
        }
        return;
    }
    // qk: S_ij = coef * <q_i, k_j> + b_j
    const std::size_t d = inst_.d();
    arb_srcptr qi = q_.data() + i * d;
    for (std::size_t j = 0; j < N; ++j) {
        allowed[j] = inst_.allowed(i, j);
        if (!allowed[j]) {
            arb_zero(out + j);
            continue;
        }
        arb_dot(out + j, nullptr, 0, qi, 1, k_.data() + j * d, 1, static_cast<slong>(d), prec_);
        arb_mul(out + j, out + j, coef_.get(), prec_);
        if (bias_.size()) arb_add(out + j, out + j, bias_[j], prec_);
    }
}

void RowEncloser::row(std::size_t i, arb_ptr out) const {
    const std::size_t N = inst_.N;
    if (inst_.kind == InstanceKind::matrix) {
        for (std::size_t j = 0; j < N; ++j) arb_set_fmpq(out + j, inst_.a(i, j).get(), prec_);
        return;
    }
    std::vector<std::uint8_t> allowed(N);
    logits(i, out, allowed.data());
    enclose_softmax(out, allowed.data(), N, prec_);
}

}  // namespace rankcert
