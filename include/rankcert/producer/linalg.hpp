// Dense float decompositions for the producer (UNTRUSTED), through LAPACK.
//
// One place for the SVD: Eigen's BDCSVD/JacobiSVD templates cost 30 to 50 s
// of compile time in every file that instantiates them (issue 46), and
// LAPACK's dgesdd (OpenBLAS) is also the faster one at run time.
#pragma once

#include <Eigen/Core>

#include <cstddef>
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

}  // namespace rankcert::producer
