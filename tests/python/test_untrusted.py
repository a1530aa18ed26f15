"""Untrusted input on the producer's surfaces (issue 45): one regression test
per finding.  Each builds the hostile or ordinary input that once went wrong
and checks that the command now ends with a verdict or with exit 3 and one
line naming the file, never writes outside its output folder, and finishes.

Run: RANKCERT=build/rankcert /usr/bin/python3 -m unittest tests/python/test_untrusted.py

The `timeout=` of each run is a hang guard far above the expected time (a
linear parse takes milliseconds), not a speed target: benchmarks measure speed.
"""

import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
import rankcert  # noqa: E402


def run(*args, timeout=120, cwd=None):
    return subprocess.run([rankcert.executable()] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


def one_line_error(test, p, *words):
    test.assertEqual(p.returncode, 3, p.stderr)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    test.assertEqual(len(lines), 1, p.stderr)
    for w in words:
        test.assertIn(w, lines[0])


def write(path, text, mode="w"):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, mode) as f:
        f.write(text)


def safetensors_bytes(tensors, header_override=None):
    """tensors: name -> float32 array; header_override: name -> entry dict replacing the computed one."""
    header, blob, off = {}, b"", 0
    for name, a in tensors.items():
        raw = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blob += raw
        off += len(raw)
    for name, e in (header_override or {}).items():
        header[name] = e
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + blob


def matrix_instance(d):
    """A bundle-style instance of the 4x4 identity, with its sidecar."""
    np.save(os.path.join(d, "I.npy"), np.eye(4))
    p = run("bracket", "-q", "--matrix", os.path.join(d, "I.npy"), "--eps", "0.5", "--out", os.path.join(d, "b"))
    assert p.returncode == 0, p.stderr
    return json.load(open(os.path.join(d, "b", "I-eps0.5.json")))


def files_under(d):
    return sorted(os.path.relpath(os.path.join(r, f), d) for r, _, fs in os.walk(d) for f in fs)


