// factor: B = U W^T (docs/theory.md, "Upper bounds").
//
// Checked: for every row i, sum_j |A_ij - (U W^T)_ij| <= eps.  Then B has
// rank at most k and lies within eps of A, so r_eps(A) <= k.  Rows are
// decided in ball arithmetic on the precision ladder; for rational A, rows
// left undecided are decided exactly.  For k = 0 on softmax rows the error is
// ||A_i||_1 = 1 exactly (rows are probability vectors, a theorem).
#include "combination.hpp"
#include "units.hpp"

namespace rankcert::cert {

void parse_factor(const json& c, const Where& w, const Instance& I, ArrayLoader& L, Certificate& cert) {
    FactorCert f;
    f.u = L.load(require(c, "u", w), w.key("u"));
    f.w = L.load(require(c, "w", w), w.key("w"));
    std::size_t k = f.u.cols;
    if (f.u.is_vector && f.u.rows == I.n) k = 1;
    expect_shape(f.u, I.n, k, w.key("u"), "n x k");
    expect_shape(f.w, I.N, k, w.key("w"), "N x k");
    check_rank(c, w, k, cert, true);
    cert.data = std::move(f);
}

// The row-wise error check shared by factor and row_interpolative.
CertResult check_row_errors(rows::RowQuantity& q, const Rat& eps, const Certificate& c, const CheckOptions& opt) {
    CertResult res = result_for(c);
    const rows::RowOutcome o = rows::decide_rows(q, {{eps, false}}, opt, to_string(c.kind()));
    fill_rowwise(res, o, "row_l1_error", "<=", eps, "row");
    const std::string row = "row " + std::to_string(o.row);
    const std::string encl = o.enclosure.empty() ? "" : interval_text(o.enclosure[0]);
    if (o.verdict == Verdict::verified)
        res.detail = "every row error <= eps; worst " + row + " in " + encl;
    else if (o.verdict == Verdict::refuted)
        res.detail = row + " error in " + encl + " exceeds eps = " + exact_text(eps);
    else
        res.detail = std::to_string(o.undecided_rows) + " rows undecided at " + o.precision + " bits, e.g. " + row +
                     " error in " + encl;
    return res;
}

CertResult check_factor(const Instance& I, const Rat& eps, const Certificate& c, const CheckOptions& opt) {
    const auto& f = c.as<FactorCert>();
    CombinationRows q(I, f.u, f.u.cols, &f.w, nullptr);  // B = U (W^T)
    return check_row_errors(q, eps, c, opt);
}

std::string describe_factor(const Certificate& c) {
    const auto& f = c.as<FactorCert>();
    return "u " + std::to_string(f.u.rows) + "x" + std::to_string(f.u.cols) + ", w " + std::to_string(f.w.rows) + "x" +
           std::to_string(f.w.cols);
}

}  // namespace rankcert::cert
