#!/usr/bin/python3
"""Collect single-bracket runs of the real-size corpus into one folder per head,
and optionally install them over the committed bundles (standard library, and
the rankcert package of python/ for sha256_file).

A pass that runs each bracket alone (one `rankcert bracket --eps E --out RUN`
per bracket, e.g. `--focus lower --start-from` the committed bundle) leaves
one folder per bracket, each with the bundle, its sidecars and the
`--json` output as RUN/result.json.  tools/real512_summary.py wants what
tools/build_real512.sh writes instead: OUT/<head>/ with the head's bundles
and OUT/<head>.result.json.  This script builds that, and with --install
DEST puts the bundles into DEST (certificates/real/full512) in place of the
head's committed ones; a bracket the pass did not change keeps its committed
bundle (and the producer's notes in it).

Sidecar names: a run names the sidecars of its --start-from certificates
after the head (full512-L0-H0.start0-2.u.npy), so two runs of the same head
can write different content under one name.  A sidecar whose content is
already in the target folder keeps that file's name; one whose name is taken
by other content is renamed after its bundle (full512-L0-H0-eps0.1.start0-2.u.npy,
then a counter), and the bundle's reference is rewritten (its sha256 is
unchanged, so the checker sees the same bytes).  After --install, sidecars
in DEST that no bundle or instance references any more are removed.

usage: /usr/bin/python3 tools/install_real512.py OUT RUN [RUN ...] [--install DEST]
"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from rankcert import sha256_file as sha256  # noqa: E402


def sidecar_refs(doc):
    """Every {"npy": name, ...} object in a bundle, in order."""
    out = []

    def walk(x):
        if isinstance(x, dict):
            if isinstance(x.get("npy"), str):
                out.append(x)
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(doc)
    return out


def rewrite(text, doc):
    """The bundle text with its sidecar names replaced by doc's.  The text is
    kept byte for byte otherwise (the producer's compact JSON, numbers as it
    spelt them); json.loads of the result must equal doc."""
    old = sidecar_refs(json.loads(text))
    for a, b in zip(old, sidecar_refs(doc)):
        if a["npy"] != b["npy"]:
            text = text.replace(f'"npy":"{a["npy"]}"', f'"npy":"{b["npy"]}"')
    if json.loads(text) != doc:
        sys.exit("install_real512.py: a sidecar name could not be rewritten in place")
    return text


def place(src_dir, doc, stem, dest_dir):
    """Copy the sidecars doc references from src_dir into dest_dir without
    overwriting other content; rewrite doc's names where they change."""
    by_hash = {}
    for name in os.listdir(dest_dir):
        if name.endswith(".npy"):
            by_hash.setdefault(sha256(os.path.join(dest_dir, name)), name)
    for ref in sidecar_refs(doc):
        src = os.path.join(src_dir, ref["npy"])
        digest = sha256(src)
        if digest in by_hash:
            ref["npy"] = by_hash[digest]
            continue
        name = ref["npy"]
        if os.path.exists(os.path.join(dest_dir, name)):
            rest = name.split(".", 1)[1] if "." in name else name
            name = f"{stem}.{rest}"
            k = 2
            while os.path.exists(os.path.join(dest_dir, name)):
                name = f"{stem}.{k}.{rest}"
                k += 1
        shutil.copyfile(src, os.path.join(dest_dir, name))
        by_hash[digest] = name
        ref["npy"] = name


def main(argv):
    install = None
    if "--install" in argv:
        i = argv.index("--install")
        install = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if len(argv) < 3:
        sys.exit(__doc__)
    out, runs = argv[1], argv[2:]
    os.makedirs(out, exist_ok=True)
    results = {}  # head -> [result]
    for run in runs:
        with open(os.path.join(run, "result.json")) as f:
            res = json.load(f)["results"]
        for r in res:
            bundle = r["bundle"]
            stem = os.path.basename(bundle)[: -len(".json")]
            head = stem.rsplit("-eps", 1)[0]
            hdir = os.path.join(out, head)
            os.makedirs(hdir, exist_ok=True)
            with open(bundle) as f:
                text = f.read()
            doc = json.loads(text)
            place(os.path.dirname(bundle), doc, stem, hdir)
            target = os.path.join(hdir, stem + ".json")
            if os.path.exists(target):
                sys.exit(f"install_real512.py: {target}: two runs of the same bracket")
            with open(target, "w") as f:
                f.write(rewrite(text, doc))
            r = dict(r)
            r["bundle"] = target
            results.setdefault(head, []).append(r)
    for head, rs in results.items():
        rs.sort(key=lambda r: float(r["eps"]))
        with open(os.path.join(out, head + ".result.json"), "w") as f:
            json.dump({"results": rs}, f, indent=1)
            f.write("\n")
    if install is None:
        return
    for head, rs in results.items():
        for r in rs:
            stem = os.path.basename(r["bundle"])[: -len(".json")]
            with open(r["bundle"]) as f:
                text = f.read()
            doc = json.loads(text)
            old = os.path.join(install, stem + ".json")
            if os.path.exists(old):
                with open(old) as f:
                    if json.load(f)["claim"] == doc["claim"]:
                        print(f"{stem}: the same bracket {doc['claim']}; the committed bundle is kept")
                        continue
                os.remove(old)
            place(os.path.dirname(r["bundle"]), doc, stem, install)
            with open(old, "w") as f:
                f.write(rewrite(text, doc))
    # Sidecars no JSON file in DEST references any more.
    used = set()
    for name in os.listdir(install):
        if name.endswith(".json"):
            with open(os.path.join(install, name)) as f:
                try:
                    used.update(ref["npy"] for ref in sidecar_refs(json.load(f)))
                except json.JSONDecodeError:
                    pass
    for name in sorted(os.listdir(install)):
        if name.endswith(".npy") and name not in used:
            os.remove(os.path.join(install, name))
            print(f"removed {name} (no longer referenced)")


if __name__ == "__main__":
    main(sys.argv)
