// Exact arrays: inline JSON, sparse COO, .npy and safetensors sidecars.
//
// The values are decoded from IEEE bit patterns into dyadic rationals
// (sign * integer significand * 2^exponent), so a float32 weight is the exact
// number the file holds.  Sidecars are read once, hashed (SHA-256 via
// OpenSSL's libcrypto) and compared with the declared digest before use.
#include "rankcert/array.hpp"
#include "rankcert/paths.hpp"

#include <openssl/evp.h>

#include <cstring>
#include <fstream>
#include <set>
#include <utility>

namespace rankcert {

namespace fs = std::filesystem;

std::string sha256_hex(const std::string& bytes) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr) != 1)
        throw std::runtime_error("SHA-256 computation failed");
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < len; ++i) {
        out += hex[md[i] >> 4];
        out += hex[md[i] & 15];
    }
    return out;
}

// ---- IEEE decoding ------------------------------------------------------------
namespace {
// value = (-1)^sign * mant * 2^exp2, exactly.
void set_dyadic(Rat& out, bool sign, std::uint64_t mant, long exp2) {
    fmpq_set_ui(out.get(), mant, 1);
    if (exp2 > 0) fmpq_mul_2exp(out.get(), out.get(), static_cast<flint_bitcnt_t>(exp2));
    else if (exp2 < 0) fmpq_div_2exp(out.get(), out.get(), static_cast<flint_bitcnt_t>(-exp2));
    if (sign) fmpq_neg(out.get(), out.get());
}

bool decode_ieee(std::uint64_t bits, int ebits, int mbits, Rat& out, bool* neg_inf) {
    const bool sign = (bits >> (ebits + mbits)) & 1;
    const std::uint64_t e = (bits >> mbits) & ((1ull << ebits) - 1);
    const std::uint64_t m = bits & ((1ull << mbits) - 1);
    const long bias = (1l << (ebits - 1)) - 1;
    if (neg_inf) *neg_inf = false;
    if (e == (1ull << ebits) - 1) {
        if (m == 0 && sign && neg_inf) *neg_inf = true;
        return false;
    }
    if (e == 0) set_dyadic(out, sign, m, 1 - bias - mbits);
    else set_dyadic(out, sign, m | (1ull << mbits), static_cast<long>(e) - bias - mbits);
    return true;
}
}  // namespace

bool decode_f16(std::uint16_t b, Rat& out, bool* ni) { return decode_ieee(b, 5, 10, out, ni); }
bool decode_bf16(std::uint16_t b, Rat& out, bool* ni) { return decode_ieee(b, 8, 7, out, ni); }
bool decode_f32(std::uint32_t b, Rat& out, bool* ni) { return decode_ieee(b, 8, 23, out, ni); }
bool decode_f64(std::uint64_t b, Rat& out, bool* ni) { return decode_ieee(b, 11, 52, out, ni); }

