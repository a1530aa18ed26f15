#!/bin/sh
# The trusted base's size: lines per part (parsing, arithmetic, checks, CLI)
# and its largest functions.  Uses universal-ctags for function extents.
# usage: tools/trusted_size.sh [SOURCE_ROOT]
set -eu
root=${1:-$(dirname "$0")/..}
cd "$root"
part() {  # name, files...
  name=$1; shift
  n=$(cat "$@" 2>/dev/null | wc -l)
  printf '%-12s %6d  %s\n' "$name" "$n" "$*"
}
echo "part          lines  files"
part parsing    src/checker/input.cpp src/checker/array.cpp src/checker/bundle.cpp include/rankcert/input.hpp include/rankcert/array.hpp include/rankcert/bundle.hpp include/rankcert/certificate.hpp $(ls src/checker/cert/common.* 2>/dev/null)
part arithmetic src/checker/exact.cpp src/checker/enclose.cpp src/checker/fast.cpp include/rankcert/exact.hpp include/rankcert/enclose.hpp include/rankcert/fast.hpp src/checker/ldl.hpp $(ls src/checker/rows.* src/checker/interaction.* 2>/dev/null)
part checks     $(ls src/checker/check.cpp src/checker/profile.cpp src/checker/sweep.cpp src/checker/cert/*.cpp src/checker/cert/*.hpp include/rankcert/check.hpp include/rankcert/profile.hpp include/rankcert/sweep.hpp include/rankcert/kinds.hpp 2>/dev/null | grep -v common)
part results    $(ls src/checker/result.cpp include/rankcert/result.hpp include/rankcert/exit.hpp 2>/dev/null)
part cli        src/cli/main.cpp
echo
echo "largest functions (lines, name, file)"
ctags --c++-kinds=f --fields=+ne --output-format=u-ctags -o - src/checker/*.cpp $(ls src/checker/cert/*.cpp 2>/dev/null) src/cli/main.cpp |
  awk -F'\t' '{l=0; e=0; for (i = 1; i <= NF; i++) { if ($i ~ /^line:/) l = substr($i, 6); if ($i ~ /^end:/) e = substr($i, 5) } if (e) print e - l + 1, $1, $2}' |
  sort -rn | head -5
