#!/usr/bin/python3
"""Closure benchmark: how tight are the certified brackets of `rankcert bracket`?

For every instance (the stories260K heads of the committed texts, extracted
with `rankcert extract`, and generated causal heads), runs `rankcert bracket`
at the given eps with a fixed time budget, and reports per class and eps:
closed % (L = U), within-one % (U - L <= 1), median U/L and median U - L.
With --before EXE it runs a second rankcert (e.g. a build of an older commit)
on the same instances, side by side, so the table shows before and after.
Every bundle written is verified by the checker (bracket does that); the
folder can be re-checked with `rankcert verify`.

usage: /usr/bin/python3 bench/closure_bench.py [--texts medium,long] [--synthetic 64,256]
         [--eps 0.05,0.1,0.2] [--budget 10] [--before OLD/build/rankcert] [--markdown FILE]
Needs python3-numpy for the generated heads.
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(exe, inst, eps, budget, out):
    p = subprocess.run([exe, "bracket", "--instance", inst, "--eps", eps, "--out", out, "--time-budget", str(budget),
                        "--json", "-q"], capture_output=True, text=True)
    if p.returncode not in (0, 2):
        raise SystemExit(f"{exe} bracket {inst}: exit {p.returncode}: {p.stderr.strip()[:300]}")
    return {r["eps"]: (r["lower"], r["upper"]) for r in json.loads(p.stdout)["results"]}


def instances(work, texts, sizes, exe):
    out = []
    for t in texts:
        d = os.path.join(work, "heads-" + t)
        subprocess.run([exe, "extract", "--checkpoint", os.path.join(ROOT, "data/stories260K/stories260K.bin"),
                        "--tokenizer", os.path.join(ROOT, "data/stories260K/tok512.bin"), "--text-file",
                        os.path.join(ROOT, "certificates/real/texts", t + ".txt"), "--out", d, "--name", t],
                       check=True, stdout=subprocess.DEVNULL)
        out += [(f"stories260K-{t}", os.path.join(d, f)) for f in sorted(os.listdir(d)) if f.endswith(".json")]
    if sizes:
        import numpy as np
        rng = np.random.default_rng(11)
        for n in sizes:
            for kind in ("gaussian", "banded"):
                for rep in range(4):
                    d = os.path.join(work, f"gen-{kind}-{n}-{rep}")
                    os.makedirs(d, exist_ok=True)
                    if kind == "gaussian":
                        q = rng.standard_normal((n, 16)).astype(np.float32)
                        k = rng.standard_normal((n, 16)).astype(np.float32)
                    else:   # local: keys and queries on a slowly turning circle (a band near the diagonal)
                        ang = np.arange(n) * (2 * np.pi / 24)
                        base = np.stack([np.cos(ang), np.sin(ang)], 1) * 3
                        q = (np.concatenate([base, 0.3 * rng.standard_normal((n, 14))], 1)).astype(np.float32)
                        k = (np.concatenate([base, 0.3 * rng.standard_normal((n, 14))], 1)).astype(np.float32)
                    np.save(os.path.join(d, "q.npy"), q)
                    np.save(os.path.join(d, "k.npy"), k)
                    sha = {x: hashlib.sha256(open(os.path.join(d, x + ".npy"), "rb").read()).hexdigest() for x in "qk"}
                    with open(os.path.join(d, "i.json"), "w") as f:
                        json.dump({"instance": {"kind": "qk", "q": {"npy": "q.npy", "sha256": sha["q"]},
                                                "k": {"npy": "k.npy", "sha256": sha["k"]},
                                                "scale": {"rsqrt": 16}, "mask": "causal"}}, f)
                    out.append((f"{kind}-n{n}", os.path.join(d, "i.json")))
    return out


def summarise(rows):
    """rows: list of (L, U) -> closed %, within-one %, median U/L, median U - L."""
    if not rows:
        return "-", "-", "-", "-"
    closed = sum(l == u for l, u in rows) / len(rows)
    within = sum(u - l <= 1 for l, u in rows) / len(rows)
    return (f"{100 * closed:.0f}%", f"{100 * within:.0f}%", f"{statistics.median(u / max(l, 1) for l, u in rows):.3f}",
            f"{statistics.median(u - l for l, u in rows):g}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--texts", default="medium,long")
    ap.add_argument("--synthetic", default="", help="sizes of generated heads, e.g. 64,256")
    ap.add_argument("--eps", default="0.05,0.1,0.2")
    ap.add_argument("--budget", type=float, default=10, help="seconds per instance (all eps)")
    ap.add_argument("--exe", default=os.path.join(ROOT, "build", "rankcert"))
    ap.add_argument("--before", help="another rankcert to compare with")
    ap.add_argument("--markdown")
    ap.add_argument("--limit", type=int, default=0, help="at most this many instances per generated class")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="closure-")
    insts = instances(work, [t for t in a.texts.split(",") if t], [int(s) for s in a.synthetic.split(",") if s], a.exe)
    if a.limit:
        seen = {}
        insts = [x for x in insts if x[0].startswith("stories260K") or
                 seen.setdefault(x[0], []).append(x) or len(seen[x[0]]) <= a.limit]
    exes = [("after", a.exe)] + ([("before", a.before)] if a.before else [])
    res = {}   # (which, class, eps) -> [(L, U)]
    for i, (cls, inst) in enumerate(insts):
        for which, exe in exes:
            r = run(exe, inst, a.eps, a.budget, os.path.join(work, "out", which, str(i)))
            for e, lu in r.items():
                res.setdefault((which, cls, e), []).append(lu)
        print(f"[{i + 1}/{len(insts)}] {cls} {os.path.basename(inst)}: " +
              "  ".join(f"{w} " + " ".join(f"{e}:{res[(w, cls, e)][-1]}" for e in a.eps.split(",")) for w, _ in exes),
              file=sys.stderr)
    classes = sorted({c for c, _ in insts})
    lines = ["| class | eps | n | " + " | ".join(f"{w}: closed / within one / median U/L / median U-L" for w, _ in exes) + " |",
             "|---|---|---:|" + "---|" * len(exes)]
    for cls in classes + ["all"]:
        for e in a.eps.split(","):
            cells = []
            for w, _ in exes:
                rows = [lu for (ww, c, ee), v in res.items() for lu in v if ww == w and ee == e and (cls == "all" or c == cls)]
                cells.append(" / ".join(summarise(rows)))
            n = sum(len(v) for (ww, c, ee), v in res.items() if ww == "after" and ee == e and (cls == "all" or c == cls))
            lines.append(f"| {cls} | {e} | {n} | " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text + "\n")
    print(f"bundles under {work}/out", file=sys.stderr)


if __name__ == "__main__":
    main()
