#!/usr/bin/python3
"""Place the bundles of a `rankcert survey` folder into a corpus, keeping at
each end of every bracket the better of the committed and the new certificate.

For every row of SURVEY/survey.jsonl whose verdict is `bracketed`, the bundle
SURVEY/claims/ID/... goes to DEST/ID.json (DEST defaults to the folder of the
row's instance file, so a survey over certificates/real/stories260K/long puts
long-L0-H0-t1-eps0.1.json beside long-L0-H0.json, the corpus's names).  If
DEST/ID.json exists and is a bundle of the same instance (equal instance
objects, sidecar hashes included), the written bundle takes its lower
certificates from whichever has the larger L and its upper certificates from
whichever has the smaller U, so no bracket gets wider; a bundle of another
instance is replaced.  Sidecars are copied with the certificates that name
them, and sidecars no bundle of DEST names any more are removed (instance
sidecars are kept).

Nothing here is trusted: the merged bundles were never seen by the producer's
check, so callers verify DEST afterwards (tools/build_real_corpus.sh and
tools/build_real512.sh do, through their summary scripts).

usage: /usr/bin/python3 tools/corpus_merge.py SURVEY [--dest DIR] [--tsv FILE]
prints one line: how many bundles were placed, tightened, unchanged, replaced.
"""
import argparse
import hashlib
import json
import os
import shutil
import sys


def sidecars(cert):
    """File names a certificate (or instance) refers to (any {"npy": name} below it)."""
    out = []
    if isinstance(cert, dict):
        for key in ("npy", "safetensors"):
            if isinstance(cert.get(key), str):
                out.append(cert[key])
        for v in cert.values():
            out += sidecars(v)
    elif isinstance(cert, list):
        for v in cert:
            out += sidecars(v)
    return out


def _load(path):
    with open(path) as f:
        return json.load(f)


def _same_file(a, b):
    with open(a, "rb") as f, open(b, "rb") as g:
        return f.read() == g.read()


def _plain_name(name, what):
    """A file name inside its folder (no separators, no . or ..), else an error:
    nothing read from a bundle or a survey may point outside the folders."""
    if not isinstance(name, str) or not name or name in (".", "..") or os.path.basename(name) != name or "\\" in name:
        raise ValueError(f"corpus_merge: {what}: {name!r} is not a plain file name")
    return name


def _copy(names, src_dir, dst_dir, kept=()):
    """Copy sidecars; one that a kept certificate names is never overwritten
    with other content (that would change a certificate we keep)."""
    for f in names:
        _plain_name(f, "sidecar")
        src, dst = os.path.join(src_dir, f), os.path.join(dst_dir, f)
        if os.path.abspath(src) == os.path.abspath(dst):
            continue
        if f in kept and os.path.exists(dst) and not _same_file(src, dst):
            raise RuntimeError(f"corpus_merge: {dst}: a kept certificate names it, and the new one has other content")
        shutil.copyfile(src, dst)


def _canonical(x, folder):
    """An instance with every sidecar reference replaced by its file's SHA-256,
    so the same instance written by two runs compares equal."""
    if isinstance(x, dict):
        if isinstance(x.get("npy"), str):
            path = os.path.join(folder, x["npy"])
            try:
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            except OSError:
                digest = "missing:" + x["npy"]
            return {"sha256-of-file": digest, **{k: _canonical(v, folder) for k, v in x.items() if k not in ("npy", "sha256")}}
        return {k: _canonical(v, folder) for k, v in x.items()}
    if isinstance(x, list):
        return [_canonical(v, folder) for v in x]
    return x


