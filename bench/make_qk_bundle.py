#!/usr/bin/python3
"""Write a synthetic `qk` benchmark bundle: n = N, d, and a rank-k factor.

Q and K are Gaussian float32 matrices (sidecar .npy), scale 1/sqrt(d); the
factor is the truncated SVD of the float softmax, rounded to float64
(sidecars).  eps is the float row error of that factor rounded up to two
significant digits (plus a margin), so the bundle is expected to verify.

usage: /usr/bin/python3 bench/make_qk_bundle.py OUT_DIR [--n 512] [--d 64] [--k 64] [--seed 1]
Needs Debian's python3-numpy.  Untrusted helper: its output goes through
`rankcert verify` like every other bundle.
"""
import argparse
import hashlib
import json
import math
import os

import numpy as np


def save(folder, name, arr, dtype):
    path = os.path.join(folder, name)
    np.save(path, np.ascontiguousarray(arr, dtype=dtype))
    with open(path, "rb") as f:
        return {"npy": name, "sha256": hashlib.sha256(f.read()).hexdigest()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--k", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--temperature", type=float, default=1.0)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    Q = rng.standard_normal((a.n, a.d)).astype(np.float32)
    K = rng.standard_normal((a.n, a.d)).astype(np.float32)
    S = a.temperature * (Q.astype(np.float64) @ K.astype(np.float64).T) / math.sqrt(a.d)
    S -= S.max(axis=1, keepdims=True)
    A = np.exp(S)
    A /= A.sum(axis=1, keepdims=True)
    U, s, Vt = np.linalg.svd(A)
    Uk, Wk = U[:, :a.k] * s[:a.k], Vt[:a.k].T
    err = np.abs(A - Uk @ Wk.T).sum(axis=1).max()
    e = err * 1.01 + 1e-12
    digits = -int(math.floor(math.log10(e))) + 1
    eps = math.ceil(e * 10**digits) / 10**digits
    stem = f"qk-n{a.n}-d{a.d}-k{a.k}"
    doc = {
        "format": "rankcert/1",
        "instance": {"kind": "qk", "q": save(a.out, stem + ".q.npy", Q, np.float32),
                     "k": save(a.out, stem + ".k.npy", K, np.float32),
                     "scale": {"rsqrt": a.d}, "temperature": repr(a.temperature)},
        "eps": repr(eps),
        "claim": {"upper": a.k},
        "certificates": [{"bound": "upper", "kind": "factor", "rank": a.k,
                          "u": save(a.out, stem + ".u.npy", Uk, np.float64),
                          "w": save(a.out, stem + ".w.npy", Wk, np.float64)}],
        "provenance": {"producer": "bench/make_qk_bundle.py", "seed": a.seed, "float_row_error": float(err)},
    }
    path = os.path.join(a.out, stem + ".json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(path)


if __name__ == "__main__":
    main()
