// Precompiled header of the test programs (meson cpp_pch): Catch2 and the
// large third-party headers (see src/producer/pch/producer_pch.hpp).

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>
