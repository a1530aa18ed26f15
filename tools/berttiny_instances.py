#!/usr/bin/python3
"""Write the BERT-Tiny layer-0 attention instances (untrusted helper).

For each of the four inputs in data/berttiny-sst2 and both heads: the exact
Q = X Wq + bq and K = X Wk + bk (every input is a float32; products and sums
are computed in exact rational arithmetic and written as "p/q"), scale 1/8,
no mask.  One JSON per head: {"instance": ..., "provenance": ...}.

usage: /usr/bin/python3 tools/berttiny_instances.py OUT_DIR   (needs python3-numpy)
"""
import json
import os
import sys
from fractions import Fraction

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "data", "berttiny-sst2")
TEXTS = {
    "nuovo": "[CLS] Nuovo Cinema Paradiso has been an incredible movie! A gem in the italian culture. [SEP]",
    "unflinchingly": "[CLS] unflinchingly bleak and desperate [SEP]",
    "seq17": "(sentence not recorded, 17 tokens)",
    "seq12": "(sentence not recorded, 12 tokens)",
}


def exact_dense(M):
    flat = []
    for v in M.reshape(-1):
        flat.append(str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}")
    return {"shape": list(M.shape), "data": flat}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    F = np.vectorize(Fraction)
    load = lambda name: F(np.load(os.path.join(SRC, name)).astype(object))
    Wq, Wk, bq, bk = load("layer0_wq.npy"), load("layer0_wk.npy"), load("layer0_bq.npy"), load("layer0_bk.npy")
    for text, sentence in TEXTS.items():
        X = load(f"embeddings_{text}.npy")
        for h in (0, 1):
            c = slice(64 * h, 64 * h + 64)
            inst = {"kind": "qk", "q": exact_dense(X.dot(Wq[:, c]) + bq[c]), "k": exact_dense(X.dot(Wk[:, c]) + bk[c]),
                    "scale": "1/8", "mask": "none"}
            prov = {"model": "philschmid/tiny-bert-sst2-distilled (BERT-Tiny fine-tuned on SST-2), MIT licence",
                    "layer": 0, "head": h, "input": text, "text": sentence, "tokens": X.shape[0],
                    "q": "exact X Wq + bq, columns 64h..64h+63 (X: embedding-layer output)", "k": "exact X Wk + bk",
                    "data": "data/berttiny-sst2 (data/README.md)"}
            with open(os.path.join(out, f"bert-{text}-H{h}.json"), "w") as f:
                json.dump({"instance": inst, "provenance": prov}, f)
    print(f"wrote 8 instances to {out}")


if __name__ == "__main__":
    main()
