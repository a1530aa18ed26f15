// libFuzzer target: claims files (CSV and JSON Lines) and claim results, the
// text `rankcert audit`, `audit merge` and `report` read from others.
// Every input must end in rows (with or without errors) or an InputError,
// in time linear in its size.
#include "rankcert/producer/audit.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    for (bool jsonl : {false, true})
        try {
            const auto rows = rankcert::producer::parse_claims_text(text, "fuzz.claims", jsonl);
            for (const auto& r : rows)
                if (r.error.empty() && r.f.count("claim")) try {
                        rankcert::producer::parse_claim(r.f.at("claim"));
                    } catch (const rankcert::InputError&) {
                    }
        } catch (const rankcert::InputError&) {
        }
    try {
        const auto j = rankcert::json::parse(text);
        rankcert::producer::check_result(j, "fuzz.json");
    } catch (const rankcert::json::exception&) {
    } catch (const rankcert::InputError&) {
    }
    return 0;
}
