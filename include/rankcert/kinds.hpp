// The registry of certificate kinds: one row per kind, one unit per kind.
//
// A kind is its data (rankcert/certificate.hpp), its parser (shapes and
// indices; everything that needs no arithmetic on A), its check (the
// inequalities, decided on rigorous enclosures), and a one-line description
// for `rankcert show`.  Its witness fields are the `decisive` object its
// check returns.  src/checker/cert/<kind>.cpp holds all four; the table in
// src/checker/cert/registry.cpp lists the kinds.  tests/test_registry.cpp
// checks that every registered kind has known-answer and tampering tests.
#pragma once

#include "rankcert/check.hpp"

#include <span>
#include <string>
#include <string_view>

namespace rankcert {

struct KindInfo {
    CertKind kind;
    const char* name;
    Bound bound;  // the only bound this kind proves
    // Parse the kind's fields of certificate JSON c; set out.data and out.rank.
    void (*parse)(const json& c, const Where& w, const Instance& inst, ArrayLoader& loader, Certificate& out);
    CertResult (*check)(const Instance& inst, const Rat& eps, const Certificate& cert, const CheckOptions& opt);
    std::string (*describe)(const Certificate& cert);
};

std::span<const KindInfo> kinds();
const KindInfo& kind_info(CertKind k);
const KindInfo* find_kind(std::string_view name);

}  // namespace rankcert