namespace {

enum class DType { f16, bf16, f32, f64, b1, u1, i4, i8 };

std::size_t itemsize(DType t) {
    switch (t) {
    case DType::f16: case DType::bf16: return 2;
    case DType::f32: case DType::i4: return 4;
    case DType::f64: case DType::i8: return 8;
    case DType::b1: case DType::u1: return 1;
    }
    return 1;
}

template <class T>
T read_le(const unsigned char* p) {
    T v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(p[i]) << (8 * i);
    return v;
}

void check_shape(std::uint64_t rows, std::uint64_t cols, const Where& w) {
    if (rows > Limits::max_dim || cols > Limits::max_dim)
        throw InputError(w, "shape [" + std::to_string(rows) + ", " + std::to_string(cols) + "] exceeds the limit of " +
                                std::to_string(Limits::max_dim) + " per dimension");
    if (rows * cols > Limits::max_elements)
        throw InputError(w, "shape [" + std::to_string(rows) + ", " + std::to_string(cols) + "] exceeds the limit of " +
                                std::to_string(Limits::max_elements) + " entries");
}

// Decode count elements of type t starting at p into m (row-major or Fortran).
void decode_elements(const unsigned char* p, DType t, Matrix& m, bool fortran, bool allow_neg_inf, bool as_bool,
                     const Where& w) {
    const std::size_t n = m.rows * m.cols;
    const std::size_t isz = itemsize(t);
    m.v.assign(n, Rat());
    if (allow_neg_inf) m.neg_inf.assign(n, 0);
    for (std::size_t s = 0; s < n; ++s) {
        // Storage index s -> (i, j).
        std::size_t i, j;
        if (fortran) { i = s % m.rows; j = s / m.rows; }
        else { i = s / m.cols; j = s % m.cols; }
        const std::size_t dst = i * m.cols + j;
        const unsigned char* q = p + s * isz;
        Rat& out = m.v[dst];
        bool ok = true, ninf = false;
        switch (t) {
        case DType::f16: ok = decode_f16(read_le<std::uint16_t>(q), out, &ninf); break;
        case DType::bf16: ok = decode_bf16(read_le<std::uint16_t>(q), out, &ninf); break;
        case DType::f32: ok = decode_f32(read_le<std::uint32_t>(q), out, &ninf); break;
        case DType::f64: ok = decode_f64(read_le<std::uint64_t>(q), out, &ninf); break;
        case DType::b1:
            if (*q > 1) throw InputError(w, "boolean entry " + std::to_string(s) + " is neither 0 nor 1");
            fmpq_set_ui(out.get(), *q, 1);
            break;
        case DType::u1: fmpq_set_ui(out.get(), *q, 1); break;
        case DType::i4: fmpq_set_si(out.get(), static_cast<std::int32_t>(read_le<std::uint32_t>(q)), 1); break;
        case DType::i8: {
            auto v = static_cast<std::int64_t>(read_le<std::uint64_t>(q));
            fmpz_set_si(fmpq_numref(out.get()), v);
            fmpz_one(fmpq_denref(out.get()));
            break;
        }
        }
        if (!ok) {
            if (ninf && allow_neg_inf) { m.neg_inf[dst] = 1; continue; }
            throw InputError(w, std::string(ninf ? "-inf" : "NaN or infinity") + " at entry (" + std::to_string(i) + ", " +
                                    std::to_string(j) + ")" + (ninf ? " (allowed only in logits)" : ""));
        }
        if (as_bool && !(out.is_zero() || out == Rat(1)))
            throw InputError(w, "mask entry (" + std::to_string(i) + ", " + std::to_string(j) + ") is neither 0 nor 1");
    }
}

// Parse the Python-literal header of a .npy file.
struct NpyHeader {
    DType t = DType::f64;
    bool fortran = false;
    std::vector<std::uint64_t> shape;
};

NpyHeader parse_npy_header(std::string h, const Where& w) {
    auto bad = [&](const std::string& why) { return InputError(w, "bad .npy header: " + why); };
    NpyHeader out;
    auto value_of = [&](const std::string& key) -> std::string {
        auto k = h.find("'" + key + "'");
        if (k == std::string::npos) throw bad("no '" + key + "'");
        auto c = h.find(':', k);
        if (c == std::string::npos) throw bad("no value for '" + key + "'");
        std::size_t p = c + 1;
        while (p < h.size() && h[p] == ' ') ++p;
        if (p >= h.size()) throw bad("no value for '" + key + "'");
        std::size_t e;
        if (h[p] == '\'') {
            e = h.find('\'', p + 1);
            if (e == std::string::npos) throw bad("unterminated string");
            return h.substr(p, e - p + 1);
        }
        if (h[p] == '(') {
            e = h.find(')', p);
            if (e == std::string::npos) throw bad("unterminated shape");
            return h.substr(p, e - p + 1);
        }
        e = h.find_first_of(",}", p);
        if (e == std::string::npos) throw bad("unterminated value");
        return h.substr(p, e - p);
    };
    std::string d = value_of("descr");
    static const std::pair<const char*, DType> types[] = {
        {"'<f2'", DType::f16}, {"'<f4'", DType::f32}, {"'<f8'", DType::f64}, {"'|b1'", DType::b1},
        {"'|u1'", DType::u1},  {"'<i4'", DType::i4},  {"'<i8'", DType::i8}};
    bool found = false;
    for (auto& [s, t] : types)
        if (d == s) { out.t = t; found = true; }
    if (!found) throw InputError(w, "unsupported .npy dtype " + d + " (need <f2 <f4 <f8 |b1 |u1 <i4 <i8)");
    std::string f = value_of("fortran_order");
    while (!f.empty() && f.back() == ' ') f.pop_back();
    if (f == "True") out.fortran = true;
    else if (f == "False") out.fortran = false;
    else throw bad("fortran_order is " + f);
    std::string s = value_of("shape");
    // (a, b) or (a,) or ()
    if (s.size() < 2 || s.front() != '(' || s.back() != ')') throw bad("shape is not a tuple");
    std::string inner = s.substr(1, s.size() - 2);
    std::size_t p = 0;
    while (p < inner.size()) {
        while (p < inner.size() && (inner[p] == ' ' || inner[p] == ',')) ++p;
        if (p >= inner.size()) break;
        std::size_t e = p;
        while (e < inner.size() && std::isdigit(static_cast<unsigned char>(inner[e]))) ++e;
        if (e == p || e - p > 12) throw bad("shape " + s);
        out.shape.push_back(std::stoull(inner.substr(p, e - p)));
        p = e;
        while (p < inner.size() && inner[p] == ' ') ++p;
        if (p < inner.size() && inner[p] != ',') throw bad("shape " + s);
    }
    return out;
}

void set_shape(Matrix& m, const std::vector<std::uint64_t>& shape, const Where& w) {
    if (shape.size() == 1) {
        check_shape(shape[0], 1, w);
        m.rows = shape[0];
        m.cols = 1;
        m.is_vector = true;
    } else if (shape.size() == 2) {
        check_shape(shape[0], shape[1], w);
        m.rows = shape[0];
        m.cols = shape[1];
    } else {
        throw InputError(w, "arrays must have rank 1 or 2, found rank " + std::to_string(shape.size()));
    }
}

std::vector<std::uint64_t> parse_shape(const json& j, const Where& w) {
    if (!j.is_array() || j.empty() || j.size() > 2) throw InputError(w, "shape must be [n] or [rows, cols]");
    std::vector<std::uint64_t> s;
    for (std::size_t i = 0; i < j.size(); ++i) {
        s.push_back(parse_index(j[i], w.index(i)));
        if (s.back() > Limits::max_dim)
            throw InputError(w.index(i), "dimension " + std::to_string(s.back()) + " exceeds the limit of " +
                                             std::to_string(Limits::max_dim));
    }
    return s;
}

}  // namespace

