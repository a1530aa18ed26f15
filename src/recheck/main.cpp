// rankcert-recheck: the second checker's command line (docs/trust.md).
//
//   rankcert-recheck BUNDLE WITNESS [--json]
//   rankcert-recheck --witness-dir DIR [--threads T] [--json] PATH...
//
// For each bundle it recomputes every certificate on every row from the
// exact instance and compares with rankcert's witness (`rankcert verify
// --witness`): agree (exit 0), disagree (1), undecided (2: it could not
// decide something rankcert decided), 3 for input errors.  A folder is
// walked for `rankcert/1` bundles; the witness of PATH/rel.json is
// DIR/rel.json.witness.json, as `rankcert verify --witness DIR PATH` writes.
#include "recheck.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

namespace recheck {

namespace {

constexpr std::size_t max_json_bytes = 1ull << 31;

enum class Agreement { agree = 0, disagree = 1, undecided = 2, input_error = 3 };

const char* name(Agreement a) {
    switch (a) {
        case Agreement::agree: return "agree";
        case Agreement::disagree: return "disagree";
        case Agreement::undecided: return "undecided";
        default: return "input error";
    }
}

Outcome dispatch(const std::string& kind, const Context& c, bool kron) {
    if (kron != (kind == "kron_factor" || kind == "kron_neumann"))
        throw InputError(c.where + ".kind: " + kind + (kron ? " does not apply to a kronecker instance" : " applies only to a kronecker instance"));
    if (kind == "factor") return check_factor(c);
    if (kind == "row_interpolative") return check_row_interpolative(c);
    if (kind == "neumann") return check_neumann(c);
    if (kind == "block_neumann") return check_block_neumann(c);
    if (kind == "borsuk") return check_borsuk(c);
    if (kind == "tail") return check_tail(c);
    if (kind == "trivial") return check_trivial(c);
    if (kind == "zonal") return check_zonal(c);
    if (kind == "kron_factor") return check_kron_factor(c);
    if (kind == "kron_neumann") return check_kron_neumann(c);
    if (kind == "sandwich") return check_sandwich(c);
    if (kind == "profile") return check_profile(c);
    Outcome o;
    o.unsupported = true;
    return o;
}

std::string show(const End& e) {
    if (e.nan) return "nan";
    if (e.inf) return e.inf > 0 ? "inf" : "-inf";
    return std::to_string(e.v.convert_to<double>());
}

// A witness interval [lo, hi] ("-inf"/"inf" allowed) as ends.
std::pair<End, End> witness_interval(const Json& j, const std::string& where) {
    if (!j.is_array() || j.items.size() != 2) throw InputError(where + ": needs [lo, hi]");
    std::pair<End, End> out;
    for (int k = 0; k < 2; ++k) {
        End& e = k ? out.second : out.first;
        const Json& x = j.items[static_cast<std::size_t>(k)];
        if (x.is_string() && (x.text == "-inf" || x.text == "inf")) e.inf = x.text == "inf" ? 1 : -1;
        else e.v = read_q(x, where);
    }
    return out;
}

// Both enclose the same number, so they must meet.
bool meets(const Encl& ours, const std::pair<End, End>& theirs) {
    // theirs.hi < ours.lo or ours.hi < theirs.lo: apart.
    auto less = [](const End& a, const End& b) {
        if (a.nan || b.nan) return false;
        if (a.inf > 0 || b.inf < 0) return false;
        if (a.inf < 0 || b.inf > 0) return true;
        return a.v < b.v;
    };
    return !(less(theirs.second, ours.lo) || less(ours.hi, theirs.first));
}

struct Report {
    Agreement agreement = Agreement::agree;
    std::vector<std::string> lines, notes;
    double seconds = 0;
    std::size_t rows = 0, mpfr_rows = 0;
};

void worse(Agreement& a, Agreement b) {
    if (static_cast<int>(b) > static_cast<int>(a)) a = b;
}

Report recheck_bundle(const std::string& path, const std::string& witness_path) {
    Report rep;
    const std::string wtext = read_file(witness_path, witness_path, max_json_bytes);
    const Json witness = parse_json(wtext, witness_path);
    if (!witness.find("format") || witness.at("format", witness_path).text != "rankcert-witness/1")
        throw InputError(witness_path + ": not a rankcert-witness/1 file");
    const std::string text = read_file(path, path, max_json_bytes);
    const std::string sha = sha256_hex(text);
    if (witness.at("bundle", witness_path).at("sha256", witness_path + ".bundle").text != sha)
        throw InputError(path + ": its sha256 differs from the witness's bundle.sha256");
    const Json doc = parse_json(text, path);
    if (!doc.find("format") || doc.at("format", path).text != "rankcert/1") throw InputError(path + ": not a rankcert/1 bundle");
    Sidecars sc;
    sc.folder = std::filesystem::path(path).parent_path();
    if (sc.folder.empty()) sc.folder = ".";
    sc.bundle = path;
    Instance inst = read_instance(doc.at("instance", path), sc, path + ": instance");
    inst.prepare();
    const Q eps = read_q(doc.at("eps", path), path + ": eps");
    if (eps < 0) throw InputError(path + ": eps: must be >= 0");
    const Json& certs = doc.at("certificates", path);
    const Json& wcerts = witness.at("certificates", witness_path);
    if (!certs.is_array() || !wcerts.is_array()) throw InputError(path + ": certificates: needs a list");
    if (certs.items.size() != wcerts.items.size()) {
        rep.agreement = Agreement::disagree;
        rep.lines.push_back("the witness lists a different number of certificates");
        return rep;
    }
    std::size_t lower = 0, upper = std::min(inst.n, inst.N);
    bool all_decided = true;
    for (std::size_t idx = 0; idx < certs.items.size(); ++idx) {
        const Json& c = certs.items[idx];
        const Json& w = wcerts.items[idx];
        const std::string where = path + ": certificates[" + std::to_string(idx) + "]";
        const std::string kind = c.at("kind", where).str(where + ".kind");
        const std::string theirs = w.at("verdict", witness_path).str(witness_path + ".verdict");
        const Json* dec = w.find("decisive");
        RowClaim claim;
        std::string key;
        if (dec) {
            for (const char* rk : {"row", "t"})
                if (const Json* r = dec->find(rk); r && r->is_number()) claim.decisive = r->index(witness_path + ".decisive.row");
            key = dec->find("enclosure") ? "enclosure" : dec->find("delta") ? "delta" : "";
            if (theirs == "verified" && !key.empty()) {
                const auto iv = witness_interval(dec->at(key, witness_path), witness_path + ".decisive." + key);
                if (iv.second.inf == 0) claim.every_row_at_most = iv.second.v;
            }
        }
        Context ctx{inst, sc, eps, c, where, claim, dec};
        Outcome o = dispatch(kind, ctx, inst.kind == "kronecker");
        if (c.find("rank")) o.rank = rank_of(c, where);
        else if (kind == "row_interpolative") o.rank = c.at("rows", where).items.size();
        rep.rows += o.rows_checked;
        rep.mpfr_rows += o.mpfr_rows;
        std::string line = "cert[" + std::to_string(idx) + "] " + kind + ": rankcert " + theirs + ", re-check " +
                           (o.unsupported ? "unsupported" : name(o.verdict));
        if (o.rows_checked) line += " (" + std::to_string(o.rows_checked) + " rows, " + std::to_string(o.mpfr_rows) + " by MPFR)";
        const bool decided_theirs = theirs != "undecided";
        if (o.unsupported || (o.verdict == Verdict::undecided && decided_theirs)) {
            worse(rep.agreement, Agreement::undecided);
            all_decided = false;
        } else if (o.verdict != Verdict::undecided && decided_theirs && theirs != name(o.verdict)) {
            worse(rep.agreement, Agreement::disagree);
            line += "  <-- DISAGREE";
        }
        if (o.verdict == Verdict::undecided) all_decided = false;
        // The decisive enclosure in the witness must meet ours.
        if (dec && !key.empty() && o.decisive) {
            const auto iv = witness_interval(dec->at(key, witness_path), witness_path + ".decisive." + key);
            if (!meets(*o.decisive, iv)) {
                worse(rep.agreement, Agreement::disagree);
                line += "  <-- the witness's enclosure misses ours [" + show(o.decisive->lo) + ", " + show(o.decisive->hi) + "]";
            }
        }
        for (const auto& [k, e] : o.named) {
            if (!dec || !dec->find(k)) continue;
            const Json& x = *dec->find(k);
            if (!x.is_array()) continue;
            const auto iv = witness_interval(x, witness_path + ".decisive." + k);
            if (!meets(e, iv)) {
                worse(rep.agreement, Agreement::disagree);
                line += "  <-- the witness's " + k + " misses ours [" + show(e.lo) + ", " + show(e.hi) + "]";
            }
        }
        for (const auto& [k, v] : o.exact) {
            if (!dec || !dec->find(k)) continue;
            const Json& x = *dec->find(k);
            if (k == "visible_dim" && x.is_number() && x.text == "-1") continue;
            const Q theirs_v = read_number(x, witness_path + ".decisive." + k).q;
            if (theirs_v != v) {
                worse(rep.agreement, Agreement::disagree);
                line += "  <-- the witness's " + k + " differs from the exact value";
            }
        }
        // A witness's worst-row bounds bind every row only when it says verified.
        for (const auto& [k, t] : theirs == "verified" ? o.above_named : std::map<std::string, std::size_t>{}) {
            worse(rep.agreement, Agreement::disagree);
            line += "  <-- row " + std::to_string(t) + " lies above the witness's " + k;
        }
        if (o.above) {
            worse(rep.agreement, Agreement::disagree);
            line += "  <-- row " + std::to_string(*o.above) + " lies above the witness's bound for every row";
        }
        rep.lines.push_back(line);
        const std::string bound = c.at("bound", where).str(where + ".bound");
        if (o.verdict == Verdict::verified && bound == "upper") upper = std::min(upper, o.rank);
        if (o.verdict == Verdict::verified && bound == "lower") lower = std::max(lower, o.rank);
    }
    // The sidecars: every file read has the hash the witness records.
    if (const Json* ws = witness.find("sidecars"); ws && ws->is_array()) {
        std::map<std::string, std::string> rec;
        for (const auto& s : ws->items)
            if (s.find("path") && s.find("sha256")) rec[s.at("path", "").text] = s.at("sha256", "").text;
        for (const auto& [p, h] : sc.seen)
            if (rec.count(p) && rec[p] != h) {
                worse(rep.agreement, Agreement::disagree);
                rep.lines.push_back("sidecar " + p + ": the witness records another sha256");
            }
    }
    if (all_decided) {
        const std::size_t wl = witness.at("lower", witness_path).index(witness_path + ".lower");
        const std::size_t wu = witness.at("upper", witness_path).index(witness_path + ".upper");
        if (wl != lower || wu != upper) {
            worse(rep.agreement, Agreement::disagree);
            rep.lines.push_back("bracket: rankcert [" + std::to_string(wl) + ", " + std::to_string(wu) + "], re-check [" +
                                std::to_string(lower) + ", " + std::to_string(upper) + "]");
        }
    }
    return rep;
}

std::string json_escape(const std::string& s) {
    std::string o;
    for (char ch : s) {
        if (ch == '"' || ch == '\\') o += '\\', o += ch;
        else if (static_cast<unsigned char>(ch) < 0x20) o += ' ';
        else o += ch;
    }
    return o;
}

// Is this file a rankcert/1 bundle?  (The top-level "format" member.)
bool is_bundle(const std::filesystem::path& p) {
    std::error_code ec;
    if (p.extension() != ".json" || !std::filesystem::is_regular_file(p, ec)) return false;
    const auto size = std::filesystem::file_size(p, ec);
    if (ec || size > max_json_bytes) return false;
    try {
        const Json j = parse_json(read_file(p, p.string(), max_json_bytes), p.string());
        const Json* f = j.find("format");
        return f && f->is_string() && f->text == "rankcert/1";
    } catch (const InputError&) {
        return false;
    }
}

int usage() {
    std::fprintf(stderr,
                 "usage: rankcert-recheck BUNDLE WITNESS [--json]\n"
                 "       rankcert-recheck --witness-dir DIR [--threads T] [--json] [--all-lines] PATH...\n"
                 "exit: 0 agree, 1 disagree, 2 undecided, 3 input or usage error\n");
    return 3;
}

}  // namespace

}  // namespace recheck

