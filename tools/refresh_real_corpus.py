#!/usr/bin/python3
"""Re-run today's `rankcert bracket` on the committed stories260K heads and keep
whichever certificate is better at each end of every bracket.

For every (head, temperature) of the chosen texts under
certificates/real/stories260K/, brackets the instance at eps 0.05, 0.1, 0.2
into a scratch folder, then, per eps, writes a bundle whose lower certificates
come from whichever of (committed, new) has the larger L and whose upper
certificates come from whichever has the smaller U.  So no committed bracket
gets wider.  Sidecars are copied with the certificates that name them; files
no bundle names any more are removed.  Finally the folder is re-verified by
`rankcert verify` (the merged bundles were never seen by the producer's own
check, so this is the check that counts) and the summary is rewritten.

--texts berttiny refreshes certificates/real/berttiny (the same layout).
With --start both searches start from the committed certificates
(--start-from), so the factor search begins at the committed U.

--eps picks the tolerances (default all three) and --open-only skips, per
(head, temperature), the tolerances whose committed bracket is already closed,
so the whole budget goes to the brackets that can still move; --max-gap G
also skips those whose committed U - L is above G, --min-gap G those
below G.  --seed S is passed to rankcert bracket: a second pass with the
same seed repeats the first pass's Gaussian starts wherever the committed
factor did not change, so give each pass its own.

usage: /usr/bin/python3 tools/refresh_real_corpus.py [--texts medium,long|berttiny] [--budget 10] [--jobs 2] [--focus both|lower|upper] [--start] [--eps 0.05,0.1,0.2] [--open-only] [--min-gap G] [--max-gap G] [--seed S]
"""
import argparse
import concurrent.futures as cf
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_merge import merge, prune  # noqa: E402  (one merge for refresh and survey placement)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RC = os.environ.get("RANKCERT", os.path.join(ROOT, "build", "rankcert"))
EPS = ("0.05", "0.1", "0.2")


def bracket(inst, temp, eps, budget, scratch, focus, start, seed):
    out = os.path.join(scratch, f"{os.path.basename(inst)[:-5]}-t{temp}")
    cmd = [RC, "bracket", "--instance", inst, "--temperature", temp, "--eps", ",".join(eps),
           "--out", out, "--time-budget", str(budget), "--threads", "1", "--json", "-q", "--seed", str(seed)]
    if focus in ("lower", "upper"):
        # Spend the budget on one end.
        cmd += ["--focus", focus]
    if focus in ("lower", "upper") or start:
        # Grow from the committed certificates.
        for e in eps:
            cmd += ["--start-from", f"{inst[:-5]}-t{temp}-eps{e}.json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 2):
        raise RuntimeError(f"bracket {inst} t={temp}: exit {p.returncode}: {p.stderr.strip()[:300]}")
    return {r["eps"]: r["bundle"] for r in json.loads(p.stdout)["results"]}


def gap(path):
    claim = json.load(open(path))["claim"]
    return claim["upper"] - claim["lower"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--texts", default="medium,long")
    ap.add_argument("--budget", type=float, default=10)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--focus", choices=("both", "lower", "upper"), default="both",
                    help="lower (upper): start from the committed certificates and search only for larger L (smaller U)")
    ap.add_argument("--start", action="store_true",
                    help="start both searches from the committed certificates (--start-from)")
    ap.add_argument("--eps", default=",".join(EPS),
                    help="tolerances to refresh, a subset of " + ",".join(EPS))
    ap.add_argument("--open-only", action="store_true",
                    help="skip the tolerances whose committed bracket is closed")
    ap.add_argument("--max-gap", type=int, default=None,
                    help="skip the tolerances whose committed U - L is larger (with --open-only: "
                         "spend the time on the brackets one or two ranks from within one)")
    ap.add_argument("--seed", type=int, default=0,
                    help="rankcert bracket --seed: another seed tries other Gaussian starts in the "
                         "late factor search (the same seed repeats a pass's starts)")
    ap.add_argument("--min-gap", type=int, default=None,
                    help="skip the tolerances whose committed U - L is smaller (e.g. 2: "
                         "only brackets that are not yet within one rank)")
    a = ap.parse_args()
    chosen = tuple(e for e in a.eps.split(",") if e)
    if not chosen or any(e not in EPS for e in chosen):
        sys.exit(f"refresh: --eps must be a subset of {','.join(EPS)}, got {a.eps!r}")
    base = os.path.join(ROOT, "certificates/real/stories260K")
    folder = lambda t: os.path.join(ROOT, "certificates/real/berttiny") if t == "berttiny" else os.path.join(base, t)  # noqa: E731
    work = []
    for t in a.texts.split(","):
        d = folder(t)
        for f in sorted(os.listdir(d)):
            if f.endswith(".json") and "-eps" not in f:
                for temp in ("0.5", "1", "2"):
                    inst = os.path.join(d, f)
                    eps = chosen
                    lo = 1 if a.open_only else 0
                    if a.min_gap is not None:
                        lo = max(lo, a.min_gap)
                    hi = a.max_gap if a.max_gap is not None else float("inf")
                    eps = tuple(e for e in eps if lo <= gap(f"{inst[:-5]}-t{temp}-eps{e}.json") <= hi)
                    if eps:
                        work.append((inst, temp, eps))
    scratch = tempfile.mkdtemp(prefix="rankcert-refresh-")
    changed = 0
    rows = []
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        futs = {ex.submit(bracket, inst, temp, eps, a.budget, scratch, a.focus, a.start, a.seed): (inst, temp, eps)
                for inst, temp, eps in work}
        for i, fu in enumerate(cf.as_completed(futs), 1):
            inst, temp, eps = futs[fu]
            new = fu.result()
            for e in eps:
                old_path = f"{inst[:-5]}-t{temp}-eps{e}.json"
                before, after, _ = merge(old_path, new[e])
                changed += before != after
                rows.append((os.path.basename(old_path), before, after))
            print(f"\r{i}/{len(work)} runs, {changed} brackets tightened", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    for t in a.texts.split(","):
        prune(folder(t))
    shutil.rmtree(scratch)
    with open(os.path.join(ROOT, "certificates/real/refresh.tsv"), "w") as f:
        f.write("bundle\told_L\told_U\tnew_L\tnew_U\n")
        for name, b, c in sorted(rows):
            f.write(f"{name}\t{b[0]}\t{b[1]}\t{c[0]}\t{c[1]}\n")
    print(f"{changed} of {len(rows)} brackets tightened; see certificates/real/refresh.tsv")
    # The merged bundles were never seen by the producer's own check: verify
    # the folder (real_summary.py does, and records every verdict) and
    # rewrite SUMMARY.md, summary.csv and the plot.
    real = os.path.join(ROOT, "certificates/real")
    v = subprocess.run([RC, "verify", "--quiet", real], capture_output=True, text=True)
    print(v.stdout.strip().splitlines()[-1] if v.stdout.strip() else v.stderr.strip()[:300])
    if v.returncode != 0:
        sys.exit(f"refresh: rankcert verify {real} exited {v.returncode}; summary not rewritten")
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "real_summary.py"), real], check=True)


if __name__ == "__main__":
    main()
