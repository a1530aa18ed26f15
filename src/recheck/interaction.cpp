// rankcert-recheck: the interaction (interaction.hpp).
#include "interaction.hpp"

namespace recheck {

std::vector<Q> centred(const Array& a) {
    std::vector<Q> out(a.q);
    for (std::size_t t = 0; t < a.cols; ++t) {
        Q m = 0;
        for (std::size_t i = 0; i < a.rows; ++i) m += a.at(i, t);
        m /= Q(a.rows);
        for (std::size_t i = 0; i < a.rows; ++i) out[i * a.cols + t] -= m;
    }
    return out;
}

Interaction::Interaction(const Instance& in, const Array& xa, const Array& ya, std::size_t rr) : inst(in), x(xa), y(ya), r(rr) {
    if (inst.kind == "qk") {
        qc = centred(inst.q);
        kc = centred(inst.k);
    } else if (inst.kind == "logits") {
        const std::size_t n = inst.n, N = inst.N;
        std::vector<Q> rm(n, Q(0)), cm(N, Q(0));
        Q al = 0;
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < N; ++j) {
                rm[i] += inst.s.at(i, j);
                cm[j] += inst.s.at(i, j);
            }
        for (auto& v : rm) v /= Q(N);
        for (auto& v : cm) v /= Q(n);
        for (const auto& v : rm) al += v;
        al /= Q(n);
        c.resize(n * N);
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < N; ++j) c[i * N + j] = inst.s.at(i, j) - rm[i] - cm[j] + al;
    }
}

namespace {

// log A double-centred, row i (matrix instances), at the current tier.
template <class I> std::vector<I> centred_log(const Instance& inst, std::size_t i) {
    const std::size_t n = inst.n, N = inst.N;
    std::vector<I> cm(N, from_double<I>(0)), row(N);
    I al = from_double<I>(0);
    for (std::size_t a = 0; a < n; ++a) {
        I rm = from_double<I>(0);
        for (std::size_t j = 0; j < N; ++j) {
            const I l = ilog(from_q<I>(inst.a.at(a, j)));
            cm[j] += l;
            rm += l;
            if (a == i) row[j] = l;
        }
        al += rm;
    }
    const I fn = from_q<I>(Q(n)), fN = from_q<I>(Q(N));
    I rmi = from_double<I>(0);
    for (const auto& v : row) rmi += v;
    rmi = rmi / fN;
    al = al / (fn * fN);
    for (std::size_t j = 0; j < N; ++j) row[j] = row[j] - rmi - cm[j] / fn + al;
    return row;
}

}  // namespace

template <class I> std::vector<I> Interaction::residual(std::size_t i) const {
    const std::size_t N = inst.N;
    std::vector<I> out(N);
    std::vector<I> lg;
    if (inst.kind == "matrix") lg = centred_log<I>(inst, i);
    const I coef = inst.kind == "qk" ? inst.coef<I>() : from_double<I>(0);
    for (std::size_t j = 0; j < N; ++j) {
        I cij;
        if (inst.kind == "qk") {
            Q dot = 0;
            for (std::size_t t = 0; t < inst.d; ++t) dot += qc[i * inst.d + t] * kc[j * inst.d + t];
            cij = coef * from_q<I>(dot);
        } else if (inst.kind == "logits") {
            cij = from_q<I>(c[i * N + j]);
        } else {
            cij = lg[j];
        }
        Q t = 0;
        for (std::size_t u = 0; u < r; ++u) t += x.q[i * r + u] * y.q[j * r + u];
        out[j] = cij - from_q<I>(t);
    }
    return out;
}
template std::vector<DI> Interaction::residual<DI>(std::size_t) const;
template std::vector<MI> Interaction::residual<MI>(std::size_t) const;

template <class I>
std::pair<std::vector<I>, std::vector<I>> Interaction::gibbs(std::size_t i, const std::vector<I>& R) const {
    const std::size_t N = inst.N;
    std::vector<I> A, shifted(N);
    std::vector<char> ok(N, 1);
    if (inst.kind == "matrix") {
        for (std::size_t j = 0; j < N; ++j) {
            A.push_back(from_q<I>(inst.a.at(i, j)));
            shifted[j] = ilog(A[j]) - R[j];
        }
    } else {
        const std::vector<I> lg = inst.logits<I>(i, ok);
        A = softmax(lg, ok);
        for (std::size_t j = 0; j < N; ++j) shifted[j] = ok[j] ? lg[j] - R[j] : from_double<I>(0);
    }
    return {A, softmax(shifted, ok)};
}
template std::pair<std::vector<DI>, std::vector<DI>> Interaction::gibbs<DI>(std::size_t, const std::vector<DI>&) const;
template std::pair<std::vector<MI>, std::vector<MI>> Interaction::gibbs<MI>(std::size_t, const std::vector<MI>&) const;

}  // namespace recheck
