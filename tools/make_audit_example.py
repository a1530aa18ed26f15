#!/usr/bin/env python3
"""Write certificates/audit-example/claims.csv: rank claims about the 40
stories260K heads over certificates/real/texts/long.txt, made the way papers
make them, from a float64 truncated SVD of each attention matrix:

  frobenius  "= k"   k = least rank with ||A - A_k||_F  <= eps   ("the head needs rank k")
  spectral   "<= k"  k = least rank with sigma_{k+1}    <= eps   ("rank k suffices")
  svd-l1     "<= k"  k = least rank whose truncated SVD has every row's l1 error <= eps

The claims name the model, layer, head and text (rankcert audit runs the
forward pass itself).  Untrusted: these are the claims under audit, not
results.  Needs python3-numpy; run /usr/bin/python3 tools/make_audit_example.py.
"""

import csv
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
OUT = os.path.join(ROOT, "certificates", "audit-example")
EPS = [0.1]


def attention(q, k, hs):
    s = (q.astype(np.float64) @ k.astype(np.float64).T) / np.sqrt(hs)
    n = s.shape[0]
    s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main():
    exe = os.environ.get("RANKCERT", os.path.join(ROOT, "build", "rankcert"))
    rows = []
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([exe, "extract", "--checkpoint", os.path.join(ROOT, "data/stories260K/stories260K.bin"),
                        "--tokenizer", os.path.join(ROOT, "data/stories260K/tok512.bin"),
                        "--text-file", os.path.join(ROOT, "certificates/real/texts/long.txt"), "--out", d, "--name", "long"],
                       check=True, stdout=subprocess.DEVNULL)
        for layer in range(5):
            for head in range(8):
                with open(os.path.join(d, f"long-L{layer}-H{head}.json")) as f:
                    inst = json.load(f)["instance"]
                q = np.load(os.path.join(d, inst["q"]["npy"]))
                k = np.load(os.path.join(d, inst["k"]["npy"]))
                A = attention(q, k, q.shape[1])
                U, s, Vt = np.linalg.svd(A)
                for eps in EPS:
                    tail_f = np.sqrt(np.concatenate([np.cumsum((s ** 2)[::-1])[::-1], [0.0]]))  # tail_f[k] = ||A - A_k||_F
                    k_f = int(np.argmax(tail_f <= eps))
                    k_2 = int(np.argmax(np.concatenate([s, [0.0]]) <= eps))
                    k_1 = A.shape[0]
                    for r in range(A.shape[0] + 1):
                        Ar = (U[:, :r] * s[:r]) @ Vt[:r]
                        if np.abs(A - Ar).sum(axis=1).max() <= eps:
                            k_1 = r
                            break
                    common = {"model": "stories260K", "layer": layer, "head": head, "text": "long.txt", "eps": eps,
                              "checkpoint": "../../data/stories260K/stories260K.bin",
                              "tokenizer": "../../data/stories260K/tok512.bin", "text_file": "../real/texts/long.txt"}
                    for kind, claim in (("frobenius", f"= {k_f}"), ("spectral", f"<= {k_2}"), ("svd-l1", f"<= {k_1}")):
                        rows.append(dict(common, id=f"L{layer}H{head}-{kind}", claim=claim,
                                         note=f"float64 truncated SVD, {kind} threshold"))
    fields = ["id", "model", "layer", "head", "text", "eps", "claim", "note", "checkpoint", "tokenizer", "text_file"]
    with open(os.path.join(OUT, "claims.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow(r)
    print(f"wrote {len(rows)} claims to {os.path.relpath(os.path.join(OUT, 'claims.csv'), ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
