#!/usr/bin/python3
"""Scale benchmark for `rankcert bracket` (issue: real-size heads).

For n = 256, 512, 1024, 2048, 4096 tokens: stories260K heads where n <= 512
(layer 0 and layer 3, head 0, over the first n tokens of
certificates/real/texts/full512.txt), synthetic causal heads beyond (Gaussian
queries and keys in dimension 64 with a logit spread like a trained head's:
logit standard deviation about 2.5 after the 1/sqrt(d) scale, float32).
Each instance is bracketed at eps 0.05, 0.1, 0.2 with the default time
budget; the table gives the wall time, the peak memory, and the certified
[L, U] per eps.  With --reference PROG (a `rankcert` built from an older
commit), the same instances are run with that program too, each with a
wall-clock limit (--reference-limit, default 600 s; the first instance of
each size only), and reported where they finish.  Every bundle written is re-verified by `rankcert verify`.

usage: /usr/bin/python3 bench/scale_bench.py [--sizes 256,512,1024,2048,4096]
          [--reference /tmp/build-old/rankcert] [--markdown FILE]
Needs build/rankcert (./build.sh build) and python3-numpy.  Not a test.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RANKCERT = os.path.join(ROOT, "build", "rankcert")
EPS = "0.05,0.1,0.2"


def stories_instances(n, work):
    """The layer-0 and layer-3 head-0 instances of stories260K over n tokens."""
    text = open(os.path.join(ROOT, "certificates", "real", "texts", "full512.txt")).read()
    folder = os.path.join(work, f"stories{n}")
    # Cut the text to at most n tokens (BOS included): shorten by characters.
    cut = len(text)
    while True:
        with open(os.path.join(work, "text.txt"), "w") as f:
            f.write(text[:cut])
        subprocess.run(["rm", "-rf", folder])
        p = subprocess.run([RANKCERT, "extract", "--checkpoint", os.path.join(ROOT, "data", "stories260K", "stories260K.bin"),
                            "--tokenizer", os.path.join(ROOT, "data", "stories260K", "tok512.bin"), "--text-file",
                            os.path.join(work, "text.txt"), "--out", folder, "--name", "s"], capture_output=True, text=True)
        tokens = int(re.search(r"(\d+) tokens", p.stdout + p.stderr).group(1)) if p.returncode == 0 else 10**9
        if tokens <= n:
            break
        cut -= max(1, (tokens - n) * 2)
    return [(f"stories260K L{l}H0 ({tokens} tok)", ["--instance", os.path.join(folder, f"s-L{l}-H0.json")]) for l in (0, 3)]


def synthetic_instance(n, work, seed=0):
    rng = np.random.default_rng(seed)
    d = 64
    # Logit std = spread: <q,k>/sqrt(d) with q, k ~ N(0, s^2) has std s^2.
    s = np.sqrt(2.5)
    q = (rng.standard_normal((n, d)) * s).astype(np.float32)
    k = (rng.standard_normal((n, d)) * s).astype(np.float32)
    # A positional component: nearby tokens align (as RoPE heads do).
    pos = np.arange(n)[:, None] / 64.0
    q[:, :2] += np.hstack([np.cos(pos), np.sin(pos)]).astype(np.float32) * 2
    k[:, :2] += np.hstack([np.cos(pos), np.sin(pos)]).astype(np.float32) * 2
    folder = os.path.join(work, f"synthetic{n}")
    os.makedirs(folder, exist_ok=True)
    np.save(os.path.join(folder, "q.npy"), q)
    np.save(os.path.join(folder, "k.npy"), k)
    return [(f"synthetic causal d=64", ["--q", os.path.join(folder, "q.npy"), "--k", os.path.join(folder, "k.npy"),
                                        "--scale", "rsqrt:64", "--mask", "causal"])]


def run(prog, args, out, limit):
    cmd = ["/usr/bin/time", "-f", "%e %M", prog, "bracket", *args, "--eps", EPS, "--out", out, "--json", "-q"]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return {"finished": False, "seconds": time.time() - t0}
    last = p.stderr.strip().splitlines()[-1].split()
    try:
        results = json.loads(p.stdout)["results"]
    except ValueError:
        return {"finished": False, "seconds": time.time() - t0, "error": p.stderr[-300:]}
    ok = subprocess.run([RANKCERT, "verify", "--quiet", out], capture_output=True).returncode == 0
    return {"finished": True, "seconds": float(last[0]), "mib": int(last[1]) / 1024, "verified": ok,
            "brackets": {r["eps"]: (r["lower"], r["upper"]) for r in results}}


def fmt(r):
    if not r:
        return "-", "-", "-"
    if not r["finished"]:
        return f"not finished in {r['seconds']:.0f} s", "-", "-"
    br = " ".join(f"[{l},{u}]" for l, u in r["brackets"].values())
    ratio = max(u / max(l, 1) for l, u in r["brackets"].values())
    return f"{r['seconds']:.0f} s, {r['mib']:.0f} MiB" + ("" if r["verified"] else " (NOT VERIFIED)"), br, f"{ratio:.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="256,512,1024,2048,4096")
    ap.add_argument("--reference", help="an older rankcert to compare with")
    ap.add_argument("--reference-limit", type=float, default=600)
    ap.add_argument("--reference-max-n", type=int, default=512)
    ap.add_argument("--markdown")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for n in map(int, args.sizes.split(",")):
            insts = stories_instances(n, work) if n <= 512 else synthetic_instance(n, work)
            for idx, (name, iargs) in enumerate(insts):
                new = run(RANKCERT, iargs, os.path.join(work, f"new-{n}-{len(rows)}"), None)
                ref = None
                if args.reference and n <= args.reference_max_n and idx == 0:
                    ref = run(args.reference, iargs, os.path.join(work, f"ref-{n}-{len(rows)}"), args.reference_limit)
                rows.append((n, name, new, ref))
                print(n, name, fmt(new), fmt(ref), flush=True)
    lines = ["| n | instance | time, peak memory | [L,U] at eps 0.05 0.1 0.2 | worst U/L | reference: time | reference [L,U] | reference worst U/L |",
             "|---:|---|---|---|---:|---|---|---:|"]
    for n, name, new, ref in rows:
        a, b, c = fmt(new)
        d, e, f = fmt(ref)
        lines.append(f"| {n} | {name} | {a} | {b} | {c} | {d} | {e} | {f} |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
