#!/usr/bin/env bash
# Rebuild certificates/constructions: certified sweeps of the sharp-exponent
# families (docs/constructions.md) and their sweep witnesses and plots.
# About 24 minutes on 2 cores (23.5 on 2026-12-03).  usage: [OUT=DIR] [KEEP=DIR] tools/build_constructions.sh
# (OUT: build somewhere else, e.g. to compare with the committed sweeps;
#  KEEP: an earlier build, e.g. certificates/constructions: every point keeps
#  whichever end of its bracket is tighter, `construct --keep-from`; some
#  committed lower bounds come from offline helpers, tools/code_lp.py
#  and tools/add_neumann.py, and survive a rebuild only through KEEP)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-certificates/constructions}
rc=build/rankcert
[ -x "$rc" ] || ./build.sh build
rm -rf "$out"
mkdir -p "$out"
keep=${KEEP:-}
if [ -n "$keep" ] && [ "$(realpath -m "$keep")" = "$(realpath -m "$out")" ]; then
  echo "build_constructions.sh: KEEP must differ from OUT (OUT is rebuilt from scratch)" >&2
  exit 2
fi
run() {
  local extra=() prev=""
  for a in "$@"; do [ "$prev" = --out ] && [ -n "$keep" ] && extra=(--keep-from "$keep/$(basename "$a")"); prev=$a; done
  echo "+ rankcert construct $* ${extra[*]}" >&2
  "$rc" construct "$@" "${extra[@]}" -q
}
# beta sweeps at eps = 0.1 (fit over the four largest beta)
run sphere --d 2 --n 300  --betas 16,32,64,128,256,512       --eps 0.1 --fit-top 4 --out "$out/sphere-d2"
run sphere --d 3 --n 1200 --betas 4,8,16,32,64               --eps 0.1 --fit-top 4 --time-budget 30 --out "$out/sphere-d3"
# S^3 on 10^4 points: zonal upper bounds and cell lower bounds only (the
# generic search's SVD of a 10^4 x 10^4 matrix alone takes minutes)
run sphere --d 4 --n 10000 --betas 12,16,24,32,48            --eps 0.1 --fit-top 4 --time-budget 20 --hints-only --out "$out/sphere-d4"
run ball   --r 1 --h 1/128 --betas 64,128,256,512,1024,2048 --eps 0.1 --fit-top 4 --out "$out/ball-r1"
run ball   --r 2 --h 1/32  --betas 16,32,64,128,256         --eps 0.1 --fit-top 4 --time-budget 30 --out "$out/ball-r2"
# eps sweeps at fixed beta
run ball   --r 1 --h 1/128 --beta 512 --eps-sweep 0.4,0.2,0.1,0.05,0.025 --fit-top 4 --out "$out/ball-r1-eps"
run sphere --d 2 --n 300  --beta 128 --eps-sweep 0.4,0.2,0.1,0.05,0.025 --fit-top 4 --out "$out/sphere-d2-eps"
# the weighted ball r = 3 as the Kronecker cube of its one-axis matrix (n = 533^3
# points, never formed; kron_neumann / kron_factor certificates)
run ball   --r 3 --kron --h 1/512 --betas 1024,2048,4096,8192,16384 --eps 0.1 --fit-top 4 --out "$out/ball-kron-r3"
# the unweighted ball (key multiplicities instead of weights): small beta only,
# since it needs about e^{beta/8} keys
run ball   --r 1 --h 1/48 --unweighted 64 --betas 2,4,8,16 --eps 0.1 --out "$out/ball-unweighted-r1"
/usr/bin/python3 tools/constructions_table.py "$out"
