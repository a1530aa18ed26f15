// The floor: the same check as `rankcert verify`, unverified, as a tight
// float64 C++ loop (one thread).  Reads the bundles bench/make_qk_bundle.py
// writes (qk with .npy sidecars, no mask or bias; factor or neumann).
// Build: g++ -O3 -march=native -std=c++20 bench/float_check.cpp -o float_check
// usage: float_check BUNDLE.json
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using json = nlohmann::json;

struct Arr {
    std::size_t rows = 0, cols = 1;
    std::vector<double> v;
};

// Minimal .npy reader: <f4 or <f8, C order, 1-D or 2-D.
Arr load_npy(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const unsigned major = static_cast<unsigned char>(bytes[6]);
    std::size_t hlen, off;
    if (major == 1) { hlen = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8; off = 10; }
    else { std::uint32_t h; std::memcpy(&h, bytes.data() + 8, 4); hlen = h; off = 12; }
    const std::string header = bytes.substr(off, hlen);
    const bool f4 = header.find("<f4") != std::string::npos;
    Arr a;
    const auto s = header.find('(');
    std::sscanf(header.c_str() + s, "(%zu, %zu", &a.rows, &a.cols);
    if (header.find(",)") != std::string::npos) a.cols = 1;
    const char* p = bytes.data() + off + hlen;
    a.v.resize(a.rows * a.cols);
    for (std::size_t t = 0; t < a.v.size(); ++t) {
        if (f4) { float x; std::memcpy(&x, p + 4 * t, 4); a.v[t] = x; }
        else std::memcpy(&a.v[t], p + 8 * t, 8);
    }
    return a;
}

int main(int argc, char** argv) {
    if (argc != 2) { std::cerr << "usage: float_check BUNDLE.json\n"; return 3; }
    const std::string path = argv[1], dir = path.substr(0, path.find_last_of('/') + 1);
    json doc = json::parse(std::ifstream(path));
    const json& inst = doc["instance"];
    const Arr Q = load_npy(dir + inst["q"]["npy"].get<std::string>()), K = load_npy(dir + inst["k"]["npy"].get<std::string>());
    const std::size_t n = Q.rows, N = K.rows, d = Q.cols;
    auto num = [](const json& j) {
        std::string s = j.is_string() ? j.get<std::string>() : j.dump();
        const auto slash = s.find('/');
        return slash == std::string::npos ? std::stod(s) : std::stod(s.substr(0, slash)) / std::stod(s.substr(slash + 1));
    };
    const double scale = inst["scale"].is_object() ? 1 / std::sqrt(num(inst["scale"]["rsqrt"])) : num(inst["scale"]);
    const double c = scale * (inst.contains("temperature") ? num(inst["temperature"]) : 1.0), eps = num(doc["eps"]);
    std::vector<double> KT(d * N);
    for (std::size_t j = 0; j < N; ++j)
        for (std::size_t t = 0; t < d; ++t) KT[t * N + j] = K.v[j * d + t];
    std::vector<double> row(N);
    // Row i of A, softmax of c Q K^T.
    auto softmax_row = [&](std::size_t i) {
        std::fill(row.begin(), row.end(), 0.0);
        for (std::size_t t = 0; t < d; ++t) {
            const double q = c * Q.v[i * d + t];
            const double* kt = KT.data() + t * N;
            for (std::size_t j = 0; j < N; ++j) row[j] += q * kt[j];
        }
        double m = row[0], z = 0;
        for (double x : row) m = std::max(m, x);
        for (double& x : row) z += (x = std::exp(x - m));
        for (double& x : row) x /= z;
    };
    const json& cert = doc["certificates"][0];
    if (cert["kind"] == "factor") {
        const Arr U = load_npy(dir + cert["u"]["npy"].get<std::string>()), W = load_npy(dir + cert["w"]["npy"].get<std::string>());
        const std::size_t k = U.cols;
        std::vector<double> WT(k * N), b(N);
        for (std::size_t j = 0; j < N; ++j)
            for (std::size_t t = 0; t < k; ++t) WT[t * N + j] = W.v[j * k + t];
        double worst = 0;
        for (std::size_t i = 0; i < n; ++i) {
            softmax_row(i);
            std::fill(b.begin(), b.end(), 0.0);
            for (std::size_t t = 0; t < k; ++t) {
                const double u = U.v[i * k + t];
                const double* wt = WT.data() + t * N;
                for (std::size_t j = 0; j < N; ++j) b[j] += u * wt[j];
            }
            double e = 0;
            for (std::size_t j = 0; j < N; ++j) e += std::fabs(row[j] - b[j]);
            worst = std::max(worst, e);
        }
        std::printf("max row error %.6g: %s\n", worst, worst <= eps ? "ok" : "fails");
    } else {
        const Arr R = load_npy(dir + cert["r"]["npy"].get<std::string>());
        const std::vector<std::size_t> rows = cert["rows"].get<std::vector<std::size_t>>();
        const std::size_t m = rows.size();
        double rho = 0, worst = 0;
        for (std::size_t j = 0; j < N; ++j) {
            double s = 0;
            for (std::size_t u = 0; u < m; ++u) s += std::fabs(R.v[j * m + u]);
            rho = std::max(rho, s);
        }
        std::vector<double> v(m);
        for (std::size_t t = 0; t < m; ++t) {
            softmax_row(rows[t]);
            std::fill(v.begin(), v.end(), 0.0);
            for (std::size_t j = 0; j < N; ++j) {
                const double a = row[j];
                const double* r = R.v.data() + j * m;
                for (std::size_t u = 0; u < m; ++u) v[u] += a * r[u];
            }
            v[t] -= 1;
            double e = 0;
            for (double x : v) e += std::fabs(x);
            worst = std::max(worst, e);
        }
        std::printf("delta + eps rho = %.6g: %s\n", worst + eps * rho, worst + eps * rho < 1 ? "ok" : "fails");
    }
    return 0;
}
