#!/usr/bin/python3
"""Where an open bracket's gap is: the exact Neumann LP beside the factor search.

For every open bracket (L < U) among the bundles given, this measures, in
floating point (scipy's HiGHS; untrusted, like the producer; nothing here
is a certificate):

* value(I) = 1 / rho*(I) for the certificate's L rows I, rho*(I) the least
  max-row-l1 norm of an exact right inverse R (A_I R = I_m) over all keys
  (the LP in docs/producer.md); the neumann certificate needs value > eps;
* the best value over single-row adds I + c (the outsiders ranked by the
  bordered right inverse, the best `--adds` valued by the LP): above eps
  means the row search stopped short, at or below eps that no single row
  extends I (the search's local ceiling);
* the factor search's closest miss at rank U - 1, as `rankcert bracket --log`
  reported it (`--csv` of bench/fresh_bench.py, column log), when given.

usage: /usr/bin/python3 tools/gap_table.py BUNDLE.json... [--csv FRESH.csv] [--adds 8] [--markdown FILE]
Needs python3-numpy and python3-scipy (Debian).  One LP at 100 keys and
40 rows takes about a second.
"""
import argparse
import csv
import json
import os
import re
import statistics
import sys
from fractions import Fraction

import numpy as np

try:
    from scipy import sparse
    from scipy.optimize import linprog
except ImportError:
    raise SystemExit("tools/gap_table.py: needs Debian's python3-scipy (apt-get install python3-scipy)")


def number(x, field):
    if isinstance(x, dict) and "rsqrt" in x:
        return 1.0 / np.sqrt(float(x["rsqrt"]))
    if isinstance(x, (int, float)):
        return float(x)
    if isinstance(x, str):
        return float(Fraction(x))
    raise SystemExit(f"tools/gap_table.py: {field}: unsupported number {x!r}")


def attention(bundle):
    """The float attention matrix of a bundle's instance (qk, logits or matrix)."""
    inst = bundle["instance"]
    base = bundle["_dir"]
    def load(f):
        try:
            return np.load(os.path.join(base, inst[f]["npy"])).astype(np.float64)
        except (KeyError, TypeError, OSError, ValueError) as e:
            raise SystemExit(f"tools/gap_table.py: {bundle['_path']}: instance.{f}: {e}")
    kind = inst.get("kind")
    if kind == "matrix":
        return load("matrix")
    if kind == "logits":
        S = load("logits")
    elif kind == "qk":
        q, k = load("q"), load("k")
        S = number(inst["scale"], "scale") * (q @ k.T)
        if "temperature" in inst:
            S *= number(inst["temperature"], "temperature")
        if "key_bias" in inst:
            S += load("key_bias")[None, :]
        mask = inst.get("mask", "none")
        n, N = S.shape
        if mask == "causal":
            S[np.arange(N)[None, :] > np.arange(n)[:, None] + (N - n)] = -np.inf
        elif mask != "none":
            S[~load("mask").astype(bool)] = -np.inf
    else:
        raise SystemExit(f"tools/gap_table.py: instance kind {kind!r} not handled")
    S = S - S.max(axis=1, keepdims=True)
    E = np.exp(S)
    return E / E.sum(axis=1, keepdims=True)


def value(A, I):
    """1 / rho*(I): rho* = min ||R||_inf subject to A_I R = I (HiGHS)."""
    AI = A[list(I)]
    m, N = AI.shape
    nv = 2 * N * m + 1  # R+ and R- (index j*m + u), then t
    r, c, v = [], [], []
    for t in range(m):
        nz = np.nonzero(AI[t])[0]
        for u in range(m):
            row = t * m + u
            r += [row] * (2 * len(nz))
            c += list(nz * m + u) + list(N * m + nz * m + u)
            v += list(AI[t, nz]) + list(-AI[t, nz])
    Aeq = sparse.csr_matrix((v, (r, c)), shape=(m * m, nv))
    j = np.repeat(np.arange(N), m)
    cols = np.arange(N * m)
    Aub = sparse.csr_matrix(
        (np.concatenate([np.ones(2 * N * m), -np.ones(N)]),
         (np.concatenate([j, j, np.arange(N)]), np.concatenate([cols, N * m + cols, np.full(N, nv - 1)]))),
        shape=(N, nv))
    cost = np.zeros(nv)
    cost[-1] = 1
    res = linprog(cost, A_ub=Aub, b_ub=np.zeros(N), A_eq=Aeq, b_eq=np.eye(m).ravel(), bounds=(0, None), method="highs-ipm")
    return 1.0 / res.fun if res.status == 0 and res.fun > 0 else 0.0


