#!/usr/bin/env bash
# Re-check every committed bundle with the independent re-checker
# (tools/recheck/recheck.py) from rankcert's witness, two at a time.
# Prints one line per bundle that does not agree and a summary.
#   usage: tools/recheck_all.sh [FOLDER ...]    (default: certificates)
set -euo pipefail
cd "$(dirname "$0")/.."
exe=${RANKCERT:-build/rankcert}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
grep -rl --include='*.json' '"format": *"rankcert/1"' "${@:-certificates}" | sort > "$tmp/list"
one() {
  b=$1 tmp=$2 exe=$3
  w="$tmp/$(echo "$b" | tr / _).w.json"
  "$exe" verify --quiet --witness "$w" "$b" > /dev/null 2>&1 || true
  out=$(/usr/bin/python3 tools/recheck/recheck.py "$b" "$w" 2>&1) && echo "agree $b" || echo "$(echo "$out" | head -1 | awk '{print $NF}') $b"
  rm -f "$w"
}
export -f one
xargs -P 2 -I{} bash -c 'one "$@"' _ {} "$tmp" "$exe" < "$tmp/list" > "$tmp/res"
grep -v '^agree ' "$tmp/res" || true
echo "$(wc -l < "$tmp/res") bundles: $(grep -c '^agree ' "$tmp/res") agree, $(grep -c '^disagree ' "$tmp/res") disagree, $(grep -vc '^agree \|^disagree ' "$tmp/res") other; $(( $(date +%s) - start )) s"
