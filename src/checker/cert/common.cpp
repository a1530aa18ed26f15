// Shared helpers of the certificate units (see common.hpp).
#include "common.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace rankcert::cert {

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
        const auto stated = parse_index(*r, w.key("rank"));
        if (stated != expected)
            throw InputError(w.key("rank"), "is " + std::to_string(stated) + " but the data prove rank " +
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

const json& kron_factor_list(const json& c, const Where& w, const Instance& I, const std::string& what) {
    const json& fs = require(c, "factors", w);
    if (!fs.is_array() || fs.size() != I.factors.size())
        throw InputError(w.key("factors"), "must list one factor " + what + " per factor of the instance (" +
                                               std::to_string(I.factors.size()) + ")");
    return fs;
}

Matrix load_shaped(const json& c, const char* key, const Where& w, ArrayLoader& L, std::size_t rows, std::size_t cols,
                   const std::string& what) {
    Matrix m = L.load(require(c, key, w), w.key(key));
    expect_shape(m, rows, cols, w.key(key), what);
    return m;
}

namespace {
std::string approx(const Rat& q) {
    Ball b;
    arb_set_fmpq(b.get(), q.get(), 64);
    char* s = arb_get_str(b.get(), 12, ARB_STR_NO_RADIUS);
    std::string out(s);
    flint_free(s);
    return out;
}
}  // namespace

std::string exact_text(const Rat& q) {
    std::string x = q.str();
    if (x.size() <= 24) return x;
    std::string out("~");  // (not "~" + ...: GCC 12 -Wrestrict false positive)
    out += approx(q);
    return out;
}

std::string interval_text(const Endpoints& e) {
    if (!e.bounded) return "[-inf, inf]";
    if (e.lo == e.hi) return exact_text(e.lo);  // an exact value: exactly, when short
    std::string out("[");
    out += approx(e.lo);
    out += ", ";
    out += approx(e.hi);
    out += "]";
    return out;
}

Rat row_sum_norm(const SparseMatrix& r) {
    // Row sums of |R_ju|, exactly.  Dyadic entries (every float from .npy or
    // safetensors) are summed as integers over the row's largest power of
    // two, which avoids a gcd per addition; other rows in rationals.
    std::vector<std::vector<std::size_t>> by_row(r.rows);
    for (std::size_t e = 0; e < r.entries.size(); ++e) by_row[r.entries[e].row].push_back(e);
    Rat best;
    fmpz_t acc, t;
    fmpz_init(acc);
    fmpz_init(t);
    for (const auto& es : by_row) {
        bool dyadic = true;
        flint_bitcnt_t top = 0;
        for (std::size_t e : es) {
            const fmpz* den = fmpq_denref(r.entries[e].val.get());
            const flint_bitcnt_t v = fmpz_val2(den);
            if (v + 1 != fmpz_bits(den) || v > 4096) {
                dyadic = false;
                break;
            }
            top = std::max(top, v);
        }
        Rat sum;
        if (dyadic) {
            fmpz_zero(acc);
            for (std::size_t e : es) {
                const fmpq* q = r.entries[e].val.get();
                fmpz_abs(t, fmpq_numref(q));
                fmpz_mul_2exp(t, t, top - fmpz_val2(fmpq_denref(q)));
                fmpz_add(acc, acc, t);
            }
            fmpz_one(t);
            fmpz_mul_2exp(t, t, top);
            fmpq_set_fmpz_frac(sum.get(), acc, t);  // canonicalises once
        } else {
            for (std::size_t e : es) sum = sum + r.entries[e].val.abs();
        }
        if (sum > best) best = sum;
    }
    fmpz_clear(t);
    fmpz_clear(acc);
    return best;
}

void fill_rowwise(CertResult& res, const rows::RowOutcome& o, const std::string& quantity, const std::string& rel,
                  const Rat& thr, const std::string& row_name) {
    res.verdict = o.verdict;
    res.precision = o.precision;
    res.decisive = {{"quantity", quantity},
                    {row_name, o.row},
                    {"enclosure", o.enclosure.empty() ? json::array() : endpoints_json(o.enclosure[0])},
                    {"relation", rel},
                    {"threshold", thr.str()}};
    if (o.verdict == Verdict::undecided) res.decisive["undecided_rows"] = o.undecided_rows;
    res.decisive["fast_rows"] = o.fast_rows;
}

Rat grouped_row_norm(const SparseMatrix& v, const std::vector<std::size_t>& group_of_col) {
    std::vector<std::map<std::size_t, Rat>> mx(v.rows);
    for (const auto& en : v.entries) {
        Rat& cur = mx[en.row][group_of_col[en.col]];
        const Rat a = en.val.abs();
        if (a > cur) cur = a;
    }
    Rat best;
    for (const auto& row : mx) {
        Rat s;
        for (const auto& kv : row) s = s + kv.second;
        if (s > best) best = s;
    }
    return best;
}

std::string rowwise_detail(const rows::RowOutcome& o, const std::string& what, const std::string& verified_tail,
                           const std::string& refuted_tail) {
    if (o.verdict == Verdict::verified) return what + verified_tail;
    if (o.verdict == Verdict::refuted) return what + refuted_tail;
    return std::to_string(o.undecided_rows) + " rows undecided at " + o.precision + " bits; " + what;
}

CertResult result_for(const Certificate& c) {
    CertResult res;
    res.kind = c.kind();
    res.bound = c.bound;
    res.rank = c.rank;
    return res;
}

}  // namespace rankcert::cert
