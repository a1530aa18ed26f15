// Precompiled header of producer_tests: the test headers and the producer's.

#include "tests_pch.hpp"
#include "../../src/producer/pch/producer_pch.hpp"
