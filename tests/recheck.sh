#!/bin/sh
# An independent re-checker agrees with rankcert on the committed bundles,
# and flags tampered witnesses and bundles; boundary mutants are decided
# right or left undecided.  Two re-checkers run this script:
#   recheck.sh SOURCE_ROOT RANKCERT_EXE
#       tools/recheck/recheck.py (Python fractions and mpmath intervals), on a
#       sample of the committed bundles (it is slow);
#   recheck.sh SOURCE_ROOT RANKCERT_EXE RANKCERT_RECHECK_EXE
#       rankcert-recheck (C++, Boost.Multiprecision and MPFR, src/recheck/),
#       on every committed bundle, every row.
# Neither shares code with src/checker/.
set -eu
root=$1 exe=$2 second=${3:-}
if ! /usr/bin/python3 -c "import mpmath" 2>/dev/null; then
  echo "recheck: SKIPPED: Debian's python3-mpmath is not installed (./build.sh test installs it)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=/usr/bin/python3
rk="$root/tools/recheck/recheck.py"
# RK BUNDLE WITNESS: the re-checker under test.
if [ -n "$second" ]; then
  RK() { "$second" "$@"; }
  who=rankcert-recheck
else
  RK() { $rc "$rk" "$@"; }
  who=recheck.py
fi
cd "$root"
if [ -n "$second" ]; then
  # Every committed bundle, every row, in one run of each checker.
  "$exe" verify --quiet --witness "$tmp/wall" certificates > /dev/null
  if ! "$second" --witness-dir "$tmp/wall" certificates > "$tmp/out" 2>&1; then
    echo "$who: no agreement on the committed bundles:"; grep -v '^  ' "$tmp/out" | head -20; exit 1
  fi
  echo "$who: $(tail -1 "$tmp/out")"
  rm -rf "$tmp/wall"
