#!/usr/bin/env bash
# Rebuild certificates/real: certified brackets of real trained heads.
#
#   stories260K (llama2.c, 5 layers x 8 heads) over the three texts in
#   certificates/real/texts/, and BERT-Tiny layer 0 (2 heads x 4 inputs);
#   each head at temperature multipliers 0.5, 1, 2 and eps 0.05, 0.1, 0.2.
#
# 1. `rankcert extract` (and tools/berttiny_instances.py) write the instances
#    beside the committed bundles (deterministic: the same files again);
# 2. one `rankcert survey` over all of them (--temperature 0.5,1,2, --eps
#    0.05,0.1,0.2; untrusted search, every bundle verified by the checker),
#    in $OUT (default build/real-survey; resumable with RESUME=1);
# 3. tools/corpus_merge.py puts each bundle beside its instance, each end of a
#    bracket kept from whichever of (committed, new) is tighter, so no
#    committed bracket gets wider (FRESH=1 deletes the committed bundles
#    first: a build from scratch);
# 4. tools/real_summary.py re-verifies the whole folder and writes SUMMARY.md,
#    summary.csv and brackets.svg (it fails if anything does not verify).
#
# usage: [JOBS=2] [BUDGET=2] [OUT=build/real-survey] [RESUME=1] [FRESH=1] tools/build_real_corpus.sh
#   1,152 brackets (128 heads x 3 t x 3 eps); with BUDGET seconds each,
#   about 1152 * (BUDGET + 1) / JOBS seconds (BUDGET=2, JOBS=2: 30 minutes).
#   Needs python3-numpy for the BERT-Tiny instances.
set -euo pipefail
cd "$(dirname "$0")/.."
real=certificates/real
rc=${RC:-build/rankcert}
jobs=${JOBS:-2}
budget=${BUDGET:-2}
out=${OUT:-build/real-survey}
[ -x "$rc" ] || ./build.sh build
if [ "${FRESH:-0}" = 1 ]; then
  rm -rf "$real/stories260K" "$real/berttiny"
fi
[ "${RESUME:-0}" = 1 ] || rm -rf "$out"
for t in short medium long; do
  "$rc" extract --checkpoint data/stories260K/stories260K.bin --tokenizer data/stories260K/tok512.bin \
    --text-file "$real/texts/$t.txt" --out "$real/stories260K/$t" --name "$t" > /dev/null
done
/usr/bin/python3 tools/berttiny_instances.py "$real/berttiny" > /dev/null
# One BLAS thread per job: JOBS jobs share the cores.
OPENBLAS_NUM_THREADS=1 "$rc" survey "$real"/stories260K/short "$real"/stories260K/medium "$real"/stories260K/long \
  "$real"/berttiny --temperature 0.5,1,2 --eps 0.05,0.1,0.2 --time-budget "$budget" --jobs "$jobs" -o "$out"
/usr/bin/python3 tools/corpus_merge.py "$out" --tsv "$real/refresh.tsv"
/usr/bin/python3 tools/real_summary.py "$real"
