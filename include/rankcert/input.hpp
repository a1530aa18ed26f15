// Reading untrusted input: JSON with exact numbers, and one-line errors.
//
// Every number in a bundle is exact (docs/format.md, "Numbers"): a JSON number is the decimal
// rational it spells, never a binary double.  The JSON reader therefore keeps
// the spelling of every non-integer JSON number (as a string in the DOM) and
// the number parser turns spellings into FLINT rationals.  Any malformed,
// inconsistent or oversized input raises InputError, whose message is one line
// naming the file and the field.
#pragma once

#include "rankcert/exact.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace rankcert {

using json = nlohmann::json;

// Documented input limits (docs/format.md, "Limits").
struct Limits {
    static constexpr std::uint64_t max_dim = 1u << 24;            // rows or columns of one array
    static constexpr std::uint64_t max_elements = 1ull << 27;     // entries of one array
    static constexpr std::uint64_t max_json_bytes = 1ull << 31;   // one bundle file
    static constexpr std::size_t max_number_chars = 4096;         // spelling of one number
    static constexpr long max_decimal_exponent = 4096;            // |e| in 1.5e-7
    static constexpr long max_binary_exponent = 16384;            // |p| in 0x1.8p-3
    static constexpr std::size_t max_tail_rows = 8192;            // m of a tail certificate
    static constexpr std::size_t max_nesting = 128;               // depth of JSON objects and arrays
    static constexpr std::uint64_t max_attention = 1ull << 34;    // n * N, the entries of A (work bound)
    static constexpr std::size_t max_message_chars = 300;         // one error line
};

// Where in the input a value sits: the file and a dotted field path.
struct Where {
    std::string file;
    std::string field;
    Where key(std::string_view k) const;
    Where index(std::size_t i) const;
};

class InputError : public std::runtime_error {
public:
    InputError(const Where& w, const std::string& what);
    explicit InputError(const std::string& line);
};

// Parse JSON text.  Non-integer numbers are stored as their spelling.
// (Files: read_document in rankcert/bundle.hpp.)
json parse_json_text(std::string_view text, const std::string& display_name);

// An exact number of the bundle format.
struct Number {
    enum class Kind { rational, rsqrt, neg_inf } kind = Kind::rational;
    Rat q;  // the rational, or n for rsqrt(n)
};

// A rational from a JSON number or a string (decimal, "p/q", hex float).
Rat parse_rational(const json& j, const Where& w);
// As parse_rational, additionally {"rsqrt": n} and/or "-inf" when allowed.
Number parse_number(const json& j, const Where& w, bool allow_rsqrt, bool allow_neg_inf);
// A rational from text alone (decimal, rational, hex float); throws InputError.
Rat parse_rational_text(std::string_view s, const Where& w);
// An integer in [0, bound) (bound = 0: any non-negative integer < 2^62).
std::uint64_t parse_index(const json& j, const Where& w, std::uint64_t bound = 0);

// Field access with errors naming the field.
const json& require(const json& obj, std::string_view key, const Where& w);
const json* optional(const json& obj, std::string_view key);
std::string require_string(const json& obj, std::string_view key, const Where& w);

}  // namespace rankcert
