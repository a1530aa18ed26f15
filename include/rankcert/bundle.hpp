// The certificate bundle `rankcert/1` (FORMAT.md) as parsed, exact data.
//
// Parsing validates everything that does not need arithmetic on A: shapes
// agree, indices are in range and distinct, ranks agree with the data, every
// row keeps an allowed entry.  What remains for the checker is inequalities.
#pragma once

#include "rankcert/array.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace rankcert {

enum class InstanceKind { qk, logits, matrix };
enum class MaskKind { none, causal, explicit_mask };

struct Instance {
    InstanceKind kind = InstanceKind::matrix;
    std::size_t n = 0, N = 0;  // A is n x N

    // qk
    Matrix q, k;                 // n x d, N x d
    Number scale;                // rational or rsqrt(r)
    Rat temperature{1};
    std::vector<Rat> key_bias;   // empty or N
    MaskKind mask = MaskKind::none;
    BoolMatrix mask_matrix;      // n x N when explicit (true = allowed)

    // logits (neg_inf flags mark masked entries)
    Matrix logits;
    // matrix
    Matrix a;

    std::size_t d() const { return q.cols; }
    bool allowed(std::size_t i, std::size_t j) const;
    // A is the exact row softmax of its logits (qk, logits): rows are
    // probability vectors.  For `matrix`, A is the given rational matrix.
    bool is_softmax() const { return kind != InstanceKind::matrix; }
};

enum class CertKind { factor, row_interpolative, neumann, tail, trivial, profile, sandwich };
const char* to_string(CertKind k);

struct Certificate {
    CertKind kind = CertKind::trivial;
    bool upper = false;
    std::uint64_t rank = 0;
    Matrix u, w;                    // factor: n x k, N x k
    std::vector<std::size_t> rows;  // row_interpolative (k), neumann (m), tail (m)
    Matrix x;                       // row_interpolative: n x k
    SparseMatrix r;                 // neumann: N x m; tail: N x p
    std::uint64_t k = 0;            // tail
    Rat mu;                         // tail
    Matrix f;                       // tail: m x f

    // profile (an extension of rankcert/1; bound "profile", see docs/profile.md)
    struct Profile {
        std::size_t r = 0;
        Matrix x, y;                      // T = X Y^T (n x r, N x r)
        Matrix gauge;                     // G (r x r): kappa <= max|x_i G| max|y_j G^-T|
        std::vector<Rat> lambda, mu;      // probability vectors (n, N)
        Matrix zu, zv;                    // Z = zu zv^T
        Rat z_norm_sq;                    // claimed ||Z||_2^2 upper bound
        Rat q_lo, q_hi, tau_lo, tau_hi, kappa_lo, kappa_hi;
        std::optional<std::uint64_t> visible_dim;
        std::optional<std::pair<Rat, Rat>> tau_star;  // exact induced error max_i |A_i - A~_i|_1
        std::vector<Rat> eps;             // profile P reported at these eps (where tau < eps)
    } profile;
    Rat sandwich_tau;                 // sandwich: the bound t >= tau*(T); u, w factor A~ within eps - t
};

struct Bundle {
    std::string display;     // the path as the user named it
    std::string sha256;      // of the bundle file's bytes
    Instance instance;
    Rat eps;
    std::optional<std::uint64_t> claim_lower, claim_upper;
    std::vector<Certificate> certificates;
    json provenance;
    std::vector<Sidecar> sidecars;
};

// Parse and validate a bundle file.  Throws InputError.
Bundle load_bundle(const std::filesystem::path& path, const std::string& display);
// Parse from an already-read JSON document (dir: where sidecars live).
Bundle parse_bundle(const json& doc, const std::filesystem::path& dir, const std::string& display);

// For folder walks: the bundle, or nothing when the file is JSON whose
// top-level "format" is not "rankcert/1" (witnesses, summaries).  Unreadable
// or malformed JSON is an InputError, never silently skipped.
std::optional<Bundle> load_if_bundle(const std::filesystem::path& path, const std::string& display);

// Read and parse a JSON document (any format); optionally its sha256.
json read_document(const std::filesystem::path& path, const std::string& display, std::string* sha256 = nullptr);

// A human-readable account of what was parsed (for `rankcert show`).
std::string describe(const Bundle& b);

}  // namespace rankcert
