#!/usr/bin/env bash
# Benchmark of `rankcert verify` on synthetic qk bundles with a rank-k factor
# certificate (n = N, d = 64, k = 64).  Prints a markdown table of wall time
# and peak memory (from GNU time) for each size, with 1 thread and with all.
#
# usage: bench/verify_bench.sh [SIZES...]     (default: 256 512 1024 2048)
# Needs: build/rankcert (./build.sh build), /usr/bin/time, python3-numpy.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(256 512 1024 2048)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "| n = N | d | k | eps | threads | verdict | wall (s) | peak RSS (MiB) |"
echo "|---:|---:|---:|---:|---:|---|---:|---:|"
for n in "${sizes[@]}"; do
  bundle=$(/usr/bin/python3 bench/make_qk_bundle.py "$out/$n" --n "$n" --d 64 --k 64 --seed 1 --temperature 0.25)
  eps=$(grep -o '"eps": "[^"]*"' "$bundle" | cut -d'"' -f4)
  for threads in 1 0; do
    /usr/bin/time -f '%e %M' -o "$out/time" build/rankcert verify --quiet --threads "$threads" "$bundle" > "$out/log" || true
    read -r wall kb < "$out/time"
    verdict=$(awk 'NR==3 {print $6}' "$out/log")
    label=$threads; [ "$threads" = 0 ] && label="all ($(nproc))"
    printf '| %s | 64 | 64 | %s | %s | %s | %s | %.1f |\n' "$n" "$eps" "$label" "$verdict" "$wall" "$(awk -v k="$kb" 'BEGIN {print k / 1024}')"
  done
done
