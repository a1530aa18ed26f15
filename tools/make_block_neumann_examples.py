#!/usr/bin/python3
"""Write certificates/block-neumann/: small bundles whose lower bound is a
block_neumann certificate (docs/theory.md, "Lower bounds"), with exact data.

* plane-mixing-eps0.8: rows (1, 0), (1/2, 1), (-1/2, 1).  Every pair of rows
  is within 2/3 of a rank-one matrix, so no row-subset certificate can prove
  rank 2 at eps 0.8; Lambda = [[1,0,0],[0,1/2,1/2]] gives P = I_2 and does.
* identity5-one-block-eps0.5: one block over all five rows of I_5 (the exact
  subset test; vertex preimages v_s = s).
* logits-one-block-eps0.4: softmax of logits I (2 x 2), one block with
  preimages (1, 1), (1, -1); verified iff eps < tanh(1/2) = 0.4621...

usage: /usr/bin/python3 tools/make_block_neumann_examples.py [OUT]   (default certificates/block-neumann)
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def dense(rows, cols, data):
    return {"shape": [rows, cols], "data": [str(x) for x in data]}


def coo(N, cols):
    r, c, v = [], [], []
    for k, col in enumerate(cols):
        for j, x in enumerate(col):
            if x != 0:
                r.append(j), c.append(k), v.append(str(x))
    return {"shape": [N, len(cols)], "coo": {"row": r, "col": c, "val": v}}


def bundle(instance, eps, certs, claim, note):
    return {"format": "rankcert/1", "instance": instance, "eps": eps, "claim": claim, "certificates": certs,
            "provenance": {"producer": "tools/make_block_neumann_examples.py", "note": note}}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "certificates/block-neumann")
    os.makedirs(out, exist_ok=True)
    docs = {}
    plane = dense(3, 2, [1, 0, "1/2", 1, "-1/2", 1])
    docs["plane-mixing-eps0.8"] = bundle(
        {"kind": "matrix", "a": plane}, "0.8",
        [{"bound": "lower", "kind": "block_neumann", "rank": 2, "rows": [0, 1, 2],
          "lambda": dense(2, 3, [1, 0, 0, 0, "1/2", "1/2"]), "blocks": [[0], [1]], "v": coo(2, [[1, 0], [0, 1]])},
         {"bound": "upper", "kind": "factor", "rank": 2, "u": plane, "w": dense(2, 2, [1, 0, 0, 1])}],
        {"lower": 2, "upper": 2},
        "every row pair is within 2/3 of rank one; mixing rows 2 and 3 proves rank 2 at eps 0.8")
    n = 5
    ident = dense(n, n, [1 if i == j else 0 for i in range(n) for j in range(n)])
    verts = [[1] + [-1 if (k >> (p - 1)) & 1 else 1 for p in range(1, n)] for k in range(2 ** (n - 1))]
    docs["identity5-one-block-eps0.5"] = bundle(
        {"kind": "matrix", "a": ident}, "0.5",
        [{"bound": "lower", "kind": "block_neumann", "rank": n, "rows": list(range(n)), "blocks": [list(range(n))],
          "v": coo(n, verts)},
         {"bound": "upper", "kind": "factor", "rank": n, "u": ident, "w": ident}],
        {"lower": n, "upper": n}, "one block over all rows: the exact row-subset test")
    docs["logits-one-block-eps0.4"] = bundle(
        {"kind": "logits", "logits": dense(2, 2, [1, 0, 0, 1])}, "0.4",
        [{"bound": "lower", "kind": "block_neumann", "rank": 2, "rows": [0, 1], "blocks": [[0, 1]],
          "v": coo(2, [[1, 1], [1, -1]])}],
        {"lower": 2, "upper": 2}, "verified iff eps < tanh(1/2); the upper end is min(n, N) = 2")
    for name, d in docs.items():
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(d, f, indent=1)
            f.write("\n")
    print(f"{len(docs)} bundles in {out}")


if __name__ == "__main__":
    main()