else
# A sample: the hand-made bundles, every 60th real bundle, two constructions.
sample=$( (ls certificates/identity/*.json certificates/softmax-small/*.json certificates/block-neumann/*.json certificates/borsuk/*.json;
           find certificates/real -name '*-eps*.json' | sort | awk 'NR % 60 == 1';
           ls certificates/kron-small/*.json | grep -v sweep;
           ls certificates/zonal-small/*.json;
           echo certificates/constructions/ball-kron-r3/ball-kron-r3-beta1024-eps0.1.json;
           echo certificates/constructions/ball-r1/ball-r1-beta128-eps0.1.json;
           echo certificates/constructions/sphere-d2/sphere-d2-beta16-eps0.1.json) )
n=0
for b in $sample; do
  "$exe" verify --quiet --witness "$tmp/w.json" "$b" > /dev/null
  if ! RK "$b" "$tmp/w.json" > "$tmp/out" 2>&1; then
    echo "$who: no agreement on $b:"; cat "$tmp/out"; exit 1
  fi
  n=$((n + 1))
done
echo "$who: agree on $n committed bundles"
fi

# Tampering.  A bundle with a wrong factor entry: rankcert refutes, and the
# re-checker agrees that it is refuted.
b=certificates/softmax-small/gauss24-d4-beta2-eps0.1.json
mkdir -p "$tmp/t"
cp certificates/softmax-small/* "$tmp/t/"
$rc - "$tmp/t/$(basename $b)" <<'PY'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
c = d["certificates"][0]
c["u"] = {"shape": [24, 1], "data": [1] * 24}
c["w"] = {"shape": [24, 1], "data": [0] * 24}
c["rank"] = 1
d["claim"] = {}
json.dump(d, open(p, "w"))
PY
"$exe" verify --quiet --witness "$tmp/wt.json" "$tmp/t/$(basename $b)" > /dev/null && { echo "$who: tampered bundle not refuted by rankcert"; exit 1; } || true
RK "$tmp/t/$(basename $b)" "$tmp/wt.json" > "$tmp/out" || { echo "$who: did not agree on the refuted bundle:"; cat "$tmp/out"; exit 1; }
grep -q "rankcert refuted, re-check refuted" "$tmp/out" || { echo "$who: the refutation was not re-checked"; cat "$tmp/out"; exit 1; }

# A block_neumann bundle whose Lambda no longer mixes rows: refuted by both.
$rc - certificates/block-neumann/plane-mixing-eps0.8.json "$tmp/t/bn.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["certificates"][0]["lambda"]["data"] = ["1", "0", "0", "0", "1", "0"]
d["claim"] = {}
json.dump(d, open(sys.argv[2], "w"))
PY
"$exe" verify --quiet --witness "$tmp/wbn.json" "$tmp/t/bn.json" > /dev/null && { echo "$who: tampered block_neumann bundle not refuted by rankcert"; exit 1; } || true
RK "$tmp/t/bn.json" "$tmp/wbn.json" > "$tmp/out" || { echo "$who: did not agree on the refuted block_neumann bundle:"; cat "$tmp/out"; exit 1; }
grep -q "block_neumann: rankcert refuted, re-check refuted" "$tmp/out" || { echo "$who: the block_neumann refutation was not re-checked"; cat "$tmp/out"; exit 1; }

# A borsuk bundle at eps 0.78, above what its icosahedron proves: refuted by both.
$rc - certificates/borsuk/grid3-eps0.775.json "$tmp/t/borsuk.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["eps"] = "0.78"
d["certificates"] = d["certificates"][:1]
d["claim"] = {}
json.dump(d, open(sys.argv[2], "w"))
PY
"$exe" verify --quiet --witness "$tmp/wb.json" "$tmp/t/borsuk.json" > /dev/null && { echo "$who: borsuk bundle at 0.78 not refuted by rankcert"; exit 1; } || true
RK "$tmp/t/borsuk.json" "$tmp/wb.json" > "$tmp/out" || { echo "$who: did not agree on the refuted borsuk bundle:"; cat "$tmp/out"; exit 1; }
grep -q "borsuk: rankcert refuted, re-check refuted" "$tmp/out" || { echo "$who: the borsuk refutation was not re-checked"; cat "$tmp/out"; exit 1; }

# A zonal bundle with its constant Chebyshev coefficient raised: refuted by both.
$rc - certificates/zonal-small/sphere-d3-beta8-eps0.1.json "$tmp/t/zonal.json" <<'PY'
import json, sys
from fractions import Fraction
d = json.load(open(sys.argv[1]))
z = [c for c in d["certificates"] if c["kind"] == "zonal"][0]
z["chebyshev"][0] = str(Fraction(float.fromhex(z["chebyshev"][0])) + Fraction(1, 20))
d["certificates"] = [z]
d["claim"] = {}
json.dump(d, open(sys.argv[2], "w"))
PY
"$exe" verify --quiet --witness "$tmp/wz.json" "$tmp/t/zonal.json" > /dev/null && { echo "$who: tampered zonal bundle not refuted by rankcert"; exit 1; } || true
RK "$tmp/t/zonal.json" "$tmp/wz.json" > "$tmp/out" || { echo "$who: did not agree on the refuted zonal bundle:"; cat "$tmp/out"; exit 1; }
grep -q "zonal: rankcert refuted, re-check refuted" "$tmp/out" || { echo "$who: the zonal refutation was not re-checked"; cat "$tmp/out"; exit 1; }

# Kronecker bundles: a cell moved from one axis's R to another column (the
# own mass of a cell drops), and an axis factor's u scaled: refuted by both.
kb=certificates/kron-small/ball-kron-r2-beta32-eps0.1.json
for what in neumann factor; do
  $rc - "$kb" "$tmp/t/kron-$what.json" "$what" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
cs = {c["kind"]: c for c in d["certificates"]}
if sys.argv[3] == "neumann":
    r = cs["kron_neumann"]["factors"][1]["r"]["coo"]
    r["col"][0] = 1 if r["col"][0] == 0 else 0    # key 0 joins another cell
    d["certificates"] = [cs["kron_neumann"]]
else:
    f = cs["kron_factor"]["factors"][0]
    f["u"], f["w"] = f["w"], f["u"]               # U and W swapped: another B_1
    d["certificates"] = [cs["kron_factor"]]
d["claim"] = {}
json.dump(d, open(sys.argv[2], "w"))
PY
  cp certificates/kron-small/*.npy "$tmp/t/" 2>/dev/null || true
  "$exe" verify --quiet --witness "$tmp/wk.json" "$tmp/t/kron-$what.json" > /dev/null && { echo "$who: tampered kron_$what bundle not refuted by rankcert"; exit 1; } || true
  RK "$tmp/t/kron-$what.json" "$tmp/wk.json" > "$tmp/out" || { echo "$who: did not agree on the refuted kron_$what bundle:"; cat "$tmp/out"; exit 1; }
  grep -q "kron_$what: rankcert refuted, re-check refuted" "$tmp/out" || { echo "$who: the kron_$what refutation was not re-checked"; cat "$tmp/out"; exit 1; }
done
echo "$who: tampered kron_neumann and kron_factor bundles refuted by both"

# Tampered witnesses: a flipped verdict, a moved enclosure, a wrong hash.
"$exe" verify --quiet --witness "$tmp/w.json" "$b" > /dev/null
tamper() {  # python expression on w, expected exit status
  $rc - "$tmp/w.json" "$tmp/bad.json" "$1" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(w, open(sys.argv[2], "w"))
PY
  set +e
  RK "$b" "$tmp/bad.json" > "$tmp/out" 2>&1
  got=$?
  set -e
  if [ "$got" != "$2" ]; then echo "$who: tampered witness ($1) gave exit $got, expected $2:"; cat "$tmp/out"; exit 1; fi
}
tamper 'w["certificates"][1]["verdict"] = "refuted"' 1
tamper 'w["certificates"][0]["decisive"]["enclosure"] = ["5", "6"]' 1
tamper 'w["upper"] = 3; w["certificates"] = w["certificates"]' 1
tamper 'w["bundle"]["sha256"] = "0" * 64' 3
# A witness that names a smaller row as the worst one, with that row's true
# enclosure: consistent in itself, but its bound for every row is too low, and
# the re-checker finds the row above it.
$rc - "$b" "$tmp/w.json" "$tmp/bad.json" "$root/tools/recheck" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[4])
import recheck
from mpmath import iv
iv.dps = 30
w = json.load(open(sys.argv[2]))
doc = recheck.parse_json_exact(open(sys.argv[1]).read())
import os
arrays = recheck.Arrays(os.path.dirname(sys.argv[1]), w.get("sidecars", []))
inst = recheck.Instance(doc["instance"], arrays)
c = doc["certificates"][0]
assert c["kind"] == "factor" and w["certificates"][0]["verdict"] == "verified"
_, encl = recheck.recheck_certificate(inst, arrays, recheck.number(doc["eps"], "eps"), c, 0, lambda n: list(range(n)), w)
rows = sorted(encl, key=lambda t: recheck.ends(encl[t])[0])
low = rows[0]                       # the row with the smallest error
lo, hi = recheck.ends(encl[low])
d = w["certificates"][0]["decisive"]
d["row"], d["enclosure"] = low, [f"{lo.numerator}/{lo.denominator}", f"{hi.numerator}/{hi.denominator}"]
json.dump(w, open(sys.argv[3], "w"))
PY
set +e
RK "$b" "$tmp/bad.json" > "$tmp/out" 2>&1
got=$?
set -e
if [ "$got" != 1 ] || ! grep -q "lies above the witness's bound" "$tmp/out"; then
  echo "$who: a witness with a too-low bound for every row was not flagged (exit $got):"; cat "$tmp/out"; exit 1
fi
echo "$who: tampered bundle and witnesses flagged"

# Profile and sandwich certificates (the rank-one interaction of
# tests/test_profile.cpp): verified and refuted ones agree, a witness with a
# wrong exact kappa bound is flagged.
mkdir -p "$tmp/p"
$rc - "$tmp/p" <<'PY'
import json, sys
from mpmath import mp
mp.dps = 80
d = sys.argv[1]
dense = lambda r, c, v: {"shape": [r, c], "data": v}
inst = {"kind": "qk", "q": dense(3, 1, [1, 0, -1]), "k": dense(3, 1, [2, 0, -2]), "scale": "1/2"}
prof = {"bound": "profile", "kind": "profile", "r": 1, "x": dense(3, 1, [1, 0, -1]), "y": dense(3, 1, [1, 0, -1]),
        "gauge": dense(1, 1, [1]), "lambda": {"shape": [3], "data": ["1/2", 0, "1/2"]},
        "mu": {"shape": [3], "data": ["1/2", 0, "1/2"]}, "zu": dense(3, 1, [1, 0, -1]), "zv": dense(3, 1, [1, 0, -1]),
        "z_norm_sq": "4.000001", "claims": {"q": [0, "0.001"], "tau": [0, "0.001"], "kappa": ["0.999", 1], "visible_dim": 1}}
def bundle(name, eps, certs):
    json.dump({"format": "rankcert/1", "instance": inst, "eps": eps, "certificates": certs}, open(f"{d}/{name}.json", "w"))
bundle("profile-ok", "1/2", [prof])
bad = json.loads(json.dumps(prof)); bad["claims"]["visible_dim"] = 2
bundle("profile-dim", "1/2", [bad])
bad = json.loads(json.dumps(prof)); bad["claims"]["kappa"] = [2, 3]
bundle("profile-kappa", "1/2", [bad])
S = [[1, 0, -1], [0, 0, 0], [-1, 0, 1]]
A = [[mp.exp(v) / sum(mp.exp(u) for u in row) for v in row] for row in S]
W = [mp.nstr(A[i][j], 70) for j in range(3) for i in range(3)]   # W = A^T, U = I: B = A to 1e-70
sand = {"bound": "upper", "kind": "sandwich", "rank": 3, "r": 1, "x": dense(3, 1, [1, 0, -1]), "y": dense(3, 1, [1, 0, -1]),
        "tau_star": "1e-9", "u": dense(3, 3, [1, 0, 0, 0, 1, 0, 0, 0, 1]), "w": dense(3, 3, W)}
bundle("sandwich-ok", "1e-6", [sand])
bad = json.loads(json.dumps(sand)); bad["w"]["data"][0] = "0.5"
bundle("sandwich-w", "1e-6", [bad])
PY
for name in profile-ok:verified profile-dim:refuted profile-kappa:refuted sandwich-ok:verified sandwich-w:refuted; do
  f=${name%%:*} want=${name##*:}
  set +e
  "$exe" verify --quiet --witness "$tmp/p/$f.w.json" "$tmp/p/$f.json" > /dev/null
  set -e
  grep -q "\"verdict\": \"$want\"" "$tmp/p/$f.w.json" || { echo "$who: rankcert did not say $want on $f"; exit 1; }
  RK "$tmp/p/$f.json" "$tmp/p/$f.w.json" > "$tmp/out" 2>&1 || { echo "$who: no agreement on $f:"; cat "$tmp/out"; exit 1; }
  grep -q "rankcert $want, re-check $want" "$tmp/out" || { echo "$who: $f not re-checked as $want:"; cat "$tmp/out"; exit 1; }
done
$rc - "$tmp/p/profile-ok.w.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))
w["certificates"][0]["decisive"]["kappa_gauge_sq"] = "1/2"
json.dump(w, open(sys.argv[1], "w"))
PY
set +e
RK "$tmp/p/profile-ok.json" "$tmp/p/profile-ok.w.json" > "$tmp/out" 2>&1
got=$?
set -e
[ "$got" = 1 ] || { echo "$who: a profile witness with a wrong kappa bound was not flagged (exit $got)"; cat "$tmp/out"; exit 1; }
echo "$who: profile and sandwich certificates re-checked (verified, refuted, tampered witness)"

# Malformed input to the second checker: exit 3 and one line naming the file
# (and the field), never a crash.
if [ -n "$second" ]; then
  b=certificates/softmax-small/gauss24-d4-beta2-eps0.1.json
  mkdir -p "$tmp/bad"
  cp certificates/softmax-small/* "$tmp/bad/"
  "$exe" verify --quiet --witness "$tmp/bad/w.json" "$b" > /dev/null
  n=0
  for case in 'd["eps"] = "1e99999"' 'd["instance"]["q"]["shape"] = [1 << 40, 1 << 40]' 'd["certificates"][0]["rank"] = "x"' \
              'd["certificates"][0]["u"] = {"npy": "../gauss24.npy", "sha256": "0" * 64}' 'd["certificates"][1]["rows"] = [0, 0]' \
              'd["instance"]["scale"] = {"rsqrt": -1}' 'd["certificates"][0]["w"]["shape"] = [3]' 'd = [[[[]]]] * 3'; do
    $rc - "$b" "$tmp/bad/x.json" "$case" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
PY
    # A witness with this bundle's hash, so the error comes from the bundle itself.
    $rc - "$tmp/bad/w.json" "$tmp/bad/x.json" "$tmp/bad/wx.json" <<'PY'
import hashlib, json, sys
w = json.load(open(sys.argv[1]))
w["bundle"]["sha256"] = hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest()
json.dump(w, open(sys.argv[3], "w"))
PY
    set +e
    "$second" "$tmp/bad/x.json" "$tmp/bad/wx.json" > "$tmp/out" 2> "$tmp/err"
    got=$?
    set -e
    if [ "$got" != 3 ] || [ "$(wc -l < "$tmp/err")" != 1 ] || [ -s "$tmp/out" ] || ! grep -q 'x.json' "$tmp/err"; then
      echo "$who: malformed bundle ($case) gave exit $got:"; cat "$tmp/out" "$tmp/err"; exit 1
    fi
    n=$((n + 1))
  done
  printf '{"format": "rankcert-witness/1"' > "$tmp/bad/trunc.json"
  set +e; "$second" "$b" "$tmp/bad/trunc.json" > "$tmp/out" 2> "$tmp/err"; got=$?; set -e
  [ "$got" = 3 ] && grep -q "trunc.json" "$tmp/err" || { echo "$who: a truncated witness gave exit $got"; cat "$tmp/out" "$tmp/err"; exit 1; }
  echo "$who: $((n + 1)) malformed bundles and witnesses refused with exit 3 and the file named"
fi

# A small boundary mutation campaign (tools/mutation_campaign.py): eps 1e-8 ..
# 1e-45 on either side of each certificate's decision boundary; no wrong verdict.
if /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  RANKCERT="$exe" $rc "$root/tools/mutation_campaign.py" --bases 12 --seed 7 --out "$tmp/mutants" ${second:+--recheck "$second"} > "$tmp/out" 2>&1 || {
    echo "$who: mutation campaign:"; cat "$tmp/out"; exit 1; }
  grep "boundary mutants" "$tmp/out" | sed "s/^/$who: /"
else
  echo "$who: mutation campaign skipped (python3-numpy is not installed)"
fi
