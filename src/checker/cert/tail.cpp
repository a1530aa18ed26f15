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

#include "rankcert/fast.hpp"

#include <flint/fmpz_mat.h>

#include <algorithm>
#include <cmath>

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

// The fast tier for tail certificates (docs/theory.md, "The fast tier",
// "Tail"): M~ = a~ R~ per row with sum_u |M_tu - M~_tu| <= delta_t; both tests
// in binary64 with rigorous bounds.  Positive definiteness of H by Rump's
// method: floating-point Cholesky of X = fl(H~ - c I) completing means
// L L^T = X + dX with |dX| <= gamma_{m+1} |L||L|^T (Higham, Thm 10.3), so
// ||dX||_2 <= gamma_{m+1} / (1 - gamma_{m+1}) tr(X); with ||H - H~||_2 <=
// ||E||_F, H >= (c - ||E||_F - u max X_ii - gamma' tr(X)) I, positive when c
// is twice the subtracted sum.  Returns true only when both tests are
// verified (the result filled); otherwise the ladder decides.
bool fast_tail(const Instance& I, const TailCert& c, const Rat& rho, const std::vector<Rat>& ff, const Rat& thr,
               const CheckOptions& opt, CertResult& res) {
    const std::size_t m = c.rows.size(), p = c.r.cols, N = I.N;
    if (!opt.fast_tier || m == 0 || p == 0) return false;
    const fast::SoftmaxRows soft(I);
    if (!soft.ok()) return false;
    std::vector<double> r(c.r.entries.size());
    std::vector<std::size_t> per_col(p, 0);
    for (std::size_t e = 0; e < r.size(); ++e) {
        if (!fast::to_double(c.r.entries[e].val, r[e])) return false;
        ++per_col[c.r.entries[e].col];
    }
    std::size_t cmax = 0;
    for (auto k : per_col) cmax = std::max(cmax, k);
    double rho_up = 0, mu = 0;
    if (!fast::to_double(rho, rho_up) || !fast::to_double(c.mu, mu)) return false;
    rho_up *= 1 + 0x1p-50;
    // Rows of M~ with delta_t (l1 error), mx_t (max |M~_tu|), nrm_t (l2 norm, up).
    std::vector<double> M(m * p, 0), delta(m), mx(m), nrm(m);
    std::vector<std::uint8_t> ok(m, 1);
    rows::parallel_for(m, opt, "tail (fast tier)", 53, [&](std::size_t t) {
        std::vector<double> a(N);
        double errA = 0;
        if (!soft.row(c.rows[t], a.data(), errA)) return ok[t] = 0, false;
        double* Mt = M.data() + t * p;
        for (std::size_t e = 0; e < r.size(); ++e) Mt[c.r.entries[e].col] += a[c.r.entries[e].row] * r[e];
        delta[t] = (errA * rho_up + (fast::gamma(cmax) + 2.01 * fast::in_rel) * (1 + errA) * rho_up) * fast::inflate + fast::tiny;
        double big = 0, sq = 0;
        for (std::size_t u = 0; u < p; ++u) {
            big = std::max(big, std::fabs(Mt[u]));
            sq += Mt[u] * Mt[u];
        }
        mx[t] = big;
        nrm[t] = std::sqrt(sq) * fast::inflate + fast::tiny;
        return true;
    });
    for (auto v : ok)
        if (!v) return false;
    // ||M||_F^2: |exact - F2| <= sum_t delta_t (2 mx_t + delta_t) + gamma_{mp} F2.
    double F2 = 0, eF = 0;
    for (std::size_t t = 0; t < m; ++t) {
        F2 += nrm[t] * nrm[t];  // >= fl(sum M~^2): norms were rounded up
        eF += delta[t] * (2 * mx[t] + delta[t]);
    }
    eF = (eF + fast::gamma(m * p + 2) * F2) * fast::inflate + fast::tiny;
    // Lower end of ||M||_F^2 from the fl sum of squares (not the rounded-up norms).
    double F2low = 0;
    for (std::size_t t = 0; t < m * p; ++t) F2low += M[t] * M[t];
    const double frob_lo = fast::down(F2low, eF), frob_hi = fast::up(F2, eF);
    if (!(cmp(fast::exact(frob_lo), thr) > 0)) return false;
    // H~ = fl(FF^T) + mu I - fl(M~ M~^T) (lower triangle), and the entry
    // bounds E_ab >= |H_ab - H~_ab| summed as ||E||_F^2 (both triangles).
    std::vector<double> X(m * m, 0), rowE2(m, 0);
    std::vector<std::uint8_t> entered(m, 1);
    const double gp = fast::gamma(p + 2);
    rows::parallel_for(m, opt, "tail Gram (fast tier)", 53, [&](std::size_t a) {
        const double* Ma = M.data() + a * p;
        for (std::size_t b = 0; b <= a; ++b) {
            const double* Mb = M.data() + b * p;
            double g = 0;
            for (std::size_t u = 0; u < p; ++u) g += Ma[u] * Mb[u];
            double f = 0;
            if (!fast::to_double(ff[a * m + b], f)) return entered[a] = 0, false;
            const double h = a == b ? (f + mu) - g : f - g;
            X[a * m + b] = h;
            // FF^T and mu entered (in_rel), G~ vs G (row errors and gamma_p),
            // and the two roundings of h (u |each operand| each).
            const double Eab = (fast::in_rel * (std::fabs(f) + (a == b ? mu : 0)) + delta[a] * (mx[b] + delta[b]) +
                                mx[a] * delta[b] + gp * nrm[a] * nrm[b] +
                                2 * fast::unit * (std::fabs(f) + (a == b ? mu : 0) + std::fabs(g))) *
                                   fast::inflate + fast::tiny;
            rowE2[a] += (a == b ? 1 : 2) * Eab * Eab;
        }
        return true;
    });
    double E2 = 0, trace = 0, maxdiag = 0;
    for (std::size_t a = 0; a < m; ++a) {
        if (!entered[a]) return false;
        E2 += rowE2[a];
        trace += std::max(0.0, X[a * m + a]);
        maxdiag = std::max(maxdiag, std::fabs(X[a * m + a]));
    }
    const double normE = std::sqrt(E2 * fast::inflate) * fast::inflate + fast::tiny;  // >= ||H - H~||_2
    const double gm = fast::gamma(m + 1), gprime = gm / (1 - gm);
    const double shift = 2 * (normE + gprime * trace + 2 * fast::unit * maxdiag) * fast::inflate + fast::tiny;
    // Cholesky of X = fl(H~ - shift I), in place (lower triangle).
    for (std::size_t a = 0; a < m; ++a) X[a * m + a] -= shift;
    for (std::size_t k = 0; k < m; ++k) {
        double d = X[k * m + k];
        for (std::size_t l = 0; l < k; ++l) d -= X[k * m + l] * X[k * m + l];
        if (!(d > 0)) return false;  // not certain: the ladder decides
        const double lkk = std::sqrt(d);
        X[k * m + k] = lkk;
        for (std::size_t i = k + 1; i < m; ++i) {
            double s = X[i * m + k];
            for (std::size_t l = 0; l < k; ++l) s -= X[i * m + l] * X[k * m + l];
            X[i * m + k] = s / lkk;
        }
    }
    res.verdict = Verdict::verified;
    res.precision = "fast";
    const Endpoints fe{fast::exact(frob_lo), fast::exact(frob_hi), true};
    res.decisive = {{"quantity", "tail"},
                    {"frobenius_sq", endpoints_json(fe)},
                    {"frobenius_relation", ">"},
                    {"threshold", thr.str()},
                    {"rho", rho.str()},
                    {"psd", "verified"},
                    {"psd_method", "binary64 Cholesky of H~ - c I (Rump)"},
                    {"shift_c", fast::exact(shift).str()},
                    {"h_error_frobenius", fast::exact(normE).str()}};
    res.detail = "||M||_F^2 in " + interval_text(fe) + " > " + exact_text(thr) +
                 "; mu I + F F^T - M M^T positive definite (binary64 Cholesky with shift " + exact_text(fast::exact(shift)) +
                 ")";
    return true;
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
    if (fast_tail(I, c, rho, ff, thr, opt, res)) return res;
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
