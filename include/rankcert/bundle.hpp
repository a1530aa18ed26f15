// The certificate bundle `rankcert/1` (docs/format.md) as parsed, exact data.
//
// Parsing validates everything that does not need arithmetic on A: shapes
// agree, indices are in range and distinct, ranks agree with the data, every
// row keeps an allowed entry.  What remains for the checker is inequalities.
#pragma once

#include "rankcert/array.hpp"
#include "rankcert/certificate.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace rankcert {

enum class InstanceKind { qk, logits, matrix, kronecker };
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
    // kronecker: A = factors[0] (x) factors[1] (x) ... (1 to 4 factors, none
    // itself a kronecker instance); n and N are the products.  A is never
    // formed: only the kron_* certificate kinds apply (docs/theory.md,
    // "Kronecker instances").
    std::vector<Instance> factors;

    std::size_t d() const { return q.cols; }
    bool allowed(std::size_t i, std::size_t j) const;
    // A is the exact row softmax of its logits (qk, logits): rows are
    // probability vectors.  For `matrix`, A is the given rational matrix.
    bool is_softmax() const;
    // Some entry is masked (a causal or explicit mask, or a -inf logit).
    bool has_mask() const;
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

// Read and parse a JSON document (any format); optionally its sha256.
json read_document(const std::filesystem::path& path, const std::string& display, std::string* sha256 = nullptr);

// A human-readable account of what was parsed (for `rankcert show`).
std::string describe(const Bundle& b);

}  // namespace rankcert
