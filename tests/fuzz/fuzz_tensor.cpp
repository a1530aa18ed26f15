// libFuzzer target: the producer's tensor readers: safetensors headers
// (entries, offsets, overlaps), .npz members (sizes declared before
// inflation), N-dimensional .npy, and selectors (F.npz:NAME[1,2]).
#include "rankcert/input.hpp"
#include "rankcert/producer/tensor.hpp"

#include <cstdint>
#include <string>

using namespace rankcert::producer;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    try {
        const auto ix = safetensors_index(bytes, "fuzz.safetensors");
        for (const auto& [name, e] : ix.entries) {
            const NdTensor t = safetensors_tensor(bytes, ix, name, "fuzz.safetensors");
            if (!t.shape.empty() && t.count() <= (1u << 16)) {
                (void)to_float32(t);
                (void)select(t, {0});
            }
        }
    } catch (const rankcert::InputError&) {
    }
    try {
        (void)npz_member(bytes, "q", "fuzz.npz");
    } catch (const rankcert::InputError&) {
    }
    try {
        const NdTensor t = parse_npy_nd(bytes, "fuzz.npy");
        if (t.count() <= (1u << 16)) (void)npy_bytes(t);
    } catch (const rankcert::InputError&) {
    }
    if (size < 512) try {
            const TensorSpec s = parse_tensor_spec(bytes);
            (void)s;
        } catch (const rankcert::InputError&) {
        }
    return 0;
}