class Confinement(unittest.TestCase):
    """Findings 1-3, 9, 21: nothing read through a path leaving its folder, nothing written outside -o / --out."""

    def test_bracket_instance_sidecar_leaving_its_folder(self):  # finding 1
        with tempfile.TemporaryDirectory() as d:
            inst = matrix_instance(d)["instance"]
            write(os.path.join(d, "notes.txt"), "keep me")
            inst["a"]["npy"] = "../notes.txt"
            write(os.path.join(d, "x", "evil.json"), json.dumps({"instance": inst}))
            p = run("bracket", "-q", "--instance", os.path.join(d, "x", "evil.json"), "--out", os.path.join(d, "x", "out"))
            one_line_error(self, p, "evil.json", "instance.a.npy", "leaves")
            self.assertEqual(open(os.path.join(d, "notes.txt")).read(), "keep me")
            self.assertEqual(files_under(os.path.join(d, "x", "out")), [])

    def test_bracket_instance_sidecar_through_a_symlink(self):  # finding 1
        with tempfile.TemporaryDirectory() as d:
            inst = matrix_instance(d)["instance"]
            write(os.path.join(d, "secret", "id_rsa"), "private")
            os.makedirs(os.path.join(d, "x"))
            os.symlink(os.path.join(d, "secret"), os.path.join(d, "x", "L"))
            inst["a"]["npy"] = "L/id_rsa"
            write(os.path.join(d, "x", "evil.json"), json.dumps({"instance": inst}))
            p = run("bracket", "-q", "--instance", os.path.join(d, "x", "evil.json"), "--out", os.path.join(d, "out"))
            one_line_error(self, p, "instance.a.npy", "resolves outside")
            self.assertEqual(files_under(os.path.join(d, "out")), [])

    def test_no_folder_made_through_a_symlink_in_the_output(self):  # copies resolve the target before mkdir
        with tempfile.TemporaryDirectory() as d:
            inst = matrix_instance(d)["instance"]
            os.makedirs(os.path.join(d, "x", "L", "sub"))
            os.replace(os.path.join(d, "b", "I.a.npy"), os.path.join(d, "x", "L", "sub", "I.a.npy"))
            inst["a"]["npy"] = "L/sub/I.a.npy"
            write(os.path.join(d, "x", "i.json"), json.dumps({"instance": inst}))
            os.makedirs(os.path.join(d, "out"))
            os.makedirs(os.path.join(d, "elsewhere"))
            os.symlink(os.path.join(d, "elsewhere"), os.path.join(d, "out", "L"))
            p = run("bracket", "-q", "--instance", os.path.join(d, "x", "i.json"), "--out", os.path.join(d, "out"))
            one_line_error(self, p, "instance.a.npy", "outside the output folder")
            self.assertEqual(os.listdir(os.path.join(d, "elsewhere")), [])

    def test_merge_refuses_ids_leaving_the_folder(self):  # finding 2
        with tempfile.TemporaryDirectory() as d:
            np.save(os.path.join(d, "I.npy"), np.eye(4))
            write(os.path.join(d, "c.csv"), "id,matrix,eps,claim\nc1,I.npy,0.5,<= 4\n")
            self.assertEqual(run("audit", "-q", os.path.join(d, "c.csv"), "-o", os.path.join(d, "s1")).returncode, 0)
            r = json.load(open(os.path.join(d, "s1", "results", "c1.json")))
            r["id"] = "../../evil"
            write(os.path.join(d, "s2", "results", "c2.json"), json.dumps(r))
            os.makedirs(os.path.join(d, "s2", "claims", "..", "..", "evil"), exist_ok=True)
            before = files_under(d)
            p = run("audit", "merge", "-o", os.path.join(d, "m", "n"), os.path.join(d, "s1"), os.path.join(d, "s2"))
            one_line_error(self, p, "c2.json", "id")
            self.assertFalse([f for f in files_under(d) if f not in before and not f.startswith("m/")])

    def test_merge_refuses_symlinks_in_a_shard(self):  # finding 2 (claim folders are copied file by file)
        with tempfile.TemporaryDirectory() as d:
            np.save(os.path.join(d, "I.npy"), np.eye(4))
            write(os.path.join(d, "c.csv"), "id,matrix,eps,claim\nc1,I.npy,0.5,<= 4\n")
            self.assertEqual(run("audit", "-q", os.path.join(d, "c.csv"), "-o", os.path.join(d, "s1")).returncode, 0)
            write(os.path.join(d, "secret.txt"), "private")
            os.symlink(os.path.join(d, "secret.txt"), os.path.join(d, "s1", "claims", "c1", "leak.npy"))
            p = run("audit", "merge", "-o", os.path.join(d, "m"), os.path.join(d, "s1"))
            one_line_error(self, p, "leak.npy", "symlink")
            self.assertFalse(os.path.exists(os.path.join(d, "m", "claims", "c1", "leak.npy")))

    def test_audit_refuses_what_verify_refuses(self):  # finding 3
        with tempfile.TemporaryDirectory() as d:
            matrix_instance(d)
            write(os.path.join(d, "secret.txt"), "private")
            sidecar = os.path.join(d, "b", "I.a.npy")
            os.remove(sidecar)
            os.symlink(os.path.join(d, "secret.txt"), sidecar)
            self.assertEqual(run("verify", os.path.join(d, "b", "I-eps0.5.json")).returncode, 3)
            write(os.path.join(d, "c.csv"), "id,instance,eps,claim\nc1,b/I-eps0.5.json,0.5,<= 4\n")
            p = run("audit", "-q", os.path.join(d, "c.csv"), "-o", os.path.join(d, "o"))
            self.assertEqual(p.returncode, 3, p.stderr)
            r = json.load(open(os.path.join(d, "o", "results", "c1.json")))
            self.assertEqual(r["verdict"], "error")
            self.assertIn("resolves outside", r["error"])
            for f in files_under(os.path.join(d, "o")):
                self.assertNotIn("private", open(os.path.join(d, "o", f), errors="replace").read())

    def test_report_links_stay_inside(self):  # finding 9
        with tempfile.TemporaryDirectory() as d:
            np.save(os.path.join(d, "I.npy"), np.eye(4))
            write(os.path.join(d, "c.csv"), "id,matrix,eps,claim\nc1,I.npy,0.5,<= 4\n")
            self.assertEqual(run("audit", "-q", os.path.join(d, "c.csv"), "-o", os.path.join(d, "o")).returncode, 0)
            rp = os.path.join(d, "o", "results", "c1.json")
            r = json.load(open(rp))
            for bad in ("javascript:alert(1)", "../../etc/passwd", "/etc/passwd"):
                r["bundle"] = bad
                write(rp, json.dumps(r))
                p = run("report", os.path.join(d, "o"))
                one_line_error(self, p, "c1.json", "bundle")
            self.assertFalse(os.path.exists(os.path.join(d, "o", "report.html")))


