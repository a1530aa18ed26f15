#!/usr/bin/env bash
# The second checker (rankcert-recheck, every row) beside `rankcert verify`
# on the bench bundles (bench/make_qk_bundle.py: factor, neumann and tail
# certificates on synthetic qk instances) and on certificates/.  Prints a
# markdown table of median wall seconds over RUNS runs and the ratio.
#
# usage: bench/recheck_bench.sh [--quick]     (quick: skips the largest sizes)
# Needs: build/rankcert, build/rankcert-recheck, python3-numpy, /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cases=("factor 1024" "factor 2048" "factor 4096" "neumann 512" "neumann 1024" "tail 512")
[ "${1:-}" = "--quick" ] && cases=("factor 1024" "neumann 512" "tail 512")

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
# median wall seconds of RUNS runs of a command
measure() {
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f '%e' -o "$out/t" "$@" > /dev/null 2>&1 || true
    cat "$out/t"
  done | median
}

echo "| bundle | rankcert verify --witness (s) | rankcert-recheck, every row (s) | ratio |"
echo "|---|---:|---:|---:|"
for c in "${cases[@]}"; do
  read -r kind n <<< "$c"
  b=$(/usr/bin/python3 bench/make_qk_bundle.py "$out/$kind$n" --kind "$kind" --n "$n")
  build/rankcert verify --quiet --witness "$out/w.json" "$b" > /dev/null
  build/rankcert-recheck "$b" "$out/w.json" > "$out/log" || { echo "recheck does not agree on $kind $n:"; cat "$out/log"; exit 1; }
  tv=$(measure build/rankcert verify --quiet --witness "$out/w.json" "$b")
  tr=$(measure build/rankcert-recheck "$b" "$out/w.json")
  printf '| %s n = %s | %s | %s | %.2f |\n' "$kind" "$n" "$tv" "$tr" "$(awk -v a="$tr" -v b="$tv" 'BEGIN {print a / b}')"
done
# All of certificates/, once.
rm -rf "$out/wall"
tv=$( { /usr/bin/time -f '%e' build/rankcert verify --quiet --witness "$out/wall" certificates > /dev/null; } 2>&1 | tail -1)
tr=$( { /usr/bin/time -f '%e' build/rankcert-recheck --witness-dir "$out/wall" certificates > "$out/log"; } 2>&1 | tail -1)
tail -1 "$out/log" | sed 's/^/certificates\/: /' >&2
printf '| certificates/ (%s bundles) | %s | %s | %.2f |\n' "$(grep -c . "$out/log" > /dev/null; tail -1 "$out/log" | awk '{print $1}')" "$tv" "$tr" "$(awk -v a="$tr" -v b="$tv" 'BEGIN {print a / b}')"
