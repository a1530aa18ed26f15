// The entry points of each certificate unit, listed once for the registry.
// Internal to the checker.
#pragma once

#include "common.hpp"

namespace rankcert::cert {

#define RANKCERT_KIND(name)                                                                                       \
    void parse_##name(const json& c, const Where& w, const Instance& I, ArrayLoader& L, Certificate& cert);       \
    CertResult check_##name(const Instance& I, const Rat& eps, const Certificate& c, const CheckOptions& opt);    \
    std::string describe_##name(const Certificate& c);

RANKCERT_KIND(factor)
RANKCERT_KIND(row_interpolative)
RANKCERT_KIND(neumann)
RANKCERT_KIND(tail)
RANKCERT_KIND(trivial)
RANKCERT_KIND(profile)
RANKCERT_KIND(sandwich)
RANKCERT_KIND(block_neumann)
RANKCERT_KIND(kron_factor)
RANKCERT_KIND(kron_neumann)
RANKCERT_KIND(zonal)
RANKCERT_KIND(borsuk)
#undef RANKCERT_KIND

// The row-wise l1 error check shared by factor and row_interpolative.
CertResult check_row_errors(rows::RowQuantity& q, const Rat& eps, const Certificate& c, const CheckOptions& opt);

}  // namespace rankcert::cert
