// Dense float decompositions through LAPACK (UNTRUSTED); see linalg.hpp.
#include "rankcert/producer/linalg.hpp"

#include <lapacke.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

extern "C" void openblas_set_num_threads(int num_threads);
extern "C" int openblas_get_num_threads(void);

namespace rankcert::producer {

Eigen::MatrixXd rows_of(const Eigen::MatrixXd& A, const std::vector<std::size_t>& I) {
    Eigen::MatrixXd AI(static_cast<Eigen::Index>(I.size()), A.cols());
    for (std::size_t t = 0; t < I.size(); ++t) AI.row(static_cast<Eigen::Index>(t)) = A.row(static_cast<Eigen::Index>(I[t]));
    return AI;
}

ThinSvd thin_svd(const Eigen::MatrixXd& A, bool want_u, bool want_v) {
    const auto n = A.rows(), N = A.cols(), r = std::min(n, N);
    ThinSvd out;
    out.s = Eigen::VectorXd::Zero(r);
    if (r == 0) {
        if (want_u) out.U = Eigen::MatrixXd::Zero(n, 0);
        if (want_v) out.V = Eigen::MatrixXd::Zero(N, 0);
        return out;
    }
    if (!A.allFinite()) throw std::runtime_error("thin_svd: the matrix holds a NaN or an infinity");
    // Both vectors are computed (jobz 'S'); 'N' would skip them, but the
    // callers that want neither are rare and small.
    const bool vectors = want_u || want_v;
    Eigen::MatrixXd U = Eigen::MatrixXd::Zero(vectors ? n : 1, vectors ? r : 1),
                    Vt = Eigen::MatrixXd::Zero(vectors ? r : 1, vectors ? N : 1);
    const auto ln = static_cast<lapack_int>(n), lN = static_cast<lapack_int>(N), lr = static_cast<lapack_int>(r);
    Eigen::MatrixXd work = A;
    lapack_int info = LAPACKE_dgesdd(LAPACK_COL_MAJOR, vectors ? 'S' : 'N', ln, lN, work.data(), ln, out.s.data(), U.data(),
                                     vectors ? ln : 1, Vt.data(), vectors ? lr : 1);
    if (info != 0) {  // divide and conquer did not converge: QR iteration
        work = A;
        Eigen::VectorXd superb(std::max<Eigen::Index>(r - 1, 1));
        info = LAPACKE_dgesvd(LAPACK_COL_MAJOR, vectors ? 'S' : 'N', vectors ? 'S' : 'N', ln, lN, work.data(), ln,
                              out.s.data(), U.data(), vectors ? ln : 1, Vt.data(), vectors ? lr : 1, superb.data());
        if (info != 0) throw std::runtime_error("thin_svd: LAPACK dgesdd and dgesvd did not converge (info " + std::to_string(info) + ")");
    }
    if (want_u) out.U = std::move(U);
    if (want_v) out.V = Vt.transpose();
    return out;
}

SymEig sym_eig(const Eigen::MatrixXd& S) {
    if (S.rows() != S.cols()) throw std::runtime_error("sym_eig: the matrix is not square");
    if (!S.allFinite()) throw std::runtime_error("sym_eig: the matrix holds a NaN or an infinity");
    SymEig out;
    const auto n = S.rows();
    out.vectors = S;
    out.values = Eigen::VectorXd::Zero(n);
    if (n == 0) return out;
    const lapack_int info = LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'L', static_cast<lapack_int>(n), out.vectors.data(),
                                           static_cast<lapack_int>(n), out.values.data());
    if (info != 0) throw std::runtime_error("sym_eig: LAPACK dsyevd did not converge (info " + std::to_string(info) + ")");
    return out;
}

BlasOnCaller::BlasOnCaller() {
    if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr) return;
    before_ = openblas_get_num_threads();
    openblas_set_num_threads(1);
}

BlasOnCaller::~BlasOnCaller() {
    if (before_ > 0) openblas_set_num_threads(before_);
}

unsigned worker_count(unsigned threads) {
    return threads ? threads : std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
}

void parallel_each(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& fn) {
    const auto workers = static_cast<unsigned>(std::min<std::size_t>(worker_count(threads), count));
    if (workers <= 1) {
        for (std::size_t k = 0; k < count; ++k) fn(k);
        return;
    }
    std::atomic<std::size_t> next{0};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto work = [&] {
        for (std::size_t k; (k = next.fetch_add(1)) < count;) {
            try {
                fn(k);
            } catch (...) {
                const std::lock_guard<std::mutex> lock(error_mutex);
                if (!error) error = std::current_exception();
                next = count;  // the others stop after their current call
            }
        }
    };
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < workers; ++w) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    if (error) std::rethrow_exception(error);
}

}  // namespace rankcert::producer