def bordered_scores(A, I):
    """1 / ||R'||_inf for every outsider c, R' the least-norm right inverse of
    A_I bordered by row c (docs/producer.md): a cheap ranking of the adds."""
    AI = A[list(I)]
    R = np.linalg.pinv(AI)
    Q, _ = np.linalg.qr(AI.T)
    out = []
    for c in range(A.shape[0]):
        if c in I:
            continue
        a = A[c]
        r = a - Q @ (Q.T @ a)
        den = a @ r
        if den <= 1e-12:
            continue
        x = r / den
        R2 = np.hstack([R - np.outer(x, a @ R), x[:, None]])
        out.append((1.0 / np.abs(R2).sum(axis=1).max(), c))
    return sorted(out, reverse=True)


def closest_miss(log):
    m = re.search(r"closest factor at rank (\d+): worst row error ([0-9.]+) x eps", log or "")
    return (int(m.group(1)), float(m.group(2))) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bundles", nargs="+")
    ap.add_argument("--csv", help="bench/fresh_bench.py --csv output (for the factor search's closest miss)")
    ap.add_argument("--adds", type=int, default=8, help="single-row adds valued by the LP per bracket")
    ap.add_argument("--markdown")
    args = ap.parse_args()
    logs = {}
    if args.csv:
        for row in csv.DictReader(open(args.csv)):
            logs[(row["head"], row["eps"])] = row["log"]
    lines = ["| bundle | eps | bracket | value(L rows) | best add (L+1) | factor at U-1 |",
             "|---|---:|---|---:|---:|---:|"]
    ratios = []
    for path in args.bundles:
        try:
            b = json.load(open(path))
        except (OSError, ValueError) as e:
            raise SystemExit(f"tools/gap_table.py: {path}: {e}")
        if not isinstance(b, dict) or "claim" not in b or "certificates" not in b or not isinstance(b.get("instance"), dict):
            raise SystemExit(f"tools/gap_table.py: {path}: not a rankcert bundle (no claim, certificates or instance)")
        b["_dir"] = os.path.dirname(os.path.abspath(path))
        b["_path"] = path
        try:
            L, U = int(b["claim"]["lower"]), int(b["claim"]["upper"])
            eps = float(Fraction(str(b["eps"])))
            neu = [c for c in b["certificates"]
                   if c.get("bound") == "lower" and c.get("kind") == "neumann" and c.get("rank") == L]
        except (KeyError, TypeError, ValueError, ZeroDivisionError, AttributeError) as e:
            raise SystemExit(f"tools/gap_table.py: {path}: claim, eps or certificates: {e}")
        if L >= U:
            continue
        name = os.path.basename(path)[:-5]
        head = re.sub(r"-eps[0-9.]+$", "", name)
        miss = closest_miss(logs.get((head, b["eps"])))
        miss_s = f"{miss[1]:.3f} x eps (rank {miss[0]})" if miss else "-"
        if not neu:
            lines.append(f"| {name} | {b['eps']} | [{L}, {U}] | (not neumann) | - | {miss_s} |")
            continue
        A = attention(b)
        I = neu[0].get("rows")
        if (not isinstance(I, list) or len(set(I)) != len(I)
                or not all(isinstance(i, int) and 0 <= i < A.shape[0] for i in I)):
            raise SystemExit(f"tools/gap_table.py: {path}: certificates[neumann].rows: not distinct rows below {A.shape[0]}")
        v0 = value(A, I)
        best = max(((value(A, I + [c]), c) for _, c in bordered_scores(A, I)[: args.adds]), default=(0.0, None))
        lines.append(f"| {name} | {b['eps']} | [{L}, {U}] | {v0 / eps:.3f} x eps | {best[0] / eps:.3f} x eps (row {best[1]}) | {miss_s} |")
        ratios.append(best[0] / eps)
        print(lines[-1], file=sys.stderr, flush=True)
    if ratios:
        lines.append("")
        lines.append(f"{len(ratios)} open neumann brackets: best add above eps on {sum(r > 1 for r in ratios)} "
                     f"(the search stopped short), median best add {statistics.median(ratios):.3f} x eps.")
    text = "\n".join(lines) + "\n"
    if args.markdown:
        open(args.markdown, "w").write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
