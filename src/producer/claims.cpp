// Claims files and claim results: parsing and shape checks (UNTRUSTED
// orchestration; linear-time, size-capped, no file system writes).  Kept
// apart from audit.cpp so that tests/fuzz/fuzz_claims.cpp can run it alone.
#include "rankcert/producer/audit.hpp"

#include "rankcert/paths.hpp"
#include "rankcert/producer/tensor.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

namespace rankcert::producer {

namespace fs = std::filesystem;

namespace {

std::string trim(std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    std::size_t a = 0;
    while (a < s.size() && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
    return s.substr(a);
}

// Printable, one line, at most 80 characters: for echoing input in messages.
std::string shown(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        if (out.size() >= 80) return out + "...";
        out += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
    }
    return out;
}

// The longest text field of a claim row or result (a note, a text).
constexpr std::size_t max_field_bytes = std::size_t{1} << 20;

// RFC 4180 records: fields separated by commas, optionally double-quoted
// ("" inside quotes is a quote).  Returns the records with their first line.
// One pass, linear in the text (a field's blankness is tracked, never
// re-scanned); a field longer than max_field_bytes is an error.
std::vector<std::pair<std::size_t, std::vector<std::string>>> csv_records(const std::string& text, const std::string& file) {
    std::vector<std::pair<std::size_t, std::vector<std::string>>> out;
    std::vector<std::string> rec;
    std::string field;
    bool quoted = false, any = false, blank = true;  // blank: field holds only spaces so far
    std::size_t line = 1, start = 1;
    auto put = [&](char c) {
        field += c;
        if (field.size() > max_field_bytes)
            throw InputError(file + ":" + std::to_string(line) + ": field " + std::to_string(rec.size() + 1) + " is longer than 1 MiB");
    };
    auto end_field = [&] {
        rec.push_back(trim(field));
        field.clear();
        blank = true;
    };
    for (std::size_t i = 0; i <= text.size(); ++i) {
        const char c = i < text.size() ? text[i] : '\n';
        if (quoted) {
            if (i == text.size()) throw InputError(file + ":" + std::to_string(start) + ": unterminated quoted field");
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') put('"'), ++i;
            else if (c == '"') quoted = false;
            else {
                if (c == '\n') ++line;
                put(c);
            }
            continue;
        }
        if (c == '"' && blank) {
            quoted = any = true;
            field.clear();
            blank = false;
        } else if (c == ',') {
            end_field();
            any = true;
        } else if (c == '\n') {
            end_field();
            if (any || !rec.back().empty()) out.emplace_back(start, rec);
            rec.clear();
            any = false;
            start = ++line;
        } else if (c != '\r') {
            put(c);
            if (!std::isspace(static_cast<unsigned char>(c))) blank = false;
            any = true;
        }
    }
    return out;
}

}  // namespace

bool valid_id(const std::string& s) {
    if (s.empty() || s.size() > 100 || s[0] == '.') return false;
    for (unsigned char c : s)
        if (!std::isalnum(c) && c != '.' && c != '_' && c != '-') return false;
    return true;
}


std::uint64_t parse_claim_count(const std::string& s, const std::string& what) {
    const std::string t = trim(s);
    if (t.empty() || t.size() > 12 || t.find_first_not_of("0123456789") != std::string::npos)
        throw InputError(what + ": \"" + shown(t) + "\" is not a non-negative integer");
    return std::stoull(t);
}

std::vector<ClaimRow> read_claims(const std::string& path) {
    {
        std::error_code ec;
        const auto size = fs::file_size(path, ec);
        if (!ec && size > (std::uintmax_t{256} << 20)) throw InputError(path + ": claims file larger than 256 MiB");
    }
    const std::string ext = fs::path(path).extension().string();
    return parse_claims_text(read_file_bytes(path), path, ext == ".jsonl" || ext == ".json" || ext == ".ndjson");
}

std::vector<ClaimRow> parse_claims_text(std::string text, const std::string& path, bool jsonl) {
    if (text.size() > (std::size_t{256} << 20)) throw InputError(path + ": claims file larger than 256 MiB");
    if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // a UTF-8 byte order mark (spreadsheet exports)
    std::vector<ClaimRow> rows;
    if (jsonl) {
        std::size_t line = 0, p = 0;
        while (p < text.size()) {
            std::size_t e = text.find('\n', p);
            if (e == std::string::npos) e = text.size();
            const std::string s = trim(text.substr(p, e - p));
            ++line;
            p = e + 1;
            if (s.empty()) continue;
            ClaimRow r;
            r.row = line;
            try {
                const json j = json::parse(s);
                if (!j.is_object()) throw InputError("not a JSON object");
                for (auto it = j.begin(); it != j.end(); ++it) {
                    if (it.value().is_string() && it.value().get_ref<const std::string&>().size() > max_field_bytes)
                        throw InputError(it.key() + ": longer than 1 MiB");
                    if (it.value().is_string()) r.f[it.key()] = it.value().get<std::string>();
                    else if (it.value().is_number() || it.value().is_boolean()) r.f[it.key()] = it.value().dump();
                    else if (!it.value().is_null()) throw InputError(it.key() + ": must be a string or a number");
                }
            } catch (const json::exception&) {
                r.error = "not valid JSON";
            } catch (const InputError& e) {
                r.error = e.what();
            }
            rows.push_back(std::move(r));
        }
    } else {
        auto recs = csv_records(text, path);
        if (recs.empty()) throw InputError(path + ": no header row");
        std::vector<std::string> header = recs[0].second;
        for (auto& h : header) std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return std::tolower(c); });
        if (std::find(header.begin(), header.end(), "eps") == header.end() || std::find(header.begin(), header.end(), "claim") == header.end())
            throw InputError(path + ": header: needs columns eps and claim (found " + shown(recs[0].second.empty() ? "" : recs[0].second[0]) + ", ...)");
        for (std::size_t i = 1; i < recs.size(); ++i) {
            ClaimRow r;
            r.row = recs[i].first;
            if (recs[i].second.size() != header.size())
                r.error = std::to_string(recs[i].second.size()) + " fields, the header has " + std::to_string(header.size());
            else
                for (std::size_t c = 0; c < header.size(); ++c)
                    if (!recs[i].second[c].empty()) r.f[header[c]] = recs[i].second[c];
            rows.push_back(std::move(r));
        }
    }
    // Ids: a row's own when valid and new; otherwise an error, and a fallback
    // id ("row7", "row7-dup", "row7-dup2", ...) that no other row's id takes,
    // so that every row has its own result file.
    std::set<std::string> taken, seen;
    for (const auto& r : rows)
        if (r.f.count("id") && valid_id(r.f.at("id"))) taken.insert(r.f.at("id"));
    for (auto& r : rows) {
        r.id = r.f.count("id") ? r.f["id"] : "row" + std::to_string(r.row);
        bool fallback = false;
        if (!valid_id(r.id)) {
            if (r.error.empty()) r.error = "id: \"" + shown(r.id) + "\" must be 1-100 letters, digits, '.', '_' or '-'";
            fallback = true;
        } else if (seen.count(r.id)) {
            if (r.error.empty()) r.error = "id: \"" + r.id + "\" repeats an earlier row";
            fallback = true;
        }
        if (fallback) {
            const std::string base = "row" + std::to_string(r.row);
            r.id = base;
            for (int k = 1; taken.count(r.id) || seen.count(r.id); ++k) r.id = base + (k == 1 ? "-dup" : "-dup" + std::to_string(k));
        }
        seen.insert(r.id);
        if (r.error.empty()) {
            if (!r.f.count("eps")) r.error = "eps: missing";
            else if (!r.f.count("claim")) r.error = "claim: missing";
        }
    }
    return rows;
}

