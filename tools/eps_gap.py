#!/usr/bin/python3
"""How far apart in eps the lower and the upper certificates are (standard library only).

A bracket L <= r_eps <= U at one eps says little about how far the two ends
are from each other once ranks are large: a head at 512 tokens with
[118, 176] at eps 0.1 may have its rank-118 factor at eps 0.2.  This tool
measures that distance in eps instead of in rank.  For an instance bracketed
at several eps, the *eps gap* at eps0 is the factor c >= 1 for which the
upper certificates reach rank L(eps0) at eps c * eps0:

    rank L(eps0) is necessary at eps0 (a lower certificate), and the upper
    certificates reach it at about c * eps0.

U is interpolated linearly in (log eps, log U) between the sampled eps; below
the smallest sampled U the last segment is extended ("extrapolated").  c = 1
for a closed bracket.  Since r_eps is a step function, c is an estimate of
the distance between the two curves, not a certified quantity; each bracket
it comes from is.  Where U grows like eps^-alpha near eps0, U/L is about
c^alpha; the table's last column gives the median alpha between eps0 and
2 eps0.  At small n ranks move in coarse steps, so c takes coarse values
(a bracket open at eps0 whose U reaches L(eps0) only at 2 eps0 gives 2).

Also printed: the share of instances with L(eps0) >= U(2 eps0), i.e. the
lower certificate at eps0 proves at least the rank the upper one reaches at
twice eps0 (both ends certified; no interpolation).

usage: /usr/bin/python3 tools/eps_gap.py CSV... [--eps E[,E...]] [--svg OUT.svg] [--label CSV=NAME]
                                           [--min-n N]
       CSV: a summary.csv of certificates/real or certificates/real/full512
       (every row; an instance is one head, text, temperature), or any CSV with columns n, eps, L, U and
       identifying columns among model, layer, head, text, temperature, group.
       --eps E[,E...]: the eps0 of the table (default 0.05,0.1); the
       figure is drawn for the first.
       --svg OUT.svg: c per instance against n, one column per (group, n).
       --label CSV=NAME: the group name of that file's rows (default: its
       folder name, or the file's 'group' column if it has one).
       --min-n N: leave out instances of fewer than N tokens.
"""
import collections
import csv
import math
import os
import statistics
import sys

KEY_COLUMNS = ("group", "model", "layer", "head", "text", "n", "temperature")


def eps_gap(profile, eps0):
    """profile: {eps (float): (L, U)}.  Returns (c, extrapolated) or None.

    c = e' / eps0 where U reaches L(eps0) at e' (log-log interpolation)."""
    if eps0 not in profile:
        return None
    es = sorted(profile)
    # Only eps >= eps0: U(eps0) >= L(eps0) always, and a plateau of U below
    # eps0 says nothing about how far the upper side is from L(eps0).
    es = [e for e in es if e >= eps0]
    if len(es) < 2 or profile[eps0][0] < 1 or any(profile[e][1] < 1 for e in es):
        return None  # too few eps, or a rank 0 (nothing to read on a log scale)
    target = math.log(profile[eps0][0])
    pts = [(math.log(e), math.log(profile[e][1])) for e in es]
    if target >= pts[0][1]:
        return 1.0, False  # closed at eps0
    for (x1, y1), (x2, y2) in zip(pts, pts[1:]):
        if y2 <= target <= y1:
            x = x1 if y1 == y2 else x1 + (target - y1) * (x2 - x1) / (y2 - y1)
            return math.exp(x) / eps0, False
    (x1, y1), (x2, y2) = pts[-2], pts[-1]
    if y2 >= y1:
        return math.inf, True
    return math.exp(x2 + (target - y2) * (x2 - x1) / (y2 - y1)) / eps0, True


def read_profiles(path, label=None):
    """{instance key: {eps: (L, U)}} from one summary CSV."""
    group = label or os.path.basename(os.path.dirname(os.path.abspath(path)))
    out = collections.defaultdict(dict)
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            for col in ("n", "eps", "L", "U"):
                if col not in r or r[col] in ("", None):
                    sys.exit(f"{path}: row without a '{col}' value")
            key = tuple((c, r[c]) for c in KEY_COLUMNS if c in r and c != "group")
            g = r.get("group") or group
            try:
                out[(("group", g),) + key][float(r["eps"])] = (int(r["L"]), int(r["U"]))
            except ValueError as e:
                sys.exit(f"{path}: field eps, L or U: {e}")
    return out


def gaps(profiles, eps0):
    """Per (group, n): the list of (c, extrapolated), of L(eps0) >= U(2 eps0), of alpha, and of U/L at eps0."""
    cells, twice, alpha, ratio = (collections.defaultdict(list) for _ in range(4))
    for key, prof in profiles.items():
        k = dict(key)
        res = eps_gap(prof, eps0)
        if res is None:
            continue
        col = (k["group"], int(k["n"]))
        cells[col].append(res)
        ratio[col].append(prof[eps0][1] / prof[eps0][0])
        hit = [e for e in prof if math.isclose(e, 2 * eps0)]
        if hit:
            twice[col].append(prof[eps0][0] >= prof[hit[0]][1])
            alpha[col].append(math.log(prof[eps0][1] / prof[hit[0]][1]) / math.log(2))
    return cells, twice, alpha, ratio


