// Utilities shared by the rankcert-produce commands.
#include "produce.hpp"

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

int run_command(CLI::App& app, int argc, char** argv, const std::string& name, const std::function<int()>& body) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);
        std::cerr << name << ": " << e.what() << " (see " << name << " --help)\n";
        return exit_input;
    }
    try {
        return body();
    } catch (const InputError& e) {
        std::cerr << e.what() << "\n";
        return exit_input;
    } catch (const std::bad_alloc&) {
        std::cerr << name << ": out of memory (internal error)\n";
        return exit_internal;
    } catch (const std::exception& e) {
        std::cerr << name << ": internal error: " << e.what() << "\n";
        return exit_internal;
    }
}

}  // namespace rankcert::cli
