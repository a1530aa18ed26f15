// N-dimensional tensors for the producer's command line; see tensor.hpp.
#include "rankcert/producer/tensor.hpp"

#include "rankcert/input.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <zlib.h>

namespace rankcert::producer {

namespace fs = std::filesystem;

std::string read_file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot open file");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

namespace {

template <class T>
T le(const std::string& s, std::size_t off) {
    if (off + sizeof(T) > s.size() || off + sizeof(T) < off) throw std::out_of_range("le");
    T v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<unsigned char>(s[off + i])) << (8 * i);
    return v;
}

// Element count of a shape, with overflow and size caps (2^34 elements).
std::uint64_t elements(const std::vector<std::uint64_t>& shape, const std::string& where) {
    std::uint64_t n = 1;
    for (auto s : shape) {
        if (s != 0 && n > (std::uint64_t{1} << 34) / s) throw InputError(where + ": shape is too large");
        n *= s;
    }
    return n;
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s.append(i ? ", " : "").append(std::to_string(shape[i]));
    return s + "]";
}

}  // namespace

std::size_t NdTensor::itemsize() const {
    if (dtype == "f16" || dtype == "bf16") return 2;
    if (dtype == "f32" || dtype == "i32") return 4;
    if (dtype == "f64" || dtype == "i64") return 8;
    return 1;
}

std::uint64_t NdTensor::count() const { return elements(shape, where); }

bool path_exists(const std::filesystem::path& p) noexcept {
    std::error_code ec;
    return fs::exists(p, ec) && !ec;
}

std::string shown_path(const std::string& p) {
    return p.size() <= 120 ? p : p.substr(0, 60) + "..." + p.substr(p.size() - 40);
}

TensorSpec parse_tensor_spec(const std::string& spec) {
    TensorSpec t;
    std::string s = spec;
    if (!s.empty() && s.back() == ']' && !path_exists(s)) {
        const auto open = s.rfind('[');
        if (open == std::string::npos) throw InputError(spec + ": selector: ']' without '['");
        const std::string inner = s.substr(open + 1, s.size() - open - 2);
        s = s.substr(0, open);
        t.has_index = true;
        std::size_t p = 0;
        while (p <= inner.size()) {
            std::size_t q = inner.find(',', p);
            if (q == std::string::npos) q = inner.size();
            std::string item = inner.substr(p, q - p);
            while (!item.empty() && item.front() == ' ') item.erase(item.begin());
            while (!item.empty() && item.back() == ' ') item.pop_back();
            if (item.empty() || item.size() > 12 || item.find_first_not_of("0123456789") != std::string::npos)
                throw InputError(spec + ": selector: \"" + item.substr(0, 20) + "\" is not an index (write F.npy[0,3])");
            t.index.push_back(std::stoull(item));
            p = q + 1;
        }
    }
    t.path = s;
    const auto colon = s.rfind(':');
    if (colon != std::string::npos && colon > 0 && !path_exists(s)) {
        t.path = s.substr(0, colon);
        t.name = s.substr(colon + 1);
    }
    return t;
}

