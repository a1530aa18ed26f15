// rankcert-recheck: numbers and arrays (see input.hpp).  The limits are the
// documented ones of docs/format.md ("Limits"), written down again here.
#include "input.hpp"

#include <openssl/evp.h>

#include <cstring>
#include <fstream>
#include <set>

namespace recheck {

namespace {

constexpr std::size_t max_dim = 1u << 24;
constexpr std::size_t max_elements = 1ull << 27;
constexpr std::size_t max_number_chars = 4096;
constexpr long max_decimal_exponent = 4096;
constexpr long max_binary_exponent = 16384;
constexpr std::size_t max_sidecar_bytes = 1ull << 33;

[[noreturn]] void bad(const std::string& where, const std::string& what) { throw InputError(where + ": " + what); }

bool all_digits(const std::string& s, std::size_t b, std::size_t e, int base = 10) {
    if (b >= e) return false;
    for (std::size_t k = b; k < e; ++k) {
        const char c = s[k];
        const bool ok = base == 10 ? (c >= '0' && c <= '9') : std::isxdigit(static_cast<unsigned char>(c));
        if (!ok) return false;
    }
    return true;
}

long exponent(const std::string& s, long limit, const std::string& where) {
    std::size_t k = 0;
    bool neg = false;
    if (k < s.size() && (s[k] == '+' || s[k] == '-')) neg = s[k++] == '-';
    if (!all_digits(s, k, s.size()) || s.size() - k > 7) bad(where, "bad exponent in \"" + s.substr(0, 40) + "\"");
    const long e = std::stol(s.substr(k));
    if (e > limit) bad(where, "exponent beyond +-" + std::to_string(limit));
    return neg ? -e : e;
}

// Decimal digits as an integer (Boost reads a leading 0 as octal).
Z decimal_digits(const std::string& d) {
    const auto nz = d.find_first_not_of('0');
    return nz == std::string::npos ? Z(0) : Z(d.substr(nz));
}

// base^e for 0 <= e <= 16384: binary powering for 10, a shift for 2 (a
// loop of e multiplications made a file of many "1e4096" take minutes).
Q pow_int(long base, long e) {
    if (base == 2) return Q(Z(1) << static_cast<unsigned>(e));
    return Q(boost::multiprecision::pow(Z(base), static_cast<unsigned>(e)));
}

// [+-]digits[.digits][(e|E)[+-]digits], or with only a fraction part.
Q decimal(const std::string& s, const std::string& where) {
    std::size_t k = 0;
    bool neg = false;
    if (k < s.size() && (s[k] == '+' || s[k] == '-')) neg = s[k++] == '-';
    const std::size_t epos = s.find_first_of("eE", k);
    const std::string mant = s.substr(k, epos == std::string::npos ? std::string::npos : epos - k);
    long e = epos == std::string::npos ? 0 : exponent(s.substr(epos + 1), max_decimal_exponent, where);
    const std::size_t dot = mant.find('.');
    std::string digits = mant;
    if (dot != std::string::npos) {
        digits = mant.substr(0, dot) + mant.substr(dot + 1);
        e -= static_cast<long>(mant.size() - dot - 1);
        if (dot == 0 && mant.size() == 1) bad(where, "not a number: \"" + s.substr(0, 40) + "\"");
    }
    if (!all_digits(digits, 0, digits.size())) bad(where, "not a number: \"" + s.substr(0, 40) + "\"");
    Q v{decimal_digits(digits)};
    if (e > 0) v *= pow_int(10, e);
    else if (e < 0) v /= pow_int(10, -e);
    return neg ? Q(-v) : v;
}

// C99 hex float [+-]0x h[.h] p [+-]d (the exponent is required).
Q hexfloat(const std::string& s, const std::string& where) {
    std::size_t k = 0;
    bool neg = false;
    if (s[k] == '+' || s[k] == '-') neg = s[k++] == '-';
    k += 2;  // 0x
    const std::size_t ppos = s.find_first_of("pP", k);
    if (ppos == std::string::npos) bad(where, "hex float without a binary exponent: \"" + s.substr(0, 40) + "\"");
    std::string mant = s.substr(k, ppos - k);
    long e = exponent(s.substr(ppos + 1), max_binary_exponent, where);
    const std::size_t dot = mant.find('.');
    if (dot != std::string::npos) {
        e -= 4 * static_cast<long>(mant.size() - dot - 1);
        mant = mant.substr(0, dot) + mant.substr(dot + 1);
    }
    if (!all_digits(mant, 0, mant.size(), 16)) bad(where, "not a hex float: \"" + s.substr(0, 40) + "\"");
    Q v{Z("0x" + mant)};
    if (e > 0) v *= pow_int(2, e);
    else if (e < 0) v /= pow_int(2, -e);
    return neg ? Q(-v) : v;
}

Z integer(const std::string& s, const std::string& where) {
    std::size_t k = 0;
    if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
    if (!all_digits(s, k, s.size())) bad(where, "not an integer: \"" + s.substr(0, 40) + "\"");
    const Z v = decimal_digits(s.substr(k));
    return s[0] == '-' ? Z(-v) : v;
}

}  // namespace

Number read_number(const Json& j, const std::string& where, bool allow_neg_inf, bool allow_bool) {
    Number n;
    if (j.type == Json::Type::boolean) {
        if (!allow_bool) bad(where, "a boolean is not a number");
        n.q = j.b ? 1 : 0;
        return n;
    }
    if (j.is_object()) {
        const Json* r = j.find("rsqrt");
        if (!r || j.members.size() != 1) bad(where, "an object number must be {\"rsqrt\": q}");
        n.kind = Number::Kind::rsqrt;
        n.q = read_q(*r, where + ".rsqrt");
        if (n.q <= 0) bad(where + ".rsqrt", "must be positive");
        return n;
    }
    if (!j.is_number() && !j.is_string()) bad(where, "not a number");
    std::string s = j.text;
    if (s.size() > max_number_chars) bad(where, "a number longer than 4096 characters");
    // Surrounding blanks in strings are tolerated, as in the checker.
    const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    s = b == std::string::npos ? "" : s.substr(b, e - b + 1);
    if (s.empty()) bad(where, "empty number");
    if (j.is_string() && s == "-inf") {
        if (!allow_neg_inf) bad(where, "\"-inf\" is allowed only in logits");
        n.kind = Number::Kind::neg_inf;
        return n;
    }
    const std::size_t off = (s[0] == '+' || s[0] == '-') ? 1 : 0;
    if (j.is_string() && s.size() > off + 1 && s[off] == '0' && (s[off + 1] == 'x' || s[off + 1] == 'X')) {
        n.q = hexfloat(s, where);
    } else if (j.is_string() && s.find('/') != std::string::npos) {
        const auto slash = s.find('/');
        const Z p = integer(s.substr(0, slash), where), qd = integer(s.substr(slash + 1), where);
        if (qd == 0) bad(where, "zero denominator");
        n.q = Q(p, qd);
    } else {
        n.q = decimal(s, where);
    }
    return n;
}

Q read_q(const Json& j, const std::string& where) {
    const Number n = read_number(j, where);
    if (n.kind != Number::Kind::rational) bad(where, "must be a rational number");
    return n.q;
}

std::string sha256_hex(const std::string& bytes) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr) != 1) throw InputError("sha256 failed");
    static const char* hx = "0123456789abcdef";
    std::string out;
    for (unsigned int k = 0; k < len; ++k) {
        out += hx[md[k] >> 4];
        out += hx[md[k] & 15];
    }
    return out;
}

