// The interaction C, the residual C - T and Gibbs rows (see interaction.hpp),
// and the exact visible dimension (rankcert/profile.hpp).
//
// Theorem relied on: rank((P_n Q)(P_N K)^T) = rank(Q'^T Q' K'^T K') for the
// centred Q' = P_n Q, K' = P_N K (rank(A B^T) = rank(A^T A B^T B) over the
// rationals); the scale does not change the rank.
#include "interaction.hpp"

#include "rankcert/profile.hpp"

#include <flint/fmpq_mat.h>

namespace rankcert {

namespace {

// Subtract column means exactly.
std::vector<Rat> centred(const Matrix& m) {
    std::vector<Rat> out(m.v);
    for (std::size_t c = 0; c < m.cols; ++c) {
        Rat mean;
        for (std::size_t i = 0; i < m.rows; ++i) mean = mean + m(i, c);
        mean = mean / Rat(static_cast<long>(m.rows));
        for (std::size_t i = 0; i < m.rows; ++i) out[i * m.cols + c] = out[i * m.cols + c] - mean;
    }
    return out;
}

long rank_of(const std::vector<Rat>& m, std::size_t rows, std::size_t cols) {
    fmpq_mat_t a, b;
    fmpq_mat_init(a, static_cast<slong>(rows), static_cast<slong>(cols));
    fmpq_mat_init(b, static_cast<slong>(rows), static_cast<slong>(cols));
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j)
            fmpq_set(fmpq_mat_entry(a, static_cast<slong>(i), static_cast<slong>(j)), m[i * cols + j].get());
    const long r = fmpq_mat_rref(b, a);
    fmpq_mat_clear(b);
    fmpq_mat_clear(a);
    return r;
}

}  // namespace

std::vector<Rat> rat_mul(const std::vector<Rat>& A, const std::vector<Rat>& B, std::size_t a, std::size_t b, std::size_t c) {
    std::vector<Rat> out(a * c);
    for (std::size_t i = 0; i < a; ++i)
        for (std::size_t k = 0; k < b; ++k) {
            if (A[i * b + k].is_zero()) continue;
            for (std::size_t j = 0; j < c; ++j) fmpq_addmul(out[i * c + j].get(), A[i * b + k].get(), B[k * c + j].get());
        }
    return out;
}

std::vector<Rat> rat_transpose(const std::vector<Rat>& A, std::size_t a, std::size_t b) {
    std::vector<Rat> out(a * b);
    for (std::size_t i = 0; i < a; ++i)
        for (std::size_t j = 0; j < b; ++j) out[j * a + i] = A[i * b + j];
    return out;
}

std::vector<Rat> centred_logits(const Matrix& S) {
    const std::size_t n = S.rows, N = S.cols;
    std::vector<Rat> row(n), col(N);
    Rat all;
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < N; ++j) {
            row[i] = row[i] + S(i, j);
            col[j] = col[j] + S(i, j);
        }
    for (std::size_t i = 0; i < n; ++i) all = all + row[i];
    for (auto& x : row) x = x / Rat(static_cast<long>(N));
    for (auto& x : col) x = x / Rat(static_cast<long>(n));
    all = all / Rat(static_cast<long>(n * N));
    std::vector<Rat> C(n * N);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < N; ++j) C[i * N + j] = S(i, j) - row[i] - col[j] + all;
    return C;
}

long exact_visible_dimension(const Instance& I) {
    if (I.kind == InstanceKind::qk) {
        const std::size_t d = I.d();
        const auto Qc = centred(I.q), Kc = centred(I.k);
        const auto G1 = rat_mul(rat_transpose(Qc, I.n, d), Qc, d, I.n, d);
        const auto G2 = rat_mul(rat_transpose(Kc, I.N, d), Kc, d, I.N, d);
        return rank_of(rat_mul(G1, G2, d, d, d), d, d);
    }
    if (I.kind == InstanceKind::logits && I.n * I.N <= 65536) return rank_of(centred_logits(I.logits), I.n, I.N);
    return -1;
}

