#!/usr/bin/env python3
"""Boundary mutation campaign: bundles whose eps sits 1e-8 .. 1e-45 (relative)
on either side of a certificate's decision boundary, decided by `rankcert
verify` and compared with the truth.

For every base (a small random instance: qk with an irrational scale
1/sqrt(d), logits, or an exact matrix) and every certificate kind with an eps
boundary, the boundary value is computed by the independent re-checker's code
(tools/recheck/recheck.py: exact rationals and mpmath interval arithmetic)
at 120 decimal digits:

  factor, row_interpolative  verified iff max_i sum_j |A_ij - B_ij| <= eps    boundary eps* = max row error
  neumann                    verified iff max_t delta_t < 1 - eps rho         boundary eps* = (1 - max delta) / rho
  trivial (softmax)          verified iff 1 > eps                             boundary eps* = 1
  trivial (matrix)           verified iff max_i sum_j |A_ij| > eps            boundary eps* = max row l1

Each mutant's eps = eps* (1 +- 10^-e), e in [8, 45], written with 90
significant digits (an exact decimal), so the truth is known from the side
(the interval of eps* is narrower than 10^-100 relative) and is asserted from
that interval.  The tail certificate's boundary needs a positive-definiteness
side condition and is not mutated here (its checks are covered by the tamper
tests).

A wrong verdict is a checker bug (a refutation of a true inequality or, worse,
a verification of a false one); undecided is allowed but counted.

  /usr/bin/python3 tools/mutation_campaign.py --bases 400 --out /tmp/mutants   # ~1.2e5 mutants
"""

import argparse
import json
import os
import random
import subprocess
import sys
import time
from fractions import Fraction

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "recheck"))
import recheck  # noqa: E402
from mpmath import iv, mp  # noqa: E402

DPS = 120


def dyadic(rng, bits=10, scale=4):
    """A random dyadic rational (exact in binary), as a string the checker reads exactly."""
    v = Fraction(rng.randint(-(1 << bits), 1 << bits), 1 << (bits - 2)) / scale
    return f"{v.numerator}/{v.denominator}" if v.denominator != 1 else str(v.numerator)


def frac(s):
    return Fraction(s)


def inline(rows, cols, vals):
    return {"shape": [rows, cols], "data": list(vals)}


class Arrays:
    """Inline arrays only (the campaign writes no sidecars)."""

    def load(self, j, where):
        r, c = j["shape"]
        return r, c, ["neg_inf" if x == "-inf" else Fraction(x) for x in j["data"]], False


def make_instance(rng, kind):
    n = N = rng.randint(3, 5)
    if kind == "qk":
        d = rng.randint(1, 3)
        return {"kind": "qk", "q": inline(n, d, [dyadic(rng) for _ in range(n * d)]),
                "k": inline(N, d, [dyadic(rng) for _ in range(N * d)]), "scale": {"rsqrt": rng.choice([2, 3, 5, 7])},
                "mask": rng.choice(["none", "causal"])}
    if kind == "logits":
        vals = [dyadic(rng) if (kind != "logits" or rng.random() > 0.15 or j == 0) else "-inf"
                for i in range(n) for j in range(N)]
        return {"kind": "logits", "logits": inline(n, N, vals)}
    return {"kind": "matrix", "a": inline(n, N, [dyadic(rng, scale=8) for _ in range(n * N)])}


def rows_of(inst):
    return [inst.row(i) for i in range(inst.n)]


def mid(x):
    """The midpoint of an interval as an mpf (the float side of the campaign: placing eps)."""
    lo, hi = recheck.ends(x)
    m = (lo + hi) / 2
    return mp.mpf(m.numerator) / m.denominator


