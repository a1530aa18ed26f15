#!/usr/bin/python3
"""Held-out closure benchmark: brackets on texts nobody tuned for.

The committed texts (certificates/real/texts/) have been bracketed, refreshed
and measured many times; a user runs the defaults once on a text of their
own.  This benchmark samples fresh stories from stories260K at run time
(`rankcert extract --generate PROMPT --seed S`, softmax sampling with a
portable RNG, so a seed names the same text everywhere and the text is not
in the repository), extracts all 40 heads, runs `rankcert bracket` on each
with the DEFAULT budget (no --time-budget), and reports per text: closed %
(L = U), within one % (U - L <= 1), median U/L and median U - L.  The
committed texts given with --committed are run the same way, side by side.

With --images N it also brackets N synthetic image-like bidirectional heads
(a CLS token and a 14 x 14 grid of patches, no mask; see image_heads).

usage: /usr/bin/python3 bench/fresh_bench.py [--seeds 1,2] [--steps 100] [--committed long] [--images N] [--image-seed S]
         [--eps 0.1] [--jobs 2] [--exe build/rankcert] [--markdown FILE] [--csv FILE] [--keep DIR]

Every bundle written is verified by the checker (bracket does that).
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "data/stories260K/stories260K.bin")
TOKENIZER = os.path.join(ROOT, "data/stories260K/tok512.bin")


def fresh_text(exe, seed, steps, prompt):
    p = subprocess.run([exe, "extract", "--checkpoint", MODEL, "--tokenizer", TOKENIZER, "--generate", prompt,
                        "--steps", str(steps), "--seed", str(seed)], capture_output=True, text=True, check=True)
    return p.stdout.strip()


def extract(exe, text_file, out, name):
    subprocess.run([exe, "extract", "--checkpoint", MODEL, "--tokenizer", TOKENIZER, "--text-file", text_file,
                    "--out", out, "--name", name], check=True, stdout=subprocess.DEVNULL)
    heads = sorted(f for f in os.listdir(out) if f.endswith(".json"))
    tokens = 0
    if heads:  # the token count from the first head's .npy header (no numpy needed)
        q = json.load(open(os.path.join(out, heads[0])))["instance"]["q"]["npy"]
        with open(os.path.join(out, q), "rb") as f:
            head = f.read(256).decode("latin-1")
        tokens = int(head.split("'shape': (")[1].split(",")[0])
    return [os.path.join(out, f) for f in heads], tokens


def write_f32_npy(path, rows):
    """A C-order float32 .npy (format 1.0) of a list of equal-length rows, without numpy."""
    import array
    n, m = len(rows), len(rows[0])
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (n, m)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    data = array.array("f", [x for r in rows for x in r])
    if sys.byteorder != "little":
        data.byteswap()
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("latin-1") + data.tobytes())


def image_heads(out, count, grid, seed0=1):
    """Synthetic bidirectional image-like heads (issue 43): a CLS token and a
    grid x grid of patches (197 tokens at grid 14), no mask, logits
      a * (-|p_i - p_j|^2 / (2 sigma^2))   (2-D locality, patches only)
      + c * <u_i, v_j>                     (content: rank 8, Gaussian)
      + b * [j = CLS]                      (a sink column)
    with sigma, a, c and b drawn per head from the seed.  Written as logits
    instances (float32 .npy sidecars); returns their paths."""
    import hashlib
    import math
    import random
    os.makedirs(out, exist_ok=True)
    n = 1 + grid * grid
    pos = [None] + [(r, c) for r in range(grid) for c in range(grid)]
    paths = []
    for h in range(count):
        seed = seed0 + h
        rng = random.Random(seed)
        sigma = rng.choice([1.0, 1.5, 2.0, 3.0])
        a = rng.choice([1.0, 2.0, 4.0])
        c = rng.choice([0.5, 1.0, 2.0])
        b = rng.choice([0.0, 2.0, 4.0])
        rank = 8
        u = [[rng.gauss(0, 1 / math.sqrt(rank)) for _ in range(rank)] for _ in range(n)]
        v = [[rng.gauss(0, 1 / math.sqrt(rank)) for _ in range(rank)] for _ in range(n)]
        rows = []
        for i in range(n):
            row = []
            for j in range(n):
                x = c * sum(p * q for p, q in zip(u[i], v[j]))
                if pos[i] and pos[j]:
                    d2 = (pos[i][0] - pos[j][0]) ** 2 + (pos[i][1] - pos[j][1]) ** 2
                    x -= a * d2 / (2 * sigma * sigma)
                if j == 0:
                    x += b
                row.append(x)
            rows.append(row)
        name = f"image{seed}"
        npy = os.path.join(out, name + ".logits.npy")
        write_f32_npy(npy, rows)
        digest = hashlib.sha256(open(npy, "rb").read()).hexdigest()
        inst = {"instance": {"kind": "logits", "logits": {"npy": name + ".logits.npy", "sha256": digest}},
                "provenance": {"generator": "bench/fresh_bench.py image_heads", "seed": seed, "grid": grid,
                               "sigma": sigma, "locality": a, "content": c, "content_rank": rank, "sink": b}}
        path = os.path.join(out, name + ".json")
        with open(path, "w") as f:
            json.dump(inst, f, indent=1)
        paths.append(path)
    return paths


def bracket(exe, inst, eps, out, budget=0):
    """One default (or `budget`-second) rankcert bracket run; (eps, L, U, seconds, log lines) per eps."""
    t = time.time()
    cmd = [exe, "bracket", "--instance", inst, "--eps", eps, "--out", out, "--json", "-q", "--log"]
    if budget:
        cmd += ["--time-budget", str(budget)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 2):
        raise SystemExit(f"{exe} bracket {inst}: exit {p.returncode}: {p.stderr.strip()[:300]}")
    res = json.loads(p.stdout)["results"]
    log = [l for l in p.stderr.splitlines() if l.startswith("rankcert bracket: ")]
    return [(r["eps"], r["lower"], r["upper"], time.time() - t, log) for r in res]


def summary(rows):
    L = [r[1] for r in rows]
    U = [r[2] for r in rows]
    n = len(rows)
    return {
        "heads": n,
        "closed": 100.0 * sum(l == u for l, u in zip(L, U)) / n,
        "within1": 100.0 * sum(u - l <= 1 for l, u in zip(L, U)) / n,
        "median_ratio": statistics.median(u / max(l, 1) for l, u in zip(L, U)),
        "median_gap": statistics.median(u - l for l, u in zip(L, U)),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="1", help="fresh texts: sampling seeds, comma separated")
    ap.add_argument("--steps", type=int, default=100, help="tokens sampled per fresh text (plus the prompt)")
    ap.add_argument("--prompt", default="Once upon a time")
    ap.add_argument("--committed", default="long", help="committed texts run beside them (certificates/real/texts), or ''")
    ap.add_argument("--eps", default="0.1")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--exe", default=os.path.join(ROOT, "build/rankcert"))
    ap.add_argument("--budget", type=float, default=0, help="seconds per head (--time-budget; 0: the default)")
    ap.add_argument("--images", type=int, default=0, help="also N synthetic image-like bidirectional heads (seeds S..S+N-1)")
    ap.add_argument("--image-seed", type=int, default=1, help="S, the first image head's seed (9 with --images 8: the held-out heads of docs/benchmarks.md)")
    ap.add_argument("--grid", type=int, default=14, help="patch grid of the image-like heads (1 + grid^2 tokens)")
    ap.add_argument("--heads", type=int, default=0, help="only the first N heads of each text (0: all 40)")
    ap.add_argument("--markdown", help="write the table here too")
    ap.add_argument("--csv", help="one line per head and eps here")
    ap.add_argument("--keep", help="keep instances and bundles in this folder (default: a temporary one)")
    a = ap.parse_args()
    work = a.keep or tempfile.mkdtemp(prefix="fresh-bench-")
    os.makedirs(work, exist_ok=True)
    sets = []
    for s in [x for x in a.seeds.split(",") if x]:
        text = fresh_text(a.exe, int(s), a.steps, a.prompt)
        path = os.path.join(work, f"fresh{s}.txt")
        with open(path, "w") as f:
            f.write(text + "\n")
        sets.append((f"fresh seed {s}", f"fresh{s}", path))
    for t in [x for x in a.committed.split(",") if x]:
        sets.append((f"committed {t}", t, os.path.join(ROOT, "certificates/real/texts", t + ".txt")))
    if a.images:
        sets.append((f"image-like, {a.grid}x{a.grid}+CLS", "images", None))
    table, lines = [], []
    for label, name, path in sets:
        if path is None:
            heads, tokens = image_heads(os.path.join(work, "heads-images"), a.images, a.grid, a.image_seed), 1 + a.grid * a.grid
        else:
            heads, tokens = extract(a.exe, path, os.path.join(work, "heads-" + name), name)
        if a.heads:
            heads = heads[:a.heads]
        t0 = time.time()
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            futs = {h: pool.submit(bracket, a.exe, h, a.eps, os.path.join(work, "out-" + name, os.path.basename(h)[:-5]), a.budget)
                    for h in heads}
            done = 0
            results = {}
            for h in heads:
                results[h] = futs[h].result()
                done += 1
                print(f"\r{label}: {done}/{len(heads)} heads, {time.time() - t0:.0f} s", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        by_eps = {}
        for h in heads:
            for eps, lo, up, secs, log in results[h]:
                by_eps.setdefault(eps, []).append((h, lo, up))
                lines.append([label, os.path.basename(h)[:-5], eps, lo, up, f"{secs:.1f}", " | ".join(log)])
        for eps, rows in sorted(by_eps.items()):
            table.append((label, tokens, eps, summary(rows), time.time() - t0))
    out = ["| text | tokens | eps | heads | closed | within one | median U/L | median U - L | wall |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for label, tokens, eps, s, wall in table:
        out.append(f"| {label} | {tokens} | {eps} | {s['heads']} | {s['closed']:.0f}% | {s['within1']:.0f}% | "
                   f"{s['median_ratio']:.3f} | {s['median_gap']:g} | {wall:.0f} s |")
    print("\n".join(out))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("\n".join(out) + "\n")
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("text,head,eps,lower,upper,seconds,log\n")
            for l in lines:
                f.write(",".join(str(x).replace(",", ";") for x in l) + "\n")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
