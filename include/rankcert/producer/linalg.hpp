// Dense float decompositions for the producer (UNTRUSTED), through LAPACK.
//
// One place for the SVD: Eigen's BDCSVD/JacobiSVD templates cost 30 to 50 s
// of compile time in every file that instantiates them (issue 46), and
// LAPACK's dgesdd (OpenBLAS) is also the faster one at run time.
#pragma once

#include <Eigen/Core>

#include <cstddef>
#include <functional>
#include <vector>

namespace rankcert::producer {

// The rows I of A, in the order given.
Eigen::MatrixXd rows_of(const Eigen::MatrixXd& A, const std::vector<std::size_t>& I);

// A = U diag(s) V^T with s descending, thin: U is n x r, V is N x r,
// r = min(n, N).  U and V are left empty when not asked for.
struct ThinSvd {
    Eigen::MatrixXd U;
    Eigen::VectorXd s;
    Eigen::MatrixXd V;
};

// LAPACK's divide-and-conquer dgesdd; where it does not converge, dgesvd
// (QR iteration).  Throws std::runtime_error when neither converges or the
// matrix holds a NaN or infinity.
ThinSvd thin_svd(const Eigen::MatrixXd& A, bool want_u = true, bool want_v = true);

// S = V diag(w) V^T for a symmetric S (its lower triangle is read), w
// ascending, V orthogonal: LAPACK's dsyevd.  Throws std::runtime_error when
// it does not converge or S holds a NaN or infinity.
struct SymEig {
    Eigen::VectorXd values;
    Eigen::MatrixXd vectors;
};
SymEig sym_eig(const Eigen::MatrixXd& S);

// While one lives, OpenBLAS runs on the calling thread only (unless
// OPENBLAS_NUM_THREADS is set); the count before is restored after.  Its own
// threads gain nothing on the row search's products (40 to 200 rows by 197
// to 512 keys) and spin in sched_yield while they wait: a 40 s `--focus
// lower` run on a 197-token image head spent 29.5 s of system time on the
// second core with them and made 1,990 PDHG runs, 2,157 without.  The
// search uses that core itself (parallel_each).  The factor search's
// larger products keep them: full512 L4 H0, `--focus upper`, 30 s, U 183
// with two BLAS threads and 185 with one.
class BlasOnCaller {
public:
    BlasOnCaller();
    ~BlasOnCaller();
    BlasOnCaller(const BlasOnCaller&) = delete;
    BlasOnCaller& operator=(const BlasOnCaller&) = delete;

private:
    int before_ = 0;
};

// Workers for `threads` (0: one per core, at most 8).
unsigned worker_count(unsigned threads);

// fn(k) for every k in [0, count), on min(worker_count(threads), count)
// threads; the first exception a call throws is rethrown here once all
// have finished.  fn must not call GLPK (its environment is per thread and
// would not be freed) and must only write what belongs to its own k.
void parallel_each(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& fn);

}  // namespace rankcert::producer