def table(profiles, eps_list):
    """Markdown table, one row per (group, n, eps0); and the cells of the first eps0 (for svg)."""
    lines = ["| group | n | eps | instances | median eps gap c | quartiles | extrapolated | L(eps) >= U(2 eps) | "
             "median U/L | median alpha |",
             "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
    first = None
    rows = []
    for eps0 in eps_list:
        cells, twice, alpha, ratio = gaps(profiles, eps0)
        if first is None:
            first = cells
        for (g, n), v in cells.items():
            cs = [c for c, _ in v]
            q = statistics.quantiles(cs, n=4, method="inclusive") if len(cs) > 1 else [cs[0]] * 3
            ex = sum(1 for _, e in v if e)
            tw = twice.get((g, n), [])
            al = alpha.get((g, n), [])
            rows.append(((n, g, eps0), f"| {g} | {n} | {eps0:g} | {len(cs)} | {statistics.median(cs):.3f} | "
                         f"{q[0]:.2f} / {q[2]:.2f} | {ex} | {f'{sum(tw)} of {len(tw)}' if tw else '-'} | "
                         f"{statistics.median(ratio[(g, n)]):.3f} | "
                         f"{f'{statistics.median(al):.2f}' if al else '-'} |"))
    lines += [text for _, text in sorted(rows)]
    return "\n".join(lines), first or {}


def svg(cells, eps0, path):
    cols = sorted(cells, key=lambda t: (t[1], t[0]))
    W, H, left, bottom, top = max(560, 120 + 90 * len(cols)), 360, 60, 60, 30
    finite = [c for v in cells.values() for c, _ in v if math.isfinite(c)]
    ymax = min(4.0, max(3.0, math.ceil(max(finite, default=2.0) * 2) / 2))

    def y(c):
        c = min(c, ymax)
        return top + (H - top - bottom) * (1 - (c - 1) / (ymax - 1))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<text x="{W / 2}" y="18" text-anchor="middle">eps gap at eps {eps0:g}: upper certificates reach L(eps) '
           f'at c x eps</text>']
    t = 1.0
    while t <= ymax + 1e-9:
        out.append(f'<line x1="{left}" x2="{W - 20}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#ddd"/>'
                   f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
        t += 0.5
    step = (W - left - 40) / len(cols)
    for i, col in enumerate(cols):
        x0 = left + step * (i + 0.5)
        vals = sorted(c for c, _ in cells[col])
        for j, (c, ex) in enumerate(cells[col]):
            dx = ((j * 37) % 41 - 20) * min(0.9, step / 100)
            fill = "#fff" if ex else "#36c"
            out.append(f'<circle cx="{x0 + dx:.1f}" cy="{y(c):.1f}" r="2.5" fill="{fill}" stroke="#36c"/>')
        m = statistics.median(vals)
        out.append(f'<line x1="{x0 - 24}" x2="{x0 + 24}" y1="{y(m):.1f}" y2="{y(m):.1f}" stroke="#c33" '
                   f'stroke-width="3"/>')
        out.append(f'<text x="{x0}" y="{H - bottom + 18}" text-anchor="middle">n = {col[1]}</text>'
                   f'<text x="{x0}" y="{H - bottom + 34}" text-anchor="middle" fill="#555">{col[0]}</text>')
    out.append(f'<text x="{left}" y="{H - 8}" fill="#555">red: median; open: extrapolated past the largest eps; '
               f'c > {ymax:g} drawn at {ymax:g}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main(argv):
    eps_list, svg_path, labels, paths, min_n = [0.05, 0.1], None, {}, [], 0
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--eps", "--svg", "--label", "--min-n"):
            if i + 1 >= len(argv):
                sys.exit(f"eps_gap.py: {a} needs a value")
            v = argv[i + 1]
            if a == "--eps":
                try:
                    eps_list = [float(e) for e in v.split(",")]
                except ValueError:
                    sys.exit(f"eps_gap.py: --eps: not a number: {v}")
            elif a == "--svg":
                svg_path = v
            elif a == "--min-n":
                if not v.isdigit():
                    sys.exit(f"eps_gap.py: --min-n: not a count: {v}")
                min_n = int(v)
            else:
                if "=" not in v:
                    sys.exit(f"eps_gap.py: --label needs CSV=NAME, got {v}")
                p, name = v.split("=", 1)
                labels[os.path.abspath(p)] = name
            i += 2
        elif a.startswith("-"):
            sys.exit(__doc__)
        else:
            paths.append(a)
            i += 1
    if not paths:
        sys.exit(__doc__)
    profiles = {}
    for p in paths:
        if not os.path.isfile(p):
            sys.exit(f"eps_gap.py: {p}: no such file")
        profiles.update(read_profiles(p, labels.get(os.path.abspath(p))))
    profiles = {k: v for k, v in profiles.items() if int(dict(k)["n"]) >= min_n}
    text, cells = table(profiles, eps_list)
    if not cells:
        sys.exit(f"eps_gap.py: no instance has eps {eps_list[0]:g} and a larger eps")
    print(text)
    if svg_path:
        svg(cells, eps_list[0], svg_path)


if __name__ == "__main__":
    main(sys.argv[1:])