def boundaries(rng, inst_json):
    """[(certificate, boundary interval, side)] where side = +1 when eps >= boundary verifies
    (factor-like) and -1 when eps < boundary verifies (neumann-like, trivial)."""
    inst = recheck.Instance(inst_json, Arrays())
    A = rows_of(inst)
    n, N = inst.n, inst.N
    out = []
    # factor: a random rank-k factor near A (float SVD-free: a random perturbation of A's first columns)
    k = rng.randint(1, min(2, n))
    U = [dyadic(rng, scale=2) for _ in range(n * k)]
    W = [dyadic(rng, scale=8) for _ in range(N * k)]
    Uf, Wf = [frac(x) for x in U], [frac(x) for x in W]
    errs = []
    for i in range(n):
        e = iv.mpf(0)
        for j in range(N):
            b = sum((Uf[i * k + t] * Wf[j * k + t] for t in range(k)), Fraction(0))
            e += abs(A[i][j] - recheck.ivq(b))
        errs.append(e)
    E = max(errs, key=lambda x: mid(x))
    out.append(({"bound": "upper", "kind": "factor", "rank": k, "u": inline(n, k, U), "w": inline(N, k, W)}, E, +1))
    # row interpolative: rows S, coefficients X
    S = rng.sample(range(n), k)
    X = [dyadic(rng, scale=2) for _ in range(n * k)]
    Xf = [frac(x) for x in X]
    errs = []
    for i in range(n):
        e = iv.mpf(0)
        for j in range(N):
            b = sum((recheck.ivq(Xf[i * k + t]) * A[S[t]][j] for t in range(k)), iv.mpf(0))
            e += abs(A[i][j] - b)
        errs.append(e)
    E = max(errs, key=lambda x: mid(x))
    out.append(({"bound": "upper", "kind": "row_interpolative", "rows": S, "x": inline(n, k, X)}, E, +1))
    # neumann: rows I, R = a dyadic rounding of a float right inverse of A_I on m columns
    m = rng.randint(1, min(3, n))
    I = sorted(rng.sample(range(n), m))
    cols = sorted(rng.sample(range(N), m))
    import numpy as np  # float side only: finding R; the boundary below is interval arithmetic
    AI = np.array([[float(mid(A[i][j])) for j in cols] for i in I])
    try:
        inv = np.linalg.inv(AI)
    except np.linalg.LinAlgError:
        inv = np.eye(m)
    Rf = [[Fraction(0)] * m for _ in range(N)]
    for a, j in enumerate(cols):
        for u in range(m):
            Rf[j][u] = Fraction(round(float(inv[a, u]) * 4096), 4096)
    rho = max(sum(abs(x) for x in row) for row in Rf)
    if rho > 0:
        deltas = []
        for t, i in enumerate(I):
            v = [sum((A[i][j] * recheck.ivq(Rf[j][u]) for j in range(N) if Rf[j][u] != 0), iv.mpf(0)) for u in range(m)]
            v[t] -= 1
            deltas.append(sum((abs(x) for x in v), iv.mpf(0)))
        D = max(deltas, key=lambda x: mid(x))
        if float(mid(D)) < 0.99:
            B = (1 - D) / recheck.ivq(rho)
            R = [f"{Rf[j][u].numerator}/{Rf[j][u].denominator}" for j in range(N) for u in range(m)]
            out.append(({"bound": "lower", "kind": "neumann", "rank": m, "rows": I, "r": inline(N, m, R)}, B, -1))
    # trivial
    if inst.softmax():
        out.append(({"bound": "lower", "kind": "trivial", "rank": 1}, iv.mpf(1), -1))
    else:
        T = max((sum((abs(x) for x in row), iv.mpf(0)) for row in A), key=lambda x: mid(x))
        if float(mid(T)) > 0:
            out.append(({"bound": "lower", "kind": "trivial", "rank": 1}, T, -1))
    return out


