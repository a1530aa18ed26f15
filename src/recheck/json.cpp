// rankcert-recheck: the JSON reader (see json.hpp).
#include "json.hpp"

#include <cstdint>

namespace recheck {

namespace {

struct Parser {
    std::string_view s;
    std::size_t p = 0;
    const std::string& where;

    [[noreturn]] void fail(const std::string& what) const {
        throw InputError(where + ": not valid JSON at byte " + std::to_string(p) + ": " + what);
    }
    void ws() {
        while (p < s.size() && (s[p] == ' ' || s[p] == '\t' || s[p] == '\n' || s[p] == '\r')) ++p;
    }
    bool eat(char c) {
        ws();
        if (p < s.size() && s[p] == c) {
            ++p;
            return true;
        }
        return false;
    }
    void expect(char c) {
        if (!eat(c)) fail(std::string("expected '") + c + "'");
    }
    void literal(std::string_view w) {
        if (s.substr(p, w.size()) != w) fail("unknown literal");
        p += w.size();
    }
    static void utf8(std::string& out, std::uint32_t cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }
    std::uint32_t hex4() {
        if (p + 4 > s.size()) fail("short \\u escape");
        std::uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
            const char c = s[p++];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= static_cast<std::uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f') v |= static_cast<std::uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v |= static_cast<std::uint32_t>(c - 'A' + 10);
            else fail("bad \\u escape");
        }
        return v;
    }
    std::string string() {
        // at the opening quote
        ++p;
        std::string out;
        while (true) {
            if (p >= s.size()) fail("unterminated string");
            const char c = s[p++];
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
            if (c != '\\') {
                out += c;
                continue;
            }
            if (p >= s.size()) fail("unterminated escape");
            const char e = s[p++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    std::uint32_t cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00) {
                        if (s.substr(p, 2) != "\\u") fail("lone surrogate");
                        p += 2;
                        const std::uint32_t lo = hex4();
                        if (lo < 0xDC00 || lo >= 0xE000) fail("bad surrogate pair");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else if (cp >= 0xDC00 && cp < 0xE000) {
                        fail("lone surrogate");
                    }
                    utf8(out, cp);
                    break;
                }
                default: fail("unknown escape");
            }
        }
    }
    std::string number() {
        const std::size_t b = p;
        if (p < s.size() && s[p] == '-') ++p;
        auto digits = [&] {
            const std::size_t d = p;
            while (p < s.size() && s[p] >= '0' && s[p] <= '9') ++p;
            if (p == d) fail("digits expected in a number");
        };
        if (p < s.size() && s[p] == '0') ++p;
        else digits();
        if (p < s.size() && s[p] == '.') {
            ++p;
            digits();
        }
        if (p < s.size() && (s[p] == 'e' || s[p] == 'E')) {
            ++p;
            if (p < s.size() && (s[p] == '+' || s[p] == '-')) ++p;
            digits();
        }
        return std::string(s.substr(b, p - b));
    }
    Json value(int depth) {
        if (depth > 256) fail("nested deeper than 256");
        ws();
        if (p >= s.size()) fail("unexpected end");
        Json v;
        const char c = s[p];
        if (c == '{') {
            ++p;
            v.type = Json::Type::object;
            if (eat('}')) return v;
            do {
                ws();
                if (p >= s.size() || s[p] != '"') fail("a member name expected");
                std::string key = string();
                expect(':');
                v.members.emplace_back(std::move(key), value(depth + 1));
            } while (eat(','));
            expect('}');
        } else if (c == '[') {
            ++p;
            v.type = Json::Type::array;
            if (eat(']')) return v;
            do v.items.push_back(value(depth + 1));
            while (eat(','));
            expect(']');
        } else if (c == '"') {
            v.type = Json::Type::string;
            v.text = string();
        } else if (c == 't') {
            literal("true");
            v.type = Json::Type::boolean;
            v.b = true;
        } else if (c == 'f') {
            literal("false");
            v.type = Json::Type::boolean;
        } else if (c == 'n') {
            literal("null");
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            v.type = Json::Type::number;
            v.text = number();
        } else {
            fail("unexpected character");
        }
        return v;
    }
};

}  // namespace

const Json* Json::find(std::string_view key) const {
    if (type != Type::object) return nullptr;
    // The last of repeated names wins, as in most readers.
    const Json* hit = nullptr;
    for (const auto& [k, v] : members)
        if (k == key) hit = &v;
    return hit;
}

const Json& Json::at(std::string_view key, const std::string& where) const {
    const Json* v = find(key);
    if (!v) throw InputError(where + "." + std::string(key) + ": missing");
    return *v;
}

std::size_t Json::index(const std::string& where) const {
    if (type != Type::number || text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
        throw InputError(where + ": not a non-negative integer");
    return static_cast<std::size_t>(std::stoull(text));
}

const std::string& Json::str(const std::string& where) const {
    if (type != Type::string) throw InputError(where + ": not a string");
    return text;
}

Json parse_json(std::string_view text, const std::string& where) {
    Parser ps{text, 0, where};
    Json v = ps.value(0);
    ps.ws();
    if (ps.p != text.size()) ps.fail("text after the value");
    return v;
}

}  // namespace recheck
