#!/usr/bin/python3
"""Summarise the real-size corpus (tools/build_real512.sh; standard library only).

Re-verifies every bundle under OUT with `build/rankcert verify --json` (the
verdicts below come from that run), reads the producer's per-head timings, and
writes DEST/SUMMARY.md and DEST/summary.csv.  OUT is what
tools/build_real512.sh leaves: OUT/survey (a `rankcert survey` folder, the
timings) and OUT/bundles (its bundles placed by tools/corpus_merge.py), or,
from before the survey, OUT/<head>.result.json of `rankcert bracket --json`.

usage: /usr/bin/python3 tools/real512_summary.py OUT DEST [HOW] [--earlier CSV]
                                                    [--combine] [--label TEXT] [--earlier-label TEXT]
       (HOW: how the bundles were made, for the page's first line; default
       "with `rankcert bracket`'s default time budget")
       --earlier CSV: an earlier summary.csv; the brackets (head and eps)
       that OUT does not hold (e.g. a pass over head 0 only, or at one eps)
       keep their rows from it, and the
       page says which rows were re-verified now and which were not.
       --combine: for a head whose bundles are not committed, each end of a
       row is the better of OUT's verified bundle and the earlier verified
       row (L the larger, U the smaller).  Each end is certified on its own
       (a lower certificate proves L <= r_eps, an upper one r_eps <= U), so
       the bracket holds with one end from each pass; the columns L_from and
       U_from say which.  Committed heads always take OUT's row whole (their
       earlier bundles are replaced), and a committed row that came out
       wider than the earlier one is reported and fails the run.
       --label TEXT: this pass's name in L_from/U_from (default: today's
       date); earlier rows without those columns are labelled "earlier", or
       by --earlier-label TEXT.
"""
import csv
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import eps_gap  # noqa: E402  (tools/eps_gap.py)


def folder_bytes(folder):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(folder) for f in fs)


def earlier_rows(path, name="earlier"):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows.append({"layer": int(r["layer"]), "head": int(r["head"]), "n": int(r["n"]), "eps": r["eps"],
                         "L": int(r["L"]), "U": int(r["U"]), "closed": r["closed"] == "True",
                         "lower_kind": r["lower_kind"], "upper_kind": r["upper_kind"], "seconds": float(r["seconds"]),
                         "verdict": r["verdict"], "committed": r["committed"] == "True",
                         "L_from": r.get("L_from") or name, "U_from": r.get("U_from") or name})
    return rows


def kept_rows(old_rows, fresh_rows):
    """The earlier rows whose bracket (layer, head, eps) this pass did not run."""
    have = {(r["layer"], r["head"], r["eps"]) for r in fresh_rows}
    return [r for r in old_rows if (r["layer"], r["head"], r["eps"]) not in have]


def combine(fresh, old):
    """The row whose L is the larger and whose U is the smaller of two verified rows."""
    if old["verdict"] != "verified":
        return fresh
    if fresh["verdict"] != "verified":
        print(f"L{fresh['layer']} H{fresh['head']} eps {fresh['eps']}: this pass's bundle says {fresh['verdict']}; "
              "the earlier row is kept", file=sys.stderr)
        return old
    row = dict(fresh)
    if old["L"] > fresh["L"]:
        row.update(L=old["L"], lower_kind=old["lower_kind"], L_from=old["L_from"])
    if old["U"] < fresh["U"]:
        row.update(U=old["U"], upper_kind=old["upper_kind"], U_from=old["U_from"])
    if row["L"] > row["U"]:
        # Both ends are certified, so this cannot happen unless a certificate
        # (or a recorded row) is wrong: stop rather than print it.
        sys.exit(f"real512_summary.py: L{row['layer']} H{row['head']} eps {row['eps']}: L {row['L']} ({row['L_from']}) "
                 f"> U {row['U']} ({row['U_from']}); one of the two rows is wrong")
    row["closed"] = row["L"] == row["U"]
    return row