std::string read_file(const std::filesystem::path& p, const std::string& where, std::size_t limit) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(p, ec)) bad(where, "cannot read " + p.string());
    const auto size = std::filesystem::file_size(p, ec);
    if (ec) bad(where, "cannot read " + p.string());
    if (size > limit) bad(where, p.string() + " is larger than " + std::to_string(limit) + " bytes");
    std::ifstream f(p, std::ios::binary);
    std::string data(static_cast<std::size_t>(size), '\0');
    if (!f.read(data.data(), static_cast<std::streamsize>(size))) bad(where, "cannot read " + p.string());
    return data;
}

namespace {

// The bytes of a sidecar: a plain relative path inside the bundle's folder
// whose SHA-256 is the stated one.
std::string sidecar(const Json& j, const std::string& key, Sidecars& sc, const std::string& where) {
    const std::string& rel = j.at(key, where).str(where + "." + key);
    const std::string& sha = j.at("sha256", where).str(where + ".sha256");
    const std::filesystem::path p(rel);
    if (rel.empty() || p.is_absolute()) bad(where + "." + key, "a sidecar path must be relative");
    for (const auto& part : p)
        if (part == "..") bad(where + "." + key, "a sidecar path may not contain ..");
    std::error_code ec;
    const auto folder = std::filesystem::weakly_canonical(sc.folder, ec);
    const auto full = std::filesystem::weakly_canonical(sc.folder / p, ec);
    if (ec) bad(where + "." + key, "cannot resolve " + rel);
    const auto fs = folder.string() + "/";
    if (full.string().compare(0, fs.size(), fs) != 0) bad(where + "." + key, rel + " resolves outside the bundle's folder");
    std::string data = read_file(full, where + "." + key, max_sidecar_bytes);
    if (sha256_hex(data) != sha) bad(where + ".sha256", "does not match the bytes of " + rel);
    sc.seen.emplace_back(rel, sha);
    return data;
}

std::size_t dims(const Json& shape, const std::string& where, std::size_t& rows, std::size_t& cols) {
    if (!shape.is_array() || shape.items.empty() || shape.items.size() > 2) bad(where, "shape must have 1 or 2 entries");
    rows = shape.items[0].index(where + "[0]");
    cols = shape.items.size() == 2 ? shape.items[1].index(where + "[1]") : 1;
    if (rows > max_dim || cols > max_dim || rows * cols > max_elements) bad(where, "array too large");
    return shape.items.size();
}

double ieee(std::uint64_t bits, int ebits, int mbits, bool& is_nan, bool& is_inf, bool& neg) {
    neg = (bits >> (ebits + mbits)) & 1;
    const std::uint64_t e = (bits >> mbits) & ((1ull << ebits) - 1), m = bits & ((1ull << mbits) - 1);
    const int bias = (1 << (ebits - 1)) - 1;
    is_nan = is_inf = false;
    if (e == (1ull << ebits) - 1) {
        (m == 0 ? is_inf : is_nan) = true;
        return 0;
    }
    // Every f16/bf16/f32/f64 value is a double exactly.
    const double mag = e == 0 ? std::ldexp(static_cast<double>(m), 1 - bias - mbits)
                              : std::ldexp(static_cast<double>((1ull << mbits) | m), static_cast<int>(e) - bias - mbits);
    return neg ? -mag : mag;
}

struct Raw {
    std::string dtype;  // f2 f4 f8 bf16 b1 u1 i4 i8
    const unsigned char* p = nullptr;
};

void fill_binary(Array& a, const std::string& dtype, const unsigned char* body, std::size_t bytes, bool fortran,
                 bool logits, const std::string& where) {
    const std::size_t n = a.rows * a.cols;
    std::size_t size = dtype == "f8" || dtype == "i8" ? 8 : dtype == "f4" || dtype == "i4" ? 4 : dtype == "f2" || dtype == "bf16" ? 2 : 1;
    if (bytes < n * size) bad(where, "the data is shorter than the shape says");
    a.q.assign(n, Q(0));
    a.lo.assign(n, 0.0);
    a.hi.assign(n, 0.0);
    for (std::size_t t = 0; t < n; ++t) {
        const unsigned char* p = body + t * size;
        std::uint64_t u = 0;
        for (std::size_t k = 0; k < size; ++k) u |= static_cast<std::uint64_t>(p[k]) << (8 * k);  // little-endian
        double v = 0;
        bool nan = false, inf = false, neg = false;
        if (dtype == "f8") v = ieee(u, 11, 52, nan, inf, neg);
        else if (dtype == "f4") v = ieee(u, 8, 23, nan, inf, neg);
        else if (dtype == "f2") v = ieee(u, 5, 10, nan, inf, neg);
        else if (dtype == "bf16") v = ieee(u, 8, 7, nan, inf, neg);
        else if (dtype == "b1" || dtype == "u1") v = static_cast<double>(u);
        else if (dtype == "i4") v = static_cast<double>(static_cast<std::int32_t>(u));
        else if (dtype == "i8") {
            const auto s = static_cast<std::int64_t>(u);
            if (s > (1ll << 53) || s < -(1ll << 53)) bad(where, "an <i8 entry beyond 2^53");  // keeps entries doubles
            v = static_cast<double>(s);
        }
        const std::size_t i = fortran ? t % a.rows : t / a.cols, j = fortran ? t / a.rows : t % a.cols;
        const std::size_t at = i * a.cols + j;
        if (nan || (inf && !(logits && neg))) bad(where, "entry " + std::to_string(t) + " is NaN or infinite");
        if (inf) {
            if (a.neg_inf.empty()) a.neg_inf.assign(n, 0);
            a.neg_inf[at] = 1;
            continue;
        }
        a.q[at] = Q(v);
        a.lo[at] = a.hi[at] = v;
    }
}

// A Python literal header {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
std::string field(const std::string& h, const std::string& key, const std::string& where) {
    const auto k = h.find("'" + key + "'");
    if (k == std::string::npos) bad(where, "the .npy header has no " + key);
    auto c = h.find(':', k);
    if (c == std::string::npos) bad(where, "bad .npy header");
    ++c;
    while (c < h.size() && h[c] == ' ') ++c;
    std::size_t e = c;
    if (c < h.size() && h[c] == '(') e = h.find(')', c) + 1;
    else if (c < h.size() && h[c] == '\'') e = h.find('\'', c + 1) + 1;
    else
        while (e < h.size() && h[e] != ',' && h[e] != '}') ++e;
    if (e == std::string::npos || e == 0 || e > h.size()) bad(where, "bad .npy header");
    return h.substr(c, e - c);
}

// A shape the caller needs, checked before the entries are stored (an
// empty COO array of 2^27 entries took 35 s and 12 GB before its shape was
// found wrong).
void want_shape(const Array& a, std::size_t rows, std::size_t cols, const std::string& where) {
    if ((rows != SIZE_MAX && a.rows != rows) || (cols != SIZE_MAX && a.cols != cols))
        bad(where, "shape [" + std::to_string(a.rows) + ", " + std::to_string(a.cols) + "], expected [" +
                       (rows == SIZE_MAX ? std::string("*") : std::to_string(rows)) + ", " +
                       (cols == SIZE_MAX ? std::string("*") : std::to_string(cols)) + "]");
}

Array read_npy(const std::string& d, bool logits, const std::string& where, std::size_t wr, std::size_t wc) {
    if (d.size() < 10 || std::memcmp(d.data(), "\x93NUMPY", 6) != 0) bad(where, "not a .npy file");
    const auto* u = reinterpret_cast<const unsigned char*>(d.data());
    const int major = u[6];
    std::size_t hlen = 0, off = 0;
    if (major == 1) {
        hlen = u[8] | (static_cast<std::size_t>(u[9]) << 8);
        off = 10;
    } else if (major == 2 || major == 3) {
        if (d.size() < 12) bad(where, "truncated .npy header");
        hlen = u[8] | (static_cast<std::size_t>(u[9]) << 8) | (static_cast<std::size_t>(u[10]) << 16) | (static_cast<std::size_t>(u[11]) << 24);
        off = 12;
    } else {
        bad(where, "unknown .npy version");
    }
    if (hlen > d.size() - off) bad(where, "truncated .npy header");
    const std::string h = d.substr(off, hlen);
    std::string descr = field(h, "descr", where);
    const std::string fortran = field(h, "fortran_order", where), shape = field(h, "shape", where);
    static const std::map<std::string, std::string> types = {{"'<f2'", "f2"}, {"'<f4'", "f4"}, {"'<f8'", "f8"}, {"'|b1'", "b1"},
                                                            {"'|u1'", "u1"}, {"'<i4'", "i4"}, {"'<i8'", "i8"}};
    const auto t = types.find(descr);
    if (t == types.end()) bad(where, "dtype " + descr + " is not supported");
    if (fortran != "True" && fortran != "False") bad(where, "bad fortran_order");
    // (r,) (r, c) or ()
    std::vector<std::size_t> sh;
    std::string in = shape.substr(1, shape.size() - 2);
    std::size_t k = 0;
    while (k < in.size()) {
        while (k < in.size() && (in[k] == ' ' || in[k] == ',')) ++k;
        std::size_t e = k;
        while (e < in.size() && in[e] >= '0' && in[e] <= '9') ++e;
        if (e == k) {
            if (k < in.size()) bad(where, "bad .npy shape " + shape);
            break;
        }
        if (e - k > 9) bad(where, "array too large");
        sh.push_back(std::stoull(in.substr(k, e - k)));
        k = e;
    }
    if (sh.size() > 2) bad(where, "only vectors and matrices are read");
    Array a;
    a.rows = sh.empty() ? 1 : sh[0];
    a.cols = sh.size() == 2 ? sh[1] : 1;
    a.vector = sh.size() == 1;
    if (a.rows > max_dim || a.cols > max_dim || a.rows * a.cols > max_elements) bad(where, "array too large");
    want_shape(a, wr, wc, where);
    fill_binary(a, t->second, u + off + hlen, d.size() - off - hlen, fortran == "True" && sh.size() == 2, logits, where);
    return a;
}

Array read_safetensors(const std::string& d, const std::string& tensor, bool logits, const std::string& where, std::size_t wr,
                       std::size_t wc) {
    if (d.size() < 8) bad(where, "truncated safetensors file");
    std::uint64_t n = 0;
    for (int k = 0; k < 8; ++k) n |= static_cast<std::uint64_t>(static_cast<unsigned char>(d[k])) << (8 * k);
    if (n > d.size() - 8 || n > (100u << 20)) bad(where, "truncated safetensors header");
    const Json head = parse_json(std::string_view(d).substr(8, n), where + " (safetensors header)");
    const Json& t = head.at(tensor, where + " (safetensors header)");
    const std::string& dt = t.at("dtype", where).str(where + ".dtype");
    static const std::map<std::string, std::string> types = {{"F16", "f2"}, {"BF16", "bf16"}, {"F32", "f4"}, {"F64", "f8"},
                                                            {"BOOL", "b1"}, {"U8", "u1"}};
    const auto ty = types.find(dt);
    if (ty == types.end()) bad(where, "safetensors dtype " + dt + " is not supported");
    Array a;
    a.vector = dims(t.at("shape", where), where + ".shape", a.rows, a.cols) == 1;
    want_shape(a, wr, wc, where);
    const Json& offs = t.at("data_offsets", where);
    if (!offs.is_array() || offs.items.size() != 2) bad(where, "bad data_offsets");
    const std::size_t b = offs.items[0].index(where + ".data_offsets"), e = offs.items[1].index(where + ".data_offsets");
    if (b > e || e > d.size() - 8 - n) bad(where, "data_offsets outside the file");
    const auto* u = reinterpret_cast<const unsigned char*>(d.data()) + 8 + n + b;
    fill_binary(a, ty->second, u, e - b, false, logits, where);
    return a;
}

void put(Array& a, std::size_t at, const Number& v) {
    if (v.kind == Number::Kind::neg_inf) {
        if (a.neg_inf.empty()) a.neg_inf.assign(a.q.size(), 0);
        a.neg_inf[at] = 1;
        a.q[at] = 0;
        return;
    }
    a.q[at] = v.q;
    const DI e = to_di(v.q);
    a.lo[at] = e.lo;
    a.hi[at] = e.hi;
}

}  // namespace

