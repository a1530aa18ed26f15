#!/usr/bin/python3
"""The same check as `rankcert verify`, unverified, in NumPy float64: the
reference a verified checker is measured against.

factor: max_i sum_j |A_ij - (U W^T)_ij| <= eps; zonal: the same with
B_ij = e^shift g(<q_i, k_j>) / Z_i (inline rational q, k); neumann: max_t delta_t + eps
rho < 1; tail: Cholesky of mu I + F F^T - M M^T and the Frobenius test.  Prints the float quantity and "ok" or "fails".  Reads the bundles
bench/make_qk_bundle.py writes (qk with .npy sidecars, no mask or bias).
usage: /usr/bin/python3 bench/numpy_check.py BUNDLE.json
"""
import json
import math
import os
import sys
from fractions import Fraction

import numpy as np


def main():
    path = sys.argv[1]
    folder = os.path.dirname(path)
    doc = json.load(open(path))
    def load(ref):
        if "npy" in ref:
            return np.load(os.path.join(folder, ref["npy"])).astype(np.float64)
        return np.array([float(Fraction(x)) for x in ref["data"]]).reshape(ref["shape"])  # inline rationals
    inst = doc["instance"]
    Q, K = load(inst["q"]), load(inst["k"])
    scale = 1 / math.sqrt(inst["scale"]["rsqrt"]) if isinstance(inst["scale"], dict) else float(Fraction(inst["scale"]))
    sigma = float(Fraction(inst.get("temperature", "1"))) * scale
    eps = float(Fraction(doc["eps"]))
    cert = doc["certificates"][0]
    if cert["kind"] == "zonal":
        # Row errors of B_ij = e^shift g(t_ij) / Z_i (no key bias), 1000 rows at a time.
        c = np.array([float.fromhex(x) if "0x" in x else float(Fraction(x)) for x in cert["chebyshev"]])
        shift = float(Fraction(cert["shift"]))
        err = 0.0
        for i0 in range(0, Q.shape[0], 1000):
            T = Q[i0:i0 + 1000] @ K.T
            E = np.exp(sigma * T - shift)
            err = max(err, (np.abs(E - np.polynomial.chebyshev.chebval(T, c)).sum(axis=1) / E.sum(axis=1)).max())
        print(f"max row error {err:.6g}: {'ok' if err <= eps else 'fails'}")
        return
    S = sigma * (Q @ K.T)
    S -= S.max(axis=1, keepdims=True)
    A = np.exp(S)
    A /= A.sum(axis=1, keepdims=True)
    if cert["kind"] == "factor":
        err = np.abs(A - load(cert["u"]) @ load(cert["w"]).T).sum(axis=1).max()
        print(f"max row error {err:.6g}: {'ok' if err <= eps else 'fails'}")
    elif cert["kind"] == "tail":
        rows = np.array(cert["rows"])
        R, F = load(cert["r"]), load(cert["f"])
        M = A[rows] @ R
        mu = float(Fraction(cert["mu"]))
        rho = np.abs(R).sum(axis=1).max()
        H = mu * np.eye(len(rows)) + F @ F.T - M @ M.T
        try:
            np.linalg.cholesky(H)
            pd = True
        except np.linalg.LinAlgError:
            pd = False
        frob = (M * M).sum()
        thr = cert["k"] * mu + (F * F).sum() + len(rows) * (eps * rho) ** 2
        print(f"||M||_F^2 - threshold = {frob - thr:.6g}, H positive definite: {pd}: {'ok' if pd and frob > thr else 'fails'}")
    else:
        R = load(cert["r"])
        rows = np.array(cert["rows"])
        delta = np.abs(np.eye(len(rows)) - A[rows] @ R).sum(axis=1).max()
        rho = np.abs(R).sum(axis=1).max()
        print(f"delta + eps rho = {delta + eps * rho:.6g}: {'ok' if delta + eps * rho < 1 else 'fails'}")


if __name__ == "__main__":
    main()
