#!/usr/bin/env bash
# `rankcert verify` with its binary64 tier against the same check done
# unverified: NumPy float64 (OpenBLAS) and a tight C++ float64 loop
# (bench/float_check.cpp, one thread), side by side in one run, on synthetic
# qk bundles (bench/make_qk_bundle.py: factor certificates with a meaningful
# eps, Neumann certificates with a dense right inverse, tail certificates with
# R = I and k = n/4; the float loop does factor and Neumann only).  Also `verify
# --no-fast` (the Arb ladder alone) where it finishes in reasonable time.
# Prints a markdown table: median wall seconds of RUNS runs, peak RSS, ratios,
# and the share of rows the fast tier decided.
#
# usage: bench/fast_bench.sh [--quick]      (quick: factor 1024, 2048; neumann 512)
# Needs: build/rankcert, g++, python3-numpy (libopenblas0-pthread for a fast
# NumPy), /usr/bin/time.  About 10 minutes on 2 cores without --quick.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
RANKCERT=${RANKCERT:-build/rankcert}
factor_sizes=(1024 2048 4096 8192)
neumann_sizes=(512 1024)
tail_sizes=(512 1024)
arb_limit=2048
if [ "${1:-}" = "--quick" ]; then factor_sizes=(1024 2048); neumann_sizes=(512); tail_sizes=(512); arb_limit=1024; fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
g++ -O3 -march=native -std=c++20 bench/float_check.cpp -o "$out/float_check"

# median wall time and max peak RSS (MiB) of RUNS runs of a command
measure() {
  local walls=() rss=0
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f '%e %M' -o "$out/time" "$@" > "$out/log" 2>&1 || true
    read -r w kb < "$out/time"
    walls+=("$w")
    [ "$kb" -gt "$rss" ] && rss=$kb
  done
  printf '%s %s\n' "$(printf '%s\n' "${walls[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')" \
    "$(awk -v k="$rss" 'BEGIN {printf "%.0f", k / 1024}')"
}

echo "| check | n = N | eps | threads | verify (s) | fast rows | NumPy (s) | float loop (s) | verify / NumPy | verify / loop | --no-fast (s) | peak MiB verify / NumPy |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
run_case() {
  local kind=$1 n=$2
  local bundle
  bundle=$(/usr/bin/python3 bench/make_qk_bundle.py "$out/$kind$n" --kind "$kind" --n "$n")
  local eps
  eps=$(grep -o '"eps": "[^"]*"' "$bundle" | cut -d'"' -f4)
  "$RANKCERT" verify --json --witness "$out/w.json" "$bundle" > /dev/null || true
  local fast
  fast=$(/usr/bin/python3 -c "
import json; w = json.load(open('$out/w.json')); c = w['certificates'][0]
rows = w['n'] if c['kind'] == 'factor' else c['rank']
print('all (tail)' if c['kind'] == 'tail' and c['precision'] == 'fast' else f\"{100 * c['decisive'].get('fast_rows', 0) / rows:.1f}%\")")
  local tl="-"
  [ "$kind" = tail ] || read -r tl _ < <(measure "$out/float_check" "$bundle")
  for threads in 1 2; do
    read -r tv rv < <(measure "$RANKCERT" verify --quiet --threads "$threads" "$bundle")
    read -r tn rn < <(OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads measure /usr/bin/python3 bench/numpy_check.py "$bundle")
    local ta="-"
    if [ "$n" -le "$arb_limit" ] && [ "$threads" = 2 ]; then
      read -r ta _ < <(RUNS=1 measure "$RANKCERT" verify --quiet --no-fast --threads "$threads" "$bundle")
    fi
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %.2f | %s | %s | %s / %s |\n' "$kind" "$n" "$eps" "$threads" "$tv" "$fast" \
      "$tn" "$tl" "$(awk -v a="$tv" -v b="$tn" 'BEGIN {print a / b}')" "$(awk -v a="$tv" -v b="$tl" 'BEGIN {if (b == "-") print "-"; else printf "%.1f", a / (b > 0 ? b : 0.01)}')" \
      "$ta" "$rv" "$rn"
  done
}
for n in "${factor_sizes[@]}"; do run_case factor "$n"; done
for n in "${neumann_sizes[@]}"; do run_case neumann "$n"; done
for n in "${tail_sizes[@]}"; do run_case tail "$n"; done
