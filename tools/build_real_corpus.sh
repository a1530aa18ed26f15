#!/usr/bin/env bash
# Rebuild certificates/real: certified brackets of real trained heads.
#
#   stories260K (llama2.c, 5 layers x 8 heads) over the three texts in
#   certificates/real/texts/, and BERT-Tiny layer 0 (2 heads x 4 inputs);
#   each head at temperature multipliers 0.5, 1, 2 and eps 0.05, 0.1, 0.2.
#
# Every bundle is written by `rankcert bracket` (untrusted search) and
# verified by the checker; afterwards tools/real_summary.py re-verifies the
# whole folder and writes SUMMARY.md, summary.csv and brackets.svg.
#
# usage: tools/build_real_corpus.sh        (JOBS=2 by default; needs python3-numpy
#                                           for the BERT-Tiny instances)
set -euo pipefail
cd "$(dirname "$0")/.."
out=certificates/real
rc=build/rankcert
jobs=${JOBS:-2}
[ -x "$rc" ] || ./build.sh build
rm -rf "$out/stories260K" "$out/berttiny"
for t in short medium long; do
  "$rc" extract --checkpoint data/stories260K/stories260K.bin --tokenizer data/stories260K/tok512.bin \
    --text-file "$out/texts/$t.txt" --out "$out/stories260K/$t" --name "$t"
done
/usr/bin/python3 tools/berttiny_instances.py "$out/berttiny"

list=$(mktemp)
trap 'rm -f "$list"' EXIT
for inst in "$out"/stories260K/*/*-L*-H*.json "$out"/berttiny/bert-*-H*.json; do
  for temp in 0.5 1 2; do echo "$inst $temp"; done
done > "$list"
total=$(wc -l < "$list")
echo "bracketing $total (instance, temperature) pairs with $jobs jobs"
export rc
# Fast search settings: short LP growth, no alternating refits (they rarely
# pay off on these heads; see docs/benchmarks.md).
xargs -P "$jobs" -L 1 sh -c '"$rc" bracket --instance "$0" --temperature "$1" --eps 0.05,0.1,0.2 \
    --out "$(dirname "$0")" --lp-budget 0.5 --refits 0 --threads 1 -q > /dev/null || echo "FAILED: $0 t=$1" >&2' < "$list"
/usr/bin/python3 tools/real_summary.py "$out"
