#!/usr/bin/python3
"""Benchmark corpus for `rankcert bracket`: how often brackets close.

Builds instances that look like real heads -- near-permutation (previous
token), attention sink, local banded, diffuse, random Gaussian Q/K at
temperatures 0.5/1/2/4 -- at several sizes, plus the real BERT-Tiny layer-0
heads (both heads, all four inputs, exact Q = X Wq + bq, K = X Wk + bk, scale
1/8), runs `rankcert bracket` on each at eps 0.05, 0.1, 0.2, re-verifies every
bundle with `rankcert verify`, and prints per class and overall: the fraction
of closed brackets, median and worst U/L, and the time per instance.

usage: /usr/bin/python3 bench/bracket_bench.py [--sizes 64,256] [--out DIR] [--markdown FILE]
Needs build/rankcert and build/rankcert-bracket (./build.sh build) and
Debian's python3-numpy.  Not part of the unit tests.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from fractions import Fraction

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RANKCERT = os.path.join(ROOT, "build", "rankcert")
EPS = "0.05,0.1,0.2"


def save(path, arr, dtype=np.float64):
    np.save(path, np.ascontiguousarray(arr, dtype=dtype))
    return path


def synthetic(out, sizes):
    """Yield (class, name, rankcert-bracket arguments)."""
    rng = np.random.default_rng(7)
    for n in sizes:
        i = np.arange(n)[:, None]
        j = np.arange(n)[None, :]
        # previous-token head: a sharp entry at j = i - 1 (j = 0 for i = 0), causal.
        S = 0.3 * rng.standard_normal((n, n))
        S[np.arange(n), np.maximum(np.arange(n) - 1, 0)] += 8.0
        S[j > i] = -np.inf
        yield "previous-token", f"prev-n{n}", ["--logits", save(f"{out}/prev-n{n}.npy", S)]
        # attention sink: key 0 takes most of the mass, the rest diffuse.
        S = 0.5 * rng.standard_normal((n, n))
        S[:, 0] += 4.0
        yield "sink", f"sink-n{n}", ["--logits", save(f"{out}/sink-n{n}.npy", S)]
        # local banded: a Gaussian window of width 2 around the diagonal.
        S = -((i - j) ** 2) / (2 * 2.0**2) + 0.1 * rng.standard_normal((n, n))
        yield "banded", f"band-n{n}", ["--logits", save(f"{out}/band-n{n}.npy", S)]
        # diffuse: small logits, nearly uniform rows.
        S = 0.2 * rng.standard_normal((n, n))
        yield "diffuse", f"diffuse-n{n}", ["--logits", save(f"{out}/diffuse-n{n}.npy", S)]
        # random Gaussian Q/K (d = 16, scale 1/sqrt(16)) at several temperatures.
        Q = rng.standard_normal((n, 16)).astype(np.float32)
        K = rng.standard_normal((n, 16)).astype(np.float32)
        q = save(f"{out}/gauss-n{n}.q.npy", Q, np.float32)
        k = save(f"{out}/gauss-n{n}.k.npy", K, np.float32)
        for t in ("0.5", "1", "2", "4"):
            yield f"gaussian-t{t}", f"gauss-n{n}", ["--q", q, "--k", k, "--scale", "rsqrt:16", "--temperature", t]


def exact_dense(M):
    flat = []
    for v in M.reshape(-1):
        v = Fraction(v)
        flat.append(str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}")
    return {"shape": list(M.shape), "data": flat}


def bert(out):
    src = os.path.join(ROOT, "data", "berttiny-sst2")
    Wq, Wk = np.load(f"{src}/layer0_wq.npy"), np.load(f"{src}/layer0_wk.npy")
    bq, bk = np.load(f"{src}/layer0_bq.npy"), np.load(f"{src}/layer0_bk.npy")
    F = np.vectorize(Fraction)
    Wqf, Wkf, bqf, bkf = F(Wq.astype(object)), F(Wk.astype(object)), F(bq.astype(object)), F(bk.astype(object))
    for text in ("nuovo", "unflinchingly", "seq17", "seq12"):
        X = F(np.load(f"{src}/embeddings_{text}.npy").astype(object))
        for h in (0, 1):
            c = slice(64 * h, 64 * h + 64)
            inst = {"kind": "qk", "q": exact_dense(X.dot(Wqf[:, c]) + bqf[c]),
                    "k": exact_dense(X.dot(Wkf[:, c]) + bkf[c]), "scale": "1/8", "mask": "none"}
            path = f"{out}/bert-{text}-h{h}.json"
            with open(path, "w") as f:
                json.dump(inst, f)
            yield "bert-tiny", f"bert-{text}-h{h}", ["--instance", path]


def run(cls, name, args, out):
    cmd = [RANKCERT, "bracket", *args, "--eps", EPS, "--out", os.path.join(out, "bundles"), "--name", name, "--json", "-q"]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.time() - t0
    if p.returncode not in (0, 1, 2):
        print(f"{name}: rankcert bracket failed: {p.stderr.strip()}", file=sys.stderr)
        return []
    rows = json.loads(p.stdout)["results"]
    for r in rows:
        r["class"], r["name"], r["instance_seconds"] = cls, name, dt
        v = subprocess.run([RANKCERT, "verify", "--quiet", r["bundle"]], capture_output=True, text=True)
        r["reverified"] = v.returncode == 0
    return rows


def ratio(r):
    return r["upper"] / max(r["lower"], 1)


def summarise(rows):
    lines = ["| class | cells | closed | closed at eps 0.1 | median U/L | worst U/L | median s / instance |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    classes = sorted({r["class"] for r in rows})
    for cls in classes + ["all"]:
        sel = [r for r in rows if cls == "all" or r["class"] == cls]
        at01 = [r for r in sel if r["eps"] == "0.1"]
        per_inst = {}
        for r in sel:
            per_inst[(r["name"], r["class"])] = r["instance_seconds"]
        lines.append("| {} | {} | {:.0%} | {:.0%} | {:.2f} | {:.2f} | {:.1f} |".format(
            cls, len(sel), sum(r["closed"] for r in sel) / len(sel), sum(r["closed"] for r in at01) / max(1, len(at01)),
            statistics.median(ratio(r) for r in sel), max(ratio(r) for r in sel), statistics.median(per_inst.values())))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="64,256")
    ap.add_argument("--out", default=None)
    ap.add_argument("--markdown", default=None, help="also write the tables to this file")
    ap.add_argument("--no-bert", action="store_true")
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="rankcert-bench-")
    os.makedirs(os.path.join(out, "bundles"), exist_ok=True)
    sizes = [int(s) for s in a.sizes.split(",")]
    instances = list(synthetic(out, sizes)) + ([] if a.no_bert else list(bert(out)))
    rows = []
    for idx, (cls, name, args) in enumerate(instances):
        print(f"[{idx + 1}/{len(instances)}] {cls} {name}", file=sys.stderr, flush=True)
        rows += run(cls, name, args, out)
    detail = ["| instance | class | eps | L | U | closed | lower by | upper by | SVD rank | reverified |",
              "|---|---|---:|---:|---:|---|---|---|---:|---|"]
    for r in rows:
        detail.append(f"| {r['name']} | {r['class']} | {r['eps']} | {r['lower']} | {r['upper']} | "
                      f"{'yes' if r['closed'] else 'no'} | {r['lower_kind']} | {r['upper_kind']} | {int(r['svd_rank'])} | "
                      f"{'yes' if r['reverified'] else 'NO'} |")
    text = summarise(rows) + "\n\n" + "\n".join(detail) + "\n"
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text)
    bad = [r for r in rows if not r["reverified"] or r["verdict"] != "verified"]
    if bad:
        print(f"{len(bad)} bundles did not verify", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
