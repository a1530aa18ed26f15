// libFuzzer target: a whole bundle (JSON structure, numbers, inline and COO
// arrays, every certificate kind's parser), checked when small, and the
// bytes also read as a safetensors sidecar of a matrix instance.
#include "rankcert/check.hpp"
#include "rankcert/input.hpp"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace rankcert;

namespace {
const fs::path& folder() {
    static const fs::path dir = [] {
        fs::path d = fs::temp_directory_path() / ("rankcert-fuzz-" + std::to_string(getpid()));
        fs::create_directories(d);
        return d;
    }();
    return dir;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    try {
        const json doc = parse_json_text(bytes, "fuzz.json");
        Bundle b = parse_bundle(doc, folder(), "fuzz.json");
        if (b.instance.n * b.instance.N <= 256) {
            CheckOptions opt;
            opt.max_prec = 128;
            opt.threads = 1;
            verify(b, opt);
        }
    } catch (const InputError&) {
    }
    // The same bytes as a safetensors file named by a matrix instance.
    {
        std::ofstream(folder() / "t.safetensors", std::ios::binary) << bytes;
        const json doc = {{"format", "rankcert/1"},
                          {"instance", {{"kind", "matrix"}, {"a", {{"safetensors", "t.safetensors"}, {"tensor", "a"}, {"sha256", sha256_hex(bytes)}}}}},
                          {"eps", "1/2"},
                          {"certificates", json::array()}};
        try {
            parse_bundle(doc, folder(), "st.json");
        } catch (const InputError&) {
        }
    }
    return 0;
}
