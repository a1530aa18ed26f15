// rankcert-recheck: the instance, its rows, and the row loop (recheck.hpp).
#include "recheck.hpp"

#include <atomic>
#include <thread>

namespace recheck {

namespace {

[[noreturn]] void bad(const std::string& where, const std::string& what) { throw InputError(where + ": " + what); }

constexpr std::uint64_t max_attention = 1ull << 34;

}  // namespace

// ---- reading --------------------------------------------------------------------

Instance read_instance(const Json& j, Sidecars& sc, const std::string& where) {
    Instance in;
    in.kind = j.at("kind", where).str(where + ".kind");
    if (in.kind == "kronecker") {
        const Json& fs = j.at("factors", where);
        if (!fs.is_array() || fs.items.empty() || fs.items.size() > 4) bad(where + ".factors", "needs 1 to 4 instances");
        in.n = in.N = 1;
        for (std::size_t f = 0; f < fs.items.size(); ++f) {
            const std::string w = where + ".factors[" + std::to_string(f) + "]";
            in.factors.push_back(read_instance(fs.items[f], sc, w));
            if (in.factors.back().kind == "kronecker") bad(w, "a kronecker factor may not be kronecker");
            in.n *= in.factors.back().n;
            in.N *= in.factors.back().N;
            if (in.n > (1ull << 40) || in.N > (1ull << 40)) bad(where, "too large");
        }
        return in;
    }
    if (in.kind == "matrix") {
        in.a = read_array(j.at("a", where), sc, where + ".a");
        in.n = in.a.rows;
        in.N = in.a.cols;
    } else if (in.kind == "logits") {
        in.s = read_array(j.at("logits", where), sc, where + ".logits", true);
        in.n = in.s.rows;
        in.N = in.s.cols;
        for (std::size_t i = 0; i < in.n; ++i) {
            bool any = false;
            for (std::size_t c = 0; c < in.N && !any; ++c) any = !in.s.is_neg_inf(i, c);
            if (!any) bad(where + ".logits", "row " + std::to_string(i) + " has no finite entry");
        }
    } else if (in.kind == "qk") {
        in.q = read_array(j.at("q", where), sc, where + ".q");
        in.k = read_array(j.at("k", where), sc, where + ".k");
        if (in.q.cols != in.k.cols) bad(where + ".k", "q and k have different widths");
        in.n = in.q.rows;
        in.N = in.k.rows;
        in.d = in.q.cols;
        in.scale = read_number(j.at("scale", where), where + ".scale");
        if (const Json* t = j.find("temperature")) in.temperature = read_q(*t, where + ".temperature");
        if (const Json* b = j.find("key_bias")) {
            in.bias = read_array(*b, sc, where + ".key_bias");
            if (in.bias.rows * in.bias.cols != in.N) bad(where + ".key_bias", "needs N entries");
        }
        if (const Json* m = j.find("mask")) {
            if (m->is_string()) {
                if (m->text == "causal") {
                    if (in.N < in.n) bad(where + ".mask", "causal needs N >= n");
                    in.allowed.assign(in.n * in.N, 0);
                    for (std::size_t i = 0; i < in.n; ++i)
                        for (std::size_t c = 0; c <= i + in.N - in.n; ++c) in.allowed[i * in.N + c] = 1;
                } else if (m->text != "none") {
                    bad(where + ".mask", "must be \"none\", \"causal\" or an array");
                }
            } else if (m->type != Json::Type::null) {
                const Array ma = read_array(*m, sc, where + ".mask", false, true);
                if (ma.rows != in.n || ma.cols != in.N) bad(where + ".mask", "needs shape n x N");
                in.allowed.assign(in.n * in.N, 0);
                for (std::size_t t = 0; t < ma.q.size(); ++t) {
                    if (ma.q[t] != 0 && ma.q[t] != 1) bad(where + ".mask", "entries must be 0 or 1");
                    in.allowed[t] = ma.q[t] != 0;
                }
            }
            for (std::size_t i = 0; i < in.n && !in.allowed.empty(); ++i) {
                bool any = false;
                for (std::size_t c = 0; c < in.N && !any; ++c) any = in.allowed[i * in.N + c];
                if (!any) bad(where + ".mask", "row " + std::to_string(i) + " allows no key");
            }
        }
    } else {
        bad(where + ".kind", "unknown instance kind \"" + in.kind + "\"");
    }
    if (in.n == 0 || in.N == 0) bad(where, "an empty instance");
    if (static_cast<double>(in.n) * static_cast<double>(in.N) > static_cast<double>(max_attention)) bad(where, "n x N beyond 2^34");
    return in;
}

bool Instance::softmax() const {
    if (kind == "kronecker") {
        for (const auto& f : factors)
            if (!f.softmax()) return false;
        return true;
    }
    return kind != "matrix";
}

// ---- rows -----------------------------------------------------------------------------

template <class I> I Instance::coef() const {
    if (scale.kind == Number::Kind::rsqrt) return from_q<I>(temperature) * rsqrt_of<I>(scale.q);
    return from_q<I>(temperature * scale.q);
}
template DI Instance::coef<DI>() const;
template MI Instance::coef<MI>() const;

namespace {

DI entry_di(const Array& a, std::size_t t) { return {a.lo[t], a.hi[t]}; }

}  // namespace

template <> std::vector<DI> Instance::logits<DI>(std::size_t i, std::vector<char>& ok) const {
    std::vector<DI> out(N);
    ok.assign(N, 1);
    if (kind == "logits") {
        for (std::size_t c = 0; c < N; ++c) {
            ok[c] = !s.is_neg_inf(i, c);
            out[c] = entry_di(s, i * N + c);
        }
        return out;
    }
    const DI cf = coef<DI>();
    for (std::size_t c = 0; c < N; ++c) {
        ok[c] = is_allowed(i, c);
        if (!ok[c]) continue;
        out[c] = cf * qk_di(i, c);
        if (!bias.q.empty()) out[c] = out[c] + entry_di(bias, c);
    }
    return out;
}

template <> std::vector<MI> Instance::logits<MI>(std::size_t i, std::vector<char>& ok) const {
    std::vector<MI> out(N);
    ok.assign(N, 1);
    if (kind == "logits") {
        for (std::size_t c = 0; c < N; ++c) {
            ok[c] = !s.is_neg_inf(i, c);
            if (ok[c]) out[c] = to_mi(s.at(i, c));
        }
        return out;
    }
    const MI cf = coef<MI>();
    for (std::size_t c = 0; c < N; ++c) {
        ok[c] = is_allowed(i, c);
        if (!ok[c]) continue;
        Q dot = 0;  // exact
        for (std::size_t t = 0; t < d; ++t) dot += q.at(i, t) * k.at(c, t);
        out[c] = cf * to_mi(dot);
        if (!bias.q.empty()) out[c] = out[c] + to_mi(bias.q[c]);
    }
    return out;
}

template <class I> std::vector<I> softmax(const std::vector<I>& s, const std::vector<char>& ok) {
    double shift = -INFINITY;
    for (std::size_t c = 0; c < s.size(); ++c)
        if (ok[c]) shift = std::max(shift, mid(s[c]));
    if (!std::isfinite(shift)) shift = 0;
    const I sh = from_double<I>(shift);
    std::vector<I> e(s.size());
    I z = from_double<I>(0);
    for (std::size_t c = 0; c < s.size(); ++c)
        if (ok[c]) {
            e[c] = iexp(s[c] - sh);
            z += e[c];
        }
    for (std::size_t c = 0; c < s.size(); ++c) e[c] = ok[c] ? e[c] / z : from_double<I>(0);
    return e;
}
template std::vector<DI> softmax(const std::vector<DI>&, const std::vector<char>&);
template std::vector<MI> softmax(const std::vector<MI>&, const std::vector<char>&);

void Instance::prepare() {
    for (auto& f : factors) f.prepare();
    if (kind == "kronecker") return;  // rows are never formed
    if (kind == "qk") {
        krows = Rows(k, false);
        qrows = Rows(q, false);
    }
    di_cache.assign(n, {});
    di_once.reset(new std::once_flag[n]);
}

DI Instance::qk_di(std::size_t i, std::size_t j) const {
    return krows.dot(j, qrows.m(i), qrows.nmid[i], qrows.nrad[i]);
}

const std::vector<DI>& Instance::row_di(std::size_t i) const {
    auto& r = const_cast<std::vector<DI>&>(di_cache[i]);
    std::call_once(di_once[i], [&] {
        if (kind == "matrix") {
            r.resize(N);
            for (std::size_t c = 0; c < N; ++c) r[c] = entry_di(a, i * N + c);
        } else {
            std::vector<char> ok;
            r = recheck::softmax(logits<DI>(i, ok), ok);
        }
    });
    return r;
}

template <> std::vector<DI> Instance::row<DI>(std::size_t i) const { return row_di(i); }
template <> std::vector<MI> Instance::row<MI>(std::size_t i) const {
    if (kind == "matrix") {
        std::vector<MI> r(N);
        for (std::size_t c = 0; c < N; ++c) r[c] = to_mi(a.at(i, c));
        return r;
    }
    std::vector<char> ok;
    return recheck::softmax(logits<MI>(i, ok), ok);
}

// ---- a priori sums ------------------------------------------------------------------------

double norm_up(const double* x, std::size_t K) {
    // sum x_t^2 <= (fl(sum) + K 2^-1074) / (1 - gamma_K) <= (fl + 2^-1000)(1 + 2 K u) for K u <= 1/8.
    const double S = dot_rn(x, x, K);
    const double c = 2.0 * static_cast<double>(K) * 0x1p-53;
    if (c > 0.125 || !std::isfinite(S)) return INFINITY;
    return up(std::sqrt(up(up(S + 0x1p-1000) * up(1.0 + c))));
}

DI dot_enclose(double D, std::size_t K, double nxm, double nxr, double nym, double nyr) {
    // gamma_K <= 2 K u for K u <= 1/8; K 2^-1074 <= 2^-1000 for K < 2^74.
    const double c = 2.0 * static_cast<double>(K) * 0x1p-53;
    if (c > 0.125 || !std::isfinite(D)) return {NAN, NAN};
    double rad = up(c * up(nxm * nym));
    if (nxr != 0) rad = up(rad + up(nxr * up(nym + nyr)));
    if (nyr != 0) rad = up(rad + up(nxm * nyr));
    rad = up(rad + 0x1p-1000);
    if (std::isnan(rad)) return {NAN, NAN};
    return {down(D - rad), up(D + rad)};
}

Rows::Rows(const Array& a, bool transposed) {
    count = transposed ? a.cols : a.rows;
    K = transposed ? a.rows : a.cols;
    mid.resize(count * K);
    rad.resize(count * K);
    for (std::size_t i = 0; i < a.rows; ++i)
        for (std::size_t j = 0; j < a.cols; ++j) {
            const std::size_t at = transposed ? j * K + i : i * K + j;
            mid[at] = a.mid[i * a.cols + j];
            rad[at] = a.rad[i * a.cols + j];
        }
    for (std::size_t i = 0; i < count; ++i) {
        nmid.push_back(norm_up(mid.data() + i * K, K));
        nrad.push_back(a.points ? 0.0 : norm_up(rad.data() + i * K, K));
        sum_nmid = up(sum_nmid + nmid.back());
        sum_nrad = up(sum_nrad + nrad.back());
    }
}

void mid_rad(const std::vector<DI>& x, std::vector<double>& m, std::vector<double>& r) {
    m.resize(x.size());
    r.resize(x.size());
    for (std::size_t t = 0; t < x.size(); ++t) {
        m[t] = mid(x[t]);
        r[t] = std::max(up(x[t].hi - m[t]), up(m[t] - x[t].lo));
        if (std::isnan(r[t]) || std::isnan(m[t])) r[t] = INFINITY;
    }
}

// ---- the row loop --------------------------------------------------------------------------

unsigned row_threads = 1;

Outcome run_rows(std::size_t count, const Test& test, const RowFn& di, const RowFnMI& mi, const RowClaim& claim,
                 const RowFnQ& exact) {
    // Each thread takes rows from a shared counter and keeps its own
    // outcome; they are merged at the end (the verdict, the first row above
    // the witness's bound, the largest ends).
    std::atomic<std::size_t> next{0};
    std::atomic<bool> refuted{false};
    auto one = [&](std::size_t t, Encl& e, Outcome& o) {
        if (test.only_bits) {
            const mpfr_prec_t keep = get_mi_bits();
            set_mi_bits(test.only_bits);
            const MI y = mi(t);
            set_mi_bits(keep);
            e = encl(y);
            ++o.mpfr_rows;
            return test(y);
        }
        const DI x = di(t);
        Verdict v = test(x);
        e = encl(x);
        if (v == Verdict::undecided) {
            ++o.mpfr_rows;
            const mpfr_prec_t keep = get_mi_bits();
            for (mpfr_prec_t bits : ladder) {
                set_mi_bits(bits);
                const MI y = mi(t);
                v = test(y);
                e = encl(y);
                if (v != Verdict::undecided) break;
            }
            set_mi_bits(keep);
            if (v == Verdict::undecided && exact) {
                const Q x = exact(t);
                e = Encl{End{0, false, x}, End{0, false, x}};
                v = test.rel == Test::Rel::le ? (x <= test.threshold ? Verdict::verified : Verdict::refuted)
                                              : (x < test.threshold ? Verdict::verified : Verdict::refuted);
            }
        }
        return v;
    };
    const unsigned T = std::max<unsigned>(1, std::min<std::size_t>(row_threads, count / 8 + 1));
    std::vector<Outcome> part(T);
    std::vector<std::string> errors(T);
    auto work = [&](unsigned w) {
        Outcome& o = part[w];
        o.verdict = Verdict::verified;
        try {
            for (std::size_t t; !refuted && (t = next++) < count;) {
                Encl e;
                const Verdict v = one(t, e, o);
                o.max_lo = o.rows_checked ? end_max(o.max_lo, e.lo) : e.lo;
                o.max_hi = o.rows_checked ? end_max(o.max_hi, e.hi) : e.hi;
                ++o.rows_checked;
                o.verdict = combine(o.verdict, v);
                if (claim.decisive && *claim.decisive == t) o.decisive = e;
                if (claim.every_row_at_most && end_gt(e.lo, *claim.every_row_at_most) && (!o.above || t < *o.above)) o.above = t;
                if (v == Verdict::refuted) refuted = true;
            }
        } catch (const std::exception& ex) {
            errors[w] = ex.what();
            refuted = true;
        }
    };
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < T; ++w) pool.emplace_back(work, w);
    work(0);
    for (auto& th : pool) th.join();
    for (const auto& e : errors)
        if (!e.empty()) throw InputError(e);
    Outcome o = std::move(part[0]);
    for (unsigned w = 1; w < T; ++w) {
        const Outcome& p = part[w];
        if (!p.rows_checked) continue;
        o.verdict = combine(o.verdict, p.verdict);
        o.max_lo = o.rows_checked ? end_max(o.max_lo, p.max_lo) : p.max_lo;
        o.max_hi = o.rows_checked ? end_max(o.max_hi, p.max_hi) : p.max_hi;
        o.rows_checked += p.rows_checked;
        o.mpfr_rows += p.mpfr_rows;
        if (p.decisive) o.decisive = p.decisive;
        if (p.above && (!o.above || *p.above < *o.above)) o.above = p.above;
    }
    if (count == 0) o.verdict = Verdict::verified;
    if (claim.decisive && !o.decisive && *claim.decisive < count) {
        Encl e;
        Outcome scratch;
        one(*claim.decisive, e, scratch);
        o.decisive = e;
    }
    return o;
}

