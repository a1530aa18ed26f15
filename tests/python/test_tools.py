"""Tests of the corpus tools' bookkeeping (tools/real512_summary.py,
tools/install_real512.py, tools/corpus_merge.py, tools/eps_gap.py).

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


spec = importlib.util.spec_from_file_location("eps_gap", os.path.join(ROOT, "tools", "eps_gap.py"))
gap = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gap)


class EpsGap(unittest.TestCase):
    def test_a_closed_bracket_has_gap_one(self):
        c, ex = gap.eps_gap({0.05: (30, 34), 0.1: (25, 25), 0.2: (20, 21)}, 0.1)
        self.assertEqual((c, ex), (1.0, False))

    def test_a_power_law_is_interpolated_exactly(self):
        # U = 10 eps^-1/2 at 0.1 and 0.4; L(0.1) = U(0.2) lies on the line: c = 2.
        u = lambda e: 10 * e ** -0.5  # noqa: E731
        c, ex = gap.eps_gap({0.1: (u(0.2), u(0.1)), 0.4: (1, u(0.4))}, 0.1)
        self.assertAlmostEqual(c, 2.0, places=12)
        self.assertFalse(ex)

    def test_eps_below_eps0_is_not_used(self):
        # A plateau of U below eps0 must not give c < 1.
        c, _ = gap.eps_gap({0.05: (25, 25), 0.1: (25, 25), 0.2: (20, 20)}, 0.1)
        self.assertEqual(c, 1.0)
        c, _ = gap.eps_gap({0.05: (24, 24), 0.1: (24, 30), 0.2: (20, 24)}, 0.1)
        self.assertAlmostEqual(c, 2.0, places=12)

    def test_beyond_the_largest_eps_is_extrapolated_and_said(self):
        # U falls by 2 per doubling of eps (log-linear); L(0.1) = 16 = U at 0.4.
        c, ex = gap.eps_gap({0.1: (16, 64), 0.2: (1, 32)}, 0.1)
        self.assertAlmostEqual(c, 4.0, places=12)
        self.assertTrue(ex)
        c, ex = gap.eps_gap({0.1: (16, 40), 0.2: (1, 40)}, 0.1)
        self.assertEqual((c, ex), (float("inf"), True))

    def test_one_eps_gives_nothing(self):
        self.assertIsNone(gap.eps_gap({0.1: (5, 8)}, 0.1))
        self.assertIsNone(gap.eps_gap({0.1: (5, 8), 0.05: (6, 9)}, 0.1))
        self.assertIsNone(gap.eps_gap({0.2: (5, 8), 0.05: (6, 9)}, 0.1))

    def test_rank_zero_gives_nothing(self):
        # A matrix instance may have L = 0 or U = 0 at a large eps: no log of 0.
        self.assertIsNone(gap.eps_gap({0.1: (0, 3), 0.2: (0, 2)}, 0.1))
        self.assertIsNone(gap.eps_gap({0.1: (2, 3), 0.2: (0, 0)}, 0.1))

    def test_table_and_csv(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "summary.csv")
            with open(p, "w") as f:
                f.write("layer,head,n,eps,L,U\n0,0,64,0.1,10,12\n0,0,64,0.2,8,11\n"
                        "0,1,64,0.1,10,10\n0,1,64,0.2,9,9\n")
            text, cells = gap.table(gap.read_profiles(p, "g"), [0.1])
            self.assertIn("| g | 64 | 0.1 | 2 |", text)
            self.assertIn("1 of 2", text)  # L(0.1) >= U(0.2) on head 1 only
            svg_path = os.path.join(d, "gap.svg")
            gap.svg(cells, 0.1, svg_path)
            with open(svg_path) as f:
                self.assertTrue(f.read().startswith("<svg"))
            bad = os.path.join(d, "bad.csv")
            with open(bad, "w") as f:
                f.write("layer,head,n,eps,L,U\n0,0,64,0.1,ten,12\n")
            with self.assertRaises(SystemExit):
                gap.read_profiles(bad)


spec = importlib.util.spec_from_file_location("corpus_merge", os.path.join(ROOT, "tools", "corpus_merge.py"))
cmerge = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cmerge)


def put(folder, name, data):
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def bundle(folder, L, U, q=b"q", tag="x"):
    """A bundle-shaped document (never verified here: merge only moves certificates)."""
    put(folder, "h.q.npy", q)
    put(folder, f"b.neumann{L}.r.npy", tag.encode())
    put(folder, f"b.factor{U}.u.npy", tag.encode())
    doc = {"format": "rankcert/1", "instance": {"kind": "qk", "q": {"npy": "h.q.npy"}}, "eps": "1/10",
           "claim": {"lower": L, "upper": U}, "provenance": {"producer": tag},
           "certificates": [{"bound": "lower", "kind": "neumann", "rank": L, "r": {"npy": f"b.neumann{L}.r.npy"}},
                            {"bound": "upper", "kind": "factor", "rank": U, "u": {"npy": f"b.factor{U}.u.npy"}}]}
    with open(os.path.join(folder, "b.json"), "w") as f:
        json.dump(doc, f)
    return os.path.join(folder, "b.json")


def save(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)


def text(path):
    with open(path) as f:
        return f.read()


class CorpusMerge(unittest.TestCase):
    # tools/corpus_merge.py: survey bundles into a corpus, no bracket wider.
    def test_each_end_comes_from_the_tighter_bundle(self):
        with tempfile.TemporaryDirectory() as old, tempfile.TemporaryDirectory() as new:
            o, n = bundle(old, 3, 6, tag="old"), bundle(new, 4, 7, tag="new")
            self.assertEqual(cmerge.merge(o, n), ((3, 6), (4, 6), "tightened"))
            doc = cmerge._load(o)
            self.assertEqual(doc["claim"], {"lower": 4, "upper": 6})
            self.assertEqual([(c["bound"], c["rank"]) for c in doc["certificates"]], [("lower", 4), ("upper", 6)])
            with open(os.path.join(old, "b.neumann4.r.npy"), "rb") as f:
                self.assertEqual(f.read(), b"new")  # the new lower certificate's sidecar came along
            cmerge.prune(old)
            self.assertFalse(os.path.exists(os.path.join(old, "b.neumann3.r.npy")))
            self.assertTrue(os.path.exists(os.path.join(old, "b.factor6.u.npy")))
            self.assertTrue(os.path.exists(os.path.join(old, "h.q.npy")))

    def test_a_looser_bundle_changes_nothing(self):
        with tempfile.TemporaryDirectory() as old, tempfile.TemporaryDirectory() as new:
            o, n = bundle(old, 3, 6), bundle(new, 2, 7)
            before = text(o)
            self.assertEqual(cmerge.merge(o, n), ((3, 6), (3, 6), "unchanged"))
            self.assertEqual(text(o), before)

    def test_another_instance_is_replaced_and_a_missing_one_placed(self):
        with tempfile.TemporaryDirectory() as old, tempfile.TemporaryDirectory() as new:
            o, n = bundle(old, 5, 5), bundle(new, 2, 7, q=b"other q")
            self.assertEqual(cmerge.merge(o, n), ((5, 5), (2, 7), "replaced"))
            self.assertEqual(cmerge._load(o)["claim"], {"lower": 2, "upper": 7})
            with open(os.path.join(old, "h.q.npy"), "rb") as f:
                self.assertEqual(f.read(), b"other q")
            self.assertEqual(cmerge.merge(os.path.join(old, "c.json"), n), (None, (2, 7), "placed"))

    def test_the_same_instance_under_another_sidecar_name_merges(self):
        with tempfile.TemporaryDirectory() as old, tempfile.TemporaryDirectory() as new:
            o, n = bundle(old, 3, 6), bundle(new, 4, 6)
            doc = cmerge._load(n)
            os.rename(os.path.join(new, "h.q.npy"), os.path.join(new, "other.q.npy"))
            doc["instance"]["q"] = {"npy": "other.q.npy", "sha256": "recorded"}
            save(n, doc)
            self.assertEqual(cmerge.merge(o, n)[2], "tightened")

    def test_names_leaving_the_folder_are_refused(self):
        with tempfile.TemporaryDirectory() as old, tempfile.TemporaryDirectory() as new:
            n = bundle(new, 4, 7)
            for bad in ("../x.npy", "/tmp/x.npy", "..", "a/b.npy"):
                doc = cmerge._load(n)
                doc["certificates"][0]["r"]["npy"] = bad
                save(n, doc)
                with self.assertRaises(ValueError):
                    cmerge.merge(os.path.join(old, "b.json"), n)
            self.assertFalse(os.path.exists(os.path.join(os.path.dirname(old), "x.npy")))

    def test_a_kept_sidecar_is_never_overwritten(self):
        with tempfile.TemporaryDirectory() as old, tempfile.TemporaryDirectory() as new:
            o, n = bundle(old, 3, 6, tag="old"), bundle(new, 4, 7, tag="new")
            doc = cmerge._load(n)
            doc["certificates"][0]["r"]["npy"] = "b.factor6.u.npy"  # names the kept upper's file
            put(new, "b.factor6.u.npy", b"clash")
            save(n, doc)
            with self.assertRaises(RuntimeError):
                cmerge.merge(o, n)
            with open(os.path.join(old, "b.factor6.u.npy"), "rb") as f:
                self.assertEqual(f.read(), b"old")


if __name__ == "__main__":
    unittest.main()
