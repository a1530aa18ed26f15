// What the certificate units share: structural parsing helpers and the
// human-readable text of enclosures.  Internal to the checker.
#pragma once

#include "../rows.hpp"
#include "rankcert/kinds.hpp"
#include "rankcert/result.hpp"

#include <string>
#include <utility>
#include <vector>

namespace rankcert::cert {

// Parsing (no arithmetic on A).
void expect_shape(const Matrix& m, std::size_t rows, std::size_t cols, const Where& w, const std::string& what);
std::vector<Rat> as_vector(const Matrix& m, std::size_t len, const Where& w);
// Distinct row indices in [0, n).
std::vector<std::size_t> parse_rows(const json& j, const Where& w, std::size_t n);
// The optional (or required) "rank" field must equal what the data prove; sets cert.rank.
void check_rank(const json& c, const Where& w, std::uint64_t expected, Certificate& cert, bool required);
// An exact interval [lo, hi] with lo <= hi.
std::pair<Rat, Rat> parse_interval(const json& obj, const char* key, const Where& w);
// The "factors" list of a kron_* certificate: one entry per factor of the
// kronecker instance I (`what` names an entry's fields in the error).
const json& kron_factor_list(const json& c, const Where& w, const Instance& I, const std::string& what);
// A matrix field with the given shape.
Matrix load_shaped(const json& c, const char* key, const Where& w, ArrayLoader& L, std::size_t rows, std::size_t cols,
                   const std::string& what);

// Text of exact numbers (detail strings; JSON: endpoints_json in rankcert/result.hpp).
// "[0.0123, 0.0125]", an exact short value, or "~0.1" (detail strings only).
std::string interval_text(const Endpoints& e);
std::string exact_text(const Rat& q);

// ||R||_inf (largest row l1 norm), exact.
Rat row_sum_norm(const SparseMatrix& r);

// c = max_j sum_g max_{k : group_of_col[k] = g} |v[j, k]|: the l_inf bound of a
// sum taking one column from each group (block_neumann, borsuk), exact.
Rat grouped_row_norm(const SparseMatrix& v, const std::vector<std::size_t>& group_of_col);

// The detail line of a row-wise check: `what` (the decisive row and its
// enclosure) and the tail for a verified or refuted verdict; undecided names
// the undecided rows and the precision.
std::string rowwise_detail(const rows::RowOutcome& o, const std::string& what, const std::string& verified_tail,
                           const std::string& refuted_tail);

// Fill a result from a row-wise outcome: verdict, precision and the decisive
// row (index named row_name) with its enclosure and threshold.
void fill_rowwise(CertResult& res, const rows::RowOutcome& o, const std::string& quantity, const std::string& rel,
                  const Rat& thr, const std::string& row_name);

// A result with the fields every kind fills the same way.
CertResult result_for(const Certificate& c);

}  // namespace rankcert::cert
