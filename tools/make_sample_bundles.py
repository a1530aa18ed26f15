#!/usr/bin/python3
"""Write the hand-made sample bundles under certificates/ (untrusted helper).

This is producer-side code: it finds certificates in floating point (numpy
SVD, a greedy Neumann search) and writes them exactly (float64 values as C99
hex floats or .npy sidecars).  Nothing it computes is trusted; every bundle it
writes is checked by `build/rankcert verify`.  The real producer is
`rankcert bracket` (issue 3); this script only seeds the first bundles.

usage: /usr/bin/python3 tools/make_sample_bundles.py [--out certificates]
(The real-head bundles under certificates/real come from tools/build_real_corpus.sh.)
Needs Debian's python3-numpy.
"""
import argparse
import hashlib
import json
import os

from fractions import Fraction

import numpy as np


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def exact(x):
    """An exact spelling of a float (C99 hex float) or a Fraction (p/q)."""
    if isinstance(x, Fraction):
        return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"
    x = float(x)
    return "0" if x == 0 else x.hex()


def dense(mat):
    mat = np.atleast_2d(mat) if not isinstance(mat, list) else mat
    rows, cols = len(mat), len(mat[0])
    return {"shape": [rows, cols], "data": [exact(v) for row in mat for v in row]}


def npy_sidecar(folder, name, arr):
    path = os.path.join(folder, name)
    np.save(path, np.ascontiguousarray(arr, dtype=np.float64))
    return {"npy": name, "sha256": sha256(path)}


def softmax(S):
    S = S - S.max(axis=1, keepdims=True)
    E = np.exp(S)
    return E / E.sum(axis=1, keepdims=True)


def upper_factor(A, eps, margin=1e-9):
    """Least k whose truncated SVD has float max-row-l1 error <= eps - margin."""
    Uf, s, Vt = np.linalg.svd(A)
    for k in range(0, min(A.shape) + 1):
        U = Uf[:, :k] * s[:k]
        W = Vt[:k].T
        err = np.abs(A - U @ W.T).sum(axis=1).max() if k else np.abs(A).sum(axis=1).max()
        if err <= eps - margin:
            return k, U, W, err
    raise RuntimeError("no factor found")


def neumann_greedy(A, eps, margin=1e-6):
    """Rows I, columns J with R = inv(A_IJ) padded: delta + eps*rho < 1 - margin."""
    n, N = A.shape
    order = np.dstack(np.unravel_index(np.argsort(-A, axis=None), A.shape))[0]
    I, J = [], []
    for i, j in order:
        if i in I or j in J:
            continue
        if A[i, j] < 1e-3:
            break
        I2, J2 = I + [int(i)], J + [int(j)]
        sub = A[np.ix_(I2, J2)]
        try:
            Rs = np.linalg.inv(sub)
        except np.linalg.LinAlgError:
            continue
        delta = np.abs(np.eye(len(I2)) - sub @ Rs).sum(axis=1).max()
        rho = np.abs(Rs).sum(axis=1).max()
        if delta + eps * rho < 1 - margin:
            I, J = I2, J2
    sub = A[np.ix_(I, J)]
    Rs = np.linalg.inv(sub)
    return I, J, Rs


def neumann_cert(I, J, Rs, N):
    rows, cols, vals = [], [], []
    for a, j in enumerate(J):
        for t in range(len(I)):
            if Rs[a, t] != 0:
                rows.append(j)
                cols.append(t)
                vals.append(exact(Rs[a, t]))
    return {"bound": "lower", "kind": "neumann", "rank": len(I), "rows": I,
            "r": {"shape": [N, len(I)], "coo": {"row": rows, "col": cols, "val": vals}}}


def write_bundle(path, instance, eps_text, certs, lower, upper, provenance):
    doc = {"format": "rankcert/1", "instance": instance, "eps": eps_text,
           "claim": {"lower": lower, "upper": upper}, "certificates": certs,
           "provenance": provenance}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"{path}: bracket [{lower}, {upper}]")


def bracket_bundle(folder, name, instance, A, eps, eps_text, provenance, sidecar_factor=False):
    n, N = A.shape
    k, U, W, err = upper_factor(A, eps)
    I, J, Rs = neumann_greedy(A, eps)
    certs = []
    if sidecar_factor:
        u = npy_sidecar(folder, name + ".u.npy", U)
        w = npy_sidecar(folder, name + ".w.npy", W)
    else:
        u, w = dense(U.reshape(n, k).tolist()), dense(W.reshape(N, k).tolist())
    certs.append({"bound": "upper", "kind": "factor", "rank": k, "u": u, "w": w})
    certs.append(neumann_cert(I, J, Rs, N))
    if eps < 1:
        certs.append({"bound": "lower", "kind": "trivial", "rank": 1})
    lower = max(len(I), 1 if eps < 1 else 0)
    provenance = dict(provenance, producer="tools/make_sample_bundles.py (numpy SVD, greedy Neumann)",
                      float_row_error=float(err))
    write_bundle(os.path.join(folder, name + ".json"), instance, eps_text, certs, lower, k, provenance)


def identity_bundle(out):
    folder = os.path.join(out, "identity")
    os.makedirs(folder, exist_ok=True)
    n = 8
    eye = [[1 if i == j else 0 for j in range(n)] for i in range(n)]
    cert_u = {"bound": "upper", "kind": "factor", "rank": n, "u": dense(eye), "w": dense(eye)}
    cert_l = {"bound": "lower", "kind": "neumann", "rank": n, "rows": list(range(n)),
              "r": {"shape": [n, n], "coo": {"row": list(range(n)), "col": list(range(n)), "val": [1] * n}}}
    write_bundle(os.path.join(folder, "identity8.json"), {"kind": "matrix", "a": dense(eye)}, "1/2",
                 [cert_u, cert_l], n, n,
                 {"description": "8 x 8 identity: r_eps = 8 for every eps < 1 (B = I; column selection)"})


def gaussian_bundle(out):
    folder = os.path.join(out, "softmax-small")
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(20261130)
    n, d = 24, 4
    Q = rng.standard_normal((n, d)).astype(np.float32).astype(np.float64)
    K = rng.standard_normal((n, d)).astype(np.float32).astype(np.float64)
    for beta, eps in ((2, 0.1), (4, 0.1)):
        A = softmax(beta * Q @ K.T)
        inst = {"kind": "qk", "q": dense(Q.tolist()), "k": dense(K.tolist()), "scale": beta}
        bracket_bundle(folder, f"gauss24-d4-beta{beta}-eps0.1", inst, A, eps, "0.1",
                       {"description": f"random Gaussian float32 Q, K (24 x 4, seed 20261130), logits {beta} <q_i, k_j>"})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "certificates"))
    a = ap.parse_args()
    identity_bundle(a.out)
    gaussian_bundle(a.out)


if __name__ == "__main__":
    main()
