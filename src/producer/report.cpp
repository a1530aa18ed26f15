// `rankcert report`: one self-contained HTML page for an audit (UNTRUSTED
// presentation of results the checker decided).  Inline SVG plots, a PNG
// heatmap as a data URI, a few lines of inline JavaScript for the filters;
// nothing is loaded from outside the page.
#include "rankcert/bundle.hpp"
#include "rankcert/paths.hpp"
#include "rankcert/producer/audit.hpp"
#include "rankcert/producer/producer.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

namespace rankcert::producer {

namespace fs = std::filesystem;

namespace {

std::string esc(const std::string& s) {
    std::string o;
    for (unsigned char c : s) {
        switch (c) {
        case '&': o += "&amp;"; break;
        case '<': o += "&lt;"; break;
        case '>': o += "&gt;"; break;
        case '"': o += "&quot;"; break;
        case '\'': o += "&#39;"; break;
        default: o += (c < 0x20 && c != '\n') ? '?' : static_cast<char>(c);
        }
    }
    return o;
}

std::string str(const json& j, const char* k) {
    if (!j.contains(k) || j[k].is_null()) return "";
    return j[k].is_string() ? j[k].get<std::string>() : j[k].dump();
}

std::string base64(const std::string& in) {
    static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) | static_cast<unsigned char>(in[i + 2]);
        out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], t[v & 63]};
    }
    if (i + 1 == in.size()) {
        const unsigned v = static_cast<unsigned char>(in[i]) << 16;
        out += {t[v >> 18], t[(v >> 12) & 63], '=', '='};
    } else if (i + 2 == in.size()) {
        const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
        out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], '='};
    }
    return out;
}

void be32(std::string& s, std::uint32_t v) {
    for (int i = 3; i >= 0; --i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}

void png_chunk(std::string& out, const char* type, const std::string& data) {
    be32(out, static_cast<std::uint32_t>(data.size()));
    std::string td = std::string(type, 4) + data;
    out += td;
    be32(out, static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(td.data()), static_cast<uInt>(td.size()))));
}

// An RGB PNG of the attention weights: white -> dark blue on a square-root scale.
std::string heatmap_png(const Mat& A) {
    const std::uint32_t h = static_cast<std::uint32_t>(A.rows()), w = static_cast<std::uint32_t>(A.cols());
    const double mx = std::max(A.maxCoeff(), 1e-300);
    std::string raw;
    raw.reserve((3 * w + 1) * h);
    for (std::uint32_t i = 0; i < h; ++i) {
        raw += '\0';
        for (std::uint32_t j = 0; j < w; ++j) {
            const double t = std::sqrt(std::clamp(A(i, j) / mx, 0.0, 1.0));
            raw += static_cast<char>(static_cast<int>(255 - t * (255 - 8)));
            raw += static_cast<char>(static_cast<int>(255 - t * (255 - 48)));
            raw += static_cast<char>(static_cast<int>(255 - t * (255 - 107)));
        }
    }
    uLongf len = compressBound(static_cast<uLong>(raw.size()));
    std::string z(len, '\0');
    compress2(reinterpret_cast<Bytef*>(z.data()), &len, reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()), 9);
    z.resize(len);
    std::string ihdr;
    be32(ihdr, w);
    be32(ihdr, h);
    ihdr += {8, 2, 0, 0, 0};
    std::string png = "\x89PNG\r\n\x1a\n";
    png_chunk(png, "IHDR", ihdr);
    png_chunk(png, "IDAT", z);
    png_chunk(png, "IEND", "");
    return png;
}

std::string fmt(double v, int p = 1) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(p) << v;
    return o.str();
}

const char* colour(const std::string& verdict) {
    if (verdict == "confirmed") return "#1a7f37";
    if (verdict == "refuted") return "#cf222e";
    if (verdict == "open") return "#9a6700";
    if (verdict == "bracketed") return "#0969da";
    return "#6e7781";
}

// "0.1" or "1/10" as a double (for drawing only).
double eps_value(const std::string& e) {
    try {
        const auto slash = e.find('/');
        if (slash == std::string::npos) return std::stod(e);
        return std::stod(e.substr(0, slash)) / std::stod(e.substr(slash + 1));
    } catch (const std::exception&) {
        return 0;
    }
}

