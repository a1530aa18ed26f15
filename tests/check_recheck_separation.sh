#!/bin/sh
# The second checker is independent of the first: its sources include only
# each other and outside headers (no include/rankcert/, nothing from
# src/checker/), and the binary links neither FLINT nor Arb (its arithmetic is
# Boost.Multiprecision over GMP, and MPFR).
# usage: check_recheck_separation.sh SOURCE_ROOT RANKCERT_RECHECK_EXE
set -eu
root=$1 exe=$2
status=0
allowed='^((\.\./)?(json|input|interval|recheck|interaction)\.hpp|boost/multiprecision/gmp\.hpp|mpfr\.h|gmp\.h|openssl/evp\.h|sys/wait\.h|[a-z_]+)$'
for f in "$root"/src/recheck/*.cpp "$root"/src/recheck/*.hpp "$root"/src/recheck/kinds/*.cpp; do
  grep -ho '#include [<"][^>"]*[>"]' "$f" | sed 's/#include [<"]\(.*\)[>"]/\1/' | while read -r inc; do
    if ! echo "$inc" | grep -Eq "$allowed"; then
      echo "recheck separation: $f includes $inc, which the second checker may not use"
      exit 1
    fi
  done || status=1
done
# No source of the first checker is compiled into the second.
if grep -v '^ *#' "$root"/src/recheck/meson.build | grep -n "checker/\|include/rankcert\|\.\./"; then
  echo "recheck separation: src/recheck/meson.build names the first checker's sources"; status=1
fi
if ldd "$exe" | grep -Eiq 'flint|arb'; then
  echo "recheck separation: rankcert-recheck links FLINT or Arb:"; ldd "$exe"; status=1
fi
if nm -C "$exe" 2>/dev/null | grep -Eq ' (arb_|arf_|mag_|fmpz_|fmpq_)|rankcert::'; then
  echo "recheck separation: rankcert-recheck references FLINT/Arb or rankcert:: symbols:"; nm -C "$exe" | grep -E ' (arb_|arf_|mag_|fmpz_|fmpq_)|rankcert::' | head
  status=1
fi
ldd "$exe" | grep -q libmpfr || { echo "recheck separation: rankcert-recheck does not link MPFR"; status=1; }
[ $status -eq 0 ] && echo "recheck separation: rankcert-recheck includes only its own sources and links neither FLINT nor Arb ($(ldd "$exe" | awk '{print $1}' | grep -E 'gmp|mpfr|crypto' | tr '\n' ' '))"
exit $status
