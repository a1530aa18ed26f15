// rankcert profile (rankcert-produce); see src/cli/produce_main.cpp.
#include "produce.hpp"

namespace rankcert::cli {

int profile_main(int argc, char** argv) {
    CLI::App app{"rankcert profile: the intrinsic interaction geometry of a head -- visible dimension, and for retained "
                 "ranks r the projective residual q, tau = 2 tanh(q/4), an interval for kappa, and the profile "
                 "P = (1 + kappa/(eps - tau)^2)^{r/2} -- written as profile certificates and verified.",
                 "rankcert profile"};
    std::string instance, rs, eps_text = "0.05,0.1,0.2", out = ".", name;
    bool json_out = false;
    app.add_option("--instance", instance, "Bundle or instance JSON (unmasked)")->required();
    app.add_option("--r", rs, "Retained ranks, comma separated (default: 1, 2, 4, ... up to the visible dimension)");
    app.add_option("--eps", eps_text, "Tolerances for the profile P (default 0.05,0.1,0.2)");
    app.add_option("--out", out, "Output folder");
    app.add_option("--name", name, "File stem (default: from the input)");
    app.add_flag("--json", json_out, "JSON output");
    std::string temperature;
    app.add_option("--temperature", temperature, "Temperature multiplier t for a qk instance");
    return run_command(app, argc, argv, "rankcert profile", [&]() -> int {
        fs::create_directories(out);
        json doc = read_document(instance, instance);
        json inst = doc.contains("instance") ? doc["instance"] : doc;
        copy_instance_sidecars(inst, fs::path(instance).parent_path(), out, instance);
        if (!temperature.empty()) {
            if (inst.value("kind", "") != "qk") throw InputError("rankcert profile: --temperature applies to qk instances");
            inst["temperature"] = temperature;
        }
        const std::string stem = (name.empty() ? fs::path(instance).stem().string() : name) +
                                 (temperature.empty() ? "" : "-t" + temperature) + "-profile";
        Bundle parsed = parse_instance(inst, out, stem);
        const Instance& I = parsed.instance;
        if ((I.kind == InstanceKind::qk && I.mask != MaskKind::none) ||
            (I.kind == InstanceKind::logits && std::count(I.logits.neg_inf.begin(), I.logits.neg_inf.end(), 1) > 0))
            throw InputError(instance + ": instance: a profile needs an unmasked instance (masked rows have no interaction C)");
        const auto eps = parse_eps_list(eps_text);
        const Mat C = interaction(I);
        if (!C.allFinite())
            throw InputError(instance + ": instance: the interaction C is not finite in double precision (a zero attention "
                                        "weight, or logits beyond the double range)");
        const Mat Aflt = approximate_attention(I);
        const long vd = exact_visible_dimension(I);
        const Vec sv = thin_svd(C, false, false).s;
        const long float_rank = sv.size() ? static_cast<long>((sv.array() > 1e-9 * std::max(1.0, sv(0))).count()) : 0;
        const long visible = vd >= 0 ? vd : float_rank;
        std::vector<std::size_t> ranks;
        if (!rs.empty()) {
            for (const auto& t : split(rs)) ranks.push_back(static_cast<std::size_t>(std::stoul(t)));
        } else {
            for (std::size_t r = 1; r < static_cast<std::size_t>(visible); r *= 2) ranks.push_back(r);
            if (visible > 0) ranks.push_back(static_cast<std::size_t>(visible));
        }
        std::vector<json> certs;
        std::vector<ProfileCandidate> cands;
        for (std::size_t r : ranks) {
            if (r == 0 || r > std::min(I.n, I.N)) throw InputError("--r: " + std::to_string(r) + " is out of range");
            ProfileCandidate pc = profile_candidate(C, r, out, stem + "-r" + std::to_string(r), &Aflt);
            if (vd >= 0) pc.cert["claims"]["visible_dim"] = vd;
            certs.push_back(pc.cert);
            cands.push_back(pc);
        }
        json bundle = {{"format", "rankcert/1"}, {"instance", inst}, {"eps", eps.front().text}, {"claim", json::object()},
                       {"certificates", certs},
                       {"provenance", doc.value("provenance", json::object())}};
        bundle["provenance"]["producer"] = std::string("rankcert profile ") + RANKCERT_VERSION;
        const fs::path path = fs::path(out) / (stem + ".json");
        std::ofstream(path) << bundle.dump() << "\n";
        Bundle b = load_bundle(path, path.string());
        Report rep = verify(b, {});
        json results = json::array();
        if (!json_out) {
            std::cout << "visible dimension " << visible << (vd >= 0 ? " (exact)" : " (float estimate)") << "; bundle " << path.string()
                      << ": " << to_string(rep.verdict) << "\n";
            std::cout << std::left << std::setw(5) << "r" << std::setw(12) << "q" << std::setw(12) << "tau" << std::setw(12)
                      << "tau*" << std::setw(26)
                      << "kappa in" << std::setw(8) << "gap";
            for (const auto& e : eps) std::cout << std::setw(14) << ("P(" + e.text + ")");  // as 1e<log10 P>
            std::cout << std::setw(18) << "native (ratio)" << "verdict\n";
        }
        for (std::size_t t = 0; t < cands.size(); ++t) {
            const auto& pc = cands[t];
            const auto& cr = rep.certificates[t];
            const auto& cl = b.certificates[t].as<ProfileCert>();
            const double klo = fmpq_get_d(cl.kappa_lo.get()), khi = fmpq_get_d(cl.kappa_hi.get());
            const double tlo = fmpq_get_d(cl.tau_lo.get()), thi = fmpq_get_d(cl.tau_hi.get());
            json row = {{"r", pc.r}, {"q", pc.q}, {"tau", pc.tau}, {"tau_star", pc.tau_star}, {"kappa", {klo, khi}}, {"verdict", to_string(cr.verdict)},
                        {"visible_dim", visible}};
            std::ostringstream line;
            line << std::left << std::setw(5) << pc.r << std::setw(12) << std::setprecision(4) << pc.q << std::setw(12) << pc.tau
                 << std::setw(12) << pc.tau_star;
            std::ostringstream kv;
            kv << std::setprecision(5) << "[" << klo << ", " << khi << "]";
            std::ostringstream gap;
            gap << std::fixed << std::setprecision(2) << (khi > 0 ? 100 * (khi - klo) / khi : 0) << "%";
            line << std::setw(26) << kv.str() << std::setw(8) << gap.str();
            json P = json::object();
            for (const auto& e : eps) {
                std::ostringstream pv;
                if (thi < e.approx) {
                    // log10 P, which stays finite where P overflows a double.
                    const double lplo = pc.r / 2.0 * std::log10(1 + klo / ((e.approx - tlo) * (e.approx - tlo)));
                    const double lphi = pc.r / 2.0 * std::log10(1 + khi / ((e.approx - thi) * (e.approx - thi)));
                    pv << std::setprecision(4) << "1e" << lphi;
                    P[e.text] = {lplo, lphi};
                } else {
                    pv << "-";
                }
                line << std::setw(14) << pv.str();
            }
            row["log10_P"] = P;
            const double native = native_size(I, C, pc.r);
            if (native > 0) {
                row["native"] = native;
                row["native_over_kappa"] = native / khi;
            }
            {
                std::ostringstream nv;
                if (native > 0) nv << std::setprecision(4) << native << " (x" << std::setprecision(3) << native / khi << ")";
                else nv << "-";
                line << std::setw(18) << nv.str();
            }
            line << to_string(cr.verdict);
            if (!json_out) std::cout << line.str() << "\n";
            results.push_back(row);
        }
        if (json_out) std::cout << json{{"visible_dim", visible}, {"exact", vd >= 0}, {"bundle", path.string()},
                                        {"verdict", to_string(rep.verdict)}, {"profiles", results}}.dump(2) << "\n";
        return exit_status(rep.verdict);
    });
}

}  // namespace rankcert::cli
