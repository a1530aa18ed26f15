#!/usr/bin/python3
"""Summarise a folder of certified brackets of real heads (standard library only).

Re-verifies the folder with `build/rankcert verify --json` (the verdicts in the
summary come from that run, not from the bundles' claims), then writes
  SUMMARY.md      per eps: closure rate and median U/L; per class; every bundle
  summary.csv     model, layer, head, text, tokens, eps, temperature, L, U, closed, kinds, verdict
  brackets.svg    median L/n and U/n against eps, one colour per head class

usage: /usr/bin/python3 tools/real_summary.py certificates/real
"""
import csv
import json
import os
import statistics
import subprocess
import sys
import time
from fractions import Fraction

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bundles(folder):
    for dirpath, dirs, files in os.walk(folder):
        if "full512" in dirs:  # the real-size corpus has its own summary (tools/real512_summary.py)
            dirs.remove("full512")
        for f in sorted(files):
            if not f.endswith(".json"):
                continue
            path = os.path.join(dirpath, f)
            with open(path) as fh:
                try:
                    doc = json.load(fh)
                except ValueError:
                    continue
            if isinstance(doc, dict) and doc.get("format") == "rankcert/1":
                yield path, doc


def kinds(doc, bound):
    best, kind = -1, "-"
    for c in doc["certificates"]:
        if c["bound"] != bound:
            continue
        r = c["rank"]
        if (bound == "lower" and r > best) or (bound == "upper" and (best < 0 or r < best)):
            best, kind = r, c["kind"]
    return kind


