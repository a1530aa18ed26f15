// Exact number parsing and the JSON reader (see include/rankcert/input.hpp).
//
// Decimal "d.ddd e+-x" becomes (digits) * 10^(x - #fraction digits), a hex
// float "0xh.hhh p+-x" becomes (hexdigits) * 2^(x - 4 * #fraction digits): both
// exact integer arithmetic in FLINT, never through a binary double.
#include "rankcert/input.hpp"

#include <cctype>
#include <sstream>

namespace rankcert {

Where Where::key(std::string_view k) const {
    Where w = *this;
    if (!w.field.empty()) w.field += '.';
    w.field += k;
    return w;
}

Where Where::index(std::size_t i) const {
    Where w = *this;
    w.field += '[' + std::to_string(i) + ']';
    return w;
}

namespace {
// One printable line: control bytes (newline, ESC, ...) become '?', and a
// message that echoes a huge token is cut to Limits::max_message_chars.
std::string one_line(std::string s) {
    for (char& c : s)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    if (s.size() > Limits::max_message_chars) s = s.substr(0, Limits::max_message_chars) + "...";
    return s;
}
}  // namespace

InputError::InputError(const Where& w, const std::string& what)
    : std::runtime_error(one_line(w.file + ": " + (w.field.empty() ? std::string("(top level)") : w.field) + ": " + what)) {}

InputError::InputError(const std::string& line) : std::runtime_error(one_line(line)) {}

namespace {

// A SAX handler that builds the usual DOM but keeps the spelling of every
// non-integer number (nlohmann's parser hands it to us next to the double,
// which we discard).
class ExactSax {
public:
    explicit ExactSax(json& root) : dom_(root, true) {}
    bool null() { return dom_.null(); }
    bool boolean(bool v) { return dom_.boolean(v); }
    bool number_integer(json::number_integer_t v) { return dom_.number_integer(v); }
    bool number_unsigned(json::number_unsigned_t v) { return dom_.number_unsigned(v); }
    bool number_float(json::number_float_t, const json::string_t& s) {
        json::string_t copy = s;
        return dom_.string(copy);
    }
    bool string(json::string_t& s) { return dom_.string(s); }
    bool binary(json::binary_t& b) { return dom_.binary(b); }
    bool start_object(std::size_t n) { return deeper() && dom_.start_object(n); }
    bool key(json::string_t& k) { return dom_.key(k); }
    bool end_object() { --depth_; return dom_.end_object(); }
    bool start_array(std::size_t n) { return deeper() && dom_.start_array(n); }
    bool end_array() { --depth_; return dom_.end_array(); }
    bool parse_error(std::size_t pos, const std::string& tok, const nlohmann::detail::exception& ex) {
        (void)tok;
        std::string msg = ex.what();
        // nlohmann messages start with "[json.exception.parse_error.101] ".
        auto p = msg.find("] ");
        if (p != std::string::npos) msg = msg.substr(p + 2);
        throw InputError(name_ + ": malformed JSON near byte " + std::to_string(pos) + ": " + msg);
    }
    std::string name_;

private:
    // Nesting is bounded, so that no later recursive walk or copy of the
    // document can exhaust the stack.
    bool deeper() {
        if (++depth_ > Limits::max_nesting)
            throw InputError(name_ + ": JSON nested deeper than " + std::to_string(Limits::max_nesting) + " levels");
        return true;
    }
    std::size_t depth_ = 0;
    nlohmann::detail::json_sax_dom_parser<json> dom_;
};

bool all_digits(std::string_view s, bool hex) {
    if (s.empty()) return false;
    for (char c : s)
        if (!(hex ? std::isxdigit(static_cast<unsigned char>(c)) : std::isdigit(static_cast<unsigned char>(c))))
            return false;
    return true;
}

bool parse_long(std::string_view s, long& out, long bound) {
    bool neg = false;
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        s.remove_prefix(1);
    }
    if (!all_digits(s, false) || s.size() > 12) return false;
    long v = 0;
    for (char c : s) v = v * 10 + (c - '0');
    if (v > bound) return false;
    out = neg ? -v : v;
    return true;
}

void fmpz_from_digits(fmpz_t z, const std::string& digits, int base) {
    if (digits.empty()) {
        fmpz_zero(z);
        return;
    }
    fmpz_set_str(z, digits.c_str(), base);
}

}  // namespace

