// The confinement rule (paths.hpp).
#include "rankcert/paths.hpp"

#include <system_error>

namespace rankcert {

namespace fs = std::filesystem;

bool lexically_confined(const std::string& rel) {
    if (rel.empty() || rel[0] == '/' || rel.find('\0') != std::string::npos) return false;
    const fs::path rp(rel);
    if (rp.is_absolute() || rp.has_root_name()) return false;
    for (const auto& part : rp)
        if (part == "..") return false;
    return true;
}

fs::path confined(const fs::path& base, const std::string& rel, const Where& w, const std::string& folder) {
    if (rel.empty()) throw InputError(w, "empty path");
    if (rel[0] == '/' || fs::path(rel).is_absolute()) throw InputError(w, "path \"" + rel + "\" is absolute");
    if (!lexically_confined(rel)) throw InputError(w, "path \"" + rel + "\" leaves " + folder);
    std::error_code ec;
    const fs::path abs_base = fs::absolute(base.empty() ? fs::path(".") : base, ec);
    if (ec) throw InputError(w, "cannot resolve " + folder + ": " + ec.message());
    const fs::path full = abs_base / rel;
    const fs::path canon = fs::weakly_canonical(full, ec);
    if (ec) throw InputError(w, "cannot resolve \"" + rel + "\"");
    const fs::path cbase = fs::weakly_canonical(abs_base, ec);
    if (ec) throw InputError(w, "cannot resolve " + folder);
    const auto& b = cbase.native();
    const auto& c = canon.native();
    const bool inside = c.compare(0, b.size(), b) == 0 && (c.size() == b.size() || c[b.size()] == '/' || b == "/");
    if (!inside || c.size() == b.size()) throw InputError(w, "\"" + rel + "\" resolves outside " + folder);
    return canon;
}

fs::path copy_confined(const fs::path& base_from, const fs::path& base_to, const std::string& rel, const Where& w) {
    const fs::path src = confined(base_from, rel, w, "the instance's folder");
    std::error_code ec;
    if (!fs::is_regular_file(src, ec)) throw InputError(w, "\"" + rel + "\" is not a readable file");
    // The target is resolved before any folder is made (a symlink already in
    // the output folder must not carry even a mkdir outside it), then again
    // once the folders exist.
    confined(base_to, rel, w, "the output folder");
    fs::create_directories((base_to / rel).parent_path(), ec);
    if (ec) throw InputError(w, "cannot create the folder for \"" + rel + "\": " + ec.message());
    const fs::path dst = confined(base_to, rel, w, "the output folder");
    if (fs::equivalent(src, dst, ec)) return dst;
    fs::copy_file(src, dst, fs::copy_options::overwrite_existing, ec);
    if (ec) throw InputError(w, "cannot copy \"" + rel + "\": " + ec.message());
    return dst;
}

}  // namespace rankcert
