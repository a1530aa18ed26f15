#!/usr/bin/python3
"""Write a synthetic `qk` benchmark bundle with a factor or a Neumann certificate.

factor (default): Q and K are Gaussian float32 matrices (sidecar .npy), scale
1/sqrt(d), temperature 0.25 by default; the certificate is a rank-k truncated
SVD of the float softmax (randomised for n > 1024), rounded to float64
sidecars.  eps is the float worst row error of that factor times 1.01, rounded
up to two significant digits: a meaningful threshold (the zero matrix has row
error 1), so that the check decides something.

neumann: self-attention (K = Q, Gaussian, d = 64, temperature 1), whose
diagonal dominates; R = the float inverse of A (dense, n x n), rho = ||R||_inf,
eps = 0.9 (1 - delta) / rho with delta the float Neumann residual.

tail: the same heads; rows I = all, R = I_N (so M = A), k = n/4, F = the top
k eigenvectors of A A^T scaled by the square roots of their eigenvalues, mu =
lambda_{k+1} (1 + 1e-6) + 1e-12, eps = sqrt(0.9 (sum_{t>k} lambda_t - k mu) / n).

usage: /usr/bin/python3 bench/make_qk_bundle.py OUT_DIR [--kind factor|neumann]
           [--n 512] [--d 64] [--k 64] [--seed 1] [--temperature T]
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


def softmax_rows(S):
    S = S - S.max(axis=1, keepdims=True)
    A = np.exp(S)
    return A / A.sum(axis=1, keepdims=True)


def truncated_svd(A, k, rng):
    if A.shape[0] <= 1024:
        U, s, Vt = np.linalg.svd(A)
        return U[:, :k] * s[:k], Vt[:k].T
    # Randomised range finder with two power iterations (Halko, Martinsson, Tropp).
    Y = A @ rng.standard_normal((A.shape[1], k + 16))
    for _ in range(2):
        Y, _ = np.linalg.qr(Y)
        Y = A @ (A.T @ Y)
    Qb, _ = np.linalg.qr(Y)
    Ub, s, Vt = np.linalg.svd(Qb.T @ A, full_matrices=False)
    return (Qb @ Ub[:, :k]) * s[:k], Vt[:k].T


def round_up(e):
    digits = -int(math.floor(math.log10(e))) + 1
    return math.ceil(e * 10**digits) / 10**digits


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--kind", choices=["factor", "neumann", "tail"], default="factor")
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--k", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--temperature", type=float, default=None)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    temp = a.temperature if a.temperature is not None else (0.25 if a.kind == "factor" else 1.0)
    Q = rng.standard_normal((a.n, a.d)).astype(np.float32)
    K = Q if a.kind in ("neumann", "tail") else rng.standard_normal((a.n, a.d)).astype(np.float32)
    S = temp * (Q.astype(np.float64) @ K.astype(np.float64).T) / math.sqrt(a.d)
    A = softmax_rows(S)
    stem = f"qk-{a.kind}-n{a.n}-d{a.d}" + (f"-k{a.k}" if a.kind == "factor" else "")
    inst = {"kind": "qk", "q": save(a.out, stem + ".q.npy", Q, np.float32),
            "k": save(a.out, stem + ".k.npy", K, np.float32),
            "scale": {"rsqrt": a.d}, "temperature": repr(temp)}
    if a.kind == "factor":
        Uk, Wk = truncated_svd(A, a.k, rng)
        err = np.abs(A - Uk @ Wk.T).sum(axis=1).max()
        eps = round_up(err * 1.01 + 1e-12)
        cert = {"bound": "upper", "kind": "factor", "rank": a.k,
                "u": save(a.out, stem + ".u.npy", Uk, np.float64),
                "w": save(a.out, stem + ".w.npy", Wk, np.float64)}
        claim = {"upper": a.k}
        prov = {"float_row_error": float(err)}
    elif a.kind == "tail":
        k = a.n // 4
        lam, V = np.linalg.eigh(A @ A.T)
        lam, V = lam[::-1], V[:, ::-1]
        F = V[:, :k] * np.sqrt(np.maximum(lam[:k], 0))
        mu = float(lam[k] * (1 + 1e-6) + 1e-12)
        rest = float(lam[k:].sum()) - k * mu
        eps = float(f"{math.sqrt(0.9 * rest / a.n):.2g}")
        cert = {"bound": "lower", "kind": "tail", "rank": k + 1, "rows": list(range(a.n)), "k": k, "mu": repr(mu),
                "r": save(a.out, stem + ".r.npy", np.eye(a.n), np.float64),
                "f": save(a.out, stem + ".f.npy", F, np.float64)}
        claim = {"lower": k + 1}
        prov = {"lambda_k_plus_1": float(lam[k])}
    else:
        R = np.linalg.inv(A)
        delta = np.abs(np.eye(a.n) - A @ R).sum(axis=1).max()
        rho = np.abs(R).sum(axis=1).max()
        eps = float(f"{0.9 * (1 - delta) / rho:.2g}")
        cert = {"bound": "lower", "kind": "neumann", "rank": a.n, "rows": list(range(a.n)),
                "r": save(a.out, stem + ".r.npy", R, np.float64)}
        claim = {"lower": a.n}
        prov = {"float_delta": float(delta), "float_rho": float(rho)}
    doc = {"format": "rankcert/1", "instance": inst, "eps": repr(eps), "claim": claim, "certificates": [cert],
           "provenance": dict(producer="bench/make_qk_bundle.py", seed=a.seed, **prov)}
    path = os.path.join(a.out, stem + ".json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(path)


if __name__ == "__main__":
    main()
