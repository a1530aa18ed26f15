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
# producer, Eigen-heavy and untrusted, would double the build time), and the
# second checker with its tests (the checker's tests send every bundle they
# verify through it, tests/helpers.cpp).
ninja -C build-sanitize rankcert tests/unit_tests rankcert-recheck tests/recheck_tests
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
meson test -C build-sanitize --no-rebuild --print-errorlogs --num-processes 2 --timeout-multiplier 4 \
  enclosure known tamper input cli sweep profile kernels fast recheck-units
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
build-sanitize/rankcert verify --quiet --witness "$w" certificates
# The second checker on every committed bundle but the five 10^8-entry
# sphere-d4 constructions (minutes each under the sanitizers).
for d in certificates/*/ certificates/constructions/*/; do
  d=${d%/}
  case "$d" in certificates/constructions|certificates/constructions/sphere-d4) continue ;; esac
  build-sanitize/rankcert-recheck --witness-dir "$w/${d#certificates/}" "$d" > "$w/out" || { cat "$w/out"; exit 1; }
done
echo "sanitize: the suite, certificates/ and the second checker are clean under ASan and UBSan"