def svg_plot(rows, path):
    classes = sorted({r["class"] for r in rows})
    eps_values = sorted({Fraction(r["eps"]) for r in rows})
    colours = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"]
    W, H, ml, mr, mt, mb = 640, 420, 60, 190, 30, 50
    import math
    xs = [math.log(float(e)) for e in eps_values]
    xmin, xmax = min(xs), max(xs)
    X = lambda e: ml + (math.log(float(e)) - xmin) / (xmax - xmin or 1) * (W - ml - mr)
    Y = lambda v: mt + (1 - v) * (H - mt - mb)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2 - 80}" y="18" font-size="14">Certified brackets of real heads</text>']
    for v in (0, 0.25, 0.5, 0.75, 1):
        out.append(f'<line x1="{ml}" x2="{W - mr}" y1="{Y(v)}" y2="{Y(v)}" stroke="#ddd"/>')
        out.append(f'<text x="{ml - 36}" y="{Y(v) + 4}">{v:.2f}</text>')
    for e in eps_values:
        out.append(f'<line x1="{X(e)}" x2="{X(e)}" y1="{mt}" y2="{H - mb}" stroke="#eee"/>')
        out.append(f'<text x="{X(e) - 12}" y="{H - mb + 18}">{float(e):g}</text>')
    out.append(f'<text x="{(W - mr + ml) / 2 - 40}" y="{H - 10}">eps (log scale)</text>')
    out.append(f'<text transform="translate(16,{H / 2 + 60}) rotate(-90)">median rank / n</text>')
    for ci, cls in enumerate(classes):
        col = colours[ci % len(colours)]
        for bound, dash in (("U", ""), ("L", ' stroke-dasharray="5,4"')):
            pts = []
            for e in eps_values:
                sel = [r for r in rows if r["class"] == cls and Fraction(r["eps"]) == e]
                if sel:
                    v = statistics.median(r[bound] / r["n"] for r in sel)
                    pts.append((X(e), Y(v)))
            if pts:
                out.append(f'<polyline fill="none" stroke="{col}" stroke-width="2"{dash} points="' +
                           " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
                for x, y in pts:
                    out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{col}"/>')
        ly = mt + 20 + ci * 20
        out.append(f'<line x1="{W - mr + 15}" x2="{W - mr + 40}" y1="{ly}" y2="{ly}" stroke="{col}" stroke-width="2"/>')
        out.append(f'<text x="{W - mr + 46}" y="{ly + 4}">{cls}</text>')
    ly = mt + 30 + len(classes) * 20
    out.append(f'<text x="{W - mr + 15}" y="{ly}">solid: upper U</text>')
    out.append(f'<text x="{W - mr + 15}" y="{ly + 16}">dashed: lower L</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    folder = sys.argv[1]
    t0 = time.time()
    p = subprocess.run([os.path.join(ROOT, "build", "rankcert"), "verify", "--json", "--quiet", folder],
                       capture_output=True, text=True)
    verify_seconds = time.time() - t0
    report = json.loads(p.stdout)
    verdict = {os.path.normpath(b["bundle"]): b["verdict"] for b in report["bundles"]}
    rows = []
    for path, doc in bundles(folder):
        prov = doc.get("provenance", {})
        inst = doc["instance"]
        model = "stories260K" if "stories" in str(prov.get("model", "")) else "bert-tiny"
        text = os.path.basename(os.path.dirname(path)) if model == "stories260K" else prov.get("input", "?")
        claim = doc["claim"]
        n = prov.get("tokens") or 0
        rows.append({
            "model": model, "layer": prov.get("layer"), "head": prov.get("head"), "text": text, "n": n,
            "eps": doc["eps"], "temperature": inst.get("temperature", "1"),
            "L": claim["lower"], "U": claim["upper"], "closed": claim["lower"] == claim["upper"],
            "lower_kind": kinds(doc, "lower"), "upper_kind": kinds(doc, "upper"),
            "verdict": verdict.get(os.path.normpath(path), "?"), "bundle": os.path.relpath(path, folder),
            "class": f"{model} L{prov.get('layer')}",
        })
    rows.sort(key=lambda r: (r["model"], r["layer"], r["head"], r["text"], Fraction(r["temperature"]), Fraction(r["eps"])))
    with open(os.path.join(folder, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        cols = ["model", "layer", "head", "text", "n", "eps", "temperature", "L", "U", "closed", "lower_kind",
                "upper_kind", "verdict", "bundle"]
        w.writerow(cols)
        for r in rows:
            w.writerow([r[c] for c in cols])
    svg_plot(rows, os.path.join(folder, "brackets.svg"))
    ratio = lambda r: r["U"] / max(r["L"], 1)
    md = ["# Certified brackets of real heads", "",
          "Generated by `tools/build_real_corpus.sh` (one `rankcert survey` over every head, temperature and eps, placed by `tools/corpus_merge.py`: each end kept from whichever of the committed and the new bundle is tighter; `refresh.tsv` lists old and new brackets of its last run), earlier passes of `tools/refresh_real_corpus.py` (the same merge), and `tools/real_summary.py` (this page).",
          f"Every bundle below was re-verified by `rankcert verify {folder}`: "
          f"{sum(r['verdict'] == 'verified' for r in rows)} of {len(rows)} verified, "
          f"in {verify_seconds:.1f} s for the whole folder.", "",
          "L and U are certified: L <= r_eps(A) <= U for the exact softmax of the stored float32 (stories260K) "
          "or exact rational (BERT-Tiny) queries and keys.  n is the number of tokens.", "",
          "## By eps", "", "| eps | bundles | closed | median U/L | worst U/L |", "|---:|---:|---:|---:|---:|"]
    for e in sorted({r["eps"] for r in rows}, key=Fraction):
        sel = [r for r in rows if r["eps"] == e]
        md.append(f"| {e} | {len(sel)} | {sum(r['closed'] for r in sel) / len(sel):.0%} | "
                  f"{statistics.median(map(ratio, sel)):.2f} | {max(map(ratio, sel)):.2f} |")
    md += ["", "## By head class and eps", "", "| class | eps | bundles | closed | median L/n | median U/n | median U/L |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for cls in sorted({r["class"] for r in rows}):
        for e in sorted({r["eps"] for r in rows}, key=Fraction):
            sel = [r for r in rows if r["class"] == cls and r["eps"] == e]
            if not sel:
                continue
            md.append(f"| {cls} | {e} | {len(sel)} | {sum(r['closed'] for r in sel) / len(sel):.0%} | "
                      f"{statistics.median(r['L'] / r['n'] for r in sel):.2f} | "
                      f"{statistics.median(r['U'] / r['n'] for r in sel):.2f} | {statistics.median(map(ratio, sel)):.2f} |")
    md += ["", "![median L/n and U/n against eps](brackets.svg)", "", "## Every bundle", "",
           "| model | layer | head | text | n | eps | t | L | U | closed | lower by | upper by | verdict |",
           "|---|---:|---:|---|---:|---:|---:|---:|---:|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['model']} | {r['layer']} | {r['head']} | {r['text']} | {r['n']} | {r['eps']} | {r['temperature']} | "
                  f"{r['L']} | {r['U']} | {'yes' if r['closed'] else 'no'} | {r['lower_kind']} | {r['upper_kind']} | {r['verdict']} |")
    with open(os.path.join(folder, "SUMMARY.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print(f"{len(rows)} bundles, {sum(r['closed'] for r in rows)} closed; verify took {verify_seconds:.1f} s")
    if p.returncode != 0:
        print(f"rankcert verify exited with {p.returncode}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