json parse_json_text(std::string_view text, const std::string& display_name) {
    json root;
    ExactSax sax(root);
    sax.name_ = display_name;
    json::sax_parse(text.begin(), text.end(), &sax);
    return root;
}

Rat parse_rational_text(std::string_view s0, const Where& w) {
    auto bad = [&](const std::string& why) -> InputError {
        std::string shown(s0.substr(0, 40));
        if (s0.size() > 40) shown += "...";
        return InputError(w, "not an exact number: \"" + shown + "\" (" + why + ")");
    };
    if (s0.size() > Limits::max_number_chars) throw bad("spelling too long");
    std::string_view s = s0;
    bool neg = false;
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        s.remove_prefix(1);
    }
    if (s.empty()) throw bad("empty");
    Rat out;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        // C99 hex float: 0x h* [. h*] [p [+-] d+]
        s.remove_prefix(2);
        auto ppos = s.find_first_of("pP");
        std::string_view mant = s.substr(0, ppos);
        long e = 0;
        if (ppos != std::string_view::npos) {
            if (!parse_long(s.substr(ppos + 1), e, Limits::max_binary_exponent)) throw bad("bad binary exponent");
        }
        auto dot = mant.find('.');
        std::string digits(mant.substr(0, dot));
        std::string frac;
        if (dot != std::string_view::npos) frac = std::string(mant.substr(dot + 1));
        if ((digits.empty() && frac.empty()) || (!digits.empty() && !all_digits(digits, true)) ||
            (!frac.empty() && !all_digits(frac, true)))
            throw bad("bad hex digits");
        std::string all = digits + frac;
        fmpz_t num;
        fmpz_init(num);
        fmpz_from_digits(num, all, 16);
        long shift = e - 4 * static_cast<long>(frac.size());
        fmpz_t den;
        fmpz_init_set_ui(den, 1);
        if (shift >= 0) fmpz_mul_2exp(num, num, static_cast<ulong>(shift));
        else fmpz_mul_2exp(den, den, static_cast<ulong>(-shift));
        fmpq_set_fmpz_frac(out.get(), num, den);
        fmpz_clear(den);
        fmpz_clear(num);
    } else if (auto slash = s.find('/'); slash != std::string_view::npos) {
        std::string p(s.substr(0, slash)), q(s.substr(slash + 1));
        if (!all_digits(p, false) || !all_digits(q, false)) throw bad("expected p/q with decimal integers");
        fmpz_t num, den;
        fmpz_init(num);
        fmpz_init(den);
        fmpz_from_digits(num, p, 10);
        fmpz_from_digits(den, q, 10);
        if (fmpz_is_zero(den)) {
            fmpz_clear(num);
            fmpz_clear(den);
            throw bad("zero denominator");
        }
        fmpq_set_fmpz_frac(out.get(), num, den);
        fmpz_clear(num);
        fmpz_clear(den);
    } else {
        // Decimal: d* [. d*] [e [+-] d+]
        auto epos = s.find_first_of("eE");
        std::string_view mant = s.substr(0, epos);
        long e = 0;
        if (epos != std::string_view::npos) {
            if (!parse_long(s.substr(epos + 1), e, Limits::max_decimal_exponent)) throw bad("bad decimal exponent");
        }
        auto dot = mant.find('.');
        std::string digits(mant.substr(0, dot));
        std::string frac;
        if (dot != std::string_view::npos) frac = std::string(mant.substr(dot + 1));
        if ((digits.empty() && frac.empty()) || (!digits.empty() && !all_digits(digits, false)) ||
            (!frac.empty() && !all_digits(frac, false)))
            throw bad("not a decimal, p/q or hex float");
        fmpz_t num, den, ten;
        fmpz_init(num);
        fmpz_init_set_ui(den, 1);
        fmpz_init_set_ui(ten, 10);
        fmpz_from_digits(num, digits + frac, 10);
        long shift = e - static_cast<long>(frac.size());
        fmpz_t pw;
        fmpz_init(pw);
        fmpz_pow_ui(pw, ten, static_cast<ulong>(shift >= 0 ? shift : -shift));
        if (shift >= 0) fmpz_mul(num, num, pw);
        else fmpz_set(den, pw);
        fmpq_set_fmpz_frac(out.get(), num, den);
        fmpz_clear(pw);
        fmpz_clear(ten);
        fmpz_clear(den);
        fmpz_clear(num);
    }
    if (neg) fmpq_neg(out.get(), out.get());
    return out;
}