// L and U against eps (log axis) with the claims on the same axes.
std::string bracket_plot(const std::vector<const json*>& rows) {
    std::map<double, std::pair<std::uint64_t, std::uint64_t>> pts;  // eps -> best (L, U)
    double ymax = 1;
    for (const json* r : rows) {
        if (!r->contains("lower")) continue;
        const double e = eps_value(str(*r, "eps"));
        if (!(e > 0)) continue;
        const std::uint64_t L = (*r)["lower"], U = (*r)["upper"];
        auto it = pts.find(e);
        if (it == pts.end()) pts[e] = {L, U};
        else it->second = {std::max(it->second.first, L), std::min(it->second.second, U)};
        ymax = std::max(ymax, static_cast<double>(U));
        const json& c = (*r)["claimed"];
        if (!c["upper"].is_null()) ymax = std::max(ymax, c["upper"].get<double>());
        if (!c["lower"].is_null()) ymax = std::max(ymax, c["lower"].get<double>());
    }
    if (pts.empty()) return "";
    const double W = 340, H = 220, l = 44, rgt = 12, t = 12, b = 34;
    double emin = pts.begin()->first, emax = pts.rbegin()->first;
    if (emin == emax) emin /= 1.5, emax *= 1.5;
    const double lx0 = std::log(emin) - 0.15, lx1 = std::log(emax) + 0.15;
    ymax *= 1.1;
    auto X = [&](double e) { return l + (std::log(e) - lx0) / (lx1 - lx0) * (W - l - rgt); };
    auto Y = [&](double v) { return H - b - v / ymax * (H - t - b); };
    std::ostringstream s;
    s << "<svg class=\"plot\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W << " " << H
      << "\" role=\"img\" aria-label=\"certified lower and upper bounds against eps\">";
    s << "<line x1=\"" << l << "\" y1=\"" << H - b << "\" x2=\"" << W - rgt << "\" y2=\"" << H - b << "\" stroke=\"#888\"/>";
    s << "<line x1=\"" << l << "\" y1=\"" << t << "\" x2=\"" << l << "\" y2=\"" << H - b << "\" stroke=\"#888\"/>";
    for (int k = 0; k <= 4; ++k) {
        const double v = ymax / 1.1 * k / 4;
        s << "<text x=\"" << l - 4 << "\" y=\"" << Y(v) + 4 << "\" text-anchor=\"end\" class=\"tick\">" << fmt(v, 0) << "</text>";
    }
    std::string lpath, upath;
    for (const auto& [e, lu] : pts) {
        s << "<text x=\"" << X(e) << "\" y=\"" << H - b + 14 << "\" text-anchor=\"middle\" class=\"tick\">" << fmt(e, e < 0.01 ? 4 : 3) << "</text>";
        lpath.append(lpath.empty() ? "M" : "L").append(fmt(X(e))).append(",").append(fmt(Y(static_cast<double>(lu.first))));
        upath.append(upath.empty() ? "M" : "L").append(fmt(X(e))).append(",").append(fmt(Y(static_cast<double>(lu.second))));
    }
    s << "<text x=\"" << (l + W - rgt) / 2 << "\" y=\"" << H - 4 << "\" text-anchor=\"middle\" class=\"tick\">eps (log scale)</text>";
    s << "<path d=\"" << lpath << "\" fill=\"none\" stroke=\"#0969da\" stroke-width=\"2\"/>";
    s << "<path d=\"" << upath << "\" fill=\"none\" stroke=\"#8250df\" stroke-width=\"2\"/>";
    for (const auto& [e, lu] : pts) {
        s << "<circle cx=\"" << X(e) << "\" cy=\"" << Y(static_cast<double>(lu.first)) << "\" r=\"3.5\" fill=\"#0969da\"><title>L = " << lu.first << "</title></circle>";
        s << "<rect x=\"" << X(e) - 3.5 << "\" y=\"" << Y(static_cast<double>(lu.second)) - 3.5 << "\" width=\"7\" height=\"7\" fill=\"#8250df\"><title>U = " << lu.second << "</title></rect>";
    }
    int k = 0;
    for (const json* r : rows) {
        if (!r->contains("lower")) continue;
        const std::string es = str(*r, "eps");
        const double e = eps_value(es);
        if (!(e > 0)) continue;
        const json& c = (*r)["claimed"];
        const double x = X(e) + 9 + 5 * (k++ % 3);
        const double lo = c["lower"].is_null() ? 0 : c["lower"].get<double>();
        const double hi = c["upper"].is_null() ? ymax : c["upper"].get<double>();
        const std::string col = colour(str(*r, "verdict"));
        s << "<g><title>claim " << esc(str(*r, "claim")) << " at eps " << esc(es) << ": " << esc(str(*r, "verdict")) << "</title>";
        s << "<line x1=\"" << x << "\" y1=\"" << Y(lo) << "\" x2=\"" << x << "\" y2=\"" << Y(hi) << "\" stroke=\"" << col << "\" stroke-width=\"3\" stroke-opacity=\"0.7\"/>";
        if (!c["lower"].is_null()) s << "<line x1=\"" << x - 4 << "\" y1=\"" << Y(lo) << "\" x2=\"" << x + 4 << "\" y2=\"" << Y(lo) << "\" stroke=\"" << col << "\" stroke-width=\"2\"/>";
        if (!c["upper"].is_null()) s << "<line x1=\"" << x - 4 << "\" y1=\"" << Y(hi) << "\" x2=\"" << x + 4 << "\" y2=\"" << Y(hi) << "\" stroke=\"" << col << "\" stroke-width=\"2\"/>";
        s << "</g>";
    }
    s << "</svg>";
    return s.str();
}

}  // namespace

