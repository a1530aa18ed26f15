// Precompiled header of rankcert-produce (meson cpp_pch); see
// src/producer/pch/producer_pch.hpp.  CLI11 is header-only and large.

#include "../../producer/pch/producer_pch.hpp"

#include <CLI/CLI.hpp>