Rat parse_rational(const json& j, const Where& w) {
    if (j.is_number_integer()) {
        Rat r;
        if (j.is_number_unsigned()) {
            fmpz_set_ui(fmpq_numref(r.get()), j.get<std::uint64_t>());
        } else {
            fmpz_set_si(fmpq_numref(r.get()), j.get<std::int64_t>());
        }
        return r;
    }
    if (j.is_string()) return parse_rational_text(j.get_ref<const std::string&>(), w);
    throw InputError(w, std::string("expected an exact number, found ") + j.type_name());
}

Number parse_number(const json& j, const Where& w, bool allow_rsqrt, bool allow_neg_inf) {
    Number n;
    if (j.is_object()) {
        if (!allow_rsqrt || j.size() != 1 || !j.contains("rsqrt"))
            throw InputError(w, allow_rsqrt ? "expected a number or {\"rsqrt\": n}" : "expected an exact number, found object");
        n.kind = Number::Kind::rsqrt;
        n.q = parse_rational(j.at("rsqrt"), w.key("rsqrt"));
        if (n.q.sign() <= 0) throw InputError(w.key("rsqrt"), "rsqrt needs a positive argument");
        return n;
    }
    if (j.is_string()) {
        const auto& s = j.get_ref<const std::string&>();
        if (s == "-inf") {
            if (!allow_neg_inf) throw InputError(w, "\"-inf\" is allowed only in logits");
            n.kind = Number::Kind::neg_inf;
            return n;
        }
        if (s == "inf" || s == "+inf" || s == "nan" || s == "NaN" || s == "Infinity" || s == "-Infinity")
            throw InputError(w, "non-finite number \"" + s + "\"");
    }
    n.q = parse_rational(j, w);
    return n;
}

std::uint64_t parse_index(const json& j, const Where& w, std::uint64_t bound) {
    if (!j.is_number_integer()) throw InputError(w, std::string("expected a non-negative integer, found ") + j.type_name());
    if (!j.is_number_unsigned() && j.get<std::int64_t>() < 0) throw InputError(w, "expected a non-negative integer");
    std::uint64_t v = j.get<std::uint64_t>();
    std::uint64_t lim = bound ? bound : (1ull << 62);
    if (v >= lim) throw InputError(w, "index " + std::to_string(v) + " out of range (must be < " + std::to_string(lim) + ")");
    return v;
}

const json& require(const json& obj, std::string_view key, const Where& w) {
    if (!obj.is_object()) throw InputError(w, std::string("expected an object, found ") + obj.type_name());
    auto it = obj.find(key);
    if (it == obj.end()) throw InputError(w.key(key), "missing");
    return *it;
}

const json* optional(const json& obj, std::string_view key) {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
}

std::string require_string(const json& obj, std::string_view key, const Where& w) {
    const json& v = require(obj, key, w);
    if (!v.is_string()) throw InputError(w.key(key), std::string("expected a string, found ") + v.type_name());
    return v.get<std::string>();
}

}  // namespace rankcert