std::string audit_report_html(const json& audit, const std::string& dir, const std::string& report_dir) {
    const json& claims = audit.at("claims");
    // Links are relative file links to files inside the audit folder (results
    // are input too: a "bundle" of "javascript:..." or "../x" gets no link;
    // check_result refuses such results before they get here).
    auto link = [&](const std::string& relpath) {
        if (!lexically_confined(relpath) || relpath.find(':') != std::string::npos) return std::string("#");
        std::error_code ec;
        const fs::path r = fs::relative(fs::absolute(fs::path(dir) / relpath, ec), fs::absolute(report_dir, ec), ec);
        return ec || r.empty() ? std::string("#") : r.generic_string();
    };
    std::set<std::string> models, layers, epss, verdicts;
    for (const auto& c : claims) {
        models.insert(str(c, "model"));
        layers.insert(str(c, "layer"));
        epss.insert(str(c, "eps"));
        verdicts.insert(str(c, "verdict"));
    }
    std::ostringstream h;
    const json& n = audit.at("counts");
    h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rankcert audit</title>\n<style>\n"
         "body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1f2328}h1{font-size:22px}h2{font-size:17px;margin-top:28px}\n"
         "table{border-collapse:collapse;margin:8px 0}td,th{border-bottom:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}\n"
         "th{background:#f6f8fa}.v{font-weight:600;color:#fff;border-radius:10px;padding:1px 8px}\n"
         ".confirmed{background:#1a7f37}.refuted{background:#cf222e}.open{background:#9a6700}.bracketed{background:#0969da}"
         ".error{background:#6e7781}\n"
         ".heads{display:flex;flex-wrap:wrap;gap:16px}.head{border:1px solid #d0d7de;border-radius:6px;padding:8px}\n"
         ".tick{font-size:10px;fill:#57606a}.counts span{margin-right:16px}.muted{color:#57606a}select{margin-right:12px}\n"
         "</style></head><body>\n";
    h << "<h1>rankcert audit</h1>\n<p class=\"counts\" id=\"counts\"><span><b>" << n.value("total", 0) << "</b> claims</span>"
      << "<span class=\"v confirmed\">" << n.value("confirmed", 0) << " confirmed</span> <span class=\"v refuted\">"
      << n.value("refuted", 0) << " refuted</span> <span class=\"v open\">" << n.value("open", 0)
      << " open</span> ";
    if (n.value("bracketed", 0)) h << "<span class=\"v bracketed\">" << n.value("bracketed", 0) << " bracketed</span> ";
    h << "<span class=\"v error\">" << n.value("error", 0) << " errors</span></p>\n";
    h << "<p class=\"muted\">Each verdict rests on a bundle that the trusted checker verified: <b>confirmed</b> when the "
         "certified bracket [L, U] lies inside the claim, <b>refuted</b> when it lies outside, <b>open</b> otherwise; "
         "<b>bracketed</b> rows had no claim (rankcert survey). "
         "L &le; r<sub>eps</sub>(A) &le; U holds for every row; heatmaps are float previews, not certified.</p>\n";
    auto select = [&](const char* id, const char* label, const std::set<std::string>& vals) {
        h << "<label>" << label << " <select id=\"" << id << "\" onchange=\"filt()\"><option value=\"\">all</option>";
        for (const auto& v : vals) h << "<option>" << esc(v) << "</option>";
        h << "</select></label>";
    };
    h << "<p>";
    select("f-model", "model", models);
    select("f-layer", "layer", layers);
    select("f-eps", "eps", epss);
    select("f-verdict", "verdict", verdicts);
    h << "</p>\n<h2>Verdicts</h2>\n<table id=\"verdicts\"><thead><tr><th>claim id</th><th>model</th><th>layer</th><th>head</th>"
         "<th>eps</th><th>claim</th><th>certified [L, U]</th><th>verdict</th><th>why</th><th>files</th></tr></thead><tbody>\n";
    for (const auto& c : claims) {
        const std::string v = str(c, "verdict");
        h << "<tr class=\"claim\" data-model=\"" << esc(str(c, "model")) << "\" data-layer=\"" << esc(str(c, "layer"))
          << "\" data-eps=\"" << esc(str(c, "eps")) << "\" data-verdict=\"" << esc(v) << "\"><td>" << esc(str(c, "id"))
          << "</td><td>" << esc(str(c, "model")) << "</td><td>" << esc(str(c, "layer")) << "</td><td>" << esc(str(c, "head"))
          << "</td><td>" << esc(str(c, "eps")) << "</td><td>" << esc(str(c, "claim")) << "</td><td>";
        if (c.contains("lower")) h << "[" << c["lower"].get<std::uint64_t>() << ", " << c["upper"].get<std::uint64_t>() << "]";
        h << "</td><td><span class=\"v " << esc(v) << "\">" << esc(v) << "</span></td><td>"
          << esc(v == "error" ? std::string("line ").append(str(c, "line")).append(": ").append(str(c, "error")) : str(c, "reason")) << "</td><td>";
        if (c.contains("bundle")) h << "<a href=\"" << esc(link(str(c, "bundle"))) << "\">bundle</a> ";
        if (c.contains("witness")) h << "<a href=\"" << esc(link(str(c, "witness"))) << "\">witness</a>";
        h << "</td></tr>\n";
    }
    h << "</tbody></table>\n<h2>Heads</h2>\n<p class=\"muted\">Certified L (blue circles) and U (purple squares) "
         "against eps; each claim is a bar beside its eps (green confirmed, red refuted, amber open).</p>\n<div class=\"heads\">\n";
    std::map<std::string, std::vector<const json*>> heads;
    std::vector<std::string> order;
    for (const auto& c : claims) {
        if (!c.contains("lower")) continue;
        std::string key = str(c, "model");
        key.append(" L").append(str(c, "layer")).append(" H").append(str(c, "head")).append(" ").append(str(c, "text"));
        const bool named = c.contains("layer") || c.contains("head");
        if (!named) key.append(" ").append(str(c, "id"));
        if (!heads.count(key)) order.push_back(key);
        heads[key].push_back(&c);
    }
    for (const auto& key : order) {
        const auto& rows = heads[key];
        const json& c0 = *rows[0];
        h << "<div class=\"head\" data-model=\"" << esc(str(c0, "model")) << "\" data-layer=\"" << esc(str(c0, "layer")) << "\"><b>"
          << esc(str(c0, "layer").empty() && str(c0, "head").empty()
                     ? std::string(str(c0, "model")).append(" ").append(str(c0, "id"))
                     : std::string(str(c0, "model")).append(" layer ").append(str(c0, "layer")).append(" head ").append(str(c0, "head")))
          << "</b> <span class=\"muted\">n = " << str(c0, "n") << "</span><br>" << bracket_plot(rows);
        if (c0.value("n", 0) <= 512 && c0.value("N", 0) <= 512) {
            try {
                const Bundle b = load_bundle(confined(dir, str(c0, "bundle"), Where{dir, "bundle"}, "the audit folder"), str(c0, "bundle"));
                const std::string png = heatmap_png(approximate_attention(b.instance));
                const int side = 200;
                h << "<svg width=\"" << side << "\" height=\"" << side << "\" viewBox=\"0 0 " << side << " " << side
                  << "\" role=\"img\" aria-label=\"attention heatmap\"><image width=\"" << side << "\" height=\"" << side
                  << "\" preserveAspectRatio=\"none\" style=\"image-rendering:pixelated\" href=\"data:image/png;base64," << base64(png)
                  << "\"/></svg>";
            } catch (const std::exception&) {
                h << "<span class=\"muted\">(heatmap unavailable)</span>";
            }
        }
        h << "</div>\n";
    }
    h << "</div>\n<script>\nfunction filt(){var f={};['model','layer','eps','verdict'].forEach(function(k){f[k]=document.getElementById('f-'+k).value;});\n"
         "document.querySelectorAll('tr.claim').forEach(function(r){var ok=true;for(var k in f){if(f[k]&&r.dataset[k]!==f[k])ok=false;}r.style.display=ok?'':'none';});\n"
         "document.querySelectorAll('div.head').forEach(function(d){var ok=(!f.model||d.dataset.model===f.model)&&(!f.layer||d.dataset.layer===f.layer);d.style.display=ok?'':'none';});}\n"
         "</script>\n</body></html>\n";
    return h.str();
}

}  // namespace rankcert::producer
