// The data of one certificate, one struct per kind (docs/format.md, "Top level, instance, certificates").
//
// A certificate is a bound (upper, lower or profile), the rank it proves and
// the data of its kind.  Parsing (src/checker/cert/<kind>.cpp) has already
// checked every shape and index, so a check only decides inequalities.
// Adding a kind: a struct here and in the variant, one unit under
// src/checker/cert/, one row in the registry (src/checker/cert/registry.cpp).
#pragma once

#include "rankcert/array.hpp"

#include <cstdint>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

namespace rankcert {

enum class Bound { upper, lower, profile };
const char* to_string(Bound b);

// B = U W^T (U n x k, W N x k).  docs/theory.md, "Upper bounds".
struct FactorCert {
    Matrix u, w;
};

// B = X A_I (X n x k, I = rows).  docs/theory.md, "Upper bounds".
struct RowInterpolativeCert {
    std::vector<std::size_t> rows;
    Matrix x;
};

// Right inverse R (N x m) of the rows A_I.  docs/theory.md, "Lower bounds".
struct NeumannCert {
    std::vector<std::size_t> rows;
    SparseMatrix r;
};

// Vertex preimages for blocks of the rows of P = Lambda A_I (Lambda m x p,
// absent = identity).  Block b of size s lists 2^(s-1) columns of v (N x V),
// one per sign vector with +1 at the block's first row.  Checked per row t:
// kappa_t + eps c ||Lambda_t||_1 < 1.  docs/theory.md, "Lower bounds".
struct BlockNeumannCert {
    std::vector<std::size_t> rows;                 // I, p distinct rows of A
    std::optional<Matrix> lambda;                  // m x p
    std::vector<std::vector<std::size_t>> blocks;  // a partition of 0..m-1, in the order of v's columns
    SparseMatrix v;                                // N x V, V = sum over blocks of 2^(size - 1)
};

// Kronecker instances (docs/theory.md, "Kronecker instances"): one factor
// B_k = U_k W_k^T per factor of A; B = B_1 (x) B_2 (x) ... has rank prod k_k.
struct KronFactorCert {
    std::vector<FactorCert> factors;
};

// One neumann certificate (rows I_k, R_k) per factor of A; together the rows
// I_1 x I_2 x ... and R = R_1 (x) R_2 (x) ..., rank prod m_k.
struct KronNeumannCert {
    std::vector<NeumannCert> factors;
};

// Frobenius tail: M = A_I R, mu I + F F^T - M M^T PD and
// ||M||_F^2 > k mu + ||F||_F^2 + m (eps rho)^2.  docs/theory.md, "Lower bounds".
struct TailCert {
    std::vector<std::size_t> rows;
    SparseMatrix r;  // N x p
    std::uint64_t k = 0;
    Rat mu;
    Matrix f;  // m x f
};

// Some row has l1 norm > eps, so r_eps(A) >= 1.
struct TrivialCert {};

// Certified enclosures of the interaction geometry of a retained T = X Y^T.
// docs/theory.md, "Extensions: profile and sandwich certificates".
struct ProfileCert {
    std::size_t r = 0;
    Matrix x, y;                      // T = X Y^T (n x r, N x r)
    Matrix gauge;                     // G (r x r): kappa <= max|x_i G| max|y_j G^-T|
    std::vector<Rat> lambda, mu;      // probability vectors (n, N)
    Matrix zu, zv;                    // Z = zu zv^T
    Rat z_norm_sq;                    // claimed ||Z||_2^2 upper bound
    Rat q_lo, q_hi, tau_lo, tau_hi, kappa_lo, kappa_hi;
    std::optional<std::uint64_t> visible_dim;
    std::optional<std::pair<Rat, Rat>> tau_star;  // exact induced error max_i |A_i - A~_i|_1
};

// A factor for the Gibbs matrix of T = X Y^T at eps - t, with t >= tau*(T).
// docs/theory.md, "Extensions: profile and sandwich certificates".
struct SandwichCert {
    std::size_t r = 0;
    Matrix x, y;   // T = X Y^T
    Rat tau_star;  // the bound t
    Matrix u, w;   // the factor of A~
};

// B_ij = exp(b_j + shift) g(<q_i, k_j>) / Z_i with g = sum_k c_k T_k (Chebyshev),
// for qk instances without a mask.  docs/theory.md, "Upper bounds".
struct ZonalCert {
    std::vector<Rat> cheb;   // c_0 .. c_p (trailing zeros allowed)
    Rat shift;
    std::size_t degree = 0;  // the index of the last non-zero c_k (0 when g = 0)
    bool sphere = false;     // every key, or every query, has |x|^2 = 1 exactly
    bool one_parity = false; // every non-zero c_k has the parity of degree
};

// Borsuk-Ulam certificate (docs/theory.md, "Lower bounds", borsuk): blocks,
// each a centrally symmetric simplicial polytope with labelled vertices and
// one witness per stored facet.  Proves rank sum_b dim_b.
struct BorsukBlock {
    std::size_t dim = 0;
    std::vector<std::vector<Rat>> vertices;          // V stored vertices u (dim coordinates); -u is implied
    std::vector<std::pair<std::size_t, int>> labels; // (row of A, sign +-1) of each stored vertex; -u: (row, -sign)
    std::vector<std::vector<std::size_t>> facets;    // dim indices each in [0, 2V): q >= V is -(vertex q - V)
};
struct BorsukCert {
    std::vector<BorsukBlock> blocks;
    SparseMatrix v;  // N x F, F = all blocks' stored facets in block order
};

// The order here is the order of CertKind and of the registry table.
using CertData = std::variant<FactorCert, RowInterpolativeCert, NeumannCert, TailCert, TrivialCert, ProfileCert,
                              SandwichCert, BlockNeumannCert, KronFactorCert, KronNeumannCert, ZonalCert, BorsukCert>;

enum class CertKind {
    factor,
    row_interpolative,
    neumann,
    tail,
    trivial,
    profile,
    sandwich,
    block_neumann,
    kron_factor,
    kron_neumann,
    zonal,
    borsuk
};
// Kinds that apply to kronecker instances (and only to them).
inline bool is_kron_kind(CertKind k) { return k == CertKind::kron_factor || k == CertKind::kron_neumann; }
const char* to_string(CertKind k);

struct Certificate {
    Bound bound = Bound::lower;
    std::uint64_t rank = 0;  // the rank proved (for profile: r)
    CertData data;

    CertKind kind() const { return static_cast<CertKind>(data.index()); }
    bool upper() const { return bound == Bound::upper; }
    template <class T>
    const T& as() const { return std::get<T>(data); }
};

}  // namespace rankcert
