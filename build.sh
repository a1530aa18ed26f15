#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine:
#   ./build.sh            install dependencies, build the programs (rankcert,
#                         rankcert-produce, rankcert-recheck), verify every bundle in certificates/
#   ./build.sh test       install dependencies, build, run the test suite (meson test:
#                         Catch2, bundled certificates, re-checker sample, Python)
#   ./build.sh test full  the same with the slow producer tests (meson suite "full"), then the checker's tests under ASan/UBSan
#                         (tools/sanitize.sh) and libFuzzer on every parser of untrusted
#                         input, 30 s per target (tools/fuzz.sh); .ci/run runs this
#   ./build.sh build      install dependencies and build everything only
# Dependencies come from Debian by package name (docs/dependencies.md says
# what each one is for).  Run as root, or with sudo available.
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(
  g++ meson ninja-build pkg-config       # toolchain
  libgmp-dev libmpfr-dev                 # exact integers/rationals, correctly rounded floats
  libflint-dev libflint-arb-dev          # FLINT rationals, Arb ball arithmetic (trusted checker)
  nlohmann-json3-dev libssl-dev          # JSON reader, SHA-256 (libcrypto)
  libcli11-dev catch2                    # command line, tests
  libboost-dev                           # Boost.Multiprecision: the second checker's rationals (src/recheck/)
  libeigen3-dev libglpk-dev zlib1g-dev   # producer only: float linear algebra, LPs, .npz
  libopenblas-dev liblapacke-dev         # producer only: fast matrix products, LAPACK SVD
  python3-mpmath                         # tests only: the independent re-checker (tools/recheck/)
)
# Installed by `./build.sh test` only: the Python package's tests (tests/python/).
TEST_PACKAGES=(
  python3-numpy python3-torch            # NumPy/PyTorch route in (python/rankcert), optional for users
  chromium-headless-shell                # the audit report opened in a headless browser
  python3-jsonschema                     # audit.json checked against docs/schema/
)

install_deps() {
  local missing=()
  local wanted=("${PACKAGES[@]}")
  [ "${1:-verify}" = test ] && wanted+=("${TEST_PACKAGES[@]}")
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "build.sh: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

build() {
  if [ ! -f build/build.ninja ]; then
    meson setup build --buildtype=release
  fi
  # No targets: everything (tests included).
  ninja -C build "$@"
}

install_deps "${1:-verify}"
case "${1:-verify}" in
  verify)
    build rankcert rankcert-produce rankcert-recheck
    build/rankcert verify certificates
    ;;
  test)
    build
    full=0
    [ "${2:-}" = full ] && full=1
    set +e
    # The everyday suite leaves out the meson suite "full" (the producer's
    # budget-spending runs, about 90 s); `test full` runs everything.
    suites=(--no-suite full)
    [ "$full" = 1 ] && suites=()
    meson test -C build --print-errorlogs --num-processes 2 "${suites[@]}" | tee build/test-summary.txt
    status=${PIPESTATUS[0]}
    set -e
    ok=$(awk '/^Ok:/ {print $2}' build/test-summary.txt)
    bad=$(awk '/^(Fail|Timeout|Unexpected Pass):/ {s += $NF} END {print s + 0}' build/test-summary.txt)
    # The checker again under AddressSanitizer and UndefinedBehaviorSanitizer.
    if [ "$full" = 1 ] && [ "${RANKCERT_SKIP_SANITIZE:-0}" != 1 ]; then
      if tools/sanitize.sh > build/sanitize.log 2>&1; then
        ok=$((${ok:-0} + 1)); tail -1 build/sanitize.log
      else
        bad=$((bad + 1)); status=1; tail -40 build/sanitize.log
      fi
    fi
    # The parsers under libFuzzer, 30 s per target (tools/fuzz.sh).
    if [ "$full" = 1 ] && [ "${RANKCERT_SKIP_FUZZ:-0}" != 1 ]; then
      if tools/fuzz.sh "${RANKCERT_FUZZ_SECONDS:-30}" > build/fuzz.log 2>&1; then
        ok=$((${ok:-0} + 1)); tail -4 build/fuzz.log
      else
        bad=$((bad + 1)); status=1; tail -20 build/fuzz.log
      fi
    fi
    echo "${ok:-0} passed, ${bad} failed"
    exit "$status"
    ;;
  build)
    build
    ;;
  *)
    echo "usage: ./build.sh [verify|test [full]|build]" >&2
    exit 3
    ;;
esac
