// rankcert-produce: the untrusted producer commands, run as
//   rankcert bracket ...   find and certify the tightest brackets it can for
//                          one instance and several eps (produce_bracket.cpp);
//   rankcert extract ...   run a llama2.c checkpoint over a text and write
//                          every head's post-RoPE Q, K as instances (produce_extract.cpp);
//   rankcert construct ... exact sharp-exponent families and certified sweeps (produce_construct.cpp);
//   rankcert profile ...   the intrinsic interaction geometry (produce_profile.cpp);
//   rankcert audit ...     decide a table of rank claims; rankcert report: its HTML page (produce_audit.cpp);
//   rankcert survey ...    every head of a model at several eps, as an audit without claims (produce_audit.cpp).
//
// This program links the untrusted producer (Eigen, GLPK) next to the trusted
// checker; `rankcert` itself never does.  Every bundle written here is
// verified from its file by the checker, and can be re-verified separately
// with `rankcert verify`.
#include "produce.hpp"

#include <cstdio>
#include <iostream>
#include <string>

// OpenBLAS reports an illegal argument (Eigen passes leading dimension 0 for
// empty products) by printing to standard output, which would corrupt
// `--json` output.  This definition takes the place of OpenBLAS's own (the
// executable's symbol interposes) and prints to standard error instead; the
// routine then returns without touching its output, which for an empty
// product is already the right (zero) result.
extern "C" int xerbla_(const char* name, int* info, int len) {
    std::fprintf(stderr, "rankcert-produce: BLAS rejected parameter %d of %.*s\n", info ? *info : 0, len, name);
    return 0;
}

int main(int argc, char** argv) {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "profile") return rankcert::cli::profile_main(argc - 1, argv + 1);
    if (cmd == "construct") return rankcert::cli::construct_main(argc - 1, argv + 1);
    if (cmd == "bracket") return rankcert::cli::bracket_main(argc - 1, argv + 1);
    if (cmd == "extract") return rankcert::cli::extract_main(argc - 1, argv + 1);
    if (cmd == "audit") return rankcert::cli::audit_main(argc - 1, argv + 1);
    if (cmd == "report") return rankcert::cli::report_main(argc - 1, argv + 1);
    if (cmd == "survey") return rankcert::cli::survey_main(argc - 1, argv + 1);
    std::cerr << "usage: rankcert-produce bracket|extract|construct|profile|audit|report|survey ... (normally run as rankcert <command>)\n";
    return 3;
}
