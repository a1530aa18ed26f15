// Shared pieces of the rankcert-produce commands (src/cli/produce_*.cpp).
#pragma once

#include "rankcert/producer/audit.hpp"
#include "rankcert/producer/bracket.hpp"
#include "rankcert/producer/construct.hpp"
#include "rankcert/producer/hf.hpp"
#include "rankcert/producer/linalg.hpp"
#include "rankcert/producer/llama2.hpp"
#include "rankcert/producer/profile.hpp"
#include "rankcert/producer/tensor.hpp"
#include "rankcert/exit.hpp"
#include "rankcert/paths.hpp"
#include "rankcert/profile.hpp"
#include "rankcert/result.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

#ifndef RANKCERT_VERSION
#define RANKCERT_VERSION "unknown"
#endif

namespace rankcert::cli {

namespace fs = std::filesystem;
using namespace rankcert;
using namespace rankcert::producer;

// Parse the command line (usage errors: exit 3 with one line), then run body;
// InputError -> one line, exit 3; anything else -> internal error, exit 4.
int run_command(CLI::App& app, int argc, char** argv, const std::string& name, const std::function<int()>& body);

// --time-budget and the like: a finite number of seconds in [0, 1e6].
CLI::Validator seconds_check();
// Create the output folder, or say in one line why it cannot be used.
void ensure_output_folder(const std::string& out, const std::string& option);
// "a,b,c" -> {"a", "b", "c"}
std::vector<std::string> split(const std::string& s);

int bracket_main(int argc, char** argv);
int extract_main(int argc, char** argv);
int construct_main(int argc, char** argv);
int profile_main(int argc, char** argv);
int audit_main(int argc, char** argv);
int report_main(int argc, char** argv);
int survey_main(int argc, char** argv);

}  // namespace rankcert::cli