Array read_array(const Json& j, Sidecars& sc, const std::string& where, bool logits, bool mask, std::size_t want_rows,
                 std::size_t want_cols) {
    if (!j.is_object()) bad(where, "an array must be an object");
    Array a;
    if (j.find("npy")) {
        a = read_npy(sidecar(j, "npy", sc, where), logits, where, want_rows, want_cols);
    } else if (j.find("safetensors")) {
        a = read_safetensors(sidecar(j, "safetensors", sc, where), j.at("tensor", where).str(where + ".tensor"), logits, where,
                             want_rows, want_cols);
    } else {
        a.vector = dims(j.at("shape", where), where + ".shape", a.rows, a.cols) == 1;
        want_shape(a, want_rows, want_cols, where);
        const std::size_t n = a.rows * a.cols;
        a.q.assign(n, Q(0));
        a.lo.assign(n, 0.0);
        a.hi.assign(n, 0.0);
        if (const Json* c = j.find("coo")) {
            const Json &r = c->at("row", where + ".coo"), &k = c->at("col", where + ".coo"), &v = c->at("val", where + ".coo");
            if (!r.is_array() || !k.is_array() || !v.is_array() || r.items.size() != k.items.size() || r.items.size() != v.items.size())
                bad(where + ".coo", "row, col and val must be lists of one length");
            std::set<std::size_t> seen;
            for (std::size_t t = 0; t < r.items.size(); ++t) {
                const std::size_t i = r.items[t].index(where + ".coo.row"), jj = k.items[t].index(where + ".coo.col");
                if (i >= a.rows || jj >= a.cols) bad(where + ".coo", "entry " + std::to_string(t) + " lies outside the shape");
                if (!seen.insert(i * a.cols + jj).second) bad(where + ".coo", "repeated coordinate at entry " + std::to_string(t));
                put(a, i * a.cols + jj, read_number(v.items[t], where + ".coo.val[" + std::to_string(t) + "]", logits, mask));
            }
        } else {
            const Json& data = j.at("data", where);
            if (!data.is_array() || data.items.size() != n) bad(where + ".data", "needs rows x cols = " + std::to_string(n) + " numbers");
            for (std::size_t t = 0; t < n; ++t)
                put(a, t, read_number(data.items[t], where + ".data[" + std::to_string(t) + "]", logits, mask));
        }
    }
    a.mid = a.lo;
    a.rad.assign(a.q.size(), 0.0);
    for (std::size_t t = 0; t < a.q.size(); ++t)
        if (a.lo[t] != a.hi[t]) {
            a.points = false;
            a.mid[t] = 0.5 * a.lo[t] + 0.5 * a.hi[t];
            a.rad[t] = std::max(up(a.hi[t] - a.mid[t]), up(a.mid[t] - a.lo[t]));
        }
    return a;
}

}  // namespace recheck
