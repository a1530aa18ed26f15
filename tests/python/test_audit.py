"""Tests of `rankcert audit`, `rankcert audit merge` and `rankcert report`.

Run: RANKCERT=build/rankcert /usr/bin/python3 -m unittest tests/python/test_audit.py
The report test needs headless Chromium (Debian's chromium-headless-shell or
chromium) and is skipped with a message where it is absent; ./build.sh test
installs it.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
import rankcert  # noqa: E402

CKPT = os.path.join(ROOT, "data", "stories260K", "stories260K.bin")
TOK = os.path.join(ROOT, "data", "stories260K", "tok512.bin")
LONG = os.path.join(ROOT, "certificates", "real", "texts", "long.txt")
CHROMIUM = next((shutil.which(c) for c in ("chromium-headless-shell", "chromium", "chromium-browser") if shutil.which(c)), None)


def run(*args, ok=(0,)):
    p = subprocess.run([rankcert.executable()] + [str(a) for a in args], capture_output=True, text=True)
    if p.returncode not in ok:
        raise AssertionError(f"rankcert {' '.join(map(str, args))}: exit {p.returncode}: {p.stderr.strip()}")
    return p


def read(path):
    with open(path) as f:
        return f.read()


def write_claims(d):
    """Claims with answers known from mathematics, and one malformed row."""
    np.save(os.path.join(d, "eye.npy"), np.eye(8))
    np.save(os.path.join(d, "ones.npy"), np.full((6, 6), 1 / 6))
    np.save(os.path.join(d, "u.npy"), np.eye(8))
    np.save(os.path.join(d, "w.npy"), np.eye(8))
    np.save(os.path.join(d, "u1.npy"), np.ones((8, 1)))
    np.save(os.path.join(d, "w1.npy"), np.full((8, 1), 1 / 8))
    rows = [
        # identity at eps 1/2: r = 8 (diagonal dominance; a Neumann certificate), so "<= 8" holds, "<= 7" fails
        {"id": "eye-le8", "model": "synthetic", "eps": "1/2", "claim": "<= 8", "matrix": "eye.npy"},
        {"id": "eye-le7", "model": "synthetic", "eps": "1/2", "claim": "<= 7", "matrix": "eye.npy"},
        # a rank-one (constant) attention matrix: r = 1 at any eps < 1
        {"id": "ones-eq1", "model": "synthetic", "eps": "0.1", "claim": "= 1", "matrix": "ones.npy"},
        {"id": "ones-ge2", "model": "synthetic", "eps": "0.1", "claim": ">= 2", "matrix": "ones.npy"},
        # the claimant's own factor, checked as given: U = W = I confirms "<= 8" by itself
        {"id": "eye-given", "model": "synthetic", "eps": "1/2", "claim": "rank <= 8", "matrix": "eye.npy", "u": "u.npy", "w": "w.npy"},
        # a wrong factor (row error 2 - 2/8 > 1/2) is refuted; the claim is then decided by search (refuted, L = 8)
        {"id": "eye-badgiven", "model": "synthetic", "eps": "1/2", "claim": "<= 1", "matrix": "eye.npy", "u": "u1.npy", "w": "w1.npy"},
        # malformed: not a claim
        {"id": "broken", "model": "synthetic", "eps": "0.1", "claim": "at most seven", "matrix": "eye.npy"},
        # a real head (stories260K layer 0 head 0 over long.txt) with a bracket claim that is wide enough to hold
        {"id": "real-wide", "model": "stories260K", "layer": "0", "head": "0", "eps": "0.1", "claim": "[1, 94]",
         "checkpoint": CKPT, "tokenizer": TOK, "text_file": LONG},
    ]
    path = os.path.join(d, "claims.jsonl")
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return path


def check_schema(doc):
    """audit.json against docs/schema (skipped with a message without python3-jsonschema)."""
    try:
        import jsonschema
    except ImportError:
        sys.stderr.write("[python3-jsonschema absent: audit.json not checked against its schema] ")
        return
    with open(os.path.join(ROOT, "docs", "schema", "rankcert-audit.schema.json")) as f:
        jsonschema.validate(doc, json.load(f))


def verdicts(folder):
    with open(os.path.join(folder, "audit.json")) as f:
        doc = json.load(f)
    return {c["id"]: (c["verdict"], c.get("lower"), c.get("upper")) for c in doc["claims"]}, doc


class AuditTests(unittest.TestCase):
    def test_known_answers_given_factors_and_a_malformed_row(self):
        with tempfile.TemporaryDirectory() as d:
            claims = write_claims(d)
            p = run("audit", claims, "-o", os.path.join(d, "out"), "--time-budget", "5", ok=(3,))
            errs = [l for l in p.stderr.splitlines() if "claims.jsonl:" in l]
            self.assertEqual(errs, [claims + ':7: claim: "at most seven" is not one of <= k, >= k, = k, [a, b], none'])
            v, doc = verdicts(os.path.join(d, "out"))
            self.assertEqual(doc["format"], "rankcert-result/1")
            self.assertEqual(doc["kind"], "audit")
            self.assertEqual(v["eye-le8"], ("confirmed", 8, 8))
            self.assertEqual(v["eye-le7"], ("refuted", 8, 8))
            self.assertEqual(v["ones-eq1"], ("confirmed", 1, 1))
            self.assertEqual(v["ones-ge2"], ("refuted", 1, 1))
            self.assertEqual(v["eye-given"][0], "confirmed")
            self.assertEqual(v["eye-badgiven"], ("refuted", 8, 8))
            self.assertEqual(v["broken"], ("error", None, None))
            self.assertEqual(v["real-wide"][0], "confirmed")
            self.assertEqual(doc["counts"], {"confirmed": 4, "refuted": 3, "open": 0, "bracketed": 0, "error": 1, "total": 8})
            check_schema(doc)
            byid = {c["id"]: c for c in doc["claims"]}
            self.assertEqual(byid["eye-given"]["decided_by"], "the given factor")
            self.assertEqual(byid["eye-given"]["given_factor"]["verdict"], "verified")
            self.assertEqual(byid["eye-badgiven"]["given_factor"]["verdict"], "refuted")
            self.assertEqual(byid["eye-le7"]["lower_kind"], "neumann")
            self.assertEqual(byid["broken"]["line"], 7)
            # Every bundle behind a verdict verifies again with the checker, and its witness was written.
            for c in doc["claims"]:
                if c["verdict"] == "error":
                    continue
                b = os.path.join(d, "out", c["bundle"])
                r = rankcert.verify(b)
                self.assertEqual(r["verdict"], "verified", c["id"])
                self.assertEqual((r["lower"], r["upper"]), (c["lower"], c["upper"]))
                self.assertTrue(os.path.exists(os.path.join(d, "out", c["witness"])))

    def test_csv_claims_and_a_bad_header(self):
        with tempfile.TemporaryDirectory() as d:
            np.save(os.path.join(d, "eye.npy"), np.eye(4))
            with open(os.path.join(d, "c.csv"), "w") as f:
                f.write('id,eps,claim,matrix,note\n"a",1/2,"[4, 4]",eye.npy,"quoted, with a comma"\nb,1/2,<= 3,eye.npy,\n')
            run("audit", os.path.join(d, "c.csv"), "-o", os.path.join(d, "o"), "-q")
            v, _ = verdicts(os.path.join(d, "o"))
            self.assertEqual(v, {"a": ("confirmed", 4, 4), "b": ("refuted", 4, 4)})
            with open(os.path.join(d, "bad.csv"), "w") as f:
                f.write("id,claim\nx,<= 3\n")
            p = run("audit", os.path.join(d, "bad.csv"), "-o", os.path.join(d, "o2"), ok=(3,))
            self.assertEqual(len(p.stderr.strip().splitlines()), 1)
            self.assertIn("needs columns eps and claim", p.stderr)

    def test_resume_after_a_kill(self):
        with tempfile.TemporaryDirectory() as d:
            # Open claims: a random causal head (n = 256) has a first bracket near [60, 190] at eps 0.1, so
            # "= 120" stays open and each claim runs its whole 3 s budget.
            rng = np.random.default_rng(0)
            np.save(os.path.join(d, "q.npy"), rng.standard_normal((256, 16)).astype(np.float32))
            np.save(os.path.join(d, "k.npy"), rng.standard_normal((256, 16)).astype(np.float32))
            rows = [{"id": f"h{h}", "eps": "0.1", "claim": "= 120", "q": "q.npy", "k": "k.npy", "scale": "1/2",
                     "mask": "causal"} for h in range(4)]
            claims = os.path.join(d, "c.jsonl")
            with open(claims, "w") as f:
                f.write("\n".join(json.dumps(r) for r in rows) + "\n")
            out = os.path.join(d, "out")
            p = subprocess.Popen([rankcert.executable(), "audit", claims, "-o", out, "--time-budget", "3", "-q"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.time() + 120
            while time.time() < deadline and not os.path.exists(os.path.join(out, "results", "h1.json")):
                time.sleep(0.1)
            p.send_signal(signal.SIGKILL)
            p.wait()
            done = sorted(f for f in os.listdir(os.path.join(out, "results")) if not f.startswith("."))
            self.assertIn("h0.json", done)
            self.assertNotIn("h3.json", done)
            before = {f: read(os.path.join(out, "results", f)) for f in done}
            q = run("audit", claims, "-o", out, "--time-budget", "3")
            self.assertIn(f"{len(done)} already decided", q.stderr)
            self.assertEqual({c: v[0] for c, v in verdicts(out)[0].items()}, {f"h{h}": "open" for h in range(4)})
            v, doc = verdicts(out)
            self.assertEqual(sorted(v), ["h0", "h1", "h2", "h3"])
            for f, text in before.items():   # decided claims were not redone
                self.assertEqual(read(os.path.join(out, "results", f)), text)
            for c in doc["claims"]:
                self.assertEqual(rankcert.verify(os.path.join(out, c["bundle"]))["verdict"], "verified")
            # No scratch files from the killed run are left behind.
            self.assertEqual([f for f in os.listdir(os.path.join(out, "results")) if f.startswith(".")], [])

    def test_shards_merge_to_the_result_of_one_run(self):
        with tempfile.TemporaryDirectory() as d:
            claims = write_claims(d)
            run("audit", claims, "-o", os.path.join(d, "one"), "--time-budget", "3", "-q", "--jobs", "2", ok=(3,))
            for i in range(3):
                run("audit", claims, "-o", os.path.join(d, f"s{i}"), "--shard", f"{i}/3", "--time-budget", "3", "-q", ok=(0, 3))
            env = dict(os.environ, SLURM_ARRAY_TASK_ID="1", SLURM_ARRAY_TASK_COUNT="3", SLURM_ARRAY_TASK_MIN="0")
            p = subprocess.run([rankcert.executable(), "audit", claims, "-o", os.path.join(d, "slurm1"), "--time-budget", "3", "-q"],
                               env=env, capture_output=True, text=True)
            self.assertIn(p.returncode, (0, 3))
            run("audit", "merge", "-o", os.path.join(d, "merged"), os.path.join(d, "s0"), os.path.join(d, "s1"), os.path.join(d, "s2"))
            a, _ = verdicts(os.path.join(d, "one"))
            b, _ = verdicts(os.path.join(d, "merged"))
            s1, _ = verdicts(os.path.join(d, "s1"))
            slurm, _ = verdicts(os.path.join(d, "slurm1"))
            self.assertEqual(a, b)
            self.assertEqual(s1, slurm)
            self.assertEqual(len(a), 8)
            p = run("audit", "--shard", "3/3", claims, "-o", os.path.join(d, "x"), ok=(3,))
            self.assertIn("--shard", p.stderr)

    @unittest.skipIf(CHROMIUM is None, "headless Chromium is not installed (apt-get install chromium-headless-shell; "
                                       "./build.sh test installs it)")
    def test_report_in_headless_chromium(self):
        with tempfile.TemporaryDirectory() as d:
            claims = write_claims(d)
            run("audit", claims, "-o", os.path.join(d, "out"), "--time-budget", "3", "-q", ok=(3,))
            page = os.path.join(d, "report.html")
            run("report", os.path.join(d, "out"), "-o", page)
            with open(page) as f:
                html = f.read()
            self.assertNotRegex(html, r"<script[^>]+src=|<link[^>]+href=|https?://")   # self-contained
            flags = ["--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
            dom = subprocess.run([CHROMIUM] + flags + ["--dump-dom", "file://" + page], capture_output=True, text=True,
                                 timeout=120).stdout
            v, _ = verdicts(os.path.join(d, "out"))
            for cid, (verdict, _, _) in v.items():
                self.assertRegex(dom, rf"<td>{cid}</td>(.|\n)*?<span class=\"v {verdict}\">{verdict}</span>")
            self.assertGreaterEqual(dom.count("<svg"), 3)
            shot = os.path.join(d, "shot.png")
            subprocess.run([CHROMIUM] + flags + ["--window-size=1200,900", f"--screenshot={shot}", "file://" + page],
                           capture_output=True, timeout=120)
            self.assertTrue(os.path.exists(shot))
            colours = png_colours(shot)
            self.assertGreater(len(colours), 20, "screenshot looks blank")
            self.assertTrue(any(abs(r - 0xcf) < 8 and abs(g - 0x22) < 8 and abs(b - 0x2e) < 8 for r, g, b in colours),
                            "no refuted-red pixel in the screenshot")


class SurveyTests(unittest.TestCase):
    # rankcert survey: every head of a folder x every eps, bracket only.
    def test_survey_brackets_every_head_resumes_and_reports(self):
        with tempfile.TemporaryDirectory() as d:
            heads = os.path.join(d, "heads")
            run("extract", "--checkpoint", CKPT, "--tokenizer", TOK, "--text", "Once upon a time there was a cat.",
                "--out", heads, "--name", "s")
            out = os.path.join(d, "out")
            p = run("survey", heads, "--eps", "0.1,1/5", "-o", out, "--jobs", "2", "--time-budget", "1")
            self.assertIn("80 bracketed", p.stderr)
            doc = json.loads(read(os.path.join(out, "audit.json")))
            self.assertEqual(doc["counts"]["bracketed"], 80)
            self.assertEqual(doc["counts"]["total"], 80)
            check_schema(doc)
            for c in doc["claims"]:
                self.assertEqual(c["verdict"], "bracketed")
                self.assertLessEqual(1, c["lower"])
                self.assertLessEqual(c["lower"], c["upper"])
                self.assertIn(c["eps"], ("0.1", "1/5"))
            byid = {c["id"]: c for c in doc["claims"]}
            self.assertEqual((byid["s-L2-H3-eps0.1"]["layer"], byid["s-L2-H3-eps0.1"]["head"]), ("2", "3"))
            # Every bracket rests on a bundle the checker verifies.
            self.assertEqual(run("verify", os.path.join(out, "claims"), "-q").returncode, 0)
            # A rerun decides nothing again; the report draws it.
            p = run("survey", heads, "--eps", "0.1,1/5", "-o", out)
            self.assertIn("80 already decided", p.stderr)
            run("report", out, "-o", os.path.join(out, "r.html"))
            self.assertIn("80 bracketed", read(os.path.join(out, "r.html")))
            # File names that sanitise to one id get their own ids.
            for name in ("x y.json", "x_y.json"):
                shutil.copy(os.path.join(heads, "s-L0-H0.json"), os.path.join(heads, name))
            run("survey", heads, "--eps", "0.1", "-o", os.path.join(d, "o3"), "--time-budget", "1", "-q")
            ids = {c["id"]: c["verdict"] for c in json.loads(read(os.path.join(d, "o3", "audit.json")))["claims"]}
            self.assertEqual(ids.get("x_y-eps0.1"), "bracketed")
            self.assertEqual(ids.get("x_y-2-eps0.1"), "bracketed")
            self.assertNotIn("error", ids.values())
            # Errors are one line, exit 3.
            for args, msg in [([heads, "--eps", "x", "-o", out], "--eps"),
                              ([os.path.join(d, "none"), "-o", out], "no such file"),
                              ([out + "/results", "-o", os.path.join(d, "o2")], "no instance files")]:
                p = run("survey", *args, ok=(3,))
                self.assertIn(msg, p.stderr)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1)

    def test_survey_temperatures_several_folders_and_placement(self):
        # --temperature brackets every head at each t; several HEADS; bundles
        # beside the instances are skipped; tools/corpus_merge.py places the
        # bundles beside their instances and a second placement changes nothing.
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "a"), os.path.join(d, "b")
            for folder, name in ((a, "a"), (b, "b")):
                full = os.path.join(d, "all-" + name)
                run("extract", "--checkpoint", CKPT, "--tokenizer", TOK, "--text", "Once upon a time",
                    "--out", full, "--name", name)
                os.makedirs(folder)  # one head of the 40 per folder, with its sidecars
                inst = json.loads(read(os.path.join(full, f"{name}-L0-H1.json")))["instance"]
                for f in (f"{name}-L0-H1.json", inst["q"]["npy"], inst["k"]["npy"]):
                    shutil.copy(os.path.join(full, f), folder)
            out = os.path.join(d, "out")
            run("survey", a, os.path.join(b, "b-L0-H1.json"), "--temperature", "0.5,2", "--eps", "0.1",
                "-o", out, "--time-budget", "0.5", "-q")
            doc = json.loads(read(os.path.join(out, "audit.json")))
            ids = sorted(c["id"] for c in doc["claims"])
            self.assertEqual(ids, ["a-L0-H1-t0.5-eps0.1", "a-L0-H1-t2-eps0.1", "b-L0-H1-t0.5-eps0.1", "b-L0-H1-t2-eps0.1"])
            for c in doc["claims"]:
                bundle = json.loads(read(os.path.join(out, c["bundle"])))
                self.assertEqual(bundle["instance"]["temperature"], c["id"].split("-t")[1].split("-eps")[0])
                # The instance file's provenance travels with the bundle (the extract's own values).
                self.assertEqual((bundle["provenance"]["layer"], bundle["provenance"]["head"]), (0, 1))
                self.assertEqual(bundle["provenance"]["tokens"], 5)
                self.assertEqual(bundle["provenance"]["audit_claim"], c["id"])
                # Its files carry the id once ("-eps0.1", not "-eps0.1-eps0.1").
                self.assertTrue(c["bundle"].endswith(c["id"] + ".json"), c["bundle"])
            merge = [sys.executable, os.path.join(ROOT, "tools", "corpus_merge.py"), out]
            p = subprocess.run(merge, capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("4 placed", p.stdout)
            self.assertTrue(os.path.exists(os.path.join(a, "a-L0-H1-t2-eps0.1.json")))
            self.assertEqual(run("verify", a, "-q").returncode, 0)
            self.assertEqual(run("verify", b, "-q").returncode, 0)
            p = subprocess.run(merge, capture_output=True, text=True)
            self.assertIn("0 placed, 0 tightened, 4 unchanged", p.stdout)
            # The placed bundles sit beside the instance; a new survey of the folder skips them.
            p = run("survey", a, "--eps", "0.1", "-o", os.path.join(d, "o2"), "--time-budget", "0.5")
            self.assertIn("1 heads x 1 eps", p.stderr)
            for args, msg in [([a, "--temperature", "0", "-o", out], "--temperature"),
                              ([a, "--temperature", "x", "-o", out], "--temperature")]:
                p = run("survey", *args, ok=(3,))
                self.assertIn(msg, p.stderr)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1)


def png_colours(path):
    """The set of RGB colours of a PNG (8-bit RGB or RGBA, no interlace), decoded with zlib."""
    import struct
    import zlib
    with open(path, "rb") as f:
        data = f.read()
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if typ == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            ch = {2: 3, 6: 4}[ctype]
        elif typ == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * ch
    prev = bytearray(stride)
    out, i = set(), 0
    while i < len(raw):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - ch] if x >= ch else 0
            b, c = prev[x], prev[x - ch] if x >= ch else 0
            if f == 1: line[x] = (line[x] + a) & 255
            elif f == 2: line[x] = (line[x] + b) & 255
            elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        for x in range(0, stride, ch * 4):
            out.add(tuple(line[x:x + 3]))
    return out


if __name__ == "__main__":
    unittest.main()
