// Shared pieces of the rankcert-produce commands (src/cli/produce_*.cpp).
#pragma once

#include "rankcert/producer/bracket.hpp"
#include "rankcert/producer/construct.hpp"
#include "rankcert/producer/llama2.hpp"
#include "rankcert/producer/profile.hpp"
#include "rankcert/profile.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace rankcert::cli {

// Copy the sidecars an instance refers to into the output folder.
void copy_sidecars(const json& inst, const std::filesystem::path& from, const std::filesystem::path& to);
// "a,b,c" -> {"a", "b", "c"}
std::vector<std::string> split(const std::string& s);

int bracket_main(int argc, char** argv);
int extract_main(int argc, char** argv);
int construct_main(int argc, char** argv);
int profile_main(int argc, char** argv);

}  // namespace rankcert::cli
