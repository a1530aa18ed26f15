#!/usr/bin/python3
"""Profiles of unmasked heads against their certified upper bounds (stdlib only).

For every BERT-Tiny instance in certificates/real/berttiny and temperature
0.5, 1, 2: run `rankcert profile` (all ranks r = 1, 2, 4, ..., visible
dimension; every profile certificate verified by the checker), take for
each eps the smallest certified upper end of P over the ranks with
tau < eps, and pair it with the certified U of the corpus bundle.  Prints a
markdown table, the Spearman rank correlation of U and P, and writes an SVG
scatter of log U against log P.

Optionally also every bundle of an `--extra` folder with an unmasked
instance (e.g. the bundles of `bench/bracket_bench.py --sizes 64`), paired
with its own certified U.

usage: /usr/bin/python3 tools/profile_table.py OUT.svg [--extra DIR] > table.md
"""
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RC = os.path.join(ROOT, "build", "rankcert")
BERT = os.path.join(ROOT, "certificates", "real", "berttiny")


def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2
        i = j + 1
    return r


def spearman(x, y):
    rx, ry = ranks(x), ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    return sxy / math.sqrt(sxx * syy) if sxx and syy else float("nan")


def svg(points, path):
    W, H, m = 520, 380, 55
    xs = [p[0] for p in points]  # already log10 P
    ys = [math.log10(p[1]) for p in points]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    X = lambda v: m + (v - x0) / ((x1 - x0) or 1) * (W - 2 * m)
    Y = lambda v: H - m - (v - y0) / ((y1 - y0) or 1) * (H - 2 * m)
    cols = {"0.05": "#1b9e77", "0.1": "#d95f02", "0.2": "#7570b3"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           '<text x="55" y="22" font-size="14">Certified U against certified profile P (smallest over r)</text>',
           f'<line x1="{m}" y1="{H - m}" x2="{W - m}" y2="{H - m}" stroke="#333"/>',
           f'<line x1="{m}" y1="{m}" x2="{m}" y2="{H - m}" stroke="#333"/>',
           f'<text x="{W / 2 - 60}" y="{H - 15}">log10 P (smallest over r)</text>',
           f'<text transform="translate(18,{H / 2 + 40}) rotate(-90)">log10 U</text>']
    step = max(1, math.ceil((x1 - x0) / 8))
    for v in range(math.floor(x0), math.ceil(x1) + 1, step):
        out.append(f'<text x="{X(v) - 5}" y="{H - m + 16}">{v}</text>')
    for v in (y0, (y0 + y1) / 2, y1):
        out.append(f'<text x="{m - 40}" y="{Y(v) + 4}">{v:.2f}</text>')
    for (p, u, e), x, y in zip(points, xs, ys):
        out.append(f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="4" fill="{cols.get(e, "#444")}" fill-opacity="0.7"/>')
    for k, (e, c) in enumerate(cols.items()):
        out.append(f'<circle cx="{W - 110}" cy="{H - m - 60 + 16 * k}" r="4" fill="{c}"/><text x="{W - 100}" y="{H - m - 56 + 16 * k}">eps {e}</text>')
    out.append("</svg>")
    open(path, "w").write("\n".join(out) + "\n")


def profile(path, t, tmp):
    args = [RC, "profile", "--instance", path, "--json", "--out", tmp]
    if t is not None:
        args += ["--temperature", t]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"{path} t={t}: profile failed: {p.stderr.strip()}", file=sys.stderr)
        return None
    return json.loads(p.stdout)


def best(prof, e):
    cands = [(pr["log10_P"][e][1], pr["r"], pr["kappa"]) for pr in prof["profiles"] if e in pr["log10_P"]]
    return min(cands) if cands else None


def main():
    svg_path = sys.argv[1]
    extra = sys.argv[sys.argv.index("--extra") + 1] if "--extra" in sys.argv else None
    rows, points = [], []
    tmp = tempfile.mkdtemp(prefix="rankcert-profile-")
    if extra:
        for f in sorted(os.listdir(extra)):
            if not f.endswith(".json"):
                continue
            doc = json.load(open(os.path.join(extra, f)))
            inst = doc.get("instance", {})
            if doc.get("format") != "rankcert/1" or inst.get("mask", "none") != "none":
                continue
            if "-n64" not in f:
                continue  # the small corpus only (profiles of n = 256 take minutes)
            if inst.get("kind") == "logits" and "prev" in f:
                continue  # causal logits (-inf entries)
            prof = profile(os.path.join(extra, f), None, tmp)
            if not prof:
                continue
            e = doc["eps"]
            b = best(prof, e)
            U = doc["claim"]["upper"]
            name = f[:-5]
            if b is None:
                rows.append((name, "-", e, prof["visible_dim"], "-", "-", "-", U))
                continue
            lp, r, kappa = b
            rows.append((name, "-", e, prof["visible_dim"], r, f"[{kappa[0]:.4g}, {kappa[1]:.4g}]", f"1e{lp:.1f}", U))
            points.append((lp, U, e))
    for f in sorted(os.listdir(BERT)):
        if not (f.startswith("bert-") and f.endswith(".json") and "-eps" not in f):
            continue
        name = f[:-5]
        for t in ("0.5", "1", "2"):
            prof = profile(os.path.join(BERT, f), t, tmp)
            if not prof:
                continue
            for e in ("0.05", "0.1", "0.2"):
                bundle = json.load(open(os.path.join(BERT, f"{name}-t{t}-eps{e}.json")))
                U = bundle["claim"]["upper"]
                b = best(prof, e)
                if b is None:
                    rows.append((name, t, e, prof["visible_dim"], "-", "-", "-", U))
                    continue
                lp, r, kappa = b
                rows.append((name, t, e, prof["visible_dim"], r, f"[{kappa[0]:.4g}, {kappa[1]:.4g}]", f"1e{lp:.1f}", U))
                points.append((lp, U, e))
    print("| head | t | eps | visible dim | best r | kappa (certified) | P (certified upper end) | certified U |")
    print("|---|---:|---:|---:|---:|---|---:|---:|")
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    if len(points) > 2:
        rho = spearman([p[0] for p in points], [p[1] for p in points])
        print(f"\nSpearman rank correlation of U and P over {len(points)} cells: {rho:.3f}")
        svg(points, svg_path)


if __name__ == "__main__":
    main()