def take_option(args, name, default, what):
    """Remove `name VALUE` from args and return VALUE (default when absent)."""
    if name not in args:
        return default
    i = args.index(name)
    if i + 1 >= len(args):
        sys.exit(f"real512_summary.py: {name} needs {what}")
    value = args[i + 1]
    del args[i:i + 2]
    return value


def kind_at(doc, bound):
    """The kind of the bundle's certificate that gives its claimed end."""
    end = doc["claim"]["lower" if bound == "lower" else "upper"]
    for c in doc.get("certificates", []):
        if c.get("bound") == bound and c.get("rank") == end:
            return c.get("kind", "-")
    return "-"


def head_results(out, survey, bundle_dir):
    """(head, [{"eps", "bundle", "seconds", ...}]) per head, from a survey folder
    (its rows' times; the bundles as placed in bundle_dir) or from the
    per-head `rankcert bracket --json` outputs of earlier builds."""
    if os.path.isdir(survey):
        by_head = {}
        for name in sorted(os.listdir(os.path.join(survey, "results"))):
            if not name.endswith(".json"):
                continue
            with open(os.path.join(survey, "results", name)) as f:
                res = json.load(f)
            bundle = os.path.join(bundle_dir, res["id"] + ".json")
            if res.get("verdict") != "bracketed" or not os.path.exists(bundle):
                print(f"real512_summary.py: {res['id']}: {res.get('verdict')}; left out", file=sys.stderr)
                continue
            head = res["id"].rsplit("-eps", 1)[0]
            # The placed bundle may keep an end of an earlier pass: its kinds are read from it.
            by_head.setdefault(head, []).append({"eps": res["eps"], "bundle": bundle, "seconds": res["seconds"]})
        return sorted(by_head.items())
    found = []
    for name in sorted(os.listdir(out)):
        if not name.endswith(".result.json"):
            continue
        with open(os.path.join(out, name)) as f:
            text = f.read()
        if not text.strip():  # a head still running, or one whose run failed
            print(f"real512_summary.py: {name} is empty; that head is left out", file=sys.stderr)
            continue
        found.append((name[: -len(".result.json")], json.loads(text)["results"]))
    return found


