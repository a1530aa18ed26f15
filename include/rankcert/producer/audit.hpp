// `rankcert audit`: decide a table of published rank claims with certificates
// (UNTRUSTED orchestration; every verdict rests on bundles the checker
// verified).  docs/audit.md describes the claims file and the results.
#pragma once

#include "rankcert/input.hpp"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rankcert::producer {

// One row of a claims file: its fields as text, its 1-based row number (the
// line of a JSON Lines file, the data row of a CSV), and a parse error if
// the row itself is malformed.
struct ClaimRow {
    std::size_t row = 0;
    std::string id;
    std::map<std::string, std::string> f;
    std::string error;
};

// Read a claims file: JSON Lines (.jsonl, .json) or CSV with a header row.
// A file-level problem throws InputError; a bad row is kept with its error.
// Linear in the file's size; at most 256 MiB, fields at most 1 MiB; a UTF-8
// byte order mark is skipped.  Every row gets its own valid id.
std::vector<ClaimRow> read_claims(const std::string& path);
// The same from text already read (`jsonl`: JSON Lines, else CSV).
std::vector<ClaimRow> parse_claims_text(std::string text, const std::string& display, bool jsonl);

// A count field ("layer", "head", "scale: rsqrt:N"): digits only, at most 12.
std::uint64_t parse_claim_count(const std::string& s, const std::string& what);

// "rank <= 12", "<= 12", ">= 5", "= 7", "[5, 12]": the claimed interval.
struct Claim {
    std::optional<std::uint64_t> lower, upper;
    std::string text;
    bool none = false;  // "none": no claim, bracket only (rankcert survey)
};
Claim parse_claim(const std::string& text);  // throws InputError("claim: ...")

// confirmed when [L, U] lies inside the claim, refuted when it misses it,
// open otherwise; "bracketed" for the claim "none" (never decided early).
std::string decide_claim(const Claim& c, std::uint64_t L, std::uint64_t U);
// Decided as far as an anytime search is concerned (confirmed or refuted).
inline bool decided(const std::string& verdict) { return verdict == "confirmed" || verdict == "refuted"; }

struct AuditOptions {
    std::string claims_path;   // for relative paths in the claims
    std::string out_dir;
    double time_budget = 0;    // per claim (0: bracket's default)
    unsigned threads = 1;      // checker threads per claim
    std::atomic<bool>* stop = nullptr;  // set by a signal: stop the current claim, do not record it
    std::function<void(const std::string&)> progress;
};

// Decide one claim and return its result record (docs/audit.md); writes the
// claim's instance, bundles and witness under out_dir/claims/<id>/.
json run_claim(const ClaimRow& row, const AuditOptions& opt);

// A claim id: 1-100 letters, digits, '.', '_' or '-', not starting with '.'
// (so that it names one file and one folder under the audit folder).
bool valid_id(const std::string& s);

// A result record read back (resume, merge, report): a regular file of at
// most 64 MiB holding a JSON object of the shape docs/audit.md gives, whose
// id matches its file name and whose bundle/witness stay inside the audit
// folder.  Anything else throws InputError naming the file and the field.
void check_result(const json& r, const std::string& file);
json read_result(const std::filesystem::path& p);

// Every result under dir/results/, in row order, as one rankcert-result/1
// audit document (also written to dir/audit.json by the callers).
json collect_audit(const std::string& dir, const std::string& tool_version);

// The self-contained HTML report of an audit document (dir: where its
// bundles live, for the heatmaps; report_dir: where the page goes, for links).
std::string audit_report_html(const json& audit, const std::string& dir, const std::string& report_dir);

}  // namespace rankcert::producer