NdTensor parse_npy_nd(const std::string& b, const std::string& where) {
    NdTensor t;
    t.where = where;
    try {
        if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0) throw InputError(where + ": not a .npy file (bad magic)");
        const int major = static_cast<unsigned char>(b[6]);
        std::size_t hlen, off;
        if (major == 1) hlen = le<std::uint16_t>(b, 8), off = 10;
        else if (major == 2 || major == 3) hlen = le<std::uint32_t>(b, 8), off = 12;
        else throw InputError(where + ": unsupported .npy version " + std::to_string(major));
        if (hlen > b.size() - off) throw InputError(where + ": truncated .npy header");
        const std::string h = b.substr(off, hlen);
        auto field = [&](const std::string& key) {
            const auto k = h.find("'" + key + "'");
            const auto c = k == std::string::npos ? k : h.find(':', k);
            if (c == std::string::npos) throw InputError(where + ": .npy header has no '" + key + "'");
            std::size_t p = h.find_first_not_of(' ', c + 1);
            if (p == std::string::npos) throw InputError(where + ": .npy header: no value for '" + key + "'");
            const char close = h[p] == '\'' ? '\'' : h[p] == '(' ? ')' : '\0';
            const std::size_t e = close ? h.find(close, p + 1) : h.find_first_of(",}", p);
            if (e == std::string::npos) throw InputError(where + ": .npy header: unterminated '" + key + "'");
            return h.substr(p, e - p + (close ? 1 : 0));
        };
        const std::string d = field("descr");
        static const std::pair<const char*, const char*> types[] = {{"'<f2'", "f16"}, {"'<f4'", "f32"}, {"'<f8'", "f64"},
                                                                    {"'|b1'", "bool"}, {"'|u1'", "u8"}, {"'<i4'", "i32"},
                                                                    {"'<i8'", "i64"}};
        for (auto& [s, n] : types)
            if (d == s) t.dtype = n;
        if (t.dtype.empty()) throw InputError(where + ": unsupported .npy dtype " + d.substr(0, 20));
        std::string fo = field("fortran_order");
        while (!fo.empty() && fo.back() == ' ') fo.pop_back();
        if (fo != "True" && fo != "False") throw InputError(where + ": .npy header: fortran_order is not True/False");
        const std::string sh = field("shape");
        if (sh.size() < 2 || sh.front() != '(') throw InputError(where + ": .npy header: shape is not a tuple");
        for (std::size_t p = 1; p < sh.size() - 1;) {
            p = sh.find_first_not_of(", ", p);
            if (p >= sh.size() - 1) break;
            std::size_t e = sh.find_first_not_of("0123456789", p);
            if (e == p || e - p > 12) throw InputError(where + ": .npy header: bad shape " + sh.substr(0, 40));
            t.shape.push_back(std::stoull(sh.substr(p, e - p)));
            p = e;
        }
        const std::uint64_t n = elements(t.shape, where);
        const std::size_t isz = t.itemsize();
        if (b.size() - off - hlen != n * isz)
            throw InputError(where + ": .npy data has " + std::to_string(b.size() - off - hlen) + " bytes, shape " +
                             shape_text(t.shape) + " needs " + std::to_string(n * isz));
        t.bytes = b.substr(off + hlen);
        if (fo == "True" && t.shape.size() > 1) {
            // Reorder Fortran (first index fastest) into C order.
            std::string c(t.bytes.size(), '\0');
            const std::size_t r = t.shape.size();
            std::vector<std::uint64_t> idx(r, 0);
            for (std::uint64_t f = 0; f < n; ++f) {
                std::uint64_t ci = 0;
                for (std::size_t a = 0; a < r; ++a) ci = ci * t.shape[a] + idx[a];
                std::memcpy(&c[ci * isz], &t.bytes[f * isz], isz);
                for (std::size_t a = 0; a < r && ++idx[a] == t.shape[a]; ++a) idx[a] = 0;
            }
            t.bytes = std::move(c);
        }
    } catch (const std::out_of_range&) {
        throw InputError(where + ": truncated .npy file");
    }
    return t;
}

namespace {

nlohmann::json safetensors_header(const std::string& b, const std::string& where, std::size_t& data_off) {
    if (b.size() < 8) throw InputError(where + ": not a safetensors file (shorter than 8 bytes)");
    const std::uint64_t hlen = le<std::uint64_t>(b, 0);
    if (hlen > b.size() - 8 || hlen > (std::uint64_t{100} << 20)) throw InputError(where + ": safetensors header length out of range");
    data_off = 8 + hlen;
    try {
        auto j = nlohmann::json::parse(b.substr(8, hlen));
        if (!j.is_object()) throw InputError(where + ": safetensors header is not a JSON object");
        return j;
    } catch (const nlohmann::json::exception&) {
        throw InputError(where + ": safetensors header is not valid JSON");
    }
}

}  // namespace