def main():
    args = sys.argv[1:]
    combined = "--combine" in args
    if combined:
        args.remove("--combine")
    label = take_option(args, "--label", time.strftime("%Y-%m-%d"), "a name")
    earlier_label = take_option(args, "--earlier-label", "earlier", "a name")
    earlier = take_option(args, "--earlier", None, "an existing summary.csv")
    if earlier is not None and not os.path.isfile(earlier):
        sys.exit("real512_summary.py: --earlier needs an existing summary.csv")
    if combined and earlier is None:
        sys.exit("real512_summary.py: --combine needs --earlier CSV")
    if len(args) < 2:
        sys.exit("usage: real512_summary.py OUT DEST [HOW] [--earlier CSV] [--combine] [--label TEXT] [--earlier-label TEXT]")
    out, dest = args[0], args[1]
    survey = os.path.join(out, "survey")
    bundle_dir = os.path.join(out, "bundles") if os.path.isdir(survey) else out
    t0 = time.time()
    p = subprocess.run([os.path.join(ROOT, "build", "rankcert"), "verify", "--json", "--quiet", bundle_dir],
                       capture_output=True, text=True)
    verify_seconds = time.time() - t0
    verdict = {os.path.normpath(b["bundle"]): b["verdict"] for b in json.loads(p.stdout)["bundles"]}
    rows, head_seconds = [], {}
    for head, results in head_results(out, survey, bundle_dir):
        head_seconds[head] = sum(r["seconds"] for r in results)
        for r in results:
            with open(r["bundle"]) as f:
                doc = json.load(f)
            prov = doc.get("provenance", {})
            rows.append({"layer": prov.get("layer"), "head": prov.get("head"), "n": prov.get("tokens"), "eps": r["eps"],
                         "L": doc["claim"]["lower"], "U": doc["claim"]["upper"],
                         "closed": doc["claim"]["lower"] == doc["claim"]["upper"],
                         "lower_kind": r.get("lower_kind") or kind_at(doc, "lower"),
                         "upper_kind": r.get("upper_kind") or kind_at(doc, "upper"), "seconds": round(r["seconds"], 1),
                         "verdict": verdict.get(os.path.normpath(r["bundle"]), "?"),
                         "committed": prov.get("head") == 0, "L_from": label, "U_from": label})
    fresh = len(rows)
    n_combined = 0
    if earlier:
        old_rows = earlier_rows(earlier, earlier_label)
        if combined:
            old = {(r["layer"], r["head"], r["eps"]): r for r in old_rows}
            wider = []
            for i, r in enumerate(rows):
                o = old.get((r["layer"], r["head"], r["eps"]))
                if o is None:
                    continue
                if r["committed"]:
                    if r["L"] < o["L"] or r["U"] > o["U"]:
                        wider.append(f"L{r['layer']} H{r['head']} eps {r['eps']}: [{o['L']}, {o['U']}] -> [{r['L']}, {r['U']}]")
                    continue
                rows[i] = combine(r, o)
                n_combined += rows[i]["L_from"] != rows[i]["U_from"]
            if wider:
                sys.exit("real512_summary.py: committed brackets came out wider: " + "; ".join(wider))
        kept = kept_rows(old_rows, rows)
        for r in kept:
            key = f"full512-L{r['layer']}-H{r['head']}"
            head_seconds[key] = head_seconds.get(key, 0) + r["seconds"]
        rows += kept
    rows.sort(key=lambda r: (r["layer"], r["head"], float(r["eps"])))
    n_ok = sum(r["verdict"] == "verified" for r in rows)
    how = args[2] if len(args) > 2 else "with `rankcert bracket`'s default time budget"
    if fresh == len(rows):
        checked = (f"All {len(rows)} bundles were re-verified by `rankcert verify`: {n_ok} of {len(rows)} verified, "
                   f"in {verify_seconds:.1f} s for all of them.")
        sizes = (f"All {len(rows)} bundles with their sidecars: {folder_bytes(bundle_dir) / 2**20:.0f} MiB (float16/float32 "
                 f"factors of rank 250-470; too large to commit).  ")
    else:
        kept_committed = sum(r["committed"] for r in kept)
        if kept_committed:
            # Their bundles are in DEST: verify them there, now.
            p = subprocess.run([os.path.join(ROOT, "build", "rankcert"), "verify", "--json", "--quiet", dest],
                               capture_output=True, text=True)
            here = {}
            for b in json.loads(p.stdout)["bundles"]:
                with open(b["bundle"]) as f:
                    doc = json.load(f)
                prov = doc.get("provenance", {})
                here[(prov.get("layer"), prov.get("head"), doc.get("eps"))] = (b["verdict"], b["lower"], b["upper"])
            for r in kept:
                if r["committed"]:
                    v = here.get((r["layer"], r["head"], r["eps"]))
                    # A committed row must be what its bundle in DEST certifies now.
                    r["verdict"] = "missing" if v is None else v[0] if (v[1], v[2]) == (r["L"], r["U"]) else "mismatch"
            n_ok = sum(r["verdict"] == "verified" for r in rows)
        parts = []
        if kept_committed:
            parts.append(f"{kept_committed} from the bundles committed in this folder, re-verified there now")
        if len(kept) - kept_committed:
            parts.append(f"{len(kept) - kept_committed} verified then, whose bundles are not committed")
        if fresh:
            checked = (f"The {fresh} bundles of this pass were re-verified by `rankcert verify` in {verify_seconds:.1f} s; "
                       f"the other {len(rows) - fresh} rows are kept from the earlier summary.csv ({'; '.join(parts)}).  "
                       f"{n_ok} of {len(rows)} rows say verified.")
        else:
            checked = (f"No new runs: all {len(rows)} rows are kept from the earlier summary.csv ({'; '.join(parts)}); "
                       f"columns L from / U from say which pass certified each end.  {n_ok} of {len(rows)} rows say "
                       "verified.")
        sizes = ""
    if combined:
        checked += (f"  With `--combine`, {n_combined} rows take one end from this pass and the other from the earlier "
                    "one (columns L from / U from): each end is certified by its own verified certificate, so the "
                    "bracket holds either way; the committed heads' rows are whole bundles.")
    md = ["# Real-size heads: stories260K over 512 tokens", "",
          f"Generated by `tools/build_real512.sh` (bundles, {how}) and "
          "`tools/real512_summary.py` (this page).  The text is the model's own greedy continuation of "
          "\"Once upon a time\" (`../texts/full512.txt`, 512 tokens with BOS, the model's full context).", "",
          checked, "",
          "L and U are certified: L <= r_eps(A) <= U for the exact causal softmax of the stored float32 post-RoPE "
          "queries and keys (scale 1/sqrt(8)).", "",
          "## By eps", "",
          "| eps | heads | closed | median L | median U | median U/L | median U - L | worst U/L |",
          "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for eps in sorted({r["eps"] for r in rows}, key=float):
        rs = [r for r in rows if r["eps"] == eps]
        ratio = [r["U"] / max(r["L"], 1) for r in rs]
        md.append(f"| {eps} | {len(rs)} | {sum(r['closed'] for r in rs)} | {statistics.median(r['L'] for r in rs):g} | "
                  f"{statistics.median(r['U'] for r in rs):g} | {statistics.median(ratio):.2f} | "
                  f"{statistics.median(r['U'] - r['L'] for r in rs):g} | {max(ratio):.2f} |")
    profiles = {}
    for r in rows:
        key = (("group", "full512"), ("layer", r["layer"]), ("head", r["head"]), ("n", r["n"]))
        profiles.setdefault(key, {})[float(r["eps"])] = (r["L"], r["U"])
    md += ["", "## Lower and upper ends in eps", "",
           "At these ranks a bracket's width says more when read in eps: the factor c at which the upper "
           "certificates reach rank L(eps) (log-log interpolation between the three eps; `tools/eps_gap.py`, "
           "which also gives the committed corpus's shorter texts for comparison).  c = 1 for a closed bracket.", ""]
    text, cells = eps_gap.table(profiles, [0.05, 0.1])
    md.append(text if cells else "No head has a bracket at eps 0.05 or 0.1 and at a larger eps.")
    secs = sorted(head_seconds.values())
    md += ["", "## Time and size", "",
           f"Producer wall time per head, in the run whose bundles were verified now (for the kept rows, in theirs; three eps, one BLAS and one "
           f"checker thread per job; the first line says how the runs were made): "
           f"median {statistics.median(secs):.0f} s, max {max(secs):.0f} s.", "",
           f"{sizes}Committed here: the 40 instances and the bundles of head 0 of "
           f"every layer: {folder_bytes(dest) / 2**20:.1f} MiB.  `tools/build_real512.sh` rebuilds all of them.", "",
           "## Every head", "",
           "| layer | head | eps | L | U | U/L | lower by | upper by | s | verdict | committed | L from | U from |",
           "|---:|---:|---:|---:|---:|---:|---|---|---:|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['layer']} | {r['head']} | {r['eps']} | {r['L']} | {r['U']} | {r['U'] / max(r['L'], 1):.2f} | "
                  f"{r['lower_kind']} | {r['upper_kind']} | {r['seconds']} | {r['verdict']} | "
                  f"{'yes' if r['committed'] else ''} | {r['L_from']} | {r['U_from']} |")
    # Written after the committed rows were re-verified in DEST, so a missing or
    # changed bundle shows in the CSV's verdict as it does on the page.
    cols = ["layer", "head", "n", "eps", "L", "U", "closed", "lower_kind", "upper_kind", "seconds", "verdict", "committed",
            "L_from", "U_from"]
    with open(os.path.join(dest, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow([r[c] for c in cols])
    with open(os.path.join(dest, "SUMMARY.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print(f"{len(rows)} rows ({fresh} re-verified now), {n_ok} verified, {sum(r['closed'] for r in rows)} closed; verify took {verify_seconds:.1f} s")
    return 0 if n_ok == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
