// Result text and JSON (see rankcert/result.hpp).
#include "rankcert/result.hpp"

#include <sstream>

namespace rankcert {

json endpoints_json(const Endpoints& e) {
    if (!e.bounded) return json::array({"-inf", "inf"});
    return json::array({e.lo.str(), e.hi.str()});
}

namespace {

json claim_json(const Bundle& b) {
    json claim = json::object();
    if (b.claim_lower) claim["lower"] = *b.claim_lower;
    if (b.claim_upper) claim["upper"] = *b.claim_upper;
    return claim;
}

json certificate_json(const CertResult& c, bool witness) {
    json j = {{"index", c.index},   {"kind", to_string(c.kind)},       {"bound", to_string(c.bound)},
              {"rank", c.rank},     {"verdict", to_string(c.verdict)}, {"precision", c.precision},
              {"detail", c.detail}};
    if (witness) j["decisive"] = c.decisive;
    return j;
}

// The fields report and witness share.
json common_json(const Bundle& b, const Report& r, bool witness) {
    json certs = json::array();
    for (const auto& c : r.certificates) certs.push_back(certificate_json(c, witness));
    return {{"n", b.instance.n},       {"N", b.instance.N},
            {"eps", b.eps.str()},      {"claim", claim_json(b)},
            {"verdict", to_string(r.verdict)},
            {"lower", r.lower},        {"upper", r.upper},
            {"closed", r.closed},      {"claim_supported", r.claim_supported},
            {"certificates", certs}};
}

}  // namespace

json report_json(const Bundle& b, const Report& r) {
    json j = common_json(b, r, false);
    j["bundle"] = b.display;
    j["sha256"] = b.sha256;
    j["claim_detail"] = r.claim_detail;
    j["seconds"] = r.seconds;
    return j;
}

json witness_json(const Bundle& b, const Report& r, const std::string& tool_version) {
    json sidecars = json::array();
    for (const auto& s : b.sidecars) sidecars.push_back({{"path", s.path}, {"sha256", s.sha256}});
    json j = common_json(b, r, true);
    j["format"] = witness_format;
    j["tool"] = {{"name", "rankcert"}, {"version", tool_version}};
    j["bundle"] = {{"path", b.display}, {"sha256", b.sha256}};
    j["sidecars"] = sidecars;
    return j;
}

json sweep_json(const std::string& display, const SweepReport& s, double seconds) {
    json pts = json::array();
    for (const auto& p : s.points)
        pts.push_back({{"bundle", p.bundle}, {"verdict", to_string(p.verdict)}, {"lower", p.L}, {"upper", p.U},
                       {"detail", p.detail}});
    return {{"sweep", display},
            {"verdict", to_string(s.verdict)},
            {"points", pts},
            {"slope_L", endpoints_json(s.slope_L)},
            {"slope_U", endpoints_json(s.slope_U)},
            {"fit_L", to_string(s.fit_L)},
            {"fit_U", to_string(s.fit_U)},
            {"detail", s.detail},
            {"seconds", seconds}};
}

json error_json(const std::string& display, const std::string& verdict, const std::string& message) {
    return {{"bundle", display}, {"verdict", verdict}, {"error", message}};
}

json result_document(const json& body, const std::string& tool_version) {
    json doc = body;
    doc["format"] = result_format;
    doc["tool"] = {{"name", "rankcert"}, {"version", tool_version}};
    return doc;
}

std::string dump_document(const json& doc, int indent) {
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    for (const char* key : {"format", "tool"})
        if (doc.is_object() && doc.contains(key)) o[key] = nlohmann::ordered_json(doc[key]);
    for (const auto& [k, v] : doc.items())
        if (k != "format" && k != "tool") o[k] = nlohmann::ordered_json(v);
    return o.dump(indent);
}

std::string certificate_line(const CertResult& c) {
    std::ostringstream o;
    const bool bits = c.precision != "exact" && c.precision != "theorem" && c.precision != "fast";
    o << "cert[" << c.index << "] " << (c.bound == Bound::profile ? "" : std::string(to_string(c.bound)) + " ")
      << to_string(c.kind) << " rank " << c.rank << ": " << to_string(c.verdict) << " (" << c.precision
      << (bits ? " bits" : "") << ") " << c.detail;
    return o.str();
}

std::string report_text(const Report& r) {
    std::string out;
    for (const auto& c : r.certificates) out += "  " + certificate_line(c) + "\n";
    return out + "  " + r.claim_detail + "\n";
}

std::string sweep_text(const SweepReport& s) {
    std::string out = "  " + s.detail + "\n";
    for (const auto& p : s.points)
        if (p.verdict != Verdict::verified) out += "  " + p.bundle + ": " + to_string(p.verdict) + " " + p.detail + "\n";
    return out;
}

}  // namespace rankcert