Matrix parse_npy(const std::string& bytes, const Where& w, bool allow_neg_inf, bool as_bool) {
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    if (bytes.size() < 10 || std::memcmp(p, "\x93NUMPY", 6) != 0) throw InputError(w, "not a .npy file (bad magic)");
    const int major = p[6];
    std::size_t hlen, off;
    if (major == 1) {
        hlen = read_le<std::uint16_t>(p + 8);
        off = 10;
    } else if (major == 2 || major == 3) {
        if (bytes.size() < 12) throw InputError(w, "truncated .npy header");
        hlen = read_le<std::uint32_t>(p + 8);
        off = 12;
    } else {
        throw InputError(w, "unsupported .npy format version " + std::to_string(major));
    }
    if (hlen > bytes.size() - off) throw InputError(w, "truncated .npy header");
    NpyHeader h = parse_npy_header(bytes.substr(off, hlen), w);
    Matrix m;
    if (h.shape.empty()) h.shape = {1};
    set_shape(m, h.shape, w);
    const std::size_t need = m.rows * m.cols * itemsize(h.t);
    const std::size_t have = bytes.size() - off - hlen;
    if (have < need)
        throw InputError(w, "truncated .npy data: " + std::to_string(have) + " bytes, shape needs " + std::to_string(need));
    if (have > need) throw InputError(w, ".npy file has " + std::to_string(have - need) + " trailing bytes");
    decode_elements(p + off + hlen, h.t, m, h.fortran, allow_neg_inf, as_bool, w);
    return m;
}

ArrayLoader::ArrayLoader(fs::path bundle_dir, std::string bundle_name) : name_(std::move(bundle_name)) {
    // Absolute, so that confinement never compares against an empty folder
    // (a bundle named "b.json" has the parent path "").
    std::error_code ec;
    dir_ = fs::absolute(bundle_dir.empty() ? fs::path(".") : bundle_dir, ec);
    if (ec) throw InputError(name_ + ": cannot resolve the bundle's folder: " + ec.message());
}

const ArrayLoader::File& ArrayLoader::sidecar(const json& j, const std::string& key, const Where& w) {
    const Where wk = w.key(key);
    std::string rel = require_string(j, key, w);
    if (rel.empty()) throw InputError(wk, "empty sidecar path");
    std::string want = require_string(j, "sha256", w);
    auto it = files_.find(rel);
    if (it == files_.end()) {
        std::error_code ec;
        const fs::path canon = confined(dir_, rel, wk, "the bundle's folder");
        if (!fs::is_regular_file(canon, ec)) throw InputError(wk, "sidecar \"" + rel + "\" is not a readable file");
        auto size = fs::file_size(canon, ec);
        if (ec) throw InputError(wk, "cannot read sidecar \"" + rel + "\"");
        if (size > (8ull << 30)) throw InputError(wk, "sidecar \"" + rel + "\" is larger than 8 GiB");
        auto f = std::make_shared<File>();
        f->bytes.resize(size);
        std::ifstream in(canon, std::ios::binary);
        in.read(f->bytes.data(), static_cast<std::streamsize>(size));
        if (!in || static_cast<std::uint64_t>(in.gcount()) != size)
            throw InputError(wk, "cannot read sidecar \"" + rel + "\"");
        f->sha256 = sha256_hex(f->bytes);
        it = files_.emplace(rel, f).first;
        sidecars_.push_back({rel, f->sha256});
    }
    if (want != it->second->sha256)
        throw InputError(w.key("sha256"), "sha256 mismatch for \"" + rel + "\": file has " + it->second->sha256);
    return *it->second;
}

