// The registry of certificate kinds: one row per kind, in CertKind order.
#include "units.hpp"

#include <stdexcept>

namespace rankcert {

namespace {

using namespace cert;

#define ROW(kind, bound) {CertKind::kind, #kind, Bound::bound, parse_##kind, check_##kind, describe_##kind}
const KindInfo table[] = {
    ROW(factor, upper),
    ROW(row_interpolative, upper),
    ROW(neumann, lower),
    ROW(tail, lower),
    ROW(trivial, lower),
    ROW(profile, profile),
    ROW(sandwich, upper),
    ROW(block_neumann, lower),
    ROW(kron_factor, upper),
    ROW(kron_neumann, lower),
    ROW(zonal, upper),
    ROW(borsuk, lower),
};
#undef ROW

static_assert(std::size(table) == std::variant_size_v<CertData>, "one registry row per certificate kind");

}  // namespace

std::span<const KindInfo> kinds() { return table; }

const KindInfo& kind_info(CertKind k) {
    const auto i = static_cast<std::size_t>(k);
    if (i >= std::size(table) || table[i].kind != k) throw std::logic_error("certificate registry out of order");
    return table[i];
}

const KindInfo* find_kind(std::string_view name) {
    for (const auto& k : table)
        if (name == k.name) return &k;
    return nullptr;
}

const char* to_string(CertKind k) { return kind_info(k).name; }

const char* to_string(Bound b) {
    switch (b) {
    case Bound::upper: return "upper";
    case Bound::lower: return "lower";
    case Bound::profile: return "profile";
    }
    return "?";
}

}  // namespace rankcert