InteractionRows::InteractionRows(const Instance& I, const Matrix& X, const Matrix& Y, std::size_t r, slong prec,
                                 const std::vector<Rat>& Cexact)
    : I_(I), r_(r), prec_(prec), Cexact_(Cexact), enc_(I, prec) {
    const std::size_t n = I.n, N = I.N;
    enclose_matrix(X, prec, X_);
    enclose_matrix(Y, prec, Y_);
    if (I.kind == InstanceKind::qk) {
        Matrix qm = I.q, km = I.k;
        qm.v = centred(I.q);
        km.v = centred(I.k);
        enclose_matrix(qm, prec, Qc_);
        enclose_matrix(km, prec, Kc_);
        enclose_logit_coefficient(I, prec, coef_.get());
    } else if (I.kind == InstanceKind::matrix) {
        // log A and its double centring, in balls.
        Lg_ = BallVec(n * N);
        LogA_ = BallVec(n * N);
        for (std::size_t a = 0; a < n * N; ++a) {
            arb_set_fmpq(LogA_[a], I.a.v[a].get(), prec);
            arb_log(LogA_[a], LogA_[a], prec);
            arb_set(Lg_[a], LogA_[a]);
        }
        BallVec rm(n), cm(N);
        Ball all;
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < N; ++j) {
                arb_add(rm[i], rm[i], Lg_[i * N + j], prec);
                arb_add(cm[j], cm[j], Lg_[i * N + j], prec);
            }
        for (std::size_t i = 0; i < n; ++i) arb_add(all.get(), all.get(), rm[i], prec);
        for (std::size_t i = 0; i < n; ++i) arb_div_ui(rm[i], rm[i], N, prec);
        for (std::size_t j = 0; j < N; ++j) arb_div_ui(cm[j], cm[j], n, prec);
        arb_div_ui(all.get(), all.get(), n * N, prec);
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < N; ++j) {
                arb_sub(Lg_[i * N + j], Lg_[i * N + j], rm[i], prec);
                arb_sub(Lg_[i * N + j], Lg_[i * N + j], cm[j], prec);
                arb_add(Lg_[i * N + j], Lg_[i * N + j], all.get(), prec);
            }
    }
}

void InteractionRows::residual(std::size_t i, arb_ptr out) const {
    const std::size_t N = I_.N, d = I_.kind == InstanceKind::qk ? I_.d() : 0;
    for (std::size_t j = 0; j < N; ++j) {
        if (I_.kind == InstanceKind::qk) {
            arb_dot(out + j, nullptr, 0, Qc_[i * d], 1, Kc_[j * d], 1, static_cast<slong>(d), prec_);
            arb_mul(out + j, out + j, coef_.get(), prec_);
        } else if (I_.kind == InstanceKind::logits) {
            arb_set_fmpq(out + j, Cexact_[i * N + j].get(), prec_);
        } else {
            arb_set(out + j, Lg_[i * N + j]);
        }
        // out_j - <x_i, y_j>
        arb_dot(out + j, out + j, 1, X_[i * r_], 1, Y_[j * r_], 1, static_cast<slong>(r_), prec_);
    }
}

void InteractionRows::gibbs(std::size_t i, arb_srcptr R, arb_ptr A, arb_ptr At) const {
    const std::size_t N = I_.N;
    std::vector<std::uint8_t> allowed(N, 1);
    if (I_.kind == InstanceKind::matrix)
        for (std::size_t j = 0; j < N; ++j) arb_set(At + j, LogA_[i * N + j]);
    else
        enc_.logits(i, At, allowed.data());
    for (std::size_t j = 0; j < N; ++j) {
        if (I_.kind == InstanceKind::matrix) arb_set_fmpq(A + j, I_.a(i, j).get(), prec_);  // rows as given
        else arb_set(A + j, At + j);
        arb_sub(At + j, At + j, R + j, prec_);
    }
    if (I_.kind != InstanceKind::matrix) enclose_softmax(A, allowed.data(), N, prec_);
    enclose_softmax(At, allowed.data(), N, prec_);
}

}  // namespace rankcert
