// rankcert-recheck: exact numbers and arrays, read by its own readers
// (JSON numbers, .npy, safetensors, COO and inline data; SHA-256 of every
// sidecar).  FORMAT.md, "Numbers" and "Arrays".
#pragma once

#include "interval.hpp"
#include "json.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace recheck {

// A number of the format: a rational, "-inf" (logits only), or {"rsqrt": q}.
struct Number {
    enum class Kind { rational, neg_inf, rsqrt } kind = Kind::rational;
    Q q;  // the value, or the radicand of rsqrt
};
Number read_number(const Json& j, const std::string& where, bool allow_neg_inf = false, bool allow_bool = false);
// A rational (no -inf, no rsqrt).
Q read_q(const Json& j, const std::string& where);

// A matrix (vectors: one column) with its exact entries and, for the binary64
// tier, an enclosure [lo, hi] of each entry (a point where it is a double).
struct Array {
    std::size_t rows = 0, cols = 0;
    bool vector = false;
    std::vector<Q> q;            // row-major; 0 where neg_inf
    std::vector<char> neg_inf;   // empty, or one flag per entry
    std::vector<double> lo, hi;  // enclosures of q
    std::vector<double> mid, rad;  // the same as midpoint +- radius (radius rounded up)
    bool points = true;          // every entry is a double (lo == hi, rad == 0)
    const Q& at(std::size_t i, std::size_t j) const { return q[i * cols + j]; }
    bool is_neg_inf(std::size_t i, std::size_t j) const { return !neg_inf.empty() && neg_inf[i * cols + j]; }
};

// Where a bundle's sidecars live, and the hashes every read is checked
// against.
struct Sidecars {
    std::filesystem::path folder;  // the bundle's folder
    std::string bundle;            // the bundle's path, for messages
    // Every sidecar read so far: path -> sha256 (compared with the witness).
    std::vector<std::pair<std::string, std::string>> seen;
};

// Reads one ARRAY of the format.  `logits` allows -inf entries; `mask`
// allows booleans in inline data; a shape other than want_rows x want_cols
// (SIZE_MAX: any) is an input error before any entry is stored.
Array read_array(const Json& j, Sidecars& sc, const std::string& where, bool logits = false, bool mask = false,
                 std::size_t want_rows = SIZE_MAX, std::size_t want_cols = SIZE_MAX);

// SHA-256 of bytes, lower-case hex.
std::string sha256_hex(const std::string& bytes);
// The whole file, or an InputError naming `where`.
std::string read_file(const std::filesystem::path& p, const std::string& where, std::size_t limit);

}  // namespace recheck