Claim parse_claim(const std::string& text) {
    Claim c;
    c.text = trim(text);
    std::string s = c.text;
    for (const char* w : {"rank", "r_eps", "r"})
        if (s.rfind(w, 0) == 0 && s.size() > std::strlen(w) && !std::isalnum(static_cast<unsigned char>(s[std::strlen(w)]))) {
            s = trim(s.substr(std::strlen(w)));
            break;
        }
    auto bad = [&]() { return InputError("claim: \"" + shown(c.text) + "\" is not one of <= k, >= k, = k, [a, b], none"); };
    if (s.empty()) throw bad();
    if (s == "none") {  // bracket only: the search runs its whole budget
        c.none = true;
        return c;
    }
    if (s.front() == '[') {
        const auto comma = s.find(',');
        if (comma == std::string::npos || s.back() != ']') throw bad();
        c.lower = parse_claim_count(s.substr(1, comma - 1), "claim");
        c.upper = parse_claim_count(s.substr(comma + 1, s.size() - comma - 2), "claim");
        if (*c.lower > *c.upper) throw InputError("claim: [" + std::to_string(*c.lower) + ", " + std::to_string(*c.upper) + "] is empty");
        return c;
    }
    auto num = [&](std::size_t skip) {
        const std::string t = trim(s.substr(skip));
        if (t.empty() || t.size() > 12 || t.find_first_not_of("0123456789") != std::string::npos) throw bad();
        return std::stoull(t);
    };
    if (s.rfind("<=", 0) == 0) c.upper = num(2);
    else if (s.rfind("\xe2\x89\xa4", 0) == 0) c.upper = num(3);  // ≤
    else if (s.rfind(">=", 0) == 0) c.lower = num(2);
    else if (s.rfind("\xe2\x89\xa5", 0) == 0) c.lower = num(3);  // ≥
    else if (s.rfind("==", 0) == 0) c.lower = c.upper = num(2);
    else if (s.front() == '=') c.lower = c.upper = num(1);
    else if (std::isdigit(static_cast<unsigned char>(s.front()))) c.lower = c.upper = num(0);
    else throw bad();
    return c;
}