// ---- certificate helpers ------------------------------------------------------------------

Array dense(const Context& c, const char* key, std::size_t rows, std::size_t cols) {
    const std::string w = c.where + "." + key;
    return read_array(c.cert.at(key, c.where), c.sc, w, false, false, rows, cols);
}

std::vector<std::size_t> indices(const Json& j, const std::string& where, std::size_t below, bool distinct) {
    if (!j.is_array()) bad(where, "needs a list of indices");
    std::vector<std::size_t> out;
    for (std::size_t t = 0; t < j.items.size(); ++t) {
        const std::size_t v = j.items[t].index(where + "[" + std::to_string(t) + "]");
        if (v >= below) bad(where + "[" + std::to_string(t) + "]", "index " + std::to_string(v) + " is not below " + std::to_string(below));
        out.push_back(v);
    }
    if (distinct) {  // sorted copy: O(k log k), whatever `below` is
        std::vector<std::size_t> s = out;
        std::sort(s.begin(), s.end());
        if (const auto it = std::adjacent_find(s.begin(), s.end()); it != s.end())
            bad(where, "repeated index " + std::to_string(*it));
    }
    return out;
}

Q block_column_norm(const Array& v, const std::vector<std::size_t>& block_of, std::size_t blocks) {
    Q c = 0;
    std::vector<Q> mx(blocks);
    for (std::size_t j = 0; j < v.rows; ++j) {
        std::fill(mx.begin(), mx.end(), Q(0));
        for (std::size_t k = 0; k < v.cols; ++k) {
            const Q x = abs(v.q[j * v.cols + k]);
            if (x > mx[block_of[k]]) mx[block_of[k]] = x;
        }
        Q s = 0;
        for (const auto& x : mx) s += x;
        if (s > c) c = s;
    }
    return c;
}