Matrix ArrayLoader::load_npy(const json& j, const Where& w, bool allow_neg_inf, bool as_bool) {
    const File& f = sidecar(j, "npy", w);
    Where wf = w;
    wf.field += " (" + j["npy"].get<std::string>() + ")";
    return parse_npy(f.bytes, wf, allow_neg_inf, as_bool);
}

Matrix ArrayLoader::load_safetensors(const json& j, const Where& w, bool allow_neg_inf, bool as_bool) {
    const File& f = sidecar(j, "safetensors", w);
    const std::string tensor = require_string(j, "tensor", w);
    Where wf = w;
    wf.field += " (" + j["safetensors"].get<std::string>() + ":" + tensor + ")";
    const auto* p = reinterpret_cast<const unsigned char*>(f.bytes.data());
    if (f.bytes.size() < 8) throw InputError(wf, "truncated safetensors file");
    std::uint64_t hlen = read_le<std::uint64_t>(p);
    if (hlen > f.bytes.size() - 8 || hlen > (100u << 20)) throw InputError(wf, "truncated safetensors header");
    json header;
    try {
        header = json::parse(f.bytes.begin() + 8, f.bytes.begin() + 8 + static_cast<std::ptrdiff_t>(hlen));
    } catch (const json::exception&) {
        throw InputError(wf, "malformed safetensors header");
    }
    if (!header.is_object() || !header.contains(tensor)) throw InputError(wf, "no tensor named \"" + tensor + "\"");
    const json& t = header[tensor];
    if (!t.is_object() || !t.contains("dtype") || !t.contains("shape") || !t.contains("data_offsets"))
        throw InputError(wf, "malformed tensor entry");
    std::string dt = t["dtype"].is_string() ? t["dtype"].get<std::string>() : "";
    DType type;
    if (dt == "F16") type = DType::f16;
    else if (dt == "BF16") type = DType::bf16;
    else if (dt == "F32") type = DType::f32;
    else if (dt == "F64") type = DType::f64;
    else if (dt == "BOOL") type = DType::b1;
    else if (dt == "U8") type = DType::u1;
    else throw InputError(wf, "unsupported safetensors dtype \"" + dt + "\" (need F16, BF16, F32, F64)");
    Matrix m;
    std::vector<std::uint64_t> shape;
    if (!t["shape"].is_array()) throw InputError(wf, "malformed shape");
    for (std::size_t i = 0; i < t["shape"].size(); ++i)
        shape.push_back(parse_index(t["shape"][i], wf.key("shape").index(i), Limits::max_dim + 1));
    set_shape(m, shape, wf);
    const json& off = t["data_offsets"];
    if (!off.is_array() || off.size() != 2) throw InputError(wf, "malformed data_offsets");
    std::uint64_t b = parse_index(off[0], wf.key("data_offsets"), 0), e = parse_index(off[1], wf.key("data_offsets"), 0);
    const std::uint64_t avail = f.bytes.size() - 8 - hlen;
    if (b > e || e > avail) throw InputError(wf, "data_offsets beyond the end of the file (truncated?)");
    if (e - b != m.rows * m.cols * itemsize(type)) throw InputError(wf, "data_offsets do not match shape and dtype");
    decode_elements(p + 8 + hlen + b, type, m, false, allow_neg_inf, as_bool, wf);
    return m;
}

