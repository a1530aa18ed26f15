// Exact arrays from inline JSON, .npy, safetensors and sparse COO.
//
// Every element becomes the exact rational it encodes: a binary16/bfloat16/
// binary32/binary64 value is the dyadic rational of its bits (decoded from the
// bit pattern, never through arithmetic), a JSON number or string is parsed by
// parse_number.  Sidecar files are confined to the bundle's folder and must
// match their declared sha256.
#pragma once

#include "rankcert/input.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rankcert {

// A dense exact matrix, row-major.  A vector is stored as rows x 1 and
// remembers that its shape had one entry.
struct Matrix {
    std::size_t rows = 0, cols = 0;
    bool is_vector = false;
    std::vector<Rat> v;
    std::vector<std::uint8_t> neg_inf;  // empty, or rows*cols flags (logits only)

    const Rat& operator()(std::size_t i, std::size_t j) const { return v[i * cols + j]; }
    Rat& operator()(std::size_t i, std::size_t j) { return v[i * cols + j]; }
    bool is_neg_inf(std::size_t i, std::size_t j) const { return !neg_inf.empty() && neg_inf[i * cols + j]; }
    std::size_t size() const { return v.size(); }
};

// A sparse exact matrix (coordinate list, no repeated coordinates).
struct SparseMatrix {
    std::size_t rows = 0, cols = 0;
    struct Entry {
        std::uint32_t row, col;
        Rat val;
    };
    std::vector<Entry> entries;
};

struct BoolMatrix {
    std::size_t rows = 0, cols = 0;
    std::vector<std::uint8_t> v;
    bool operator()(std::size_t i, std::size_t j) const { return v[i * cols + j] != 0; }
};

struct Sidecar {
    std::string path;    // as written in the bundle
    std::string sha256;  // lower-case hex of the file bytes
};

// Loads the arrays of one bundle; remembers every sidecar it read.
class ArrayLoader {
public:
    ArrayLoader(std::filesystem::path bundle_dir, std::string bundle_name);

    Matrix load(const json& j, const Where& w, bool allow_neg_inf = false);
    SparseMatrix load_sparse(const json& j, const Where& w);
    BoolMatrix load_bool(const json& j, const Where& w);

    const std::vector<Sidecar>& sidecars() const { return sidecars_; }

private:
    struct File {
        std::string bytes;
        std::string sha256;
    };
    const File& sidecar(const json& j, const std::string& key, const Where& w);
    Matrix load_npy(const json& j, const Where& w, bool allow_neg_inf, bool as_bool);
    Matrix load_safetensors(const json& j, const Where& w, bool allow_neg_inf, bool as_bool);

    std::filesystem::path dir_;
    std::string name_;
    std::map<std::string, std::shared_ptr<File>> files_;
    std::vector<Sidecar> sidecars_;
};

// Decode one little-endian IEEE value to its exact rational.  Returns false
// for NaN and infinities (sets *neg_inf for -inf).
bool decode_f16(std::uint16_t bits, Rat& out, bool* neg_inf);
bool decode_bf16(std::uint16_t bits, Rat& out, bool* neg_inf);
bool decode_f32(std::uint32_t bits, Rat& out, bool* neg_inf);
bool decode_f64(std::uint64_t bits, Rat& out, bool* neg_inf);

// Parse an in-memory .npy file (exposed for tests and for the producer).
Matrix parse_npy(const std::string& bytes, const Where& w, bool allow_neg_inf = false, bool as_bool = false);

std::string sha256_hex(const std::string& bytes);

}  // namespace rankcert