def decimal(x, digits=90):
    return mp.nstr(x, digits, min_fixed=-1, max_fixed=-1, strip_zeros=False).replace("e", "E").replace("E+", "E")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bases", type=int, default=400, help="random base instances (each gives ~4 kinds x 76 mutants)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="/tmp/rankcert-mutants")
    ap.add_argument("--exe", default=os.environ.get("RANKCERT", os.path.join(ROOT, "build", "rankcert")))
    ap.add_argument("--batch", type=int, default=4000, help="bundles per rankcert verify run")
    ap.add_argument("--report", help="write the counts as JSON here")
    ap.add_argument("--recheck", help="also decide every mutant with this rankcert-recheck (the second checker) "
                    "from rankcert's witnesses, and count its verdicts against the truth alike")
    a = ap.parse_args()
    iv.dps = mp.dps = DPS
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    truth, batch, counts = {}, [], {}
    right = wrong = undecided = 0
    wrong_list = []
    second = {"right": 0, "wrong": 0, "undecided": 0}

    def flush():
        nonlocal right, wrong, undecided
        if not batch:
            return
        d = os.path.join(a.out, f"batch{len(os.listdir(a.out)):05d}")
        os.makedirs(d)
        for name, doc in batch:
            with open(os.path.join(d, name), "w") as f:
                json.dump(doc, f)
        wdir = d + ".witness"
        p = subprocess.run([a.exe, "verify", d, "--json", "--quiet"] + (["--witness", wdir] if a.recheck else []),
                           capture_output=True, text=True)
        res = json.loads(p.stdout)
        if a.recheck:
            # The second checker's own verdict on each mutant's one certificate.
            q = subprocess.run([a.recheck, "--witness-dir", wdir, "--json", d], capture_output=True, text=True)
            for line in q.stdout.splitlines():
                r = json.loads(line)
                name = os.path.basename(r["bundle"])
                want = truth[name][0]
                certs = r.get("certificates", [])
                got = certs[0].split("re-check ")[1].split()[0] if certs and "re-check " in certs[0] else "error"
                if r["verdict"] not in ("agree", "undecided"):
                    got = "error"
                key = "right" if got == want else "undecided" if got == "undecided" else "wrong"
                second[key] += 1
                if key == "wrong":
                    wrong_list.append((os.path.join(d, name), want, "rankcert-recheck: " + got + " " + " ".join(certs)))
            subprocess.run(["rm", "-rf", wdir])
        for b in res["bundles"]:
            name = os.path.basename(b.get("bundle", ""))
            want, kind = truth.pop(name)
            got = b.get("verdict", "error")
            c = counts.setdefault(kind, {"right": 0, "wrong": 0, "undecided": 0})
            if got == want:
                right += 1
                c["right"] += 1
            elif got == "undecided":
                undecided += 1
                c["undecided"] += 1
            else:
                wrong += 1
                c["wrong"] += 1
                wrong_list.append((os.path.join(d, name), want, got))
        if truth:
            raise SystemExit(f"rankcert verify did not report {len(truth)} bundles of {d}: {p.stderr.strip()[:200]}")
        for name, _ in batch:
            os.remove(os.path.join(d, name))
        batch.clear()
        print(f"[{time.time() - t0:.0f}s] {right + wrong + undecided} mutants: {right} right, {wrong} wrong, {undecided} undecided",
              file=sys.stderr)

    for b in range(a.bases):
        kind = ("qk", "logits", "matrix")[b % 3]
        inst = make_instance(rng, kind)
        for cert, B, side in boundaries(rng, inst):
            for e in range(8, 46):
                for sign in (+1, -1):
                    eps = mid(B) * (1 + sign * mp.mpf(10) ** (-e))
                    eps_text = decimal(eps)
                    ef = Fraction(eps_text)
                    lo, hi = recheck.ends(B)
                    if lo <= ef <= hi:
                        raise SystemExit("boundary interval too wide for the perturbation (raise DPS)")
                    if side > 0:   # verified iff eps >= boundary
                        want = "verified" if ef > hi else "refuted"
                    else:          # verified iff eps < boundary
                        want = "verified" if ef < lo else "refuted"
                    if ef < 0:
                        continue
                    name = f"b{b}-{cert['kind']}-e{e}{'p' if sign > 0 else 'm'}.json"
                    label = f"{cert['kind']}/{kind}"
                    truth[name] = (want, label)
                    batch.append((name, {"format": "rankcert/1", "instance": inst, "eps": eps_text, "certificates": [cert]}))
                    if len(batch) >= a.batch:
                        flush()
    flush()
    total = right + wrong + undecided
    print(f"{total} boundary mutants: {right} decided right, {wrong} wrong, {undecided} undecided; {time.time() - t0:.0f} s")
    if a.recheck:
        print(f"{sum(second.values())} boundary mutants by rankcert-recheck: {second['right']} decided right, "
              f"{second['wrong']} wrong, {second['undecided']} undecided")
    for k in sorted(counts):
        print(f"  {k:32s} {counts[k]}")
    for w in wrong_list[:20]:
        print("WRONG", *w)
    if a.report:
        with open(a.report, "w") as f:
            json.dump({"mutants": total, "right": right, "wrong": wrong, "undecided": undecided, "by_kind": counts,
                       "seed": a.seed, "bases": a.bases, "seconds": time.time() - t0}, f, indent=1)
    return 1 if wrong or second["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
