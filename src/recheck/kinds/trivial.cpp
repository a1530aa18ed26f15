// rankcert-recheck: lower `trivial`: some row of A has l1 norm above eps
// (every softmax row has norm 1).
#include "../recheck.hpp"

namespace recheck {

Outcome check_trivial(const Context& c) {
    Outcome o;
    if (c.inst.softmax()) {
        o.verdict = Q(1) > c.eps ? Verdict::verified : Verdict::refuted;
        return o;
    }
    Q best = 0;
    for (std::size_t i = 0; i < c.inst.n; ++i) {
        Q s = 0;
        for (std::size_t j = 0; j < c.inst.N; ++j) s += abs(c.inst.a.at(i, j));
        if (s > best) best = s;
    }
    o.verdict = best > c.eps ? Verdict::verified : Verdict::refuted;
    return o;
}

}  // namespace recheck