class OrdinaryInput(unittest.TestCase):
    """Finding 4: ordinary matrices never end in exit 4."""

    def test_trivial_lower_bounds(self):
        with tempfile.TemporaryDirectory() as d:
            np.save(os.path.join(d, "L.npy"), np.random.default_rng(0).standard_normal((6, 6)))
            np.save(os.path.join(d, "I.npy"), np.eye(4))
            for src, eps in (("L", "0.5"), ("L", "0.4"), ("L", "1"), ("I", "1")):
                opt = "--logits" if src == "L" else "--matrix"
                p = run("bracket", "-q", opt, os.path.join(d, src + ".npy"), "--eps", eps, "--out", os.path.join(d, src + eps))
                self.assertEqual(p.returncode, 0, f"{src} eps {eps}: {p.stderr}")
            # as claims: every row decided, and audit.json written
            write(os.path.join(d, "c.csv"), "id,logits,eps,claim\na,L.npy,0.5,<= 6\nb,L.npy,1,<= 6\n")
            p = run("audit", "-q", os.path.join(d, "c.csv"), "-o", os.path.join(d, "o"))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(json.load(open(os.path.join(d, "o", "audit.json")))["counts"]["confirmed"], 2)

    def test_logits_beyond_the_double_range(self):
        # Exact logits like 1e400 (or q.k overflowing a double) are valid
        # instances: the float search clamps them and the checker decides;
        # inf - inf in the float product, and a profile whose interaction is
        # not finite, are one-line input errors, never exit 4.
        with tempfile.TemporaryDirectory() as d:
            big = {"instance": {"kind": "logits", "logits": {"shape": [2, 2], "data": ["1e400", "0", "1", "-1e400"]}}}
            qk = {"instance": {"kind": "qk", "q": {"shape": [2, 1], "data": ["1e200", "1"]},
                               "k": {"shape": [2, 1], "data": ["1e200", "1"]}, "scale": "1"}}
            nan = {"instance": {"kind": "qk", "q": {"shape": [1, 2], "data": ["1e200", "1e200"]},
                                "k": {"shape": [1, 2], "data": ["1e200", "-1e200"]}, "scale": "1"}}
            zero = {"instance": {"kind": "matrix", "a": {"shape": [2, 2], "data": ["1", "0", "1/2", "1/2"]}}}
            for name, doc in (("big", big), ("qk", qk), ("nan", nan), ("zero", zero)):
                write(os.path.join(d, name + ".json"), json.dumps(doc))
            for name in ("big", "qk"):
                p = run("bracket", "-q", "--instance", os.path.join(d, name + ".json"), "--eps", "0.1",
                        "--out", os.path.join(d, "o" + name))
                self.assertEqual(p.returncode, 0, p.stderr)
            one_line_error(self, run("bracket", "-q", "--instance", os.path.join(d, "nan.json"), "--eps", "0.1",
                                     "--out", os.path.join(d, "on")), "double range")
            for name in ("qk", "zero"):
                one_line_error(self, run("profile", "--instance", os.path.join(d, name + ".json"),
                                         "--out", os.path.join(d, "p" + name)), name + ".json", "not finite")


