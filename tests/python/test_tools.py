"""Tests of the corpus tools' bookkeeping (tools/real512_summary.py,
tools/install_real512.py).

Run: /usr/bin/python3 -m unittest tests/python/test_tools.py
"""

import importlib.util
import json
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
spec = importlib.util.spec_from_file_location("real512_summary", os.path.join(ROOT, "tools", "real512_summary.py"))
summary = importlib.util.module_from_spec(spec)
spec.loader.exec_module(summary)
spec = importlib.util.spec_from_file_location("install_real512", os.path.join(ROOT, "tools", "install_real512.py"))
install = importlib.util.module_from_spec(spec)
spec.loader.exec_module(install)


def row(L, U, verdict="verified", source="new", lower="neumann", upper="factor"):
    return {"layer": 1, "head": 2, "eps": "0.1", "L": L, "U": U, "closed": L == U, "lower_kind": lower,
            "upper_kind": upper, "verdict": verdict, "committed": False, "L_from": source, "U_from": source}


class Combine(unittest.TestCase):
    def test_each_end_is_the_better_one_with_its_source(self):
        r = summary.combine(row(120, 180, source="new"), row(110, 170, source="old", upper="row_interpolative"))
        self.assertEqual((r["L"], r["U"]), (120, 170))
        self.assertEqual((r["L_from"], r["U_from"]), ("new", "old"))
        self.assertEqual((r["lower_kind"], r["upper_kind"]), ("neumann", "row_interpolative"))
        self.assertFalse(r["closed"])

    def test_ends_meeting_close_the_row(self):
        r = summary.combine(row(170, 175), row(160, 170, source="old"))
        self.assertEqual((r["L"], r["U"], r["closed"]), (170, 170, True))

    def test_an_unverified_row_gives_nothing(self):
        # A bundle that did not verify certifies neither end: the other row is taken whole.
        r = summary.combine(row(150, 160, verdict="undecided"), row(110, 170, source="old"))
        self.assertEqual((r["L"], r["U"], r["L_from"], r["U_from"]), (110, 170, "old", "old"))
        r = summary.combine(row(110, 170), row(150, 160, verdict="refuted", source="old"))
        self.assertEqual((r["L"], r["U"], r["L_from"], r["U_from"]), (110, 170, "new", "new"))

    def test_crossing_ends_are_refused(self):
        # L > U means a wrong certificate or a wrong recorded row: no summary.
        with self.assertRaises(SystemExit):
            summary.combine(row(180, 190), row(150, 170, source="old"))

    def test_the_inputs_are_not_changed(self):
        fresh, old = row(100, 200), row(120, 180, source="old")
        summary.combine(fresh, old)
        self.assertEqual((fresh["L"], fresh["U"], old["L"], old["U"]), (100, 200, 120, 180))


class Kept(unittest.TestCase):
    def test_a_pass_at_one_eps_keeps_the_other_eps(self):
        # A pass that ran one head at eps 0.1 only must not drop that head's
        # rows at 0.05 and 0.2 (until 2026-12-04 rows were kept per head).
        old = [dict(row(100, 150), eps=e) for e in ("0.05", "0.1", "0.2")]
        kept = summary.kept_rows(old, [row(110, 150)])
        self.assertEqual([r["eps"] for r in kept], ["0.05", "0.2"])
        other = dict(row(100, 150), head=3)
        self.assertEqual(summary.kept_rows([other], [row(110, 150)]), [other])


class Place(unittest.TestCase):
    def test_sidecars_never_overwrite_other_content(self):
        with tempfile.TemporaryDirectory() as src, tempfile.TemporaryDirectory() as dest:
            for d, name, data in ((src, "h.start.u.npy", b"new"), (src, "h.q.npy", b"q"),
                                  (dest, "h.start.u.npy", b"old"), (dest, "h-q-copy.npy", b"q")):
                with open(os.path.join(d, name), "wb") as f:
                    f.write(data)
            doc = {"certificates": [{"u": {"npy": "h.start.u.npy"}}], "instance": {"q": {"npy": "h.q.npy"}}}
            install.place(src, doc, "h-eps0.1", dest)
            # The taken name with other content: renamed after the bundle.
            self.assertEqual(doc["certificates"][0]["u"]["npy"], "h-eps0.1.start.u.npy")
            with open(os.path.join(dest, "h.start.u.npy"), "rb") as f:
                self.assertEqual(f.read(), b"old")
            with open(os.path.join(dest, "h-eps0.1.start.u.npy"), "rb") as f:
                self.assertEqual(f.read(), b"new")
            # Content already there under another name: that name, no copy.
            self.assertEqual(doc["instance"]["q"]["npy"], "h-q-copy.npy")
            self.assertFalse(os.path.exists(os.path.join(dest, "h.q.npy")))
            json.dumps(doc)


if __name__ == "__main__":
    unittest.main()
