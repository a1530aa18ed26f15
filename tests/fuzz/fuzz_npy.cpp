// libFuzzer target: the .npy reader (header, dtypes, shapes, orders).
#include "rankcert/array.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    for (bool neg_inf : {false, true})
        try {
            rankcert::parse_npy(bytes, {"fuzz.npy", "array"}, neg_inf, !neg_inf && size % 2);
        } catch (const rankcert::InputError&) {
        }
    return 0;
}