class ClaimsFiles(unittest.TestCase):
    """Findings 5, 10, 11, 12, 14, 15, 20."""

    def test_quotes_parse_in_linear_time(self):  # finding 5
        with tempfile.TemporaryDirectory() as d:
            write(os.path.join(d, "q.csv"), "id,eps,claim\na" + '"' * 200000 + ",0.1,<= 3\n")
            p = run("audit", "-q", os.path.join(d, "q.csv"), "-o", os.path.join(d, "o"), timeout=30)
            self.assertEqual(p.returncode, 3)
            self.assertIn("q.csv:2: id", p.stderr)

    def test_fallback_ids_never_collide(self):  # finding 10
        with tempfile.TemporaryDirectory() as d:
            np.save(os.path.join(d, "I.npy"), np.eye(4))
            write(os.path.join(d, "c.csv"),
                  "id,matrix,eps,claim\nrow3,I.npy,0.5,<= 4\na/b,I.npy,0.5,<= 4\nrow3-dup,I.npy,0.5,<= 4\n")
            p = run("audit", "-q", os.path.join(d, "c.csv"), "-o", os.path.join(d, "o"))
            self.assertEqual(p.returncode, 3)
            self.assertEqual(len(os.listdir(os.path.join(d, "o", "results"))), 3)
            self.assertEqual(json.load(open(os.path.join(d, "o", "audit.json")))["counts"]["total"], 3)

    def test_results_of_the_wrong_shape(self):  # finding 11
        with tempfile.TemporaryDirectory() as d:
            np.save(os.path.join(d, "I.npy"), np.eye(4))
            write(os.path.join(d, "c.csv"), "id,matrix,eps,claim\nc1,I.npy,0.5,<= 4\n")
            o = os.path.join(d, "o")
            self.assertEqual(run("audit", "-q", os.path.join(d, "c.csv"), "-o", o).returncode, 0)
            rp = os.path.join(o, "results", "c1.json")
            good = json.load(open(rp))
            lacking = dict(good)
            del lacking["claimed"]
            for bad in ([1, 2], "confirmed", {"verdict": 5}, lacking, dict(good, lower="3"), dict(good, n="8")):
                write(rp, json.dumps(bad))
                one_line_error(self, run("report", o), "c1.json")
                # resume: a damaged result is decided again
                p = run("audit", "-q", os.path.join(d, "c.csv"), "-o", o)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(json.load(open(rp))["verdict"], "confirmed")
            os.remove(rp)
            os.makedirs(rp)
            one_line_error(self, run("report", o), "c1.json", "not a regular file")
            one_line_error(self, run("audit", "-q", os.path.join(d, "c.csv"), "-o", o), "c1.json")

    def test_one_audit_per_folder(self):  # finding 12
        with tempfile.TemporaryDirectory() as d:
            np.save(os.path.join(d, "L.npy"), np.random.default_rng(1).standard_normal((40, 40)))
            write(os.path.join(d, "c.csv"), "id,logits,eps,claim\n" + "".join(f"c{i},L.npy,0.1,<= 40\n" for i in range(3)))
            o = os.path.join(d, "o")
            first = subprocess.Popen([rankcert.executable(), "audit", "-q", "--time-budget", "5", os.path.join(d, "c.csv"), "-o", o],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            import time
            for _ in range(200):
                if os.path.exists(os.path.join(o, ".lock")):
                    break
                time.sleep(0.05)
            p = run("audit", "-q", os.path.join(d, "c.csv"), "-o", o)
            out, err = first.communicate(timeout=300)
            self.assertEqual(first.returncode, 0, err)
            if p.returncode != 0:  # the second run overlapped the first
                one_line_error(self, p, "another rankcert audit")
            self.assertEqual(json.load(open(os.path.join(o, "audit.json")))["counts"]["confirmed"], 3)

    def test_long_fields_bom_and_column_names(self):  # findings 14, 15, 20
        with tempfile.TemporaryDirectory() as d:
            np.save(os.path.join(d, "I.npy"), np.eye(4))
            write(os.path.join(d, "c.csv"), "\ufeffid,matrix,eps,claim,note\nmine,I.npy,0.5,<= 4," + "x" * (2 << 20) + "\n")
            p = run("audit", "-q", os.path.join(d, "c.csv"), "-o", os.path.join(d, "o"))
            self.assertEqual(p.returncode, 3)
            self.assertIn("longer than 1 MiB", p.stderr)
            write(os.path.join(d, "b.csv"), "\ufeffid,matrix,eps,claim\nmine,I.npy,0.5,<= 4\nbad,I.npy,abc,<= 4\n")
            p = run("audit", "-q", os.path.join(d, "b.csv"), "-o", os.path.join(d, "ob"))
            self.assertTrue(os.path.exists(os.path.join(d, "ob", "results", "mine.json")))  # the BOM is not part of "id"
            bad = json.load(open(os.path.join(d, "ob", "results", "bad.json")))
            self.assertTrue(bad["error"].startswith("eps"), bad["error"])


class Tensors(unittest.TestCase):
    """Findings 6, 7, 8, 13, 18, 19."""

    def gpt2_folder(self, d, n_layer, n_embd=8, n_head=2, vocab=16, positions=8, config_extra=None):
        rng = np.random.default_rng(0)
        E = n_embd
        t = {"wte.weight": rng.standard_normal((vocab, E)), "wpe.weight": rng.standard_normal((positions, E)),
             "ln_f.weight": np.ones(E), "ln_f.bias": np.zeros(E)}
        for l in range(n_layer):
            h = f"h.{l}."
            t.update({h + "ln_1.weight": np.ones(E), h + "ln_1.bias": np.zeros(E),
                      h + "attn.c_attn.weight": rng.standard_normal((E, 3 * E)) * 0.3, h + "attn.c_attn.bias": np.zeros(3 * E),
                      h + "attn.c_proj.weight": rng.standard_normal((E, E)) * 0.1, h + "attn.c_proj.bias": np.zeros(E),
                      h + "ln_2.weight": np.ones(E), h + "ln_2.bias": np.zeros(E),
                      h + "mlp.c_fc.weight": rng.standard_normal((E, 4 * E)) * 0.1, h + "mlp.c_fc.bias": np.zeros(4 * E),
                      h + "mlp.c_proj.weight": rng.standard_normal((4 * E, E)) * 0.1, h + "mlp.c_proj.bias": np.zeros(E)})
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "model.safetensors"), "wb") as f:
            f.write(safetensors_bytes(t))
        cfg = {"model_type": "gpt2", "n_embd": E, "n_head": n_head, "n_layer": n_layer, "n_positions": positions,
               "vocab_size": vocab}
        cfg.update(config_extra or {})
        write(os.path.join(d, "config.json"), json.dumps(cfg))

    def test_many_tensors_read_in_linear_time(self):  # finding 6
        with tempfile.TemporaryDirectory() as d:
            self.gpt2_folder(os.path.join(d, "m"), n_layer=1000)
            p = run("extract", "--hf", os.path.join(d, "m"), "--tokens", "1,2,3", "--out", os.path.join(d, "o"), timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)

    def test_config_sizes_and_types(self):  # finding 13
        with tempfile.TemporaryDirectory() as d:
            self.gpt2_folder(os.path.join(d, "a"), 1, config_extra={"activation_function": 5})
            one_line_error(self, run("extract", "--hf", os.path.join(d, "a"), "--tokens", "1,2", "--out", os.path.join(d, "o")),
                           "config.json", "activation_function")
            self.gpt2_folder(os.path.join(d, "b"), 1, config_extra={"vocab_size": 1 << 20, "n_embd": 1 << 20})
            one_line_error(self, run("extract", "--hf", os.path.join(d, "b"), "--tokens", "1,2", "--out", os.path.join(d, "o")),
                           "config.json")

    def test_token_ids_named(self):  # finding 19
        with tempfile.TemporaryDirectory() as d:
            self.gpt2_folder(os.path.join(d, "m"), 1)
            one_line_error(self, run("extract", "--hf", os.path.join(d, "m"), "--tokens", "1,-1", "--out", os.path.join(d, "o")),
                           "--tokens", "-1")
            one_line_error(self, run("extract", "--hf", os.path.join(d, "m"), "--tokens", "1,99", "--out", os.path.join(d, "o")),
                           "99")

    def test_safetensors_overlaps_and_shapes(self):  # findings 8, 18
        with tempfile.TemporaryDirectory() as d:
            q = np.random.default_rng(0).standard_normal((4, 3))
            entry = {"dtype": "F32", "shape": [4, 3], "data_offsets": [0, 48]}
            path = os.path.join(d, "t.safetensors")
            with open(path, "wb") as f:
                f.write(safetensors_bytes({"q": q}, {"k": entry}))
            one_line_error(self, run("bracket", "-q", "--q", path + ":q", "--k", path + ":k", "--scale", "1",
                                     "--out", os.path.join(d, "o")), "overlap")
            with open(path, "wb") as f:
                f.write(safetensors_bytes({"q": q}, {"q": {"dtype": "F32", "shape": [4.5, 3], "data_offsets": [0, 48]}}))
            one_line_error(self, run("bracket", "-q", "--q", path + ":q", "--k", path + ":q", "--scale", "1",
                                     "--out", os.path.join(d, "o")), "shape")

    def test_selector_with_a_name_too_long(self):  # found by fuzz_tensor: fs::exists threw on ENAMETOOLONG
        with tempfile.TemporaryDirectory() as d:
            spec = "a" * 5000 + ".npz:q[0]"
            one_line_error(self, run("bracket", "-q", "--q", spec, "--k", spec, "--scale", "1", "--out", os.path.join(d, "o")),
                           "no such file")

    def test_npz_member_declaring_4_gb(self):  # finding 7
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.npz")
            with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("q.npy", b"\0" * 1000)
            b = bytearray(open(path, "rb").read())
            cd = b.rfind(b"PK\x01\x02")
            b[cd + 24:cd + 28] = struct.pack("<I", 0xFFFFFFFE)
            open(path, "wb").write(bytes(b))
            one_line_error(self, run("bracket", "-q", "--q", path + ":q", "--k", path + ":q", "--scale", "1",
                                     "--out", os.path.join(d, "o"), timeout=30), "x.npz", "array limit")


