// Exit statuses shared by `rankcert` and `rankcert-produce` (docs/format.md,
// "rankcert verify").  For several files, the worst status met.
#pragma once

#include "rankcert/exact.hpp"

namespace rankcert {

enum ExitStatus : int {
    exit_verified = 0,
    exit_refuted = 1,
    exit_undecided = 2,
    exit_input = 3,     // input or usage error: one line naming the file and the field
    exit_internal = 4,  // a bug, or out of memory
};

inline int exit_status(Verdict v) {
    switch (v) {
    case Verdict::verified: return exit_verified;
    case Verdict::refuted: return exit_refuted;
    case Verdict::undecided: return exit_undecided;
    }
    return exit_undecided;
}

// verified < undecided < refuted < input error < internal error
inline int severity(int status) {
    switch (status) {
    case exit_verified: return 0;
    case exit_undecided: return 1;
    case exit_refuted: return 2;
    case exit_input: return 3;
    default: return 4;
    }
}

inline int worse(int a, int b) { return severity(b) > severity(a) ? b : a; }

}  // namespace rankcert
