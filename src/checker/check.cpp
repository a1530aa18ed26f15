// Certificate checks (THEORY.md sections 3-5).
//
// Each certificate reduces to inequalities between an enclosed quantity and
// an exact rational threshold:
//   factor, row_interpolative:  for every row i, sum_j |A_ij - B_ij| <= eps
//   neumann:                    for every t, sum_u |delta_tu - (A_I R)_tu| < 1 - eps*rho
//   tail:                       mu I + F F^T - M M^T positive definite (ball or
//                               exact LDL^T whose pivots are all certainly > 0), and
//                               ||M||_F^2 > k mu + ||F||_F^2 + m (eps rho)^2
//   trivial:                    some row has l1 norm > eps (softmax rows have l1
//                               norm exactly 1, a theorem, not a computation)
// Row-wise inequalities are decided row by row: a row undecided at one
// precision is retried at the next rung of the ladder, and for `matrix`
// instances (the only kind where A is rational) finally in exact rational
// arithmetic.  A certificate is verified only when every inequality is.
#include "rankcert/check.hpp"

#include "ldl.hpp"
#include "rankcert/profile.hpp"

#include <flint/flint.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

namespace rankcert {

namespace {

using Clock = std::chrono::steady_clock;

std::string rat_json(const Rat& q) { return q.str(); }

json endpoints_json(const Endpoints& e) {
    if (!e.bounded) return json::array({"-inf", "inf"});
    return json::array({rat_json(e.lo), rat_json(e.hi)});
}

// ---------------------------------------------------------------------------
// Row-wise decisions with a precision ladder.

class RowQuantity {
public:
    virtual ~RowQuantity() = default;
    virtual std::size_t count() const = 0;
    virtual void prepare(slong prec) = 0;
    // Enclose quantity t.  Must be safe to call concurrently after prepare().
    virtual void eval(std::size_t t, arb_ptr out) const = 0;
    // Exact value of quantity t (only when has_exact()).
    virtual bool has_exact() const { return false; }
    virtual Rat exact(std::size_t) const { return Rat(); }
};

struct RowOutcome {
    Verdict verdict = Verdict::undecided;
    std::size_t row = 0;  // index into the quantity list
    Endpoints enclosure;
    std::string precision;
    std::size_t undecided_rows = 0;
};

unsigned worker_count(const CheckOptions& opt, std::size_t work) {
    unsigned t = opt.threads ? opt.threads : std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
    if (work < 64) t = 1;
    return t;
}

// Run fn(t) for t in items on several threads; fn returns false to stop early.
template <class Fn>
void parallel_for(const std::vector<std::size_t>& items, unsigned threads, Fn fn) {
    std::atomic<std::size_t> next{0};
    std::atomic<bool> stop{false};
    auto work = [&]() {
        for (;;) {
            if (stop.load(std::memory_order_relaxed)) break;
            std::size_t b = next.fetch_add(4);
            if (b >= items.size()) break;
            std::size_t e = std::min(items.size(), b + 4);
            for (std::size_t s = b; s < e; ++s)
                if (!fn(items[s])) stop = true;
        }
    };
    if (threads <= 1) {
        work();
        return;
    }
    std::vector<std::thread> pool;
    for (unsigned w = 0; w < threads; ++w)
        pool.emplace_back([&]() {
            work();
            flint_cleanup();  // free this thread's FLINT/Arb caches
        });
    for (auto& th : pool) th.join();
}

RowOutcome decide_rows(RowQuantity& q, const Rat& thr, bool strict, const CheckOptions& opt, const std::string& label) {
    const std::size_t count = q.count();
    std::vector<Verdict> verdict(count, Verdict::undecided);
    std::vector<Endpoints> encl(count);
    std::vector<std::string> prec_of(count);
    std::vector<std::size_t> pending(count);
    for (std::size_t t = 0; t < count; ++t) pending[t] = t;
    const auto ladder = PrecisionLadder::up_to(opt.max_prec);
    std::mutex progress_mutex;
    auto last = Clock::now();
    bool exact_done = false;

    for (std::size_t level = 0; level < ladder.bits.size() && !pending.empty(); ++level) {
        const slong prec = ladder.bits[level];
        q.prepare(prec);
        std::atomic<std::size_t> done{0};
        parallel_for(pending, worker_count(opt, pending.size()), [&](std::size_t t) {
            Ball x;
            q.eval(t, x.get());
            Verdict v = strict ? decide_lt(x.get(), thr) : decide_le(x.get(), thr);
            verdict[t] = v;
            encl[t] = endpoints(x.get());
            prec_of[t] = std::to_string(prec);
            std::size_t d = ++done;
            if (opt.progress && (d & 63) == 0) {
                std::lock_guard<std::mutex> lock(progress_mutex);
                if (Clock::now() - last > std::chrono::milliseconds(500)) {
                    last = Clock::now();
                    opt.progress(label + ": " + std::to_string(d) + "/" + std::to_string(pending.size()) + " rows at " +
                                 std::to_string(prec) + " bits");
                }
            }
            return v != Verdict::refuted;
        });
        std::vector<std::size_t> still;
        for (std::size_t t : pending) {
            if (verdict[t] == Verdict::refuted) {
                RowOutcome o;
                o.verdict = Verdict::refuted;
                o.row = t;
                o.enclosure = encl[t];
                o.precision = prec_of[t];
                return o;
            }
            if (verdict[t] == Verdict::undecided) still.push_back(t);
        }
        pending.swap(still);
        if (!pending.empty() && q.has_exact()) {
            // A is rational: decide the rest exactly.
            for (std::size_t t : pending) {
                Rat v = q.exact(t);
                int c = cmp(v, thr);
                verdict[t] = (strict ? c < 0 : c <= 0) ? Verdict::verified : Verdict::refuted;
                encl[t].lo = v;
                encl[t].hi = v;
                encl[t].bounded = true;
                prec_of[t] = "exact";
                if (verdict[t] == Verdict::refuted) {
                    RowOutcome o;
                    o.verdict = Verdict::refuted;
                    o.row = t;
                    o.enclosure = encl[t];
                    o.precision = "exact";
                    return o;
                }
            }
            pending.clear();
            exact_done = true;
        }
    }
    (void)exact_done;
    RowOutcome o;
    if (!pending.empty()) {
        o.verdict = Verdict::undecided;
        o.row = pending.front();
        o.enclosure = encl[o.row];
        o.precision = prec_of[o.row];
        o.undecided_rows = pending.size();
        return o;
    }
    // Verified: report the worst row (largest upper end).
    o.verdict = Verdict::verified;
    for (std::size_t t = 0; t < count; ++t) {
        if (t == 0 || cmp(encl[t].hi, encl[o.row].hi) > 0) o.row = t;
    }
    if (count) {
        o.enclosure = encl[o.row];
        o.precision = prec_of[o.row];
        // The precision that decided the whole check is the highest used.
        for (std::size_t t = 0; t < count; ++t) {
            if (prec_of[t] == "exact") { o.precision = "exact"; break; }
            if (std::stol(prec_of[t]) > std::stol(o.precision)) o.precision = prec_of[t];
        }
    }
    return o;
}

// Exact |a - b| accumulated.
void rat_add_absdiff(Rat& acc, const Rat& a, const Rat& b) {
    Rat d = a - b;
    fmpq_abs(d.get(), d.get());
    fmpq_add(acc.get(), acc.get(), d.get());
}

// ---- factor: B = U W^T --------------------------------------------------------
class FactorRows : public RowQuantity {
public:
    FactorRows(const Instance& I, const Certificate& c) : I_(I), c_(c) {}
    std::size_t count() const override { return I_.n; }
    void prepare(slong prec) override {
        enc_ = std::make_unique<RowEncloser>(I_, prec);
        enclose_matrix(c_.u, prec, u_);
        enclose_matrix(c_.w, prec, w_);
        prec_ = prec;
    }
    void eval(std::size_t i, arb_ptr out) const override {
        const std::size_t N = I_.N, k = c_.rank;
        BallVec a(N);
        enc_->row(i, a.data());
        Ball t;
        arb_zero(out);
        for (std::size_t j = 0; j < N; ++j) {
            // t = A_ij - <u_i, w_j>
            arb_dot(t.get(), a[j], 1, u_.data() + i * k, 1, w_.data() + j * k, 1, static_cast<slong>(k), prec_);
            arb_abs(t.get(), t.get());
            arb_add(out, out, t.get(), prec_);
        }
    }
    // Exact for rational A; and for k = 0 on softmax rows, whose error is
    // ||A_i||_1 = 1 exactly (rows are probability vectors).
    bool has_exact() const override { return !I_.is_softmax() || c_.rank == 0; }
    Rat exact(std::size_t i) const override {
        const std::size_t N = I_.N, k = c_.rank;
        if (I_.is_softmax()) return Rat(1);
        Rat acc, b;
        for (std::size_t j = 0; j < N; ++j) {
            fmpq_zero(b.get());
            for (std::size_t t = 0; t < k; ++t) fmpq_addmul(b.get(), c_.u(i, t).get(), c_.w(j, t).get());
            rat_add_absdiff(acc, I_.a(i, j), b);
        }
        return acc;
    }

private:
    const Instance& I_;
    const Certificate& c_;
    std::unique_ptr<RowEncloser> enc_;
    BallVec u_, w_;
    slong prec_ = 64;
};

// ---- row_interpolative: B = X A_I ---------------------------------------------
class RowInterpRows : public RowQuantity {
public:
    RowInterpRows(const Instance& I, const Certificate& c) : I_(I), c_(c) {}
    std::size_t count() const override { return I_.n; }
    void prepare(slong prec) override {
        enc_ = std::make_unique<RowEncloser>(I_, prec);
        enclose_matrix(c_.x, prec, x_);
        ai_ = BallVec(c_.rows.size() * I_.N);
        for (std::size_t t = 0; t < c_.rows.size(); ++t) enc_->row(c_.rows[t], ai_.data() + t * I_.N);
        prec_ = prec;
    }
    void eval(std::size_t i, arb_ptr out) const override {
        const std::size_t N = I_.N, k = c_.rows.size();
        BallVec a(N);
        enc_->row(i, a.data());
        Ball t;
        arb_zero(out);
        for (std::size_t j = 0; j < N; ++j) {
            arb_dot(t.get(), a[j], 1, x_.data() + i * k, 1, ai_.data() + j, static_cast<slong>(N), static_cast<slong>(k), prec_);
            arb_abs(t.get(), t.get());
            arb_add(out, out, t.get(), prec_);
        }
    }
    bool has_exact() const override { return !I_.is_softmax(); }
    Rat exact(std::size_t i) const override {
        const std::size_t N = I_.N, k = c_.rows.size();
        Rat acc, b;
        for (std::size_t j = 0; j < N; ++j) {
            fmpq_zero(b.get());
            for (std::size_t t = 0; t < k; ++t) fmpq_addmul(b.get(), c_.x(i, t).get(), I_.a(c_.rows[t], j).get());
            rat_add_absdiff(acc, I_.a(i, j), b);
        }
        return acc;
    }

private:
    const Instance& I_;
    const Certificate& c_;
    std::unique_ptr<RowEncloser> enc_;
    BallVec x_, ai_;
    slong prec_ = 64;
};

// ---- neumann: rows of I_m - A_I R -------------------------------------------
class NeumannRows : public RowQuantity {
public:
    NeumannRows(const Instance& I, const Certificate& c) : I_(I), c_(c) {}
    std::size_t count() const override { return c_.rows.size(); }
    void prepare(slong prec) override {
        enc_ = std::make_unique<RowEncloser>(I_, prec);
        r_ = BallVec(c_.r.entries.size());
        for (std::size_t e = 0; e < c_.r.entries.size(); ++e) arb_set_fmpq(r_[e], c_.r.entries[e].val.get(), prec);
        prec_ = prec;
    }
    void eval(std::size_t t, arb_ptr out) const override {
        const std::size_t N = I_.N, m = c_.rows.size();
        BallVec a(N), row(m);
        enc_->row(c_.rows[t], a.data());
        for (std::size_t e = 0; e < c_.r.entries.size(); ++e) {
            const auto& en = c_.r.entries[e];
            arb_addmul(row[en.col], a[en.row], r_[e], prec_);
        }
        arb_sub_ui(row[t], row[t], 1, prec_);  // (A_I R - I)_tt; abs below
        arb_zero(out);
        for (std::size_t u = 0; u < m; ++u) {
            arb_abs(row[u], row[u]);
            arb_add(out, out, row[u], prec_);
        }
    }
    bool has_exact() const override { return !I_.is_softmax(); }
    Rat exact(std::size_t t) const override {
        const std::size_t m = c_.rows.size();
        std::vector<Rat> row(m);
        for (const auto& en : c_.r.entries) fmpq_addmul(row[en.col].get(), I_.a(c_.rows[t], en.row).get(), en.val.get());
        fmpq_sub_ui(row[t].get(), row[t].get(), 1);
        Rat acc;
        for (auto& v : row) fmpq_add(acc.get(), acc.get(), v.abs().get());
        return acc;
    }

private:
    const Instance& I_;
    const Certificate& c_;
    std::unique_ptr<RowEncloser> enc_;
    BallVec r_;
    slong prec_ = 64;
};

// ||R||_inf, exact.
Rat row_sum_norm(const SparseMatrix& r) {
    std::vector<Rat> sums(r.rows);
    for (const auto& e : r.entries) fmpq_add(sums[e.row].get(), sums[e.row].get(), e.val.abs().get());
    Rat best;
    for (auto& s : sums)
        if (s > best) best = s;
    return best;
}

void fill_rowwise(CertResult& res, const RowOutcome& o, const std::string& quantity, const std::string& rel,
                  const Rat& thr, const std::string& row_name, std::size_t row_value) {
    res.verdict = o.verdict;
    res.precision = o.precision;
    res.decisive = {{"quantity", quantity},
                    {row_name, row_value},
                    {"enclosure", endpoints_json(o.enclosure)},
                    {"relation", rel},
                    {"threshold", rat_json(thr)}};
    if (o.verdict == Verdict::undecided) res.decisive["undecided_rows"] = o.undecided_rows;
}

std::string interval_text(const Endpoints& e) {
    if (!e.bounded) return "[-inf, inf]";
    auto approx = [](const Rat& q) {
        Ball b;
        arb_set_fmpq(b.get(), q.get(), 64);
        char* s = arb_get_str(b.get(), 12, ARB_STR_NO_RADIUS);
        std::string out(s);
        flint_free(s);
        return out;
    };
    if (e.lo == e.hi) {
        // An exact value: print it exactly when it is short.
        std::string x = e.lo.str();
        return x.size() <= 24 ? x : "~" + approx(e.lo);
    }
    return "[" + approx(e.lo) + ", " + approx(e.hi) + "]";
}

// ---- tail --------------------------------------------------------------------
CertResult check_tail(const Instance& I, const Rat& eps, const Certificate& c, const CheckOptions& opt, CertResult res) {
    const std::size_t m = c.rows.size(), p = c.r.cols, N = I.N, f = c.f.cols;
    const Rat rho = row_sum_norm(c.r);
    // Exact parts: K = F F^T, and the threshold T = k mu + ||F||_F^2 + m (eps rho)^2.
    std::vector<Rat> ff(m * m);
    Rat fnorm;
    for (std::size_t a = 0; a < m; ++a)
        for (std::size_t b = 0; b <= a; ++b) {
            Rat s;
            for (std::size_t t = 0; t < f; ++t) fmpq_addmul(s.get(), c.f(a, t).get(), c.f(b, t).get());
            ff[a * m + b] = s;
        }
    for (std::size_t a = 0; a < m; ++a) fnorm = fnorm + ff[a * m + a];
    const Rat er = eps * rho;
    const Rat thr = Rat(static_cast<long>(c.k)) * c.mu + fnorm + Rat(static_cast<long>(m)) * er * er;

    auto decide = [&](Verdict frob_v, const Endpoints& frob_e, const LdlResult& ldl, const std::string& prec) {
        res.precision = prec;
        res.decisive = {{"quantity", "tail"},
                        {"frobenius_sq", endpoints_json(frob_e)},
                        {"frobenius_relation", ">"},
                        {"threshold", rat_json(thr)},
                        {"k_mu_plus_F_sq", rat_json(Rat(static_cast<long>(c.k)) * c.mu + fnorm)},
                        {"rho", rat_json(rho)},
                        {"psd", to_string(ldl.verdict)},
                        {"pivot", ldl.pivot},
                        {"pivot_enclosure", endpoints_json(ldl.value)}};
        if (frob_v == Verdict::refuted || ldl.verdict == Verdict::refuted) res.verdict = Verdict::refuted;
        else if (frob_v == Verdict::verified && ldl.verdict == Verdict::verified) res.verdict = Verdict::verified;
        else res.verdict = Verdict::undecided;
        if (ldl.verdict == Verdict::refuted)
            res.detail = "mu I + F F^T - M M^T is not positive semidefinite: LDL pivot " + std::to_string(ldl.pivot) +
                         " lies in " + interval_text(ldl.value);
        else if (frob_v == Verdict::refuted)
            res.detail = "||M||_F^2 in " + interval_text(frob_e) + " does not exceed k mu + ||F||^2 + m (eps rho)^2 = " +
                         interval_text({thr, thr, true});
        else if (res.verdict == Verdict::verified)
            res.detail = "||M||_F^2 in " + interval_text(frob_e) + " > " + interval_text({thr, thr, true}) +
                         "; mu I + F F^T - M M^T positive definite (smallest pivot " + interval_text(ldl.value) + ")";
        else
            res.detail = std::string("undecided at ") + prec + " bits: " +
                         (ldl.verdict == Verdict::undecided ? "positive definiteness not certain (pivot " +
                                                                  std::to_string(ldl.pivot) + " in " +
                                                                  interval_text(ldl.value) + ")"
                                                            : "||M||_F^2 in " + interval_text(frob_e) + " vs " +
                                                                  interval_text({thr, thr, true}));
    };

    if (!I.is_softmax()) {
        // Exact: M = A_I R over the rationals.
        std::vector<Rat> M(m * p);
        for (std::size_t t = 0; t < m; ++t)
            for (const auto& e : c.r.entries)
                fmpq_addmul(M[t * p + e.col].get(), I.a(c.rows[t], e.row).get(), e.val.get());
        Rat frob;
        for (auto& x : M) fmpq_addmul(frob.get(), x.get(), x.get());
        std::vector<Rat> h(m * m);
        for (std::size_t a = 0; a < m; ++a)
            for (std::size_t b = 0; b <= a; ++b) {
                Rat g;
                for (std::size_t t = 0; t < p; ++t) fmpq_addmul(g.get(), M[a * p + t].get(), M[b * p + t].get());
                h[a * m + b] = ff[a * m + b] - g + (a == b ? c.mu : Rat());
            }
        LdlResult ldl = ldl_positive_definite(RatOps{}, h, m);
        Endpoints fe{frob, frob, true};
        decide(frob > thr ? Verdict::verified : Verdict::refuted, fe, ldl, "exact");
        return res;
    }
    const auto ladder = PrecisionLadder::up_to(opt.max_prec);
    for (slong prec : ladder.bits) {
        RowEncloser enc(I, prec);
        BallVec M(m * p), a(N), r(c.r.entries.size());
        for (std::size_t e = 0; e < c.r.entries.size(); ++e) arb_set_fmpq(r[e], c.r.entries[e].val.get(), prec);
        for (std::size_t t = 0; t < m; ++t) {
            enc.row(c.rows[t], a.data());
            for (std::size_t e = 0; e < c.r.entries.size(); ++e) {
                const auto& en = c.r.entries[e];
                arb_addmul(M[t * p + en.col], a[en.row], r[e], prec);
            }
        }
        Ball frob;
        arb_dot(frob.get(), nullptr, 0, M.data(), 1, M.data(), 1, static_cast<slong>(m * p), prec);
        std::vector<Ball> h(m * m);
        for (std::size_t x = 0; x < m; ++x)
            for (std::size_t y = 0; y <= x; ++y) {
                Ball g;
                arb_dot(g.get(), nullptr, 0, M.data() + x * p, 1, M.data() + y * p, 1, static_cast<slong>(p), prec);
                Rat exact_part = ff[x * m + y] + (x == y ? c.mu : Rat());
                arb_set_fmpq(h[x * m + y].get(), exact_part.get(), prec);
                arb_sub(h[x * m + y].get(), h[x * m + y].get(), g.get(), prec);
            }
        LdlResult ldl = ldl_positive_definite(BallOps{prec}, h, m);
        Verdict fv = decide_gt(frob.get(), thr);
        decide(fv, endpoints(frob.get()), ldl, std::to_string(prec));
        if (res.verdict != Verdict::undecided) break;
        if (opt.progress) opt.progress("tail: undecided at " + std::to_string(prec) + " bits, raising precision");
    }
    return res;
}

}  // namespace

CertResult check_certificate(const Instance& I, const Rat& eps, const Certificate& c, const CheckOptions& opt) {
    CertResult res;
    res.kind = c.kind;
    res.upper = c.upper;
    res.rank = c.rank;
    switch (c.kind) {
    case CertKind::factor:
    case CertKind::row_interpolative: {
        std::unique_ptr<RowQuantity> q;
        if (c.kind == CertKind::factor) q = std::make_unique<FactorRows>(I, c);
        else q = std::make_unique<RowInterpRows>(I, c);
        RowOutcome o = decide_rows(*q, eps, false, opt, to_string(c.kind));
        fill_rowwise(res, o, "row_l1_error", "<=", eps, "row", o.row);
        const std::string row = "row " + std::to_string(o.row);
        if (o.verdict == Verdict::verified)
            res.detail = "every row error <= eps; worst " + row + " in " + interval_text(o.enclosure);
        else if (o.verdict == Verdict::refuted)
            res.detail = row + " error in " + interval_text(o.enclosure) + " exceeds eps = " + interval_text({eps, eps, true});
        else
            res.detail = std::to_string(o.undecided_rows) + " rows undecided at " + o.precision + " bits, e.g. " + row +
                         " error in " + interval_text(o.enclosure);
        break;
    }
    case CertKind::neumann: {
        const Rat rho = row_sum_norm(c.r);
        const Rat thr = Rat(1) - eps * rho;
        if (thr.sign() <= 0) {
            res.verdict = Verdict::refuted;
            res.precision = "exact";
            res.detail = "eps * ||R||_inf = " + interval_text({eps * rho, eps * rho, true}) + " >= 1";
            res.decisive = {{"quantity", "delta"}, {"rho", rat_json(rho)}, {"eps_rho", rat_json(eps * rho)},
                            {"relation", "delta + eps*rho < 1"}};
            break;
        }
        NeumannRows q(I, c);
        RowOutcome o = decide_rows(q, thr, true, opt, "neumann");
        fill_rowwise(res, o, "delta_row", "<", thr, "t", o.row);
        res.decisive["rho"] = rat_json(rho);
        res.decisive["delta"] = endpoints_json(o.enclosure);
        res.decisive["row_of_a"] = c.rows.empty() ? 0 : c.rows[o.row];
        const std::string what = "delta (row t = " + std::to_string(o.row) + ") in " + interval_text(o.enclosure);
        if (o.verdict == Verdict::verified)
            res.detail = what + ", rho = " + interval_text({rho, rho, true}) + ": delta + eps*rho < 1";
        else if (o.verdict == Verdict::refuted)
            res.detail = what + " >= 1 - eps*rho = " + interval_text({thr, thr, true});
        else
            res.detail = std::to_string(o.undecided_rows) + " rows undecided at " + o.precision + " bits; " + what;
        break;
    }
    case CertKind::tail:
        res = check_tail(I, eps, c, opt, res);
        break;
    case CertKind::profile:
        res = check_profile(I, eps, c, opt);
        break;
    case CertKind::sandwich:
        res = check_sandwich(I, eps, c, opt);
        break;
    case CertKind::trivial: {
        if (I.is_softmax()) {
            // Softmax rows are probability vectors: l1 norm exactly 1.
            res.verdict = Rat(1) > eps ? Verdict::verified : Verdict::refuted;
            res.precision = "theorem";
            res.decisive = {{"quantity", "row_l1_norm"}, {"row", 0}, {"enclosure", json::array({"1", "1"})},
                            {"relation", ">"}, {"threshold", rat_json(eps)}};
            res.detail = std::string("softmax rows have l1 norm 1 ") + (res.verdict == Verdict::verified ? ">" : "<=") +
                         " eps";
        } else {
            std::size_t best = 0;
            Rat best_norm;
            for (std::size_t i = 0; i < I.n; ++i) {
                Rat s;
                for (std::size_t j = 0; j < I.N; ++j) fmpq_add(s.get(), s.get(), I.a(i, j).abs().get());
                if (i == 0 || s > best_norm) { best_norm = s; best = i; }
            }
            res.verdict = best_norm > eps ? Verdict::verified : Verdict::refuted;
            res.precision = "exact";
            res.decisive = {{"quantity", "row_l1_norm"}, {"row", best},
                            {"enclosure", json::array({rat_json(best_norm), rat_json(best_norm)})},
                            {"relation", ">"}, {"threshold", rat_json(eps)}};
            res.detail = "largest row l1 norm (row " + std::to_string(best) + ") = " +
                         interval_text({best_norm, best_norm, true}) + (res.verdict == Verdict::verified ? " > eps" : " <= eps");
        }
        break;
    }
    }
    return res;
}

Report verify(const Bundle& b, const CheckOptions& opt) {
    const auto t0 = Clock::now();
    Report r;
    const Instance& I = b.instance;
    const std::uint64_t full = std::min(I.n, I.N);
    r.lower = 0;
    r.upper = full;
    bool any_refuted = false, all_verified = true;
    for (std::size_t i = 0; i < b.certificates.size(); ++i) {
        const Certificate& c = b.certificates[i];
        CheckOptions o = opt;
        if (opt.progress) {
            o.progress = [&, i](const std::string& s) { opt.progress("cert " + std::to_string(i) + " " + s); };
        }
        CertResult cr = check_certificate(I, b.eps, c, o);
        cr.index = i;
        if (cr.verdict == Verdict::verified) {
            if (c.kind == CertKind::profile) {
                // geometry, not a rank bound
            } else if (c.upper) r.upper = std::min<std::uint64_t>(r.upper, c.rank);
            else r.lower = std::max<std::uint64_t>(r.lower, c.rank);
        } else {
            all_verified = false;
            if (cr.verdict == Verdict::refuted) any_refuted = true;
        }
        r.certificates.push_back(std::move(cr));
    }
    if (r.lower > r.upper)
        throw std::logic_error("verified certificates contradict each other (lower " + std::to_string(r.lower) +
                               " > upper " + std::to_string(r.upper) + "): please report this checker bug");
    r.closed = r.lower == r.upper;
    // The claim.
    bool impossible = false;
    std::string why;
    if (b.claim_lower && b.claim_upper && *b.claim_lower > *b.claim_upper) {
        impossible = true;
        why = "claim lower > claim upper";
    }
    if (b.claim_lower && *b.claim_lower > full) {
        impossible = true;
        why = "claim lower exceeds min(n, N) = " + std::to_string(full);
    }
    if (b.claim_upper && *b.claim_upper > full) {
        impossible = true;
        why = "claim upper exceeds min(n, N) = " + std::to_string(full);
    }
    r.claim_supported = !impossible && (!b.claim_lower || *b.claim_lower <= r.lower) &&
                        (!b.claim_upper || *b.claim_upper >= r.upper);
    if (impossible) r.claim_detail = "impossible claim: " + why;
    else if (r.claim_supported) r.claim_detail = "claim supported by the certified bracket";
    else
        r.claim_detail = "claim [" + (b.claim_lower ? std::to_string(*b.claim_lower) : std::string("-")) + ", " +
                         (b.claim_upper ? std::to_string(*b.claim_upper) : std::string("-")) +
                         "] not supported by certified [" + std::to_string(r.lower) + ", " + std::to_string(r.upper) + "]";
    if (any_refuted || impossible) r.verdict = Verdict::refuted;
    else if (all_verified && r.claim_supported) r.verdict = Verdict::verified;
    else r.verdict = Verdict::undecided;
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return r;
}

json report_json(const Bundle& b, const Report& r) {
    json certs = json::array();
    for (const auto& c : r.certificates)
        certs.push_back({{"index", c.index},
                         {"kind", to_string(c.kind)},
                         {"bound", c.kind == CertKind::profile ? "profile" : c.upper ? "upper" : "lower"},
                         {"rank", c.rank},
                         {"verdict", to_string(c.verdict)},
                         {"detail", c.detail},
                         {"precision", c.precision}});
    json claim = json::object();
    if (b.claim_lower) claim["lower"] = *b.claim_lower;
    if (b.claim_upper) claim["upper"] = *b.claim_upper;
    return {{"bundle", b.display},
            {"verdict", to_string(r.verdict)},
            {"eps", b.eps.str()},
            {"lower", r.lower},
            {"upper", r.upper},
            {"closed", r.closed},
            {"claim", claim},
            {"claim_supported", r.claim_supported},
            {"claim_detail", r.claim_detail},
            {"n", b.instance.n},
            {"N", b.instance.N},
            {"seconds", r.seconds},
            {"certificates", certs}};
}

json witness_json(const Bundle& b, const Report& r, const std::string& tool_version) {
    json sidecars = json::array();
    for (const auto& s : b.sidecars) sidecars.push_back({{"path", s.path}, {"sha256", s.sha256}});
    json certs = json::array();
    for (const auto& c : r.certificates)
        certs.push_back({{"index", c.index},
                         {"kind", to_string(c.kind)},
                         {"bound", c.kind == CertKind::profile ? "profile" : c.upper ? "upper" : "lower"},
                         {"rank", c.rank},
                         {"verdict", to_string(c.verdict)},
                         {"precision", c.precision},
                         {"decisive", c.decisive},
                         {"detail", c.detail}});
    json claim = json::object();
    if (b.claim_lower) claim["lower"] = *b.claim_lower;
    if (b.claim_upper) claim["upper"] = *b.claim_upper;
    return {{"format", "rankcert-witness/1"},
            {"tool", {{"name", "rankcert"}, {"version", tool_version}}},
            {"bundle", {{"path", b.display}, {"sha256", b.sha256}}},
            {"sidecars", sidecars},
            {"n", b.instance.n},
            {"N", b.instance.N},
            {"eps", b.eps.str()},
            {"claim", claim},
            {"verdict", to_string(r.verdict)},
            {"lower", r.lower},
            {"upper", r.upper},
            {"closed", r.closed},
            {"claim_supported", r.claim_supported},
            {"certificates", certs}};
}

}  // namespace rankcert
