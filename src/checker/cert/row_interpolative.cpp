// row_interpolative: B = X A_I (docs/theory.md, "Upper bounds").
//
// B has rank at most |I| = k; checked, as for factor: every row's l1 error
// sum_j |A_ij - (X A_I)_ij| <= eps.
#include "combination.hpp"
#include "units.hpp"

namespace rankcert::cert {

void parse_row_interpolative(const json& c, const Where& w, const Instance& I, ArrayLoader& L, Certificate& cert) {
    RowInterpolativeCert ri;
    ri.rows = parse_rows(require(c, "rows", w), w.key("rows"), I.n);
    ri.x = load_shaped(c, "x", w, L, I.n, ri.rows.size(), "n x k");
    check_rank(c, w, ri.rows.size(), cert, false);
    cert.data = std::move(ri);
}

CertResult check_row_interpolative(const Instance& I, const Rat& eps, const Certificate& c, const CheckOptions& opt) {
    const auto& ri = c.as<RowInterpolativeCert>();
    CombinationRows q(I, ri.x, ri.rows.size(), nullptr, &ri.rows);  // B = X A_I
    return check_row_errors(q, eps, c, opt);
}

std::string describe_row_interpolative(const Certificate& c) {
    const auto& ri = c.as<RowInterpolativeCert>();
    return std::to_string(ri.rows.size()) + " rows, x " + std::to_string(ri.x.rows) + "x" + std::to_string(ri.x.cols);
}

}  // namespace rankcert::cert
