#!/usr/bin/env bash
# The real-size corpus: all 40 stories260K heads (5 layers x 8 heads) over a
# 512-token text (the model's full context), at eps 0.05, 0.1, 0.2, with the
# default time budget of `rankcert bracket` (60 s per head for three eps).
#
#   text      certificates/real/texts/full512.txt: the model's own greedy
#             continuation of "Once upon a time" (rankcert extract --generate
#             --steps 520, the "<s>" story separator removed, cut to 1202
#             characters = 512 tokens with BOS).
#   instances certificates/real/full512/*-L*-H*.json (+ .q.npy/.k.npy, 1 MB)
#   bundles   every head's bundles go to $OUT (default build/real512); the
#             layer heads H0 (15 bundles) are copied into
#             certificates/real/full512/.  All 120 bundles together are about
#             100 MB of float16/float32 factors (ranks 250-450 of 512), too
#             large to commit; the summary of all 120 is committed.
#
# usage: [BUDGET=S] [KEEP=DIR] tools/build_real512.sh   (JOBS=2; about 20 minutes on 2 cores)
#   BUDGET  seconds per head for the three eps (default: rankcert bracket's,
#           60 s at 512 tokens); 40 heads take about 40 * BUDGET / JOBS.
#   KEEP    an earlier DEST (e.g. a copy of certificates/real/full512): its
#           bundles of a head are offered with --start-from, so those heads'
#           brackets never get wider.  KEEP must differ from DEST.
#   HEADS   which heads to run, a glob over L<layer>-H<head> (default all 40;
#           HEADS='L*-H[1-7]' runs the 35 heads whose bundles are not committed)
set -euo pipefail
cd "$(dirname "$0")/.."
rc=${RC:-build/rankcert}
jobs=${JOBS:-2}
out=${OUT:-build/real512}
dest=${DEST:-certificates/real/full512}
keep=${KEEP:-}
budget=${BUDGET:-}
heads=${HEADS:-L*-H*}
if [ -n "$keep" ] && [ "$(realpath -m "$keep")" = "$(realpath -m "$dest")" ]; then
  echo "build_real512.sh: KEEP must differ from DEST (DEST is rebuilt from scratch)" >&2
  exit 2
fi
[ -x "$rc" ] || ./build.sh build
rm -rf "$out" "$dest"
mkdir -p "$out"
"$rc" extract --checkpoint data/stories260K/stories260K.bin --tokenizer data/stories260K/tok512.bin \
  --text-file certificates/real/texts/full512.txt --out "$dest" --name full512
export rc out keep budget
# One BLAS thread and one checker thread per job: JOBS jobs share the cores.
ls "$dest"/full512-$heads.json | OPENBLAS_NUM_THREADS=1 xargs -P "$jobs" -I{} sh -c \
  'b=$(basename {} .json); extra=""
   [ -n "$budget" ] && extra="--time-budget $budget"
   for f in ${keep:+"$keep"/$b-eps*.json}; do [ -f "$f" ] && extra="$extra --start-from $f"; done
   "$rc" bracket --instance {} --eps 0.05,0.1,0.2 --out "$out/$b" --threads 1 --json -q $extra \
     > "$out/$b.result.json" || echo "FAILED: {}" >&2'
# Every sidecar of the bundles (start-from ones are named after the start,
# e.g. full512-L1-H0.start4-2.u.npy), and the instance sidecars again.
for b in "$out"/full512-L*-H0; do cp "$b"/*-eps*.json "$b"/*.npy "$dest"/ 2>/dev/null || true; done
/usr/bin/python3 tools/real512_summary.py "$out" "$dest"
