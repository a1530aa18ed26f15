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
#   bundles   one `rankcert survey` (every head x eps, untrusted search,
#             every bundle verified by the checker) in $OUT/survey (default
#             build/real512); tools/corpus_merge.py places its bundles in
#             $OUT/bundles, and the layer heads H0 (15 bundles) are copied into
#             certificates/real/full512/.  All 120 bundles together are about
#             100 MB of float16/float32 factors (ranks 250-450 of 512), too
#             large to commit; the summary of all 120 is committed.
#
# usage: [BUDGET=S] [KEEP=DIR] tools/build_real512.sh   (JOBS=2; about 20 minutes on 2 cores)
#   BUDGET  seconds per head for the three eps (default 60: 20 s per eps, the
#           default of `rankcert bracket` at 512 tokens); 40 heads take
#           about 40 * BUDGET / JOBS.
#   KEEP    a folder of earlier bundles of these heads (e.g. a copy of
#           certificates/real/full512, or an earlier $OUT/bundles): they are
#           merged with the new ones, each end from whichever is tighter, so
#           those brackets never get wider; with KEEP/summary.csv the
#           summary's other rows are combined with it too (real512_summary.py
#           --combine).  KEEP must differ from DEST.
#   HEADS   which heads to run, a glob over L<layer>-H<head> (default all 40;
#           HEADS='L*-H[1-7]' runs the 35 heads whose bundles are not committed)
set -euo pipefail
cd "$(dirname "$0")/.."
rc=${RC:-build/rankcert}
jobs=${JOBS:-2}
out=${OUT:-build/real512}
dest=${DEST:-certificates/real/full512}
keep=${KEEP:-}
budget=${BUDGET:-60}
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
mkdir -p "$out/bundles"
if [ -n "$keep" ]; then
  # Earlier bundles first; the survey's are merged into them end by end.
  cp "$keep"/full512-L*-H*-eps*.json "$keep"/*.npy "$out/bundles/"
fi
# One BLAS thread per job: JOBS jobs share the cores.  The survey gives each
# eps a third of BUDGET.
ls "$dest"/full512-$heads.json | OPENBLAS_NUM_THREADS=1 xargs "$rc" survey --eps 0.05,0.1,0.2 \
  --time-budget "$(awk -v b="$budget" 'BEGIN {print b / 3}')" --jobs "$jobs" -o "$out/survey"
/usr/bin/python3 tools/corpus_merge.py "$out/survey" --dest "$out/bundles"
# The bundles of head 0 of every layer with the sidecars they name.
/usr/bin/python3 - "$out/bundles" "$dest" <<'PY'
import glob, json, os, shutil, sys
sys.path.insert(0, "tools")
from corpus_merge import sidecars
src, dst = sys.argv[1:]
for b in sorted(glob.glob(os.path.join(src, "full512-L?-H0-eps*.json"))):
    for f in [os.path.basename(b)] + sidecars(json.load(open(b))):
        shutil.copyfile(os.path.join(src, f), os.path.join(dst, f))
PY
# With KEEP's summary.csv, the rows of heads whose bundles are not committed
# keep each end from the better of this pass and the earlier rows.
if [ -n "$keep" ] && [ -f "$keep/summary.csv" ]; then
  /usr/bin/python3 tools/real512_summary.py "$out" "$dest" --earlier "$keep/summary.csv" --combine
else
  /usr/bin/python3 tools/real512_summary.py "$out" "$dest"
fi
