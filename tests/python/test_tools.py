"""Tests of the corpus tools' bookkeeping (tools/real512_summary.py).

Run: /usr/bin/python3 -m unittest tests/python/test_tools.py
"""

import importlib.util
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
spec = importlib.util.spec_from_file_location("real512_summary", os.path.join(ROOT, "tools", "real512_summary.py"))
summary = importlib.util.module_from_spec(spec)
spec.loader.exec_module(summary)


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


if __name__ == "__main__":
    unittest.main()
