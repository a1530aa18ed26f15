// libFuzzer target: the exact number parser (decimals, p/q, hex floats).
#include "rankcert/input.hpp"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        rankcert::parse_rational_text(std::string_view(reinterpret_cast<const char*>(data), size), {"fuzz", "x"});
    } catch (const rankcert::InputError&) {
    }
    return 0;
}
