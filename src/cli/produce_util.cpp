// Utilities shared by the rankcert-produce commands.
#include "produce.hpp"

namespace rankcert::cli {

CLI::Validator seconds_check() {
    return CLI::Validator(
        [](std::string& v) -> std::string {
            double x = 0;
            try {
                std::size_t used = 0;
                x = std::stod(v, &used);
                if (used != v.size()) return "\"" + v.substr(0, 20) + "\" is not a number of seconds";
            } catch (const std::exception&) {
                return "\"" + v.substr(0, 20) + "\" is not a number of seconds";
            }
            if (!(x >= 0 && x <= 1e6)) return "\"" + v.substr(0, 20) + "\" must be between 0 and 1e6 seconds";
            return "";
        },
        "SECONDS");
}

void ensure_output_folder(const std::string& out, const std::string& option) {
    std::error_code ec;
    if (fs::exists(out, ec) && !fs::is_directory(out, ec)) throw InputError(option + ": " + out + " exists and is not a folder");
    fs::create_directories(out, ec);
    if (ec) throw InputError(option + ": cannot create the folder " + out + ": " + ec.message());
    if (::access(out.c_str(), W_OK | X_OK) != 0) throw InputError(option + ": cannot write in " + out);
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
