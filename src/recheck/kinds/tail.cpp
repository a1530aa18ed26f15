// rankcert-recheck: lower `tail` (THEORY.md): with M = A_I R (m x p), rho =
// max_j sum_u |R_ju| (exact) and F (m x f),
//   ||M||_F^2 > k mu + ||F||_F^2 + m (eps rho)^2   and   F F^T + mu I - M M^T > 0
// (positive definite: every pivot of LDL^T without pivoting is positive).
#include "../recheck.hpp"

namespace recheck {

namespace {

// LDL^T without pivoting of the symmetric H (lower triangle used):
// verified when every pivot is certainly positive, refuted when one is
// certainly negative (a negative leading minor), else undecided.
template <class I> Verdict ldl(std::vector<std::vector<I>>& H) {
    const std::size_t m = H.size();
    for (std::size_t q = 0; q < m; ++q) {
        for (std::size_t l = 0; l < q; ++l) H[q][q] = H[q][q] - H[q][l] * H[q][l] * H[l][l];
        if (gt(H[q][q], Q(0)) != Verdict::verified)
            return lt(H[q][q], Q(0)) == Verdict::verified ? Verdict::refuted : Verdict::undecided;
        for (std::size_t i = q + 1; i < m; ++i) {
            for (std::size_t l = 0; l < q; ++l) H[i][q] = H[i][q] - H[i][l] * H[q][l] * H[l][l];
            H[i][q] = H[i][q] / H[q][q];
        }
    }
    return Verdict::verified;
}

}  // namespace

// Positive definiteness of a symmetric interval matrix in binary64 (Rump,
// "Verification of positive definiteness", BIT 46, 2006): with Hm the
// midpoints, B = fl(Hm - c I) and a floating-point Cholesky factorization
// R of B that runs to completion, R^T R = B + dB with |dB_ij| <= gamma_{m+1}
// |R^T| |R| (Higham, Accuracy and Stability, Thm 10.3), |r_i|^2 <= b_ii /
// (1 - gamma), so ||dB||_2 <= gamma / (1 - gamma) tr(B) (+ underflow).  Then
//   H = B + (Hm - B) + (H - Hm) >= (min_i (h_ii - b_ii) - ||dB||_2 - ||H - Hm||_inf) I,
// and H is positive definite when that is positive.  Verified or undecided.
Verdict spd_di(const std::vector<std::vector<DI>>& H) {
    const std::size_t m = H.size();
    std::vector<double> B(m * m), rad_row(m, 0.0);
    double trace = 0, diag_rad = 0;
    for (std::size_t a = 0; a < m; ++a)
        for (std::size_t b = 0; b <= a; ++b) {
            const DI& h = H[a][b];
            if (!std::isfinite(h.lo) || !std::isfinite(h.hi)) return Verdict::undecided;
            const double mid = 0.5 * h.lo + 0.5 * h.hi, r = std::max(up(h.hi - mid), up(mid - h.lo));
            B[a * m + b] = B[b * m + a] = mid;
            rad_row[a] = up(rad_row[a] + r);
            if (a != b) rad_row[b] = up(rad_row[b] + r);
            if (a == b) trace = up(trace + std::max(mid, 0.0));
        }
    for (double r : rad_row) diag_rad = std::max(diag_rad, r);  // ||H - Hm||_inf (symmetric: >= ||.||_2)
    const double g = static_cast<double>(m + 1) * 0x1p-53;
    if (g > 0.01) return Verdict::undecided;
    const double gg = up(up(g * 1.02) * trace);  // gamma / (1 - gamma) tr(B) with tr(B) <= tr(max(Hm, 0))
    const double need = up(up(gg + diag_rad) + static_cast<double>(m) * 0x1p-1000);
    const double c = up(2 * need + 0x1p-1000);
    double min_shift = INFINITY;
    for (std::size_t a = 0; a < m; ++a) {
        const double h = B[a * m + a];
        B[a * m + a] = h - c;
        min_shift = std::min(min_shift, down(h - B[a * m + a]));  // the exact shift is at least this
    }
    if (!(min_shift > need)) return Verdict::undecided;
    // Cholesky (upper R, row by row), round-to-nearest.
    for (std::size_t j = 0; j < m; ++j) {
        double s = B[j * m + j];
        for (std::size_t k = 0; k < j; ++k) s -= B[k * m + j] * B[k * m + j];
        if (!(s > 0) || !std::isfinite(s)) return Verdict::undecided;
        const double rjj = std::sqrt(s);
        B[j * m + j] = rjj;
        for (std::size_t i = j + 1; i < m; ++i) {
            double t = B[j * m + i];
            for (std::size_t k = 0; k < j; ++k) t -= B[k * m + j] * B[k * m + i];
            B[j * m + i] = t / rjj;
            if (!std::isfinite(B[j * m + i])) return Verdict::undecided;
        }
    }
    return Verdict::verified;
}

namespace {

// The binary64 tier: F F^T and M M^T by sums with a priori bounds.
Verdict tail_di(const Instance& inst, const std::vector<std::size_t>& rows, const Columns& rc, const Array& f, const Q& mu,
                const Q& thr, Encl& frob_encl) {
    const std::size_t m = rows.size();
    Array M;
    M.rows = m;
    M.cols = rc.m;
    M.points = false;
    DI frob = DI::point(0);
    for (std::size_t t = 0; t < m; ++t) {
        const std::vector<DI> v = rc.apply(inst.row_di(rows[t]));
        std::vector<double> vm, vr;
        mid_rad(v, vm, vr);
        M.mid.insert(M.mid.end(), vm.begin(), vm.end());
        M.rad.insert(M.rad.end(), vr.begin(), vr.end());
        for (const auto& x : v) frob += x * x;
    }
    frob_encl = encl(frob);
    const Rows mr(M, false), fr(f, false);
    const DI mu_d = to_di(mu);
    std::vector<std::vector<DI>> H(m, std::vector<DI>(m));
    for (std::size_t a = 0; a < m; ++a)
        for (std::size_t b = 0; b <= a; ++b) {
            const DI h0 = fr.dot(b, fr.m(a), fr.nmid[a], fr.nrad[a]) - mr.dot(b, mr.m(a), mr.nmid[a], mr.nrad[a]);
            H[a][b] = a == b ? h0 + mu_d : h0;
        }
    return combine(gt(frob, thr), spd_di(H));
}

// The MPFR tier: F F^T + mu I exactly, the rest in intervals.
Verdict tail_mi(const Instance& inst, const std::vector<std::size_t>& rows, const Columns& rc, const Array& f, const Q& mu,
                const Q& thr, Encl& frob_encl) {
    const std::size_t m = rows.size();
    std::vector<std::vector<MI>> M;
    for (auto r : rows) M.push_back(rc.apply(inst.row<MI>(r)));
    MI frob = to_mi(0.0);
    for (const auto& v : M)
        for (const auto& x : v) frob += x * x;
    frob_encl = encl(frob);
    std::vector<std::vector<MI>> H(m, std::vector<MI>(m));
    for (std::size_t a = 0; a < m; ++a)
        for (std::size_t b = 0; b <= a; ++b) {
            Q ff = a == b ? mu : Q(0);
            for (std::size_t t = 0; t < f.cols; ++t) ff += f.q[a * f.cols + t] * f.q[b * f.cols + t];
            MI s = to_mi(ff);
            for (std::size_t u = 0; u < M[a].size(); ++u) s = s - M[a][u] * M[b][u];
            H[a][b] = std::move(s);
        }
    return combine(gt(frob, thr), ldl(H));
}

}  // namespace

Outcome check_tail(const Context& c) {
    const Instance& inst = c.inst;
    const auto rows = indices(c.cert.at("rows", c.where), c.where + ".rows", inst.n, false);
    const std::size_t m = rows.size();
    if (m == 0 || m > 8192) throw InputError(c.where + ".rows: needs 1 to 8192 rows");
    const Array r = dense(c, "r", inst.N, SIZE_MAX);
    const Array f = dense(c, "f", m, SIZE_MAX);
    const std::size_t k = c.cert.at("k", c.where).index(c.where + ".k");
    const Q mu = read_q(c.cert.at("mu", c.where), c.where + ".mu");
    if (mu < 0) throw InputError(c.where + ".mu: must be >= 0");
    if (rank_of(c.cert, c.where) != k + 1) throw InputError(c.where + ".rank: is not k + 1");
    const Q rho = row_l1_max(r);
    Q trace = 0;
    for (const auto& x : f.q) trace += x * x;
    const Q thr = Q(k) * mu + trace + Q(m) * (c.eps * rho) * (c.eps * rho);
    const Columns rc(r);
    Outcome o;
    Encl fe;
    o.verdict = tail_di(inst, rows, rc, f, mu, thr, fe);
    for (std::size_t t = 0; t < 3 && o.verdict == Verdict::undecided; ++t) {
        const mpfr_prec_t keep = get_mi_bits();
        set_mi_bits(ladder[t]);
        o.verdict = tail_mi(inst, rows, rc, f, mu, thr, fe);
        set_mi_bits(keep);
    }
    o.named["frobenius_sq"] = fe;
    return o;
}

}  // namespace recheck
