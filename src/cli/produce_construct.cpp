// rankcert construct (rankcert-produce); see src/cli/produce_main.cpp.
#include "produce.hpp"

namespace rankcert::cli {

namespace {


// A rational interval [floor(x * 10^4) - 1, ceil(x * 10^4) + 1] / 10^4 around x:
// x strictly inside, so that an exact slope on a grid point (1/2 from ranks
// 6 and 12 at beta 8 and 32) is not an endpoint its enclosure could straddle.
json slope_interval(double x) {
    const long lo = static_cast<long>(std::floor(x * 1e4)) - 1, hi = static_cast<long>(std::ceil(x * 1e4)) + 1;
    return json::array({Rat(lo, 10000).str(), Rat(hi, 10000).str()});
}

void sweep_svg(const std::string& path, const std::string& title, const std::vector<double>& x,
               const std::vector<double>& L, const std::vector<double>& U, double theory, const std::string& xlabel,
               std::size_t fit_from) {
    double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
    for (std::size_t i = 0; i < x.size(); ++i) {
        x0 = std::min(x0, std::log(x[i])); x1 = std::max(x1, std::log(x[i]));
        y0 = std::min(y0, std::log(std::max(1.0, L[i]))); y1 = std::max(y1, std::log(U[i]));
    }
    if (x1 <= x0) x1 = x0 + 1;
    if (y1 <= y0) y1 = y0 + 1;
    const double W = 560, H = 400, ml = 60, mr = 20, mt = 40, mb = 50;
    auto X = [&](double v) { return ml + (std::log(v) - x0) / (x1 - x0) * (W - ml - mr); };
    auto Y = [&](double v) { return mt + (1 - (std::log(std::max(v, 1.0)) - y0) / (y1 - y0)) * (H - mt - mb); };
    std::ostringstream o;
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"" << W << "\" height=\"" << H << "\" fill=\"white\"/>\n";
    o << "<text x=\"" << ml << "\" y=\"22\" font-size=\"14\">" << title << "</text>\n";
    for (std::size_t i = 0; i < x.size(); ++i) {
        o << "<line x1=\"" << X(x[i]) << "\" x2=\"" << X(x[i]) << "\" y1=\"" << mt << "\" y2=\"" << H - mb << "\" stroke=\"#eee\"/>\n";
        o << "<text x=\"" << X(x[i]) - 10 << "\" y=\"" << H - mb + 16 << "\">" << x[i] << "</text>\n";
    }
    for (double v = 1; v <= std::exp(y1) * 1.01; v *= 2)
        if (std::log(v) >= y0 - 1e-9)
            o << "<text x=\"" << ml - 40 << "\" y=\"" << Y(v) + 4 << "\">" << v << "</text><line x1=\"" << ml << "\" x2=\"" << W - mr
              << "\" y1=\"" << Y(v) << "\" y2=\"" << Y(v) << "\" stroke=\"#eee\"/>\n";
    auto line = [&](const std::vector<double>& v, const char* col, const char* dash) {
        o << "<polyline fill=\"none\" stroke=\"" << col << "\" stroke-width=\"2\"" << dash << " points=\"";
        for (std::size_t i = 0; i < x.size(); ++i) o << X(x[i]) << "," << Y(v[i]) << " ";
        o << "\"/>\n";
        for (std::size_t i = 0; i < x.size(); ++i) o << "<circle cx=\"" << X(x[i]) << "\" cy=\"" << Y(v[i]) << "\" r=\"3\" fill=\"" << col << "\"/>\n";
    };
    line(U, "#d95f02", "");
    line(L, "#1b9e77", "");
    // Theoretical slope through the last upper point, over the fitted range.
    const std::size_t a = fit_from, b = x.size() - 1;
    const double ya = U[b] * std::exp(theory * (std::log(x[a]) - std::log(x[b])));
    o << "<line x1=\"" << X(x[a]) << "\" y1=\"" << Y(ya) << "\" x2=\"" << X(x[b]) << "\" y2=\"" << Y(U[b])
      << "\" stroke=\"#555\" stroke-dasharray=\"6,4\"/>\n";
    o << "<text x=\"" << ml + 10 << "\" y=\"" << mt + 14 << "\" fill=\"#d95f02\">certified upper U</text>\n";
    o << "<text x=\"" << ml + 10 << "\" y=\"" << mt + 30 << "\" fill=\"#1b9e77\">certified lower L</text>\n";
    o << "<text x=\"" << ml + 10 << "\" y=\"" << mt + 46 << "\" fill=\"#555\">theoretical slope " << theory << "</text>\n";
    o << "<text x=\"" << (W - ml) / 2 << "\" y=\"" << H - 10 << "\">" << xlabel << " (log scale)</text>\n</svg>\n";
    std::ofstream(path) << o.str();
}

}  // namespace

int construct_main(int argc, char** argv) {
    CLI::App app{"rankcert construct: exact sphere and ball families, certified sweeps over beta (or eps), "
                 "fitted growth exponents, and a sweep witness that rankcert verify re-checks.",
                 "rankcert construct"};
    std::string family, betas, beta, eps = "0.1", eps_sweep, h = "1/64", out = ".";
    int dim = 2;
    std::size_t n = 400, fit_top = 0;
    bool quiet = false;
    app.add_option("family", family, "sphere or ball")->required()->check(CLI::IsMember({"sphere", "ball"}));
    app.add_option("--d,--r", dim, "Dimension: d for the sphere S^{d-1}, r for the ball");
    app.add_option("--n", n, "Points on the sphere (default 400)");
    app.add_option("--h", h, "Grid spacing of the ball (default 1/64)");
    long unweighted = 0;
    bool kron = false;
    app.add_flag("--kron", kron, "Ball: build the r-dimensional ball as the r-th Kronecker power of its one-axis matrix "
                                 "(kron_neumann / kron_factor certificates; n = n_1^r points, never formed)");
    app.add_option("--unweighted", unweighted, "Ball: key multiplicities round(M exp(-beta |y|^2/2)) instead of weights");
    app.add_option("--betas", betas, "Beta sweep, comma separated (e.g. 16,32,64,128)");
    app.add_option("--beta", beta, "Fixed beta for an eps sweep");
    app.add_option("--eps", eps, "eps for a beta sweep (default 0.1)");
    app.add_option("--eps-sweep", eps_sweep, "eps values for a sweep at fixed --beta");
    app.add_option("--fit-top", fit_top, "Fit the slope over this many largest parameter values (default: half, at least 3)");
    double point_budget = 2.0;
    app.add_option("--time-budget", point_budget, "Seconds of search per point and eps (default 2)")
        ->check(CLI::NonNegativeNumber);
    bool hints_only = false;
    app.add_flag("--hints-only", hints_only,
                 "Only the construction's own certificates (cells, zonal), no generic bracket search: "
                 "for sizes where its SVD alone takes minutes");
    app.add_option("--out", out, "Output folder");
    std::string keep_from;
    app.add_option("--keep-from", keep_from,
                   "Folder of an earlier run of the same sweep: each point keeps whichever end (L from one, U from the "
                   "other) is tighter, so a rebuild never widens a bracket");
    app.add_flag("-q,--quiet", quiet, "No progress output");
    return run_command(app, argc, argv, "rankcert construct", [&]() -> int {
        const bool beta_sweep = eps_sweep.empty();
        if (beta_sweep && betas.empty()) throw InputError("rankcert construct: give --betas, or --beta with --eps-sweep");
        if (!beta_sweep && beta.empty()) throw InputError("rankcert construct: --eps-sweep needs --beta");
        if (kron && (family != "ball" || unweighted > 0))
            throw InputError("rankcert construct: --kron applies to the weighted ball only");
        fs::create_directories(out);
        const std::vector<std::string> params = beta_sweep ? split(betas) : split(eps_sweep);
        const std::string base = family + (unweighted > 0 ? "-unweighted" : "") + (kron ? "-kron" : "") + "-" +
                                 (family == "sphere" ? "d" : "r") +
                                 std::to_string(dim);
        const std::string tag = base + (beta_sweep ? "-eps" + eps + "-beta-sweep" : "-beta" + beta + "-eps-sweep");
        std::vector<double> xs, Ls, Us;
        json points = json::array();
        double theory = 0;
        const auto start = std::chrono::steady_clock::now();
        auto keep = [&](const std::string& bundle, const KeptBracket& now) {
            const std::string prev = (fs::path(keep_from) / fs::path(bundle).filename()).string();
            const KeptBracket kb = keep_tighter(bundle, now, prev);
            if (!quiet && (kb.took_lower || kb.took_upper))
                std::cerr << "    kept from " << prev << ":" << (kb.took_lower ? " L" : "") << (kb.took_upper ? " U" : "") << "\n";
            return kb;
        };
        for (std::size_t p = 0; p < params.size(); ++p) {
            const std::string b = beta_sweep ? params[p] : beta;
            const std::string e = beta_sweep ? eps : params[p];
            if (kron) {
                const std::string stem = base + "-beta" + b;
                theory = beta_sweep ? dim / 2.0 : dim;
                const EpsValue ev = parse_eps_list(e).at(0);
                if (!quiet)
                    std::cerr << "[" << std::fixed << std::setprecision(1)
                              << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << "s] "
                              << stem << " (Kronecker power of one axis), eps " << e << "\n";
                KronPoint kp = kron_ball(dim, h, b, ev, out, stem,
                                         {{"producer", std::string("rankcert construct --kron ") + RANKCERT_VERSION}});
                if (kp.verdict != Verdict::verified) throw std::runtime_error(kp.bundle_path + " did not verify");
                std::string lkind = "kron_neumann", ukind = "kron_factor";
                if (!keep_from.empty()) {
                    const KeptBracket kb = keep(kp.bundle_path, {kp.lower, kp.upper, lkind, ukind});
                    kp.lower = kb.lower;
                    kp.upper = kb.upper;
                    lkind = kb.lower_kind;
                    ukind = kb.upper_kind;
                }
                std::ifstream in(kp.bundle_path, std::ios::binary);
                const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
                points.push_back({{"beta", b}, {"eps", e}, {"bundle", fs::relative(kp.bundle_path, out).string()},
                                  {"sha256", sha256_hex(bytes)}, {"L", kp.lower}, {"U", kp.upper},
                                  {"lower_kind", lkind}, {"upper_kind", ukind},
                                  {"points", std::pow(static_cast<double>(kp.axis_points), dim)}});
                xs.push_back(beta_sweep ? fmpq_get_d(parse_rational_text(b, {}).get())
                                        : 1.0 / fmpq_get_d(parse_rational_text(e, {}).get()));
                Ls.push_back(static_cast<double>(std::max<std::uint64_t>(kp.lower, 1)));
                Us.push_back(static_cast<double>(kp.upper));
                if (!quiet)
                    std::cerr << "    n = " << kp.axis_points << "^" << dim << ", L = " << kp.lower << ", U = " << kp.upper
                              << "\n";
                continue;
            }
            Construction c = family == "sphere" ? sphere(dim, n, b) : ball(dim, h, b, unweighted);
            theory = beta_sweep ? c.theory : 2 * c.theory;  // eps sweeps: growth like eps^{-r} (ball), eps^{-(d-1)} (sphere)
            const std::string stem = base + "-beta" + b;
            BracketOptions opt;
            opt.eps = parse_eps_list(e);
            opt.out_dir = out;
            opt.stem = stem;
            opt.lp = false;
            opt.interpolative = false;
            opt.search = !hints_only;
            // Sweeps bracket many instances: --time-budget (2 s) of search per eps each.
            opt.time_budget = point_budget * static_cast<double>(opt.eps.size());
            opt.provenance = {{"construction", c.family}, {"dimension", c.dim}, {"beta", b},
                              {"points", c.queries.rows()}, {"producer", std::string("rankcert construct ") + RANKCERT_VERSION}};
            if (c.family == "ball") opt.provenance["grid_spacing"] = h;
            Bundle parsed = parse_instance(c.instance, out, stem);
            const Mat A = approximate_attention(parsed.instance);
            for (const auto& ev : opt.eps) {
                if (auto cp = cell_partition(A, c.queries, c.keys, ev.approx, 0.5 * point_budget)) {
                    compact_neumann(A, ev.approx, *cp, 1e-6);
                    opt.hints.push_back(neumann_json(*cp, out, stem + "-eps" + ev.text + ".cells"));
                }
                // The sphere's kernel is analytic: one polynomial in <x, y> (zonal).
                if (c.family == "sphere")
                    if (auto z = zonal_sphere(c.queries, fmpq_get_d(parse_rational_text(b, {}).get()), b, ev.approx))
                        opt.hints.push_back(*z);
            }
            if (!quiet)
                std::cerr << "[" << std::fixed << std::setprecision(1)
                          << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << "s] " << stem
                          << " (n = " << c.queries.rows() << "), eps " << e << "\n";
            auto res = run_bracket(c.instance, opt).at(0);
            if (res.verdict != Verdict::verified) throw std::runtime_error(res.bundle_path + " did not verify");
            if (!keep_from.empty()) {
                const KeptBracket kb = keep(res.bundle_path, {res.lower, res.upper, res.lower_kind, res.upper_kind});
                res.lower = kb.lower;
                res.upper = kb.upper;
                res.lower_kind = kb.lower_kind;
                res.upper_kind = kb.upper_kind;
            }
            const fs::path rel = fs::relative(res.bundle_path, out);
            std::ifstream in(res.bundle_path, std::ios::binary);
            const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            points.push_back({{"beta", b}, {"eps", e}, {"bundle", rel.string()}, {"sha256", sha256_hex(bytes)},
                              {"L", res.lower}, {"U", res.upper}, {"lower_kind", res.lower_kind}, {"upper_kind", res.upper_kind}});
            xs.push_back(beta_sweep ? fmpq_get_d(parse_rational_text(b, {}).get())
                                    : 1.0 / fmpq_get_d(parse_rational_text(e, {}).get()));
            Ls.push_back(static_cast<double>(std::max<std::uint64_t>(res.lower, 1)));
            Us.push_back(static_cast<double>(res.upper));
            if (!quiet) std::cerr << "    L = " << res.lower << ", U = " << res.upper << "\n";
        }
        const std::size_t k = xs.size();
        std::size_t top = fit_top ? std::min(fit_top, k) : std::max<std::size_t>(std::min<std::size_t>(3, k), (k + 1) / 2);
        const std::size_t from = k - top;
        std::vector<double> fx(xs.begin() + static_cast<std::ptrdiff_t>(from), xs.end()),
            fl(Ls.begin() + static_cast<std::ptrdiff_t>(from), Ls.end()), fu(Us.begin() + static_cast<std::ptrdiff_t>(from), Us.end());
        const double sl = loglog_slope(fx, fl), su = loglog_slope(fx, fu);
        json fit_idx = json::array();
        for (std::size_t i = from; i < k; ++i) fit_idx.push_back(i);
        json sweep = {{"format", "rankcert-sweep/1"},
                      {"family", unweighted > 0 ? family + "-unweighted" : family},
                      {"dimension", dim},
                      {"parameter", beta_sweep ? "beta" : "eps"},
                      {"x", beta_sweep ? "log beta" : "log(1/eps)"},
                      {"fixed", beta_sweep ? json{{"eps", eps}} : json{{"beta", beta}}},
                      {"theory_exponent", theory},
                      {"points", points},
                      {"fit", {{"points", fit_idx}, {"slope_L", slope_interval(sl)}, {"slope_U", slope_interval(su)}}},
                      {"producer", std::string("rankcert construct ") + RANKCERT_VERSION}};
        const std::string sweep_path = out + "/" + tag + ".json";
        std::ofstream(sweep_path) << sweep.dump(1) << "\n";
        sweep_svg(out + "/" + tag + ".svg", family + (family == "sphere" ? " S^" + std::to_string(dim - 1) : " r=" + std::to_string(dim)) +
                  ": certified L and U, " + (beta_sweep ? "eps " + eps : "beta " + beta), xs, Ls, Us, theory,
                  beta_sweep ? "beta" : "1/eps", from);
        std::cout << tag << ": fitted slope of L " << std::setprecision(3) << sl << ", of U " << su << " (theory " << theory
                  << ") over " << top << " points; " << sweep_path << "\n";
        return 0;
    });
}

}  // namespace rankcert::cli
