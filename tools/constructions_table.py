#!/usr/bin/python3
"""Print the markdown table of the committed sweeps (standard library only).

usage: /usr/bin/python3 tools/constructions_table.py certificates/constructions
"""
import glob
import json
import os
import sys
from fractions import Fraction


def mid(iv):
    return float((Fraction(iv[0]) + Fraction(iv[1])) / 2)


def main():
    folder = sys.argv[1]
    print("| family | dimension | sweep | theoretical exponent | fitted exponent of L | fitted exponent of U | range | points | witness |")
    print("|---|---:|---|---:|---:|---:|---|---:|---|")
    for path in sorted(glob.glob(os.path.join(folder, "*", "*-sweep.json"))):
        s = json.load(open(path))
        pts = s["points"]
        key = s["parameter"]
        vals = [p[key] for p in pts]
        fit = [pts[i][key] for i in s["fit"]["points"]]
        fixed = ", ".join(f"{k} {v}" for k, v in s["fixed"].items())
        print(f"| {s['family']} | {s['dimension']} | {key} ({fixed}) | {s['theory_exponent']:g} | "
              f"{mid(s['fit']['slope_L']):.3f} | {mid(s['fit']['slope_U']):.3f} | "
              f"{vals[0]}..{vals[-1]} (fit {fit[0]}..{fit[-1]}) | {len(pts)} | `{os.path.relpath(path, folder)}` |")


if __name__ == "__main__":
    main()
