// rankcert-recheck: a JSON reader of its own (no code shared with the
// checker, which reads JSON through nlohmann-json).  Numbers keep the text
// they were written with, so that "0.1" is read as the decimal 1/10 and never
// through a binary double (FORMAT.md, "Numbers").
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace recheck {

// Every malformed or inconsistent input: one line naming the file and the
// field, exit 3.
struct InputError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Json {
    enum class Type { null, boolean, number, string, array, object };
    Type type = Type::null;
    bool b = false;
    std::string text;                                   // number (as written) or string
    std::vector<Json> items;                            // array
    std::vector<std::pair<std::string, Json>> members;  // object, in file order

    bool is_number() const { return type == Type::number; }
    bool is_string() const { return type == Type::string; }
    bool is_array() const { return type == Type::array; }
    bool is_object() const { return type == Type::object; }
    // The member `key`, or nullptr.
    const Json* find(std::string_view key) const;
    // The member `key`; an InputError naming `where.key` when absent.
    const Json& at(std::string_view key, const std::string& where) const;
    // A non-negative integer that fits in 62 bits, or an InputError.
    std::size_t index(const std::string& where) const;
    const std::string& str(const std::string& where) const;
};

// Parses the whole text (RFC 8259, depth at most 256); an InputError names
// `where` and the byte offset.
Json parse_json(std::string_view text, const std::string& where);

}  // namespace recheck
