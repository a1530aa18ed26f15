// Test helpers: exact reference arithmetic, files on disk, bundle builders.
//
// The reference values here are computed in exact rational arithmetic
// (FLINT fmpq) independently of the checker's ball code, so containment
// tests compare two different computations.
#pragma once

#include "rankcert/array.hpp"
#include "rankcert/bundle.hpp"
#include "rankcert/check.hpp"

#include <flint/flint.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace rankcert::test {

namespace fs = std::filesystem;

// A fresh temporary folder, removed at the end of the test.
struct TempDir {
    fs::path path;
    TempDir();
    ~TempDir();
    fs::path file(const std::string& name, const std::string& bytes) const;
};

// Deterministic random source (FLINT's), one per test.
struct Rng {
    flint_rand_t state;
    Rng(unsigned long seed = 1);
    ~Rng();
    // Random rational with numerator and denominator of up to `bits` bits.
    Rat rational(flint_bitcnt_t bits);
    // Random rational in [-bound, bound] with up to `bits` bits.
    Rat rational_in(flint_bitcnt_t bits, long bound);
    unsigned long below(unsigned long n);
};

// Exact rational enclosure [lo, hi] of exp(x) (Taylor series with a rigorous
// remainder bound, after halving x until |x| <= 1/2 and squaring back).
// The width is below 2^-bits * max(1, exp(x)).
std::pair<Rat, Rat> exp_enclosure(const Rat& x, long bits = 400);

// Does the ball contain every rational of [lo, hi]?
bool ball_contains(arb_srcptr b, const Rat& lo, const Rat& hi);

// 10^-e as an exact rational.
Rat pow10neg(unsigned e);

// The bytes of a .npy file (format 1.0 unless version given).
std::string npy_bytes(const std::string& descr, const std::vector<std::size_t>& shape, const std::string& data,
                      bool fortran = false, int version = 1);
std::string f64_data(const std::vector<double>& v);

// JSON builders.
json dense(std::size_t r, std::size_t c, const std::vector<json>& data);
json identity(std::size_t n);
json bundle_json(const json& instance, const Rat& eps, const std::vector<json>& certs, const json& claim = json::object());
// {"kind": "matrix", "a": a}.
json matrix_instance(const json& a);
// A sparse N x K array in COO form from K dense columns (zeros left out).
json coo_columns(std::size_t N, const std::vector<std::vector<json>>& cols);

// The second checker (rankcert-recheck) run on a bundle just verified:
// its exit code (0 agree, 1 disagree, 2 undecided, 3 input error), or -1
// when RANKCERT_RECHECK_EXE is not set.  run() calls it on every bundle.
struct RecheckTally {
    std::size_t runs = 0, undecided = 0;
    std::vector<std::string> failures;
};
RecheckTally& recheck_tally();
int second_opinion(const TempDir& dir, const Bundle& b, const Report& r);

// Write a bundle into dir and load it like the command line does.
Bundle load(const TempDir& dir, const json& doc, const std::string& name = "b.json");
Report run(const TempDir& dir, const json& doc, slong max_prec = 2048);
// The verdict of the one certificate of a bundle (instance, eps, cert).
Verdict verdict_of(const TempDir& dir, const json& inst, const Rat& eps, const json& cert);

// tanh(1/2) = (e - 1)/(e + 1), enclosed exactly.
std::pair<Rat, Rat> tanh_half();

}  // namespace rankcert::test
