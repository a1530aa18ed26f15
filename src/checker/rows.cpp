// Row-wise decisions with a precision ladder (see rows.hpp).
#include "rows.hpp"

#include <flint/flint.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace rankcert::rows {

using Clock = std::chrono::steady_clock;

unsigned worker_count(const CheckOptions& opt, std::size_t work) {
    unsigned t = opt.threads ? opt.threads : std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
    if (work < 64) t = 1;
    return t;
}

std::vector<slong> ladder(const CheckOptions& opt) { return PrecisionLadder::up_to(opt.max_prec).bits; }

void parallel_for(const std::vector<std::size_t>& items, const CheckOptions& opt, const std::string& label, slong prec,
                  const std::function<bool(std::size_t)>& fn) {
    const unsigned threads = worker_count(opt, items.size());
    std::atomic<std::size_t> next{0}, done{0};
    std::atomic<bool> stop{false};
    std::mutex progress_mutex;
    auto last = Clock::now();
    auto work = [&]() {
        for (;;) {
            if (stop.load(std::memory_order_relaxed)) break;
            const std::size_t b = next.fetch_add(4);
            if (b >= items.size()) break;
            const std::size_t e = std::min(items.size(), b + 4);
            for (std::size_t s = b; s < e; ++s)
                if (!fn(items[s])) stop = true;
            const std::size_t d = done += e - b;
            if (opt.progress && (d & 63) < e - b) {
                std::lock_guard<std::mutex> lock(progress_mutex);
                if (Clock::now() - last > std::chrono::milliseconds(500)) {
                    last = Clock::now();
                    opt.progress(label + ": " + std::to_string(d) + "/" + std::to_string(items.size()) + " rows at " +
                                 std::to_string(prec) + " bits");
                }
            }
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

void parallel_for(std::size_t count, const CheckOptions& opt, const std::string& label, slong prec,
                  const std::function<bool(std::size_t)>& fn) {
    std::vector<std::size_t> items(count);
    for (std::size_t t = 0; t < count; ++t) items[t] = t;
    parallel_for(items, opt, label, prec, fn);
}

namespace {

Verdict decide(arb_srcptr x, const RowTest& test) {
    return test.strict ? decide_lt(x, test.threshold) : decide_le(x, test.threshold);
}

Verdict decide(const Rat& x, const RowTest& test) {
    const int c = cmp(x, test.threshold);
    return (test.strict ? c < 0 : c <= 0) ? Verdict::verified : Verdict::refuted;
}

// All tests of a row: refuted if one is, verified if all are.
Verdict combine(const std::vector<Verdict>& vs) {
    Verdict out = Verdict::verified;
    for (Verdict v : vs) {
        if (v == Verdict::refuted) return v;
        if (v == Verdict::undecided) out = v;
    }
    return out;
}

// The fast tier over the pending rows: binary64 ends, made exact and
// decided like a ball.  Rows it cannot settle stay undecided.
void fast_pass(const RowQuantity& q, const std::vector<RowTest>& tests, const CheckOptions& opt, const std::string& label,
               const std::vector<std::size_t>& pending, std::vector<Verdict>& verdict,
               std::vector<std::vector<Endpoints>>& encl, std::vector<std::string>& prec_of) {
    const std::size_t nv = q.values();
    parallel_for(pending, opt, label + " (fast tier)", 53, [&](std::size_t t) {
        std::vector<double> lo(nv), hi(nv);
        if (!q.fast(t, lo.data(), hi.data())) return true;
        std::vector<Verdict> vs(nv);
        encl[t].resize(nv);
        for (std::size_t v = 0; v < nv; ++v) {
            Ball x;
            if (lo[v] <= hi[v] && std::isfinite(lo[v]) && std::isfinite(hi[v])) {
                arf_t a, b;
                arf_init(a);
                arf_init(b);
                arf_set_d(a, lo[v]);
                arf_set_d(b, hi[v]);
                arb_set_interval_arf(x.get(), a, b, 128);  // outward: contains [lo, hi]
                arf_clear(a);
                arf_clear(b);
            } else {
                arb_indeterminate(x.get());
            }
            vs[v] = decide(x.get(), tests[v]);
            encl[t][v] = endpoints(x.get());
        }
        verdict[t] = combine(vs);
        prec_of[t] = "fast";
        return verdict[t] != Verdict::refuted;
    });
}

}  // namespace

RowOutcome decide_rows(RowQuantity& q, const std::vector<RowTest>& tests, const CheckOptions& opt,
                       const std::string& label) {
    const std::size_t count = q.count(), nv = q.values();
    std::vector<Verdict> verdict(count, Verdict::undecided);
    std::vector<std::vector<Endpoints>> encl(count);
    std::vector<std::string> prec_of(count);
    std::vector<std::size_t> pending(count);
    for (std::size_t t = 0; t < count; ++t) pending[t] = t;
    RowOutcome o;

    auto refuting = [&](const std::vector<std::size_t>& rows) {
        for (std::size_t t : rows)
            if (verdict[t] == Verdict::refuted) {
                o.verdict = Verdict::refuted;
                o.row = t;
                o.enclosure = encl[t];
                o.precision = prec_of[t];
                return true;
            }
        return false;
    };

    // The fast tier first: every row its bounds settle leaves the ladder.
    if (opt.fast_tier && count && q.fast_prepare()) {
        fast_pass(q, tests, opt, label, pending, verdict, encl, prec_of);
        if (refuting(pending)) return o;
        std::vector<std::size_t> still;
        for (std::size_t t : pending) {
            if (verdict[t] == Verdict::undecided) still.push_back(t);
            else ++o.fast_rows;
        }
        pending.swap(still);
    }

    for (slong prec : ladder(opt)) {
        if (pending.empty()) break;
        q.prepare(prec);
        parallel_for(pending, opt, label, prec, [&](std::size_t t) {
            BallVec x(nv);
            q.eval(t, x.data());
            std::vector<Verdict> vs(nv);
            encl[t].resize(nv);
            for (std::size_t v = 0; v < nv; ++v) {
                vs[v] = decide(x[v], tests[v]);
                encl[t][v] = endpoints(x[v]);
            }
            verdict[t] = combine(vs);
            prec_of[t] = std::to_string(prec);
            return verdict[t] != Verdict::refuted;
        });
        if (refuting(pending)) return o;
        std::vector<std::size_t> still;
        for (std::size_t t : pending)
            if (verdict[t] == Verdict::undecided) still.push_back(t);
        pending.swap(still);
        if (!pending.empty() && q.has_exact()) {
            // The data are rational: decide the rest exactly.
            for (std::size_t t : pending) {
                std::vector<Rat> x(nv);
                q.exact(t, x);
                std::vector<Verdict> vs(nv);
                encl[t].resize(nv);
                for (std::size_t v = 0; v < nv; ++v) {
                    vs[v] = decide(x[v], tests[v]);
                    encl[t][v] = {x[v], x[v], true};
                }
                verdict[t] = combine(vs);
                prec_of[t] = "exact";
            }
            if (refuting(pending)) return o;
            pending.clear();
        }
    }
    if (!pending.empty()) {
        o.verdict = Verdict::undecided;
        o.row = pending.front();
        o.enclosure = encl[o.row];
        o.precision = prec_of[o.row];
        o.undecided_rows = pending.size();
        return o;
    }
    o.verdict = Verdict::verified;
    if (count == 0) return o;
    // The worst row (largest upper end of value 0), and the worst of each value.
    o.worst = encl[0];
    for (std::size_t t = 0; t < count; ++t) {
        if (cmp(encl[t][0].hi, encl[o.row][0].hi) > 0) o.row = t;
        for (std::size_t v = 0; v < nv; ++v)
            if (cmp(encl[t][v].hi, o.worst[v].hi) > 0) o.worst[v] = encl[t][v];
    }
    o.enclosure = encl[o.row];
    // The precision that decided the whole check is the highest used.
    o.precision = prec_of[0];
    for (std::size_t t = 0; t < count; ++t)
        if (precision_level(prec_of[t]) > precision_level(o.precision)) o.precision = prec_of[t];
    return o;
}

long precision_level(const std::string& p) {
    if (p == "exact") return 1L << 40;
    if (p.empty() || p == "fast") return 0;
    return std::stol(p);
}

}  // namespace rankcert::rows
