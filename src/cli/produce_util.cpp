// Utilities shared by the rankcert-produce commands.
#include "produce.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <unistd.h>

#ifndef RANKCERT_VERSION
#define RANKCERT_VERSION "unknown"
#endif

namespace fs = std::filesystem;
using namespace rankcert;
using namespace rankcert::producer;

namespace rankcert::cli {

// Copy the sidecars an instance refers to into the output folder.
void copy_sidecars(const json& inst, const fs::path& from, const fs::path& to) {
    for (const char* key : {"q", "k", "key_bias", "mask", "logits", "a"}) {
        if (!inst.contains(key) || !inst[key].is_object()) continue;
        for (const char* f : {"npy", "safetensors"}) {
            if (!inst[key].contains(f)) continue;
            const fs::path src = from / inst[key][f].get<std::string>();
            const fs::path dst = to / inst[key][f].get<std::string>();
            std::error_code ec;
            if (fs::equivalent(src, dst, ec)) continue;
            fs::create_directories(dst.parent_path());
            fs::copy_file(src, dst, fs::copy_options::overwrite_existing);
        }
    }
}


std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::size_t p = 0;
    while (p <= s.size()) {
        std::size_t q = s.find(',', p);
        if (q == std::string::npos) q = s.size();
        if (q > p) out.push_back(s.substr(p, q - p));
        p = q + 1;
    }
    return out;
}

}  // namespace rankcert::cli
