// Sweep witnesses (see include/rankcert/sweep.hpp).
//
// The fitted slope is a descriptive statistic of certified integers, not a
// certificate; what is verified is that the stated interval contains the
// exact least-squares slope of the listed (certified) numbers, computed with
// Arb balls (logarithms of exact rationals and integers).
#include "rankcert/sweep.hpp"
#include "rankcert/paths.hpp"

namespace rankcert {

namespace fs = std::filesystem;

namespace {

// Enclosure of the least-squares slope of y against x.
void ls_slope(arb_t out, const std::vector<Ball>& x, const std::vector<Ball>& y, slong prec) {
    const slong n = static_cast<slong>(x.size());
    arb_t mx, my, sxy, sxx, dx, dy;
    arb_init(mx); arb_init(my); arb_init(sxy); arb_init(sxx); arb_init(dx); arb_init(dy);
    for (slong i = 0; i < n; ++i) {
        arb_add(mx, mx, x[static_cast<std::size_t>(i)].get(), prec);
        arb_add(my, my, y[static_cast<std::size_t>(i)].get(), prec);
    }
    arb_div_si(mx, mx, n, prec);
    arb_div_si(my, my, n, prec);
    for (slong i = 0; i < n; ++i) {
        arb_sub(dx, x[static_cast<std::size_t>(i)].get(), mx, prec);
        arb_sub(dy, y[static_cast<std::size_t>(i)].get(), my, prec);
        arb_addmul(sxy, dx, dy, prec);
        arb_addmul(sxx, dx, dx, prec);
    }
    arb_div(out, sxy, sxx, prec);  // sxx > 0 unless all x equal (then the ball is infinite: undecided)
    arb_clear(mx); arb_clear(my); arb_clear(sxy); arb_clear(sxx); arb_clear(dx); arb_clear(dy);
}

}  // namespace

SweepReport verify_sweep(const json& doc, const fs::path& dir, const std::string& display,
                         const BundleVerifier& verify_bundle) {
    SweepReport rep;
    const Where w{display, ""};
    const std::string param = require_string(doc, "parameter", w);
    if (param != "beta" && param != "eps") throw InputError(w.key("parameter"), "must be \"beta\" or \"eps\"");
    const json& points = require(doc, "points", w);
    if (!points.is_array() || points.empty()) throw InputError(w.key("points"), "must be a non-empty list");
    std::vector<Rat> params;
    bool all_verified = true, any_refuted = false;
    for (std::size_t i = 0; i < points.size(); ++i) {
        const Where wp = w.key("points").index(i);
        const json& p = points[i];
        const std::string rel = require_string(p, "bundle", wp);
        const fs::path rp(rel);
        confined(dir, rel, wp.key("bundle"), "the sweep's folder");
        params.push_back(parse_rational(require(p, param, wp), wp.key(param)));
        if (params.back().sign() <= 0) throw InputError(wp.key(param), "must be positive");
        const auto stated_L = parse_index(require(p, "L", wp), wp.key("L"));
        const auto stated_U = parse_index(require(p, "U", wp), wp.key("U"));
        const std::string sha = require_string(p, "sha256", wp);
        auto [r, file_sha] = verify_bundle(dir / rp);
        if (file_sha != sha) throw InputError(wp.key("sha256"), "does not match " + rel + " (file has " + file_sha + ")");
        SweepPointResult pr;
        pr.bundle = rel;
        pr.L = r.lower;
        pr.U = r.upper;
        pr.verdict = r.verdict;
        if (r.verdict == Verdict::verified && (stated_L != r.lower || stated_U != r.upper)) {
            pr.verdict = Verdict::refuted;
            pr.detail = "listed [" + std::to_string(stated_L) + ", " + std::to_string(stated_U) + "] but certified [" +
                        std::to_string(r.lower) + ", " + std::to_string(r.upper) + "]";
        }
        if (pr.verdict != Verdict::verified) all_verified = false;
        if (pr.verdict == Verdict::refuted) any_refuted = true;
        rep.points.push_back(pr);
    }
    // The fit.
    const json& fit = require(doc, "fit", w);
    const Where wf = w.key("fit");
    const json& idx = require(fit, "points", wf);
    if (!idx.is_array() || idx.size() < 2) throw InputError(wf.key("points"), "needs at least two point indices");
    auto interval = [&](const char* key) {
        const json& iv = require(fit, key, wf);
        if (!iv.is_array() || iv.size() != 2) throw InputError(wf.key(key), "must be [lo, hi]");
        Rat lo = parse_rational(iv[0], wf.key(key).index(0)), hi = parse_rational(iv[1], wf.key(key).index(1));
        if (lo > hi) throw InputError(wf.key(key), "lo > hi");
        return std::make_pair(lo, hi);
    };
    const auto [lL, hL] = interval("slope_L");
    const auto [lU, hU] = interval("slope_U");
    const slong prec = 128;
    std::vector<Ball> xs, yl, yu;
    for (std::size_t t = 0; t < idx.size(); ++t) {
        const auto k = parse_index(idx[t], wf.key("points").index(t), points.size());
        Ball x, l, u;
        arb_set_fmpq(x.get(), params[k].get(), prec);
        arb_log(x.get(), x.get(), prec);
        if (param == "eps") arb_neg(x.get(), x.get());  // log(1/eps)
        if (rep.points[k].L == 0) throw InputError(wf.key("points").index(t), "L = 0 has no logarithm");
        arb_set_ui(l.get(), rep.points[k].L);
        arb_log(l.get(), l.get(), prec);
        arb_set_ui(u.get(), rep.points[k].U);
        arb_log(u.get(), u.get(), prec);
        xs.push_back(x);
        yl.push_back(l);
        yu.push_back(u);
    }
    Ball sL, sU;
    ls_slope(sL.get(), xs, yl, prec);
    ls_slope(sU.get(), xs, yu, prec);
    rep.slope_L = endpoints(sL.get());
    rep.slope_U = endpoints(sU.get());
    rep.fit_L = decide_in(sL.get(), lL, hL);
    rep.fit_U = decide_in(sU.get(), lU, hU);
    if (any_refuted || rep.fit_L == Verdict::refuted || rep.fit_U == Verdict::refuted) rep.verdict = Verdict::refuted;
    else if (all_verified && rep.fit_L == Verdict::verified && rep.fit_U == Verdict::verified) rep.verdict = Verdict::verified;
    else rep.verdict = Verdict::undecided;
    rep.detail = std::to_string(points.size()) + " bundles; slope of log L in [" + lL.str() + ", " + hL.str() + "]: " +
                 to_string(rep.fit_L) + "; slope of log U in [" + lU.str() + ", " + hU.str() + "]: " + to_string(rep.fit_U);
    return rep;
}

}  // namespace rankcert
