// Serialising candidates as `rankcert/1` certificates (UNTRUSTED producer).
//
// Doubles are written exactly: as C99 hex floats inline, or as float64 .npy
// sidecars (with their sha256) when an array is large.
#include "rankcert/array.hpp"
#include "rankcert/producer/producer.hpp"

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

std::string write_npy(const std::string& path, const Mat& m) {
    std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + std::to_string(m.rows()) + ", " +
                         std::to_string(m.cols()) + "), }";
    while ((10 + header.size() + 1) % 64) header += ' ';
    header += '\n';
    std::string bytes = "\x93NUMPY";
    bytes += '\x01';
    bytes += '\x00';
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>(header.size() >> 8);
    bytes += header;
    const std::size_t off = bytes.size();
    bytes.resize(off + static_cast<std::size_t>(m.size()) * 8);
    std::size_t s = off;
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j, s += 8) {
            const double v = m(i, j);
            std::memcpy(&bytes[s], &v, 8);  // little-endian host (x86-64, aarch64)
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
    const std::string sha = write_npy(dir + "/" + name, m);
    return {{"npy", name}, {"sha256", sha}};
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

json neumann_json(const NeumannCandidate& c) {
    return {{"bound", "lower"},
            {"kind", "neumann"},
            {"rank", c.rows.size()},
            {"rows", c.rows},
            {"r", coo_json(c.N, c.rows.size(), c.r)},
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

}  // namespace rankcert::producer