class PythonInstance(unittest.TestCase):
    """Finding 17: rankcert.instance() checks everything before it writes anything."""

    def test_nothing_written_on_errors(self):
        q = np.ones((3, 2))
        k_inf = np.ones((3, 2))
        k_inf[1, 1] = np.inf
        cases = [dict(q=q, k=k_inf, scale=1), dict(q=q, k=q, scale=1, provenance={"x": object()}),
                 dict(q=q, k=q, scale=1, mask=np.ones((3, 3))), dict(q=q, k=q, scale=rankcert.rsqrt(4), mask="diag"),
                 dict(q=q, k=q, scale={"rsqrt": 10 ** 400})]
        for kw in cases:
            with tempfile.TemporaryDirectory() as d:
                with self.assertRaises(ValueError):
                    rankcert.instance(os.path.join(d, "inst.json"), **kw)
                self.assertEqual(os.listdir(d), [], kw)
        with tempfile.TemporaryDirectory() as d:
            path = rankcert.instance(os.path.join(d, "inst.json"), q=q, k=q, scale=rankcert.rsqrt(2), provenance={"a": 1})
            self.assertEqual(sorted(os.listdir(d)), ["inst.json", "inst.k.npy", "inst.q.npy"])
            self.assertEqual(run("bracket", "-q", "--instance", path, "--out", os.path.join(d, "o")).returncode, 0)


class BracketOptions(unittest.TestCase):
    """Finding 16."""

    def test_out_and_budgets(self):
        with tempfile.TemporaryDirectory() as d:
            np.save(os.path.join(d, "I.npy"), np.eye(4))
            write(os.path.join(d, "file"), "x")
            m = os.path.join(d, "I.npy")
            one_line_error(self, run("bracket", "-q", "--matrix", m, "--out", os.path.join(d, "file")), "--out", "not a folder")
            for bad in ("nan", "-1", "1e12", "inf"):
                p = run("bracket", "-q", "--matrix", m, "--time-budget", bad, "--out", os.path.join(d, "o"))
                self.assertEqual(p.returncode, 3, bad)
                self.assertLess(len(p.stderr), 200, p.stderr)
            p = run("bracket", "-q", "--matrix", m, "--eps", ",".join(["0.1"] * 10000), "--out", os.path.join(d, "o"))
            one_line_error(self, p, "--eps", "more than")


if __name__ == "__main__":
    unittest.main()