Matrix ArrayLoader::load(const json& j, const Where& w, bool allow_neg_inf) {
    if (!j.is_object()) throw InputError(w, std::string("expected an array object, found ") + j.type_name());
    if (j.contains("npy")) return load_npy(j, w, allow_neg_inf, false);
    if (j.contains("safetensors")) return load_safetensors(j, w, allow_neg_inf, false);
    Matrix m;
    set_shape(m, parse_shape(require(j, "shape", w), w.key("shape")), w.key("shape"));
    const std::size_t n = m.rows * m.cols;
    if (j.contains("coo")) {
        SparseMatrix s = load_sparse(j, w);
        m.v.assign(n, Rat());
        if (allow_neg_inf) m.neg_inf.assign(n, 0);
        for (auto& e : s.entries) m(e.row, e.col) = std::move(e.val);
        return m;
    }
    const json& data = require(j, "data", w);
    const Where wd = w.key("data");
    if (!data.is_array()) throw InputError(wd, "expected a list of numbers");
    if (data.size() != n)
        throw InputError(wd, "has " + std::to_string(data.size()) + " entries, shape needs " + std::to_string(n));
    m.v.resize(n);
    if (allow_neg_inf) m.neg_inf.assign(n, 0);
    for (std::size_t s = 0; s < n; ++s) {
        Number x = parse_number(data[s], wd.index(s), false, allow_neg_inf);
        if (x.kind == Number::Kind::neg_inf) m.neg_inf[s] = 1;
        else m.v[s] = std::move(x.q);
    }
    return m;
}

SparseMatrix ArrayLoader::load_sparse(const json& j, const Where& w) {
    SparseMatrix s;
    if (!j.is_object()) throw InputError(w, std::string("expected an array object, found ") + j.type_name());
    if (!j.contains("coo")) {
        Matrix m = load(j, w, false);
        s.rows = m.rows;
        s.cols = m.cols;
        for (std::size_t i = 0; i < m.rows; ++i)
            for (std::size_t c = 0; c < m.cols; ++c)
                if (!m(i, c).is_zero())
                    s.entries.push_back({static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(c), m(i, c)});
        return s;
    }
    auto shape = parse_shape(require(j, "shape", w), w.key("shape"));
    if (shape.size() == 1) shape.push_back(1);
    if (shape[0] > Limits::max_dim || shape[1] > Limits::max_dim)
        throw InputError(w.key("shape"), "exceeds the limit of " + std::to_string(Limits::max_dim) + " per dimension");
    s.rows = shape[0];
    s.cols = shape[1];
    const json& coo = require(j, "coo", w);
    const Where wc = w.key("coo");
    const json& r = require(coo, "row", wc);
    const json& c = require(coo, "col", wc);
    const json& v = require(coo, "val", wc);
    if (!r.is_array() || !c.is_array() || !v.is_array()) throw InputError(wc, "row, col and val must be lists");
    if (r.size() != c.size() || r.size() != v.size())
        throw InputError(wc, "row, col and val have different lengths (" + std::to_string(r.size()) + ", " +
                                 std::to_string(c.size()) + ", " + std::to_string(v.size()) + ")");
    if (r.size() > Limits::max_elements) throw InputError(wc, "too many entries");
    std::set<std::pair<std::uint64_t, std::uint64_t>> seen;
    s.entries.reserve(r.size());
    for (std::size_t t = 0; t < r.size(); ++t) {
        auto ri = parse_index(r[t], wc.key("row").index(t), s.rows);
        auto ci = parse_index(c[t], wc.key("col").index(t), s.cols);
        if (!seen.emplace(ri, ci).second)
            throw InputError(wc.index(t), "repeated coordinate (" + std::to_string(ri) + ", " + std::to_string(ci) + ")");
        Rat val = parse_rational(v[t], wc.key("val").index(t));
        s.entries.push_back({static_cast<std::uint32_t>(ri), static_cast<std::uint32_t>(ci), std::move(val)});
    }
    return s;
}

BoolMatrix ArrayLoader::load_bool(const json& j, const Where& w) {
    BoolMatrix b;
    Matrix m;
    if (j.is_object() && j.contains("npy")) {
        m = load_npy(j, w, false, true);
    } else if (j.is_object() && j.contains("safetensors")) {
        m = load_safetensors(j, w, false, true);
    } else if (j.is_object() && j.contains("data") && j["data"].is_array()) {
        // Inline masks may use true/false.
        json copy = j;
        for (auto& x : copy["data"])
            if (x.is_boolean()) x = x.get<bool>() ? 1 : 0;
        m = load(copy, w, false);
    } else {
        m = load(j, w, false);
    }
    b.rows = m.rows;
    b.cols = m.cols;
    b.v.resize(m.size());
    for (std::size_t s = 0; s < m.size(); ++s) {
        if (!(m.v[s].is_zero() || m.v[s] == Rat(1)))
            throw InputError(w, "mask entry " + std::to_string(s) + " is neither 0 nor 1");
        b.v[s] = m.v[s].is_zero() ? 0 : 1;
    }
    return b;
}

}  // namespace rankcert
