// Precompiled header of the producer library (meson cpp_pch): the large
// third-party headers every producer file parses (about 10 s per file
// without it on the 2-core machines; issue 46).  Only outside headers here,
// so a change to the project's own headers never rebuilds it.

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>
