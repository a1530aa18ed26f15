// Serialising candidates as `rankcert/1` certificates (UNTRUSTED producer).
//
// Doubles are written exactly: as C99 hex floats inline, or as float64 .npy
// sidecars (with their sha256) when an array is large.
#include "rankcert/array.hpp"
#include "rankcert/producer/producer.hpp"
#include "rankcert/paths.hpp"
#include "rankcert/producer/tensor.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace rankcert::producer {

std::string exact_text(double x) {
    if (x == 0) return "0";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a", x);
    return buf;
}

bool is_float32(const Mat& m) {
    for (Eigen::Index i = 0; i < m.size(); ++i) {
        const double v = m.data()[i];
        if (static_cast<double>(static_cast<float>(v)) != v) return false;
    }
    return true;
}

bool is_float16(const Mat& m) {
    for (Eigen::Index i = 0; i < m.size(); ++i) {
        const double v = m.data()[i];
        if (static_cast<double>(static_cast<_Float16>(v)) != v) return false;
    }
    return true;
}

std::string write_npy(const std::string& path, const Mat& m, bool f32) {
    return write_npy(path, m, f32 ? 4 : 8);
}

std::string write_npy(const std::string& path, const Mat& m, int bytes_per_entry) {
    const std::size_t isz = static_cast<std::size_t>(bytes_per_entry);
    if (isz != 2 && isz != 4 && isz != 8) throw std::invalid_argument("write_npy: 2, 4 or 8 bytes per entry");
    std::string bytes = npy_header(isz == 2 ? "<f2" : isz == 4 ? "<f4" : "<f8",
                                   {static_cast<std::uint64_t>(m.rows()), static_cast<std::uint64_t>(m.cols())});
    const std::size_t off = bytes.size();
    bytes.resize(off + static_cast<std::size_t>(m.size()) * isz);
    std::size_t s = off;
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j, s += isz) {
            const double v = m(i, j);
            const float f = static_cast<float>(v);
            const _Float16 h = static_cast<_Float16>(v);
            const void* src = isz == 2 ? static_cast<const void*>(&h) : isz == 4 ? static_cast<const void*>(&f)
                                                                                : static_cast<const void*>(&v);
            std::memcpy(&bytes[s], src, isz);  // little-endian host
        }
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path);
    return sha256_hex(bytes);
}

json array_json(const Mat& m, const std::string& dir, const std::string& name, std::size_t inline_limit) {
    if (static_cast<std::size_t>(m.size()) <= inline_limit) {
        json data = json::array();
        for (Eigen::Index i = 0; i < m.rows(); ++i)
            for (Eigen::Index j = 0; j < m.cols(); ++j) data.push_back(exact_text(m(i, j)));
        return {{"shape", {m.rows(), m.cols()}}, {"data", data}};
    }
    // float16 or float32 when every entry is one (exact either way).
    const std::string sha = write_npy(dir + "/" + name, m, is_float16(m) ? 2 : is_float32(m) ? 4 : 8);
    return {{"npy", name}, {"sha256", sha}};
}

Mat round_to_float32(const Mat& m) { return m.cast<float>().cast<double>(); }

Mat round_to_float16(const Mat& m) {
    return m.unaryExpr([](double v) { return static_cast<double>(static_cast<_Float16>(v)); });
}

json factor_json(const FactorCandidate& c, const std::string& dir, const std::string& stem) {
    return {{"bound", "upper"},
            {"kind", "factor"},
            {"rank", c.k},
            {"u", array_json(c.U, dir, stem + ".u.npy")},
            {"w", array_json(c.W, dir, stem + ".w.npy")},
            {"producer", {{"method", c.method}, {"float_error", c.float_error}}}};
}

json row_interp_json(const RowInterpCandidate& c, const std::string& dir, const std::string& stem) {
    return {{"bound", "upper"},
            {"kind", "row_interpolative"},
            {"rank", c.rows.size()},
            {"rows", c.rows},
            {"x", array_json(c.X, dir, stem + ".x.npy")},
            {"producer", {{"method", "pivoted-qr+l1"}, {"float_error", c.float_error}}}};
}

namespace {
json coo_json(std::size_t rows, std::size_t cols, const std::vector<NeumannCandidate::Entry>& r) {
    json ri = json::array(), ci = json::array(), v = json::array();
    for (const auto& e : r) {
        ri.push_back(e.j);
        ci.push_back(e.t);
        v.push_back(exact_text(e.v));
    }
    return {{"shape", {rows, cols}}, {"coo", {{"row", ri}, {"col", ci}, {"val", v}}}};
}
}  // namespace

json neumann_json(const NeumannCandidate& c, const std::string& dir, const std::string& stem) {
    json r;
    // Inline triplets cost about 25 bytes each, a dense float16 sidecar 2
    // bytes per entry of N x m.
    if (c.r.size() <= 256 || c.r.size() * 12 < c.N * c.rows.size()) {
        r = coo_json(c.N, c.rows.size(), c.r);
    } else {
        Mat dense = Mat::Zero(static_cast<Eigen::Index>(c.N), static_cast<Eigen::Index>(c.rows.size()));
        for (const auto& e : c.r) dense(static_cast<Eigen::Index>(e.j), static_cast<Eigen::Index>(e.t)) = e.v;
        r = array_json(dense, dir, stem + ".neumann-r.npy", 0);
    }
    return {{"bound", "lower"},
            {"kind", "neumann"},
            {"rank", c.rows.size()},
            {"rows", c.rows},
            {"r", r},
            {"producer", {{"method", c.method}, {"float_value", c.float_value}}}};
}

json tail_json(const TailCandidate& c, const std::string& dir, const std::string& stem) {
    return {{"bound", "lower"},
            {"kind", "tail"},
            {"rank", c.k + 1},
            {"rows", c.rows},
            {"r", coo_json(c.N, c.p, c.r)},
            {"k", c.k},
            {"mu", exact_text(c.mu)},
            {"f", array_json(c.F, dir, stem + ".tail-f.npy")},
            {"producer", {{"method", c.method}, {"float_slack", c.float_slack}}}};
}

void copy_instance_sidecars(const json& inst, const std::filesystem::path& from, const std::filesystem::path& to,
                            const std::string& display) {
    for (const char* key : {"q", "k", "key_bias", "mask", "logits", "a"}) {
        if (!inst.contains(key) || !inst[key].is_object()) continue;
        for (const char* f : {"npy", "safetensors"}) {
            if (!inst[key].contains(f)) continue;
            const Where w{display, std::string("instance.") + key + "." + f};
            if (!inst[key][f].is_string()) throw InputError(w, "must be a string");
            copy_confined(from, to, inst[key][f].get<std::string>(), w);
        }
    }
}

}  // namespace rankcert::producer