SafetensorsIndex safetensors_index(const std::string& b, const std::string& file) {
    SafetensorsIndex ix;
    const auto h = safetensors_header(b, file, ix.data_off);
    const std::uint64_t data_size = b.size() - ix.data_off;
    static const std::pair<const char*, const char*> types[] = {{"F16", "f16"}, {"BF16", "bf16"}, {"F32", "f32"},
                                                                {"F64", "f64"}, {"BOOL", "bool"}, {"U8", "u8"},
                                                                {"I32", "i32"}, {"I64", "i64"}};
    std::vector<std::pair<std::pair<std::uint64_t, std::uint64_t>, const std::string*>> spans;
    for (auto it = h.begin(); it != h.end(); ++it) {
        if (it.key() == "__metadata__") continue;
        const std::string where = file + ":" + it.key();
        const auto& e = it.value();
        if (!e.is_object()) throw InputError(where + ": malformed safetensors entry (need dtype, shape, data_offsets)");
        SafetensorsEntry en;
        NdTensor t;  // for itemsize
        try {
            const std::string dt = e.at("dtype").get<std::string>();
            for (auto& [s, n] : types)
                if (dt == s) t.dtype = n;
            if (t.dtype.empty()) throw InputError(where + ": unsupported safetensors dtype " + dt.substr(0, 20));
            if (!e.at("shape").is_array()) throw InputError(where + ": shape: not a list");
            for (const auto& s : e.at("shape")) {
                if (!s.is_number_unsigned()) throw InputError(where + ": shape: entries must be non-negative integers");
                t.shape.push_back(s.get<std::uint64_t>());
            }
            const auto& o = e.at("data_offsets");
            if (!o.is_array() || o.size() != 2 || !o[0].is_number_unsigned() || !o[1].is_number_unsigned())
                throw InputError(where + ": data_offsets: need two non-negative integers");
            en.begin = o[0].get<std::uint64_t>();
            en.end = o[1].get<std::uint64_t>();
        } catch (const nlohmann::json::exception&) {
            throw InputError(where + ": malformed safetensors entry (need dtype, shape, data_offsets)");
        }
        const std::uint64_t n = elements(t.shape, where);
        if (en.end < en.begin || en.end - en.begin != n * t.itemsize() || en.end > data_size)
            throw InputError(where + ": data_offsets do not match shape " + shape_text(t.shape) + " and the file size");
        en.dtype = t.dtype;
        en.shape = std::move(t.shape);
        auto [pos, fresh] = ix.entries.emplace(it.key(), std::move(en));
        spans.push_back({{pos->second.begin, pos->second.end}, &pos->first});
    }
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i)
        if (spans[i].first.first < spans[i - 1].first.second)
            throw InputError(file + ":" + *spans[i].second + ": data_offsets overlap those of " + *spans[i - 1].second);
    return ix;
}

NdTensor safetensors_tensor(const std::string& b, const SafetensorsIndex& ix, const std::string& name, const std::string& file) {
    auto it = ix.entries.find(name);
    if (it == ix.entries.end()) throw InputError(file + ": no tensor \"" + name + "\"");
    NdTensor t;
    t.where = file + ":" + name;
    t.dtype = it->second.dtype;
    t.shape = it->second.shape;
    t.bytes = b.substr(ix.data_off + it->second.begin, it->second.end - it->second.begin);
    return t;
}

std::vector<std::string> safetensors_names(const std::string& bytes, const std::string& where) {
    std::vector<std::string> out;
    for (const auto& [name, e] : safetensors_index(bytes, where).entries) out.push_back(name);
    return out;
}

NdTensor parse_safetensors_nd(const std::string& b, const std::string& name, const std::string& file) {
    return safetensors_tensor(b, safetensors_index(b, file), name, file);
}

