// tail: a Frobenius-tail lower bound (docs/theory.md, "Lower bounds").
//
// With M = A_I R, rho = ||R||_inf, checked:
//   (1) H = mu I + F F^T - M M^T is positive definite (LDL^T, ldl.hpp), and
//   (2) ||M||_F^2 > k mu + ||F||_F^2 + m (eps rho)^2.
// Then the top k squared singular values of M sum to at most k mu + ||F||_F^2
// (Weyl), the tail exceeds m (eps rho)^2, and Eckart-Young gives
// r_eps(A) >= k + 1.  Exact for rational A; otherwise M is enclosed in balls
// on the precision ladder (its rows in parallel) and both tests are decided
// on the enclosures.
#include "../ldl.hpp"
#include "common.hpp"
#include "units.hpp"

#include <flint/fmpz_mat.h>

namespace rankcert::cert {

void parse_tail(const json& c, const Where& w, const Instance& I, ArrayLoader& L, Certificate& cert) {
    TailCert t;
    t.rows = parse_rows(require(c, "rows", w), w.key("rows"), I.n);
    if (t.rows.size() > Limits::max_tail_rows)
        throw InputError(w.key("rows"), "a tail certificate may use at most " + std::to_string(Limits::max_tail_rows) +
                                            " rows (its Gram matrix is m x m)");
    t.r = L.load_sparse(require(c, "r", w), w.key("r"));
    if (t.r.rows != I.N) throw InputError(w.key("r"), "has " + std::to_string(t.r.rows) + " rows, N = " + std::to_string(I.N));
    t.k = parse_index(require(c, "k", w), w.key("k"));
    t.mu = parse_rational(require(c, "mu", w), w.key("mu"));
    if (t.mu.sign() < 0) throw InputError(w.key("mu"), "must be >= 0");
    t.f = L.load(require(c, "f", w), w.key("f"));
    if (t.f.rows != t.rows.size())
        throw InputError(w.key("f"), "has " + std::to_string(t.f.rows) + " rows, expected m = " + std::to_string(t.rows.size()));
    check_rank(c, w, t.k + 1, cert, true);
    cert.data = std::move(t);
}

namespace {

// The verdict and text of a tail check from its two tests.
void decide(CertResult& res, Verdict frob_v, const Endpoints& frob_e, const LdlResult& ldl, const std::string& prec,
            const Rat& thr, const Rat& kmuf, const Rat& rho) {
    res.precision = prec;
    res.decisive = {{"quantity", "tail"},
                    {"frobenius_sq", endpoints_json(frob_e)},
                    {"frobenius_relation", ">"},
                    {"threshold", thr.str()},
                    {"k_mu_plus_F_sq", kmuf.str()},
                    {"rho", rho.str()},
                    {"psd", to_string(ldl.verdict)},
                    {"pivot", ldl.pivot},
                    {"pivot_enclosure", endpoints_json(ldl.value)}};
    if (frob_v == Verdict::refuted || ldl.verdict == Verdict::refuted) res.verdict = Verdict::refuted;
    else if (frob_v == Verdict::verified && ldl.verdict == Verdict::verified) res.verdict = Verdict::verified;
    else res.verdict = Verdict::undecided;
    const std::string frob = "||M||_F^2 in " + interval_text(frob_e);
    if (ldl.verdict == Verdict::refuted)
        res.detail = "mu I + F F^T - M M^T is not positive semidefinite: LDL pivot " + std::to_string(ldl.pivot) +
                     " lies in " + interval_text(ldl.value);
    else if (frob_v == Verdict::refuted)
        res.detail = frob + " does not exceed k mu + ||F||^2 + m (eps rho)^2 = " + exact_text(thr);
    else if (res.verdict == Verdict::verified)
        res.detail = frob + " > " + exact_text(thr) + "; mu I + F F^T - M M^T positive definite (smallest pivot " +
                     interval_text(ldl.value) + ")";
    else
        res.detail = "undecided at " + prec + " bits: " +
                     (ldl.verdict == Verdict::undecided
                          ? "positive definiteness not certain (pivot " + std::to_string(ldl.pivot) + " in " +
                                interval_text(ldl.value) + ")"
                          : frob + " vs " + exact_text(thr));
}

// F F^T exactly (lower triangle, row-major m x m).  F is brought to integers
// over the least common denominator D of its entries and multiplied with
// FLINT's integer matrix product; (F F^T)_ab = (D F)(D F)^T_ab / D^2.
std::vector<Rat> gram_lower(const Matrix& F) {
    const std::size_t m = F.rows, f = F.cols;
    std::vector<Rat> out(m * m);
    fmpz_t D, t;
    fmpz_init(D);
    fmpz_init(t);
    fmpz_one(D);
    for (const auto& x : F.v) fmpz_lcm(D, D, fmpq_denref(x.get()));
    fmpz_mat_t A, At, G;
    fmpz_mat_init(A, static_cast<slong>(m), static_cast<slong>(f));
    fmpz_mat_init(At, static_cast<slong>(f), static_cast<slong>(m));
    fmpz_mat_init(G, static_cast<slong>(m), static_cast<slong>(m));
    for (std::size_t a = 0; a < m; ++a)
        for (std::size_t s = 0; s < f; ++s) {
            const fmpq* x = F(a, s).get();
            fmpz_divexact(t, D, fmpq_denref(x));
            fmpz_mul(fmpz_mat_entry(A, a, s), fmpq_numref(x), t);
            fmpz_set(fmpz_mat_entry(At, s, a), fmpz_mat_entry(A, a, s));
        }
    fmpz_mat_mul(G, A, At);
    fmpz_mul(D, D, D);
    for (std::size_t a = 0; a < m; ++a)
        for (std::size_t b = 0; b <= a; ++b) fmpq_set_fmpz_frac(out[a * m + b].get(), fmpz_mat_entry(G, a, b), D);
    fmpz_mat_clear(G);
    fmpz_mat_clear(At);
    fmpz_mat_clear(A);
    fmpz_clear(t);
    fmpz_clear(D);
    return out;
}

}  // namespace

CertResult check_tail(const Instance& I, const Rat& eps, const Certificate& cert, const CheckOptions& opt) {
    const auto& c = cert.as<TailCert>();
    CertResult res = result_for(cert);
    const std::size_t m = c.rows.size(), p = c.r.cols, N = I.N;
    const Rat rho = row_sum_norm(c.r);
    // Exact parts: K = F F^T (lower triangle), and T = k mu + ||F||_F^2 + m (eps rho)^2.
    const std::vector<Rat> ff = gram_lower(c.f);
    Rat fnorm;
    for (std::size_t a = 0; a < m; ++a) fnorm = fnorm + ff[a * m + a];
    const Rat kmuf = Rat(static_cast<long>(c.k)) * c.mu + fnorm;
    const Rat er = eps * rho;
    const Rat thr = kmuf + Rat(static_cast<long>(m)) * er * er;

    if (!I.is_softmax()) {
        // Exact: M = A_I R over the rationals.
        std::vector<Rat> M(m * p);
        for (std::size_t t = 0; t < m; ++t)
            for (const auto& e : c.r.entries) fmpq_addmul(M[t * p + e.col].get(), I.a(c.rows[t], e.row).get(), e.val.get());
        Rat frob;
        for (auto& x : M) fmpq_addmul(frob.get(), x.get(), x.get());
        std::vector<Rat> h(m * m);
        for (std::size_t a = 0; a < m; ++a)
            for (std::size_t b = 0; b <= a; ++b) {
                Rat g;
                for (std::size_t t = 0; t < p; ++t) fmpq_addmul(g.get(), M[a * p + t].get(), M[b * p + t].get());
                h[a * m + b] = ff[a * m + b] - g + (a == b ? c.mu : Rat());
            }
        const LdlResult ldl = ldl_positive_definite(RatOps{}, h, m);
        decide(res, frob > thr ? Verdict::verified : Verdict::refuted, {frob, frob, true}, ldl, "exact", thr, kmuf, rho);
        return res;
    }
    for (slong prec : rows::ladder(opt)) {
        RowEncloser enc(I, prec);
        BallVec M(m * p), r(c.r.entries.size());
        for (std::size_t e = 0; e < c.r.entries.size(); ++e) arb_set_fmpq(r[e], c.r.entries[e].val.get(), prec);
        rows::parallel_for(m, opt, "tail", prec, [&](std::size_t t) {
            BallVec a(N);
            enc.row(c.rows[t], a.data());
            for (std::size_t e = 0; e < c.r.entries.size(); ++e) {
                const auto& en = c.r.entries[e];
                arb_addmul(M[t * p + en.col], a[en.row], r[e], prec);
            }
            return true;
        });
        Ball frob;
        arb_dot(frob.get(), nullptr, 0, M.data(), 1, M.data(), 1, static_cast<slong>(m * p), prec);
        std::vector<Ball> h(m * m);
        rows::parallel_for(m, opt, "tail Gram", prec, [&](std::size_t x) {
            for (std::size_t y = 0; y <= x; ++y) {
                Ball g;
                arb_dot(g.get(), nullptr, 0, M.data() + x * p, 1, M.data() + y * p, 1, static_cast<slong>(p), prec);
                const Rat exact_part = x == y ? ff[x * m + y] + c.mu : ff[x * m + y];
                arb_set_fmpq(h[x * m + y].get(), exact_part.get(), prec);
                arb_sub(h[x * m + y].get(), h[x * m + y].get(), g.get(), prec);
            }
            return true;
        });
        const LdlResult ldl = ldl_positive_definite(BallOps{prec}, h, m);
        decide(res, decide_gt(frob.get(), thr), endpoints(frob.get()), ldl, std::to_string(prec), thr, kmuf, rho);
        if (res.verdict != Verdict::undecided) break;
        if (opt.progress) opt.progress("tail: undecided at " + std::to_string(prec) + " bits, raising precision");
    }
    return res;
}

std::string describe_tail(const Certificate& cert) {
    const auto& c = cert.as<TailCert>();
    return std::to_string(c.rows.size()) + " rows, r " + std::to_string(c.r.rows) + "x" + std::to_string(c.r.cols) +
           ", k = " + std::to_string(c.k) + ", mu = " + c.mu.str() + ", f " + std::to_string(c.f.rows) + "x" +
           std::to_string(c.f.cols);
}

}  // namespace rankcert::cert
