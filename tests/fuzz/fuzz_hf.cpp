// libFuzzer target: HuggingFace folders (config.json + model.safetensors)
// as `rankcert extract --hf` reads them.  The input is split at the first
// NUL byte into the config text and the safetensors bytes, written to a
// fresh folder, and loaded as its model_type says (llama or gpt2).
#include "rankcert/input.hpp"
#include "rankcert/producer/hf.hpp"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string dir = [] {
        char tmpl[] = "/tmp/rankcert-fuzz-hf-XXXXXX";
        const char* d = mkdtemp(tmpl);
        return std::string(d ? d : "/tmp");
    }();
    const std::string in(reinterpret_cast<const char*>(data), size);
    const std::size_t cut = in.find('\0');
    std::ofstream(dir + "/config.json", std::ios::binary | std::ios::trunc) << in.substr(0, cut);
    std::ofstream(dir + "/model.safetensors", std::ios::binary | std::ios::trunc)
        << (cut == std::string::npos ? std::string() : in.substr(cut + 1));
    try {
        const std::string type = rankcert::producer::hf_model_type(dir);
        if (type == "llama") (void)rankcert::producer::load_hf_llama(dir);
        else if (type == "gpt2") rankcert::producer::Gpt2Model m(dir);
    } catch (const rankcert::InputError&) {
    }
    return 0;
}