std::string npz_member(const std::string& zip, const std::string& member, const std::string& file) {
    try {
        // End of central directory: search the last 64 KiB for its signature.
        std::size_t eocd = std::string::npos;
        for (std::size_t i = zip.size() >= 22 ? zip.size() - 22 : 0; zip.size() - i < 70000; --i) {
            if (le<std::uint32_t>(zip, i) == 0x06054b50) {
                eocd = i;
                break;
            }
            if (i == 0) break;
        }
        if (eocd == std::string::npos) throw InputError(file + ": not a .npz (zip) file");
        const std::size_t count = le<std::uint16_t>(zip, eocd + 10);
        std::size_t cd = le<std::uint32_t>(zip, eocd + 16);
        for (std::size_t e = 0; e < count; ++e) {
            if (le<std::uint32_t>(zip, cd) != 0x02014b50) throw InputError(file + ": corrupt zip directory");
            const unsigned method = le<std::uint16_t>(zip, cd + 10);
            const std::size_t csize = le<std::uint32_t>(zip, cd + 20), usize = le<std::uint32_t>(zip, cd + 24);
            const std::size_t nlen = le<std::uint16_t>(zip, cd + 28), xlen = le<std::uint16_t>(zip, cd + 30),
                              clen = le<std::uint16_t>(zip, cd + 32);
            const std::size_t local = le<std::uint32_t>(zip, cd + 42);
            const std::string name = zip.substr(cd + 46, nlen);
            cd += 46 + nlen + xlen + clen;
            if (name != member && name != member + ".npy") continue;
            if (csize == 0xffffffff || usize == 0xffffffff) throw InputError(file + ": zip64 members are not supported");
            const std::size_t data = local + 30 + le<std::uint16_t>(zip, local + 26) + le<std::uint16_t>(zip, local + 28);
            if (data + csize > zip.size()) throw InputError(file + ": truncated zip member " + name);
            // The array limit (2^27 entries of at most 8 bytes) plus a generous
            // header: anything larger is refused before it is inflated.
            constexpr std::size_t max_member = (std::size_t{1} << 30) + (std::size_t{1} << 20);
            if (usize > max_member || (method == 0 && csize > max_member))
                throw InputError(file + ": zip member " + name + " declares " + std::to_string(method == 0 ? csize : usize) +
                                 " bytes, more than the array limit (2^27 entries)");
            if (method == 0) return zip.substr(data, csize);
            if (method != 8) throw InputError(file + ": zip member " + name + " uses an unsupported compression");
            std::string out(usize, '\0');
            z_stream zs;
            std::memset(&zs, 0, sizeof zs);
            if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) throw InputError(file + ": zlib failure");
            zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zip.data() + data));
            zs.avail_in = static_cast<uInt>(csize);
            zs.next_out = reinterpret_cast<Bytef*>(out.data());
            zs.avail_out = static_cast<uInt>(usize);
            int rc = inflate(&zs, Z_FINISH);
            inflateEnd(&zs);
            if (rc != Z_STREAM_END || zs.total_out != usize) throw InputError(file + ": corrupt deflate data in " + name);
            return out;
        }
        throw InputError(file + ": no member \"" + member + "\" in the archive");
    } catch (const std::out_of_range&) {
        throw InputError(file + ": truncated zip file");
    }
}

NdTensor read_nd(const TensorSpec& spec) {
    if (!path_exists(spec.path)) throw InputError(shown_path(spec.path) + ": no such file");
    const std::string ext = fs::path(spec.path).extension().string();
    NdTensor t;
    if (ext == ".safetensors") {
        if (spec.name.empty()) throw InputError(spec.path + ": name the tensor: " + spec.path + ":NAME");
        t = parse_safetensors_nd(read_file_bytes(spec.path), spec.name, spec.path);
    } else if (ext == ".npz") {
        if (spec.name.empty()) throw InputError(spec.path + ": name the array: " + spec.path + ":NAME");
        t = parse_npy_nd(npz_member(read_file_bytes(spec.path), spec.name, spec.path), spec.path + ":" + spec.name);
    } else {
        t = parse_npy_nd(read_file_bytes(spec.path), spec.path);
    }
    return spec.has_index ? select(t, spec.index) : t;
}

