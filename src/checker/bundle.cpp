// Parsing and structural validation of `rankcert/1` bundles.
//
// Nothing here decides an inequality; it only makes sure that the data the
// checker will reason about are well formed: shapes agree with n, N, d and
// the certificate's rank, indices are in range and distinct, every row of A
// has an allowed entry.
#include "rankcert/bundle.hpp"

#include <algorithm>
#include <fstream>
#include <tuple>
#include <set>
#include <sstream>

namespace rankcert {

namespace fs = std::filesystem;

const char* to_string(CertKind k) {
    switch (k) {
    case CertKind::factor: return "factor";
    case CertKind::row_interpolative: return "row_interpolative";
    case CertKind::neumann: return "neumann";
    case CertKind::tail: return "tail";
    case CertKind::trivial: return "trivial";
    case CertKind::profile: return "profile";
    case CertKind::sandwich: return "sandwich";
    }
    return "?";
}

bool Instance::allowed(std::size_t i, std::size_t j) const {
    switch (kind) {
    case InstanceKind::matrix: return true;
    case InstanceKind::logits: return !logits.is_neg_inf(i, j);
    case InstanceKind::qk:
        switch (mask) {
        case MaskKind::none: return true;
        case MaskKind::causal: return j <= i + (N - n);  // N >= n checked at parse time
        case MaskKind::explicit_mask: return mask_matrix(i, j);
        }
    }
    return true;
}

namespace {

void expect_shape(const Matrix& m, std::size_t rows, std::size_t cols, const Where& w, const std::string& what) {
    if (m.rows != rows || m.cols != cols)
        throw InputError(w, "shape [" + std::to_string(m.rows) + ", " + std::to_string(m.cols) + "] does not match " +
                                what + " [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
}

std::vector<Rat> as_vector(const Matrix& m, std::size_t len, const Where& w) {
    if (!((m.rows == len && m.cols == 1) || (m.rows == 1 && m.cols == len)))
        throw InputError(w, "expected a vector of length " + std::to_string(len) + ", found shape [" +
                                std::to_string(m.rows) + ", " + std::to_string(m.cols) + "]");
    return m.v;
}

Instance parse_instance(const json& j, const Where& w, ArrayLoader& L) {
    Instance I;
    const std::string kind = require_string(j, "kind", w);
    if (kind == "qk") {
        I.kind = InstanceKind::qk;
        I.q = L.load(require(j, "q", w), w.key("q"));
        I.k = L.load(require(j, "k", w), w.key("k"));
        if (I.q.is_vector || I.k.is_vector) throw InputError(w.key(I.q.is_vector ? "q" : "k"), "must be a matrix [rows, d]");
        if (I.q.cols != I.k.cols)
            throw InputError(w.key("k"), "has d = " + std::to_string(I.k.cols) + " columns but q has d = " +
                                             std::to_string(I.q.cols));
        I.n = I.q.rows;
        I.N = I.k.rows;
        I.scale = parse_number(require(j, "scale", w), w.key("scale"), true, false);
        if (I.scale.kind == Number::Kind::rational && I.scale.q.sign() <= 0)
            throw InputError(w.key("scale"), "must be positive");
        if (auto t = optional(j, "temperature")) {
            I.temperature = parse_rational(*t, w.key("temperature"));
            if (I.temperature.sign() <= 0) throw InputError(w.key("temperature"), "must be positive");
        }
        if (auto b = optional(j, "key_bias"); b && !b->is_null())
            I.key_bias = as_vector(L.load(*b, w.key("key_bias")), I.N, w.key("key_bias"));
        if (auto m = optional(j, "mask"); m && !m->is_null()) {
            if (m->is_string()) {
                const auto s = m->get<std::string>();
                if (s == "none") I.mask = MaskKind::none;
                else if (s == "causal") I.mask = MaskKind::causal;
                else throw InputError(w.key("mask"), "must be \"none\", \"causal\" or a boolean array, found \"" + s + "\"");
            } else {
                I.mask = MaskKind::explicit_mask;
                I.mask_matrix = L.load_bool(*m, w.key("mask"));
                if (I.mask_matrix.rows != I.n || I.mask_matrix.cols != I.N)
                    throw InputError(w.key("mask"), "shape [" + std::to_string(I.mask_matrix.rows) + ", " +
                                                        std::to_string(I.mask_matrix.cols) + "] does not match n x N [" +
                                                        std::to_string(I.n) + ", " + std::to_string(I.N) + "]");
            }
        }
        if (I.mask == MaskKind::causal && I.N < I.n)
            throw InputError(w.key("mask"), "causal mask needs N >= n (query " + std::to_string(I.n - I.N - 1) +
                                                " would see no key)");
    } else if (kind == "logits") {
        I.kind = InstanceKind::logits;
        I.logits = L.load(require(j, "logits", w), w.key("logits"), true);
        if (I.logits.is_vector) throw InputError(w.key("logits"), "must be a matrix [n, N]");
        I.n = I.logits.rows;
        I.N = I.logits.cols;
    } else if (kind == "matrix") {
        I.kind = InstanceKind::matrix;
        I.a = L.load(require(j, "a", w), w.key("a"));
        if (I.a.is_vector) throw InputError(w.key("a"), "must be a matrix [n, N]");
        I.n = I.a.rows;
        I.N = I.a.cols;
    } else {
        throw InputError(w.key("kind"), "unknown instance kind \"" + kind + "\" (qk, logits, matrix)");
    }
    if (I.n == 0 || I.N == 0) throw InputError(w, "empty instance (n = " + std::to_string(I.n) + ", N = " + std::to_string(I.N) + ")");
    if (I.kind != InstanceKind::matrix) {
        for (std::size_t i = 0; i < I.n; ++i) {
            bool any = false;
            for (std::size_t jj = 0; jj < I.N && !any; ++jj) any = I.allowed(i, jj);
            if (!any) throw InputError(w, "row " + std::to_string(i) + " has no allowed entry (every row needs one)");
        }
    }
    return I;
}

std::vector<std::size_t> parse_rows(const json& j, const Where& w, std::size_t n) {
    if (!j.is_array()) throw InputError(w, "expected a list of row indices");
    std::vector<std::size_t> rows;
    std::set<std::size_t> seen;
    for (std::size_t t = 0; t < j.size(); ++t) {
        auto r = parse_index(j[t], w.index(t), n);
        if (!seen.insert(r).second) throw InputError(w.index(t), "row " + std::to_string(r) + " repeated (rows must be distinct)");
        rows.push_back(r);
    }
    return rows;
}

void check_rank(const json& c, const Where& w, std::uint64_t expected, Certificate& cert, bool required) {
    if (auto r = optional(c, "rank")) {
        cert.rank = parse_index(*r, w.key("rank"));
        if (cert.rank != expected)
            throw InputError(w.key("rank"), "is " + std::to_string(cert.rank) + " but the data prove rank " +
                                                std::to_string(expected));
    } else if (required) {
        throw InputError(w.key("rank"), "missing");
    }
    cert.rank = expected;
}

std::pair<Rat, Rat> parse_interval(const json& obj, const char* key, const Where& w) {
    const json& iv = require(obj, key, w);
    if (!iv.is_array() || iv.size() != 2) throw InputError(w.key(key), "must be [lo, hi]");
    Rat lo = parse_rational(iv[0], w.key(key).index(0)), hi = parse_rational(iv[1], w.key(key).index(1));
    if (lo > hi) throw InputError(w.key(key), "lo > hi");
    return {lo, hi};
}

void parse_profile(const json& c, const Where& w, const Instance& I, ArrayLoader& L, Certificate& cert) {
    // The interaction is defined only where every logit is finite.
    if ((I.kind == InstanceKind::qk && I.mask != MaskKind::none) ||
        (I.kind == InstanceKind::logits && std::any_of(I.logits.neg_inf.begin(), I.logits.neg_inf.end(), [](auto f) { return f != 0; })))
        throw InputError(w, "a profile needs an unmasked instance (masked rows have no interaction C)");
    auto& p = cert.profile;
    p.r = parse_index(require(c, "r", w), w.key("r"), 1u << 16);
    cert.rank = p.r;
    p.x = L.load(require(c, "x", w), w.key("x"));
    p.y = L.load(require(c, "y", w), w.key("y"));
    expect_shape(p.x, I.n, p.r, w.key("x"), "n x r");
    expect_shape(p.y, I.N, p.r, w.key("y"), "N x r");
    p.gauge = L.load(require(c, "gauge", w), w.key("gauge"));
    expect_shape(p.gauge, p.r, p.r, w.key("gauge"), "r x r");
    p.lambda = as_vector(L.load(require(c, "lambda", w), w.key("lambda")), I.n, w.key("lambda"));
    p.mu = as_vector(L.load(require(c, "mu", w), w.key("mu")), I.N, w.key("mu"));
    p.zu = L.load(require(c, "zu", w), w.key("zu"));
    p.zv = L.load(require(c, "zv", w), w.key("zv"));
    if (p.zu.rows != I.n || p.zv.rows != I.N || p.zu.cols != p.zv.cols)
        throw InputError(w.key("zu"), "zu (n x s) and zv (N x s) must share their column count");
    p.z_norm_sq = parse_rational(require(c, "z_norm_sq", w), w.key("z_norm_sq"));
    if (p.z_norm_sq.sign() <= 0) throw InputError(w.key("z_norm_sq"), "must be positive");
    const json& cl = require(c, "claims", w);
    const Where wc = w.key("claims");
    std::tie(p.q_lo, p.q_hi) = parse_interval(cl, "q", wc);
    std::tie(p.tau_lo, p.tau_hi) = parse_interval(cl, "tau", wc);
    std::tie(p.kappa_lo, p.kappa_hi) = parse_interval(cl, "kappa", wc);
    if (auto v = optional(cl, "visible_dim")) p.visible_dim = parse_index(*v, wc.key("visible_dim"));
    if (optional(cl, "tau_star")) p.tau_star = parse_interval(cl, "tau_star", wc);
}

Certificate parse_certificate(const json& c, const Where& w, const Instance& I, ArrayLoader& L) {
    Certificate cert;
    const std::string bound = require_string(c, "bound", w);
    const std::string kind = require_string(c, "kind", w);
    if (bound == "profile" || kind == "profile") {
        if (bound != "profile" || kind != "profile")
            throw InputError(w.key("bound"), "a profile certificate has \"bound\": \"profile\" and \"kind\": \"profile\"");
        cert.kind = CertKind::profile;
        parse_profile(c, w, I, L, cert);
        return cert;
    }
    if (bound != "upper" && bound != "lower") throw InputError(w.key("bound"), "must be \"upper\", \"lower\" or \"profile\"");
    cert.upper = bound == "upper";
    auto need_bound = [&](bool upper) {
        if (cert.upper != upper)
            throw InputError(w.key("bound"), "a " + kind + " certificate proves a" + (upper ? "n upper" : " lower") + " bound");
    };
    if (kind == "factor") {
        need_bound(true);
        cert.kind = CertKind::factor;
        cert.u = L.load(require(c, "u", w), w.key("u"));
        cert.w = L.load(require(c, "w", w), w.key("w"));
        std::size_t k = cert.u.cols;
        if (cert.u.is_vector && cert.u.rows == I.n) k = 1;
        expect_shape(cert.u, I.n, k, w.key("u"), "n x k");
        expect_shape(cert.w, I.N, k, w.key("w"), "N x k");
        check_rank(c, w, k, cert, true);
    } else if (kind == "row_interpolative") {
        need_bound(true);
        cert.kind = CertKind::row_interpolative;
        cert.rows = parse_rows(require(c, "rows", w), w.key("rows"), I.n);
        cert.x = L.load(require(c, "x", w), w.key("x"));
        expect_shape(cert.x, I.n, cert.rows.size(), w.key("x"), "n x k");
        check_rank(c, w, cert.rows.size(), cert, false);
    } else if (kind == "neumann") {
        need_bound(false);
        cert.kind = CertKind::neumann;
        cert.rows = parse_rows(require(c, "rows", w), w.key("rows"), I.n);
        cert.r = L.load_sparse(require(c, "r", w), w.key("r"));
        if (cert.r.rows != I.N || cert.r.cols != cert.rows.size())
            throw InputError(w.key("r"), "shape [" + std::to_string(cert.r.rows) + ", " + std::to_string(cert.r.cols) +
                                             "] does not match N x m [" + std::to_string(I.N) + ", " +
                                             std::to_string(cert.rows.size()) + "]");
        check_rank(c, w, cert.rows.size(), cert, true);
    } else if (kind == "tail") {
        need_bound(false);
        cert.kind = CertKind::tail;
        cert.rows = parse_rows(require(c, "rows", w), w.key("rows"), I.n);
        if (cert.rows.size() > Limits::max_tail_rows)
            throw InputError(w.key("rows"), "a tail certificate may use at most " + std::to_string(Limits::max_tail_rows) +
                                                " rows (its Gram matrix is m x m)");
        cert.r = L.load_sparse(require(c, "r", w), w.key("r"));
        if (cert.r.rows != I.N) throw InputError(w.key("r"), "has " + std::to_string(cert.r.rows) + " rows, N = " + std::to_string(I.N));
        cert.k = parse_index(require(c, "k", w), w.key("k"));
        cert.mu = parse_rational(require(c, "mu", w), w.key("mu"));
        if (cert.mu.sign() < 0) throw InputError(w.key("mu"), "must be >= 0");
        cert.f = L.load(require(c, "f", w), w.key("f"));
        if (cert.f.rows != cert.rows.size())
            throw InputError(w.key("f"), "has " + std::to_string(cert.f.rows) + " rows, expected m = " +
                                             std::to_string(cert.rows.size()));
        check_rank(c, w, cert.k + 1, cert, true);
    } else if (kind == "sandwich") {
        need_bound(true);
        cert.kind = CertKind::sandwich;
        if ((I.kind == InstanceKind::qk && I.mask != MaskKind::none) ||
            (I.kind == InstanceKind::logits && std::any_of(I.logits.neg_inf.begin(), I.logits.neg_inf.end(), [](auto f) { return f != 0; })))
            throw InputError(w, "a sandwich certificate needs an unmasked instance");
        auto& p = cert.profile;
        p.r = parse_index(require(c, "r", w), w.key("r"), 1u << 16);
        p.x = L.load(require(c, "x", w), w.key("x"));
        p.y = L.load(require(c, "y", w), w.key("y"));
        expect_shape(p.x, I.n, p.r, w.key("x"), "n x r");
        expect_shape(p.y, I.N, p.r, w.key("y"), "N x r");
        cert.sandwich_tau = parse_rational(require(c, "tau_star", w), w.key("tau_star"));
        if (cert.sandwich_tau.sign() < 0) throw InputError(w.key("tau_star"), "must be >= 0");
        cert.u = L.load(require(c, "u", w), w.key("u"));
        cert.w = L.load(require(c, "w", w), w.key("w"));
        expect_shape(cert.u, I.n, cert.u.cols, w.key("u"), "n x k");
        expect_shape(cert.w, I.N, cert.u.cols, w.key("w"), "N x k");
        check_rank(c, w, cert.u.cols, cert, true);
    } else if (kind == "trivial") {
        need_bound(false);
        cert.kind = CertKind::trivial;
        check_rank(c, w, 1, cert, true);
    } else {
        throw InputError(w.key("kind"), "unknown certificate kind \"" + kind +
                                            "\" (factor, row_interpolative, neumann, tail, trivial, sandwich, profile)");
    }
    return cert;
}

std::optional<std::uint64_t> parse_claim_bound(const json& claim, const char* key, const Where& w) {
    auto v = optional(claim, key);
    if (!v || v->is_null()) return std::nullopt;
    return parse_index(*v, w.key(key));
}

}  // namespace

Bundle parse_bundle(const json& doc, const fs::path& dir, const std::string& display) {
    Bundle b;
    b.display = display;
    Where w{display, ""};
    if (!doc.is_object()) throw InputError(w, "a bundle must be a JSON object");
    const std::string fmt = require_string(doc, "format", w);
    if (fmt != "rankcert/1") throw InputError(w.key("format"), "unsupported format \"" + fmt + "\" (this is rankcert/1)");
    ArrayLoader L(dir, display);
    b.instance = parse_instance(require(doc, "instance", w), w.key("instance"), L);
    b.eps = parse_rational(require(doc, "eps", w), w.key("eps"));
    if (b.eps.sign() < 0) throw InputError(w.key("eps"), "must be >= 0");
    if (auto c = optional(doc, "claim"); c && !c->is_null()) {
        if (!c->is_object()) throw InputError(w.key("claim"), "must be an object");
        b.claim_lower = parse_claim_bound(*c, "lower", w.key("claim"));
        b.claim_upper = parse_claim_bound(*c, "upper", w.key("claim"));
    }
    const json& certs = require(doc, "certificates", w);
    if (!certs.is_array()) throw InputError(w.key("certificates"), "must be a list");
    for (std::size_t i = 0; i < certs.size(); ++i)
        b.certificates.push_back(parse_certificate(certs[i], w.key("certificates").index(i), b.instance, L));
    if (auto p = optional(doc, "provenance")) b.provenance = *p;
    b.sidecars = L.sidecars();
    return b;
}

namespace {
std::string read_bytes(const fs::path& path, const std::string& display) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw InputError(display + ": is a directory");
    auto size = fs::file_size(path, ec);
    if (ec) throw InputError(display + ": cannot read file: " + ec.message());
    if (size > Limits::max_json_bytes) throw InputError(display + ": file too large for a bundle");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(display + ": cannot open file");
    std::string bytes(size, '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(size));
    if (static_cast<std::uint64_t>(in.gcount()) != size) throw InputError(display + ": short read");
    return bytes;
}
}  // namespace

json read_document(const fs::path& path, const std::string& display, std::string* sha256) {
    std::string bytes = read_bytes(path, display);
    json doc = parse_json_text(bytes, display);
    if (sha256) *sha256 = sha256_hex(bytes);
    return doc;
}

std::optional<Bundle> load_if_bundle(const fs::path& path, const std::string& display) {
    std::string bytes = read_bytes(path, display);
    json doc = parse_json_text(bytes, display);
    if (!doc.is_object() || !doc.contains("format") || doc["format"] != "rankcert/1") return std::nullopt;
    Bundle b = parse_bundle(doc, path.parent_path(), display);
    b.sha256 = sha256_hex(bytes);
    return b;
}

Bundle load_bundle(const fs::path& path, const std::string& display) {
    std::string bytes = read_bytes(path, display);
    json doc = parse_json_text(bytes, display);
    Bundle b = parse_bundle(doc, path.parent_path(), display);
    b.sha256 = sha256_hex(bytes);
    return b;
}

std::string describe(const Bundle& b) {
    std::ostringstream o;
    const Instance& I = b.instance;
    o << "bundle      " << b.display << "\n";
    o << "sha256      " << b.sha256 << "\n";
    o << "instance    ";
    switch (I.kind) {
    case InstanceKind::qk: {
        o << "qk: n = " << I.n << ", N = " << I.N << ", d = " << I.d() << ", scale = ";
        if (I.scale.kind == Number::Kind::rsqrt) o << "1/sqrt(" << I.scale.q.str() << ")";
        else o << I.scale.q.str();
        o << ", temperature = " << I.temperature.str() << ", key_bias = " << (I.key_bias.empty() ? "none" : "given")
          << ", mask = "
          << (I.mask == MaskKind::none ? "none" : I.mask == MaskKind::causal ? "causal" : "explicit");
        break;
    }
    case InstanceKind::logits: {
        std::size_t masked = 0;
        for (auto f : I.logits.neg_inf) masked += f;
        o << "logits: n = " << I.n << ", N = " << I.N << ", masked entries = " << masked;
        break;
    }
    case InstanceKind::matrix: o << "matrix: n = " << I.n << ", N = " << I.N; break;
    }
    o << "\neps         " << b.eps.str() << "\n";
    o << "claim       lower = " << (b.claim_lower ? std::to_string(*b.claim_lower) : "-")
      << ", upper = " << (b.claim_upper ? std::to_string(*b.claim_upper) : "-") << "\n";
    for (std::size_t i = 0; i < b.certificates.size(); ++i) {
        const Certificate& c = b.certificates[i];
        o << "cert[" << i << "]     " << (c.kind == CertKind::profile ? "" : c.upper ? "upper " : "lower ") << to_string(c.kind)
          << (c.kind == CertKind::profile ? " r " : " rank ") << c.rank;
        switch (c.kind) {
        case CertKind::factor: o << ": u " << c.u.rows << "x" << c.u.cols << ", w " << c.w.rows << "x" << c.w.cols; break;
        case CertKind::row_interpolative: o << ": " << c.rows.size() << " rows, x " << c.x.rows << "x" << c.x.cols; break;
        case CertKind::neumann:
            o << ": " << c.rows.size() << " rows, r " << c.r.rows << "x" << c.r.cols << " with " << c.r.entries.size()
              << " nonzeros";
            break;
        case CertKind::tail:
            o << ": " << c.rows.size() << " rows, r " << c.r.rows << "x" << c.r.cols << ", k = " << c.k
              << ", mu = " << c.mu.str() << ", f " << c.f.rows << "x" << c.f.cols;
            break;
        case CertKind::trivial: break;
        case CertKind::sandwich:
            o << ": T of rank " << c.profile.r << ", tau* <= " << c.sandwich_tau.str() << ", factor " << c.u.rows << "x" << c.u.cols;
            break;
        case CertKind::profile:
            o << ": T = X Y^T with r = " << c.profile.r << ", claims q in [" << c.profile.q_lo.str() << ", "
              << c.profile.q_hi.str() << "], kappa in [" << c.profile.kappa_lo.str() << ", " << c.profile.kappa_hi.str() << "]";
            break;
        }
        o << "\n";
    }
    for (const auto& s : b.sidecars) o << "sidecar     " << s.path << " sha256 " << s.sha256 << "\n";
    return o.str();
}

}  // namespace rankcert
