// Parsing and structural validation of `rankcert/1` bundles.
//
// Nothing here decides an inequality; it only makes sure that the data the
// checker will reason about are well formed: shapes agree with n, N, d and
// the certificate's rank, indices are in range and distinct, every row of A
// has an allowed entry.
#include "rankcert/bundle.hpp"

#include "cert/common.hpp"
#include "rankcert/kinds.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace rankcert {

namespace fs = std::filesystem;

bool Instance::is_softmax() const {
    if (kind == InstanceKind::kronecker)
        return std::all_of(factors.begin(), factors.end(), [](const Instance& f) { return f.is_softmax(); });
    return kind != InstanceKind::matrix;
}

bool Instance::allowed(std::size_t i, std::size_t j) const {
    switch (kind) {
    case InstanceKind::matrix: return true;
    case InstanceKind::kronecker: {
        bool ok = true;  // entry ((i_k), (j_k)) is allowed iff every factor's is
        for (std::size_t k = factors.size(); k-- > 0;) {
            const Instance& f = factors[k];
            ok = ok && f.allowed(i % f.n, j % f.N);
            i /= f.n;
            j /= f.N;
        }
        return ok;
    }
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

bool Instance::has_mask() const {
    if (kind == InstanceKind::qk) return mask != MaskKind::none;
    if (kind == InstanceKind::logits)
        return std::any_of(logits.neg_inf.begin(), logits.neg_inf.end(), [](auto f) { return f != 0; });
    if (kind == InstanceKind::kronecker)
        return std::any_of(factors.begin(), factors.end(), [](const Instance& f) { return f.has_mask(); });
    return false;
}

namespace {

using cert::as_vector;

Instance parse_instance(const json& j, const Where& w, ArrayLoader& L, bool nested = false) {
    Instance I;
    const std::string kind = require_string(j, "kind", w);
    if (kind == "kronecker") {
        if (nested) throw InputError(w.key("kind"), "a kronecker factor cannot itself be a kronecker instance");
        const json& fs = require(j, "factors", w);
        if (!fs.is_array() || fs.empty() || fs.size() > 4)
            throw InputError(w.key("factors"), "must be a list of 1 to 4 instances");
        I.kind = InstanceKind::kronecker;
        I.n = I.N = 1;
        constexpr std::uint64_t cap = 1ull << 62;
        for (std::size_t k = 0; k < fs.size(); ++k) {
            const Where wk = w.key("factors").index(k);
            I.factors.push_back(parse_instance(fs[k], wk, L, true));
            const Instance& f = I.factors.back();
            if (f.n > cap / I.n || f.N > cap / I.N)
                throw InputError(wk, "the product of the factors' sizes exceeds 2^62");
            I.n *= f.n;
            I.N *= f.N;
            if (f.kind == InstanceKind::matrix) {
                bool nonzero = false;
                for (const auto& x : f.a.v) nonzero = nonzero || x.sign() != 0;
                if (!nonzero) throw InputError(wk.key("a"), "is the zero matrix (then A = 0; give it directly)");
            }
        }
        return I;
    }
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
        throw InputError(w.key("kind"), "unknown instance kind \"" + kind + "\" (qk, logits, matrix, kronecker)");
    }
    if (I.n == 0 || I.N == 0) throw InputError(w, "empty instance (n = " + std::to_string(I.n) + ", N = " + std::to_string(I.N) + ")");
    if (static_cast<std::uint64_t>(I.n) * I.N > Limits::max_attention)
        throw InputError(w, "n x N = " + std::to_string(I.n) + " x " + std::to_string(I.N) + " exceeds the limit of " +
                                std::to_string(Limits::max_attention) + " attention entries");
    if (I.kind != InstanceKind::matrix) {
        for (std::size_t i = 0; i < I.n; ++i) {
            bool any = false;
            for (std::size_t jj = 0; jj < I.N && !any; ++jj) any = I.allowed(i, jj);
            if (!any) throw InputError(w, "row " + std::to_string(i) + " has no allowed entry (every row needs one)");
        }
    }
    return I;
}

Certificate parse_certificate(const json& c, const Where& w, const Instance& I, ArrayLoader& L) {
    const std::string bound = require_string(c, "bound", w);
    const std::string kind = require_string(c, "kind", w);
    if ((bound == "profile") != (kind == "profile"))
        throw InputError(w.key("bound"), "a profile certificate has \"bound\": \"profile\" and \"kind\": \"profile\"");
    if (bound != "upper" && bound != "lower" && bound != "profile")
        throw InputError(w.key("bound"), "must be \"upper\", \"lower\" or \"profile\"");
    const KindInfo* info = find_kind(kind);
    if (!info) {
        std::string names;
        for (const auto& k : kinds()) names += std::string(names.empty() ? "" : ", ") + k.name;
        throw InputError(w.key("kind"), "unknown certificate kind \"" + kind + "\" (" + names + ")");
    }
    if (bound != to_string(info->bound))
        throw InputError(w.key("bound"), "a " + kind + " certificate proves a" +
                                             (info->bound == Bound::upper ? "n upper" : " lower") + " bound");
    if (is_kron_kind(info->kind) != (I.kind == InstanceKind::kronecker))
        throw InputError(w.key("kind"), I.kind == InstanceKind::kronecker
                                            ? "a kronecker instance takes only kron_factor and kron_neumann certificates"
                                            : "a " + kind + " certificate needs a kronecker instance");
    Certificate cert;
    cert.bound = info->bound;
    info->parse(c, w, I, L, cert);
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

Bundle load_bundle(const fs::path& path, const std::string& display) {
    std::string bytes = read_bytes(path, display);
    json doc = parse_json_text(bytes, display);
    // The folder sidecars are confined to: never empty ("b.json" named alone).
    std::error_code ec;
    const fs::path dir = fs::absolute(path, ec).parent_path();
    if (ec) throw InputError(display + ": cannot resolve the bundle's folder: " + ec.message());
    Bundle b = parse_bundle(doc, dir, display);
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
    case InstanceKind::kronecker: {
        o << "kronecker of " << I.factors.size() << " factors: n = " << I.n << ", N = " << I.N << " (";
        for (std::size_t k = 0; k < I.factors.size(); ++k)
            o << (k ? " (x) " : "") << I.factors[k].n << "x" << I.factors[k].N;
        o << ")";
        break;
    }
    }
    o << "\neps         " << b.eps.str() << "\n";
    o << "claim       lower = " << (b.claim_lower ? std::to_string(*b.claim_lower) : "-")
      << ", upper = " << (b.claim_upper ? std::to_string(*b.claim_upper) : "-") << "\n";
    for (std::size_t i = 0; i < b.certificates.size(); ++i) {
        const Certificate& c = b.certificates[i];
        const std::string what = kind_info(c.kind()).describe(c);
        o << "cert[" << i << "]     " << (c.bound == Bound::profile ? "" : std::string(to_string(c.bound)) + " ")
          << to_string(c.kind()) << (c.bound == Bound::profile ? " r " : " rank ") << c.rank
          << (what.empty() ? "" : ": " + what) << "\n";
    }
    for (const auto& s : b.sidecars) o << "sidecar     " << s.path << " sha256 " << s.sha256 << "\n";
    return o.str();
}

}  // namespace rankcert