NdTensor select(const NdTensor& t, const std::vector<std::uint64_t>& index) {
    if (index.size() > t.shape.size())
        throw InputError(t.where + ": selector has " + std::to_string(index.size()) + " indices, the tensor has shape " +
                         shape_text(t.shape));
    std::uint64_t off = 0;
    for (std::size_t a = 0; a < index.size(); ++a) {
        if (index[a] >= t.shape[a])
            throw InputError(t.where + ": index " + std::to_string(index[a]) + " out of range on axis " + std::to_string(a) +
                             " (shape " + shape_text(t.shape) + ")");
        off = off * t.shape[a] + index[a];
    }
    NdTensor s;
    s.dtype = t.dtype;
    s.where = t.where;
    s.shape.assign(t.shape.begin() + static_cast<std::ptrdiff_t>(index.size()), t.shape.end());
    const std::uint64_t block = elements(s.shape, t.where) * t.itemsize();
    s.bytes = t.bytes.substr(off * block, block);
    s.where += "[";
    for (std::size_t a = 0; a < index.size(); ++a) s.where.append(a ? "," : "").append(std::to_string(index[a]));
    s.where += "]";
    return s;
}

std::vector<float> to_float32(const NdTensor& t) {
    const std::uint64_t n = t.count();
    std::vector<float> out(n);
    for (std::uint64_t i = 0; i < n; ++i) {
        if (t.dtype == "f32") {
            std::memcpy(&out[i], &t.bytes[i * 4], 4);
        } else if (t.dtype == "f64") {
            double d;
            std::memcpy(&d, &t.bytes[i * 8], 8);
            out[i] = static_cast<float>(d);
        } else if (t.dtype == "bf16") {
            const std::uint32_t bits = static_cast<std::uint32_t>(le<std::uint16_t>(t.bytes, i * 2)) << 16;
            std::memcpy(&out[i], &bits, 4);
        } else if (t.dtype == "f16") {
            // IEEE binary16, decoded exactly (every half is a float).
            const std::uint16_t h = le<std::uint16_t>(t.bytes, i * 2);
            const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
            const float mag = e == 0 ? std::ldexp(static_cast<float>(m), -24)
                              : e == 31 ? (m ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity())
                                        : std::ldexp(static_cast<float>(m | 0x400), e - 25);
            out[i] = (h & 0x8000) ? -mag : mag;
        } else {
            throw InputError(t.where + ": expected a float tensor, found " + t.dtype);
        }
        if (!std::isfinite(out[i])) throw InputError(t.where + ": non-finite value at element " + std::to_string(i));
    }
    return out;
}

std::string npy_header(const std::string& descr, const std::vector<std::uint64_t>& shape) {
    std::string sh = "(";
    for (std::size_t a = 0; a < shape.size(); ++a) sh.append(a ? ", " : "").append(std::to_string(shape[a]));
    sh += shape.size() == 1 ? ",)" : ")";
    std::string header = std::string("{'descr': '").append(descr).append("', 'fortran_order': False, 'shape': ").append(sh).append(", }");
    while ((10 + header.size() + 1) % 64) header += ' ';
    header += '\n';
    std::string out = "\x93NUMPY";
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    return out + header;
}

std::string npy_bytes(const NdTensor& t) {
    NdTensor c = t;
    if (t.dtype == "bf16") {
        c.dtype = "f32";
        c.bytes.assign(t.count() * 4, '\0');
        for (std::uint64_t i = 0; i < t.count(); ++i) {
            c.bytes[i * 4 + 2] = t.bytes[i * 2];
            c.bytes[i * 4 + 3] = t.bytes[i * 2 + 1];
        }
    }
    static const std::pair<const char*, const char*> descr[] = {{"f16", "<f2"}, {"f32", "<f4"}, {"f64", "<f8"},
                                                                {"bool", "|b1"}, {"u8", "|u1"}, {"i32", "<i4"},
                                                                {"i64", "<i8"}};
    std::string d;
    for (auto& [n, s] : descr)
        if (c.dtype == n) d = s;
    return npy_header(d, c.shape) + c.bytes;
}

}  // namespace rankcert::producer