def _write(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    os.replace(tmp, path)


def merge(old_path, new_path):
    """Merge the bundle new_path into old_path (created when missing).

    Returns (old (L, U) or None, written (L, U), how): how is "placed" (no old
    bundle), "replaced" (the old one is of another instance), "tightened" or
    "unchanged"."""
    new = _load(new_path)
    folder, newdir = os.path.dirname(os.path.abspath(old_path)), os.path.dirname(os.path.abspath(new_path))
    nl, nu = new["claim"]["lower"], new["claim"]["upper"]
    old = _load(old_path) if os.path.exists(old_path) else None
    if old is None or _canonical(old.get("instance"), folder) != _canonical(new.get("instance"), newdir):
        _copy(sidecars(new.get("instance")) + sidecars(new["certificates"]), newdir, folder)
        _write(old_path, new)
        how = "placed" if old is None else "replaced"
        before = None if old is None else (old["claim"]["lower"], old["claim"]["upper"])
        return before, (nl, nu), how
    ol, ou = old["claim"]["lower"], old["claim"]["upper"]
    if nl <= ol and nu >= ou:
        return (ol, ou), (ol, ou), "unchanged"
    pick = {"lower": new if nl > ol else old, "upper": new if nu < ou else old}
    kept = set(sidecars(old.get("instance")))
    for c in old["certificates"]:
        if pick.get(c.get("bound")) is old:
            kept.update(sidecars(c))
    certs = []
    for bound in ("lower", "upper"):
        src = pick[bound]
        for c in src["certificates"]:
            if c.get("bound") != bound:
                continue
            if src is new:
                _copy(sidecars(c), newdir, folder, kept)
            certs.append(c)
    merged = dict(old)
    merged["certificates"] = certs
    merged["claim"] = {"lower": max(ol, nl), "upper": min(ou, nu)}
    prov = dict(old.get("provenance", {}))
    prov["producer"] = new.get("provenance", {}).get("producer", prov.get("producer"))
    merged["provenance"] = prov
    _write(old_path, merged)
    return (ol, ou), (merged["claim"]["lower"], merged["claim"]["upper"]), "tightened"


def prune(folder):
    """Remove .npy files of folder that no JSON document there names."""
    named = set()
    for f in os.listdir(folder):
        if f.endswith(".json"):
            try:
                doc = _load(os.path.join(folder, f))
            except (OSError, ValueError):
                continue
            named.update(sidecars(doc))
    for f in os.listdir(folder):
        if f.endswith(".npy") and f not in named:
            os.remove(os.path.join(folder, f))


def place(survey, dest=None, tsv=None):
    counts = {"placed": 0, "tightened": 0, "unchanged": 0, "replaced": 0, "not bracketed": 0}
    rows, folders = [], set()
    with open(os.path.join(survey, "survey.jsonl")) as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            res_path = os.path.join(survey, "results", row["id"] + ".json")
            res = _load(res_path) if os.path.exists(res_path) else {}
            if res.get("verdict") != "bracketed":
                counts["not bracketed"] += 1
                print(f"corpus_merge: {row['id']}: {res.get('verdict', 'no result')} {res.get('error', '')}".rstrip(),
                      file=sys.stderr)
                continue
            target_dir = dest or os.path.dirname(row["instance"])
            os.makedirs(target_dir, exist_ok=True)
            folders.add(target_dir)
            target = os.path.join(target_dir, _plain_name(row["id"], "survey id") + ".json")
            before, after, how = merge(target, os.path.join(survey, res["bundle"]))
            counts[how] += 1
            rows.append((row["id"] + ".json", before, after))
    for d in folders:
        prune(d)
    if tsv:
        with open(tsv, "w") as f:
            f.write("bundle\told_L\told_U\tnew_L\tnew_U\n")
            for name, b, c in sorted(rows):
                b = b or ("", "")
                f.write(f"{name}\t{b[0]}\t{b[1]}\t{c[0]}\t{c[1]}\n")
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("survey", help="a rankcert survey folder (survey.jsonl, results/, claims/)")
    ap.add_argument("--dest", help="put every bundle here (default: beside its instance file)")
    ap.add_argument("--tsv", help="write bundle, old and new L and U per bundle to this file")
    a = ap.parse_args()
    if not os.path.exists(os.path.join(a.survey, "survey.jsonl")):
        sys.exit(f"corpus_merge: {a.survey}: not a survey folder (no survey.jsonl)")
    try:
        c = place(a.survey, a.dest, a.tsv)
    except (ValueError, KeyError, OSError) as e:
        sys.exit(f"corpus_merge: {a.survey}: {e}")
    print(", ".join(f"{v} {k}" for k, v in c.items()))
    return 1 if c["not bracketed"] else 0


if __name__ == "__main__":
    sys.exit(main())