std::string decide_claim(const Claim& c, std::uint64_t L, std::uint64_t U) {
    if (c.none) return "bracketed";
    const std::uint64_t lo = c.lower.value_or(0), hi = c.upper.value_or(UINT64_MAX);
    if (L >= lo && U <= hi) return "confirmed";
    if (U < lo || L > hi) return "refuted";
    return "open";
}


void check_result(const json& r, const std::string& file) {
    const Where w{file, ""};
    if (!r.is_object()) throw InputError(file + ": not a claim result (a JSON object)");
    auto text = [&](const char* k, bool needed) {
        const json* v = optional(r, k);
        if (!v) {
            if (needed) throw InputError(w.key(k), "missing");
            return;
        }
        if (!v->is_string()) throw InputError(w.key(k), "must be a string");
        if (v->get_ref<const std::string&>().size() > max_field_bytes) throw InputError(w.key(k), "longer than 1 MiB");
    };
    auto count = [&](const json& obj, const char* k, const Where& wo, bool nullable) {
        const json* v = optional(obj, k);
        if (!v || (nullable && v->is_null())) return;
        if (!v->is_number_unsigned()) throw InputError(wo.key(k), "must be a non-negative integer");
    };
    text("id", true);
    if (!valid_id(r["id"].get<std::string>())) throw InputError(w.key("id"), "\"" + shown(r["id"].get<std::string>()) + "\" is not a valid claim id");
    text("verdict", true);
    const std::string v = r["verdict"];
    if (v != "confirmed" && v != "refuted" && v != "open" && v != "bracketed" && v != "error")
        throw InputError(w.key("verdict"), "\"" + shown(v) + "\" is not confirmed, refuted, open, bracketed or error");
    if (!r.contains("line") || !r["line"].is_number_unsigned()) throw InputError(w.key("line"), "must be a non-negative integer");
    for (const char* k : {"lower", "upper", "n", "N"}) count(r, k, w, false);
    if (r.contains("lower") != r.contains("upper")) throw InputError(w.key(r.contains("lower") ? "upper" : "lower"), "missing");
    if (r.contains("lower")) {
        if (r["lower"].get<std::uint64_t>() > r["upper"].get<std::uint64_t>()) throw InputError(w.key("lower"), "exceeds upper");
        const json* c = optional(r, "claimed");
        if (!c) throw InputError(w.key("claimed"), "missing");
        if (!c->is_object()) throw InputError(w.key("claimed"), "must be an object");
        count(*c, "lower", w.key("claimed"), true);
        count(*c, "upper", w.key("claimed"), true);
    }
    for (const char* k : {"claim", "eps", "model", "layer", "head", "text", "note", "reason", "error", "decided_by",
                          "lower_kind", "upper_kind", "bundle_sha256", "bundle", "witness"})
        text(k, false);
    for (const char* k : {"bundle", "witness"})
        if (r.contains(k) && (!lexically_confined(r[k].get<std::string>()) || r[k].get<std::string>().find(':') != std::string::npos))
            throw InputError(w.key(k), "\"" + shown(r[k].get<std::string>()) + "\" must be a path inside the audit folder");
}

json read_result(const fs::path& p) {
    std::error_code ec;
    if (fs::is_symlink(p, ec) || !fs::is_regular_file(p, ec)) throw InputError(p.string() + ": not a regular file");
    if (fs::file_size(p, ec) > (std::uintmax_t{64} << 20)) throw InputError(p.string() + ": larger than 64 MiB");
    json r;
    try {
        r = json::parse(read_file_bytes(p.string()));
    } catch (const json::exception&) {
        throw InputError(p.string() + ": not valid JSON (a damaged result; delete it and rerun the audit)");
    }
    check_result(r, p.string());
    if (p.filename().string() != r["id"].get<std::string>() + ".json")
        throw InputError(p.string() + ": id \"" + r["id"].get<std::string>() + "\" does not match the file name");
    return r;
}

}  // namespace rankcert::producer
