#!/usr/bin/env bash
# The checker's tests and `verify certificates/` under AddressSanitizer and
# UndefinedBehaviorSanitizer (GCC's), in build-sanitize/.  Any report fails.
# Called by `./build.sh test full` (set RANKCERT_SKIP_SANITIZE=1 to skip it).
# Leak checking is off: FLINT and Arb keep per-thread caches until exit.
set -euo pipefail
cd "$(dirname "$0")/.."
# (-Dwerror=false: GCC 12 warns falsely inside libstdc++ at -O2 with sanitizers.)
if [ ! -f build-sanitize/build.ninja ]; then
  meson setup build-sanitize --buildtype=debugoptimized -Db_sanitize=address,undefined \
    -Dcpp_args=-fno-sanitize-recover=all -Dwerror=false > /dev/null
fi
# The trusted side only: the checker, rankcert and the checker's tests (the
# producer, Eigen-heavy and untrusted, would double the build time).
ninja -C build-sanitize rankcert tests/unit_tests
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
meson test -C build-sanitize --no-rebuild --print-errorlogs --num-processes 2 --timeout-multiplier 4 \
  enclosure known tamper input cli sweep profile kernels fast
build-sanitize/rankcert verify --quiet certificates
echo "sanitize: the suite and certificates/ are clean under ASan and UBSan"
