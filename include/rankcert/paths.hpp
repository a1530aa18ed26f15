// The one confinement rule for file names that come from input.
//
// A document (a bundle, a sweep, an instance, a claims file's result, an audit
// shard) may name other files only relative to its own folder.  Every reader
// and every writer in rankcert resolves such a name through confined(): the
// name must be non-empty, relative, free of ".." parts, and must resolve,
// through every symlink on the way, inside the folder.  Writers resolve their
// targets the same way under the output folder, so nothing is ever read from
// or written to outside the folders a command was given.  (docs/format.md,
// "Sidecar files"; docs/audit.md, "Files read and written".)
#pragma once

#include "rankcert/input.hpp"

#include <filesystem>
#include <string>

namespace rankcert {

// base / rel, checked as above; `folder` names base in the error ("the
// bundle's folder").  Throws InputError(w, ...) naming rel.
std::filesystem::path confined(const std::filesystem::path& base, const std::string& rel, const Where& w,
                               const std::string& folder);

// True when rel passes the lexical part of the rule (non-empty, relative, no
// ".." part, no NUL); the symlink part needs the file system (confined()).
bool lexically_confined(const std::string& rel);

// Copy the regular file base_from/rel to base_to/rel, both ends confined as
// above (a symlink leaving either folder is refused, never followed; the
// copy is a regular file).  Returns the destination.
std::filesystem::path copy_confined(const std::filesystem::path& base_from, const std::filesystem::path& base_to,
                                    const std::string& rel, const Where& w);

}  // namespace rankcert
