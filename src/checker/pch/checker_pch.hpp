// Precompiled header of the checker library (meson cpp_pch): only outside
// headers the checker already uses (the trusted stack's C headers, the JSON
// reader, the standard library), parsed once instead of in each of its ~25
// files (issue 46).  It changes what is compiled faster, not what is compiled.
#include <arb.h>
#include <flint/flint.h>
#include <flint/fmpq.h>
#include <flint/fmpq_mat.h>
#include <flint/fmpz.h>
#include <flint/fmpz_mat.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>