Columns::Columns(const Array& R) : N(R.rows), m(R.cols), t(R, true), r(R) {}

std::vector<DI> Columns::apply(const std::vector<DI>& a) const {
    std::vector<DI> v(m);
    std::vector<double> am, ar;
    mid_rad(a, am, ar);
    const double nam = norm_up(am.data(), N), nar = norm_up(ar.data(), N);
    for (std::size_t u = 0; u < m; ++u) v[u] = t.dot(u, am.data(), nam, nar);
    return v;
}

std::vector<MI> Columns::apply(const std::vector<MI>& a) const {
    std::vector<MI> v(m);
    for (std::size_t u = 0; u < m; ++u) v[u] = to_mi(0.0);
    for (std::size_t j = 0; j < N; ++j)
        for (std::size_t u = 0; u < m; ++u)
            if (r.q[j * m + u] != 0) v[u] += a[j] * to_mi(r.q[j * m + u]);
    return v;
}

Q row_l1_max(const Array& r) {
    Q rho = 0;
    for (std::size_t j = 0; j < r.rows; ++j) {
        Q s = 0;
        for (std::size_t u = 0; u < r.cols; ++u) s += abs(r.q[j * r.cols + u]);
        if (s > rho) rho = s;
    }
    return rho;
}

std::size_t rank_of(const Json& cert, const std::string& where) { return cert.at("rank", where).index(where + ".rank"); }

}  // namespace recheck