int main(int argc, char** argv) {
    using namespace recheck;
    std::vector<std::string> pos;
    std::string wdir;
    bool as_json = false, all_lines = false;
    unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    for (int a = 1; a < argc; ++a) {
        const std::string s = argv[a];
        if (s == "--json") as_json = true;
        else if (s == "--all-lines") all_lines = true;
        else if (s == "--witness-dir" && a + 1 < argc) wdir = argv[++a];
        else if (s == "--threads" && a + 1 < argc) {
            const std::string t = argv[++a];
            if (t.empty() || t.size() > 2 || t.find_first_not_of("0123456789") != std::string::npos || std::stoi(t) < 1) return usage();
            threads = static_cast<unsigned>(std::stoi(t));
        } else if (s == "-h" || s == "--help") {
            usage();
            return 0;
        } else if (!s.empty() && s[0] == '-') {
            return usage();
        } else {
            pos.push_back(s);
        }
    }
    // (bundle, witness) pairs.
    std::vector<std::pair<std::string, std::string>> jobs;
    if (wdir.empty()) {
        if (pos.size() != 2) return usage();
        jobs.emplace_back(pos[0], pos[1]);
    } else {
        if (pos.empty()) return usage();
        for (const auto& p : pos) {
            std::error_code ec;
            if (std::filesystem::is_directory(p, ec)) {
                std::vector<std::string> found;
                for (auto it = std::filesystem::recursive_directory_iterator(p, ec); !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
                    if (is_bundle(it->path())) found.push_back(it->path().string());
                std::sort(found.begin(), found.end());
                for (const auto& f : found)
                    jobs.emplace_back(f, (std::filesystem::path(wdir) / std::filesystem::relative(f, p)).string() + ".witness.json");
            } else {
                jobs.emplace_back(p, (std::filesystem::path(wdir) / std::filesystem::path(p).filename()).string() + ".witness.json");
            }
        }
    }
    // Rows of a certificate run on `threads` threads; bundles one after another.
    row_threads = threads;
    std::vector<Report> reports(jobs.size());
    std::atomic<std::size_t> next{0};
    auto work = [&] {
        for (std::size_t k; (k = next++) < jobs.size();) {
            const auto t0 = std::chrono::steady_clock::now();
            try {
                reports[k] = recheck_bundle(jobs[k].first, jobs[k].second);
            } catch (const InputError& e) {
                reports[k].agreement = Agreement::input_error;
                reports[k].lines = {std::string("input error: ") + e.what()};
            } catch (const std::exception& e) {
                reports[k].agreement = Agreement::input_error;
                reports[k].lines = {std::string("input error: ") + e.what()};
            }
            reports[k].seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
    };
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;

    work();
    for (auto& t : pool) t.join();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Agreement worst = Agreement::agree;
    std::size_t count[4] = {0, 0, 0, 0}, rows = 0, mpfr_rows = 0;
    for (std::size_t k = 0; k < jobs.size(); ++k) {
        const Report& r = reports[k];
        worse(worst, r.agreement);
        ++count[static_cast<int>(r.agreement)];
        rows += r.rows;
        mpfr_rows += r.mpfr_rows;
        if (as_json) {
            std::cout << "{\"bundle\": \"" << json_escape(jobs[k].first) << "\", \"verdict\": \"" << name(r.agreement)
                      << "\", \"rows\": " << r.rows << ", \"mpfr_rows\": " << r.mpfr_rows << ", \"seconds\": " << r.seconds
                      << ", \"certificates\": [";
            for (std::size_t l = 0; l < r.lines.size(); ++l) std::cout << (l ? ", " : "") << "\"" << json_escape(r.lines[l]) << "\"";
            std::cout << "]}\n";
        } else if (jobs.size() == 1 && r.agreement == Agreement::input_error) {
            // One line on standard error naming the file and the field.
            std::cerr << "rankcert-recheck: " << (r.lines.empty() ? std::string("input error") : r.lines[0]) << "\n";
        } else if (jobs.size() == 1 || all_lines || r.agreement != Agreement::agree) {
            std::cout << jobs[k].first << ": " << name(r.agreement) << "\n";
            for (const auto& l : r.lines) std::cout << "  " << l << "\n";
        }
    }
    if (!as_json && jobs.size() > 1) {
        std::ostringstream s;
        s.precision(1);
        s << std::fixed << secs;
        std::cout << jobs.size() << " bundles: " << count[0] << " agree, " << count[1] << " disagree, " << count[2] << " undecided, "
                  << count[3] << " input errors; " << rows << " rows re-checked (" << mpfr_rows << " by MPFR); " << s.str() << " s\n";
    }
    return static_cast<int>(worst);
}
