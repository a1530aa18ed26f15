// The one place for result text and JSON: the `--json` result
// (`rankcert-result/1`), the witness (`rankcert-witness/1`) and the sweep
// results, and the lines `rankcert verify` prints (docs/format.md).
// Report and witness share their fields; the witness adds the decisive exact
// quantities of every certificate and the hashes of what was read.
#pragma once

#include "rankcert/check.hpp"
#include "rankcert/sweep.hpp"

#include <string>

namespace rankcert {

inline constexpr const char* result_format = "rankcert-result/1";
inline constexpr const char* witness_format = "rankcert-witness/1";

// The exact ends of an enclosure: ["lo", "hi"], or ["-inf", "inf"].
json endpoints_json(const Endpoints& e);

// One bundle's result (an element of a result document's "bundles").
json report_json(const Bundle& b, const Report& r);
// The witness document of one bundle.
json witness_json(const Bundle& b, const Report& r, const std::string& tool_version);
// One sweep's result.
json sweep_json(const std::string& display, const SweepReport& s, double seconds);
// An input error met while reading `display`.
json error_json(const std::string& display, const std::string& verdict, const std::string& message);

// A result document: {"format": "rankcert-result/1", "tool": ..., fields of body...}.
json result_document(const json& body, const std::string& tool_version);
// Text of a document with "format" and "tool" first, the rest in key order.
std::string dump_document(const json& doc, int indent = 2);

// Human-readable lines.
std::string certificate_line(const CertResult& c);  // "cert[i] upper factor rank k: verdict (64 bits) detail"
std::string report_text(const Report& r);            // every certificate line and the claim, indented
std::string sweep_text(const SweepReport& s);        // the sweep's detail and every point not verified, indented

}  // namespace rankcert
