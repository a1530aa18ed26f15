#!/usr/bin/python3
"""An independent re-checker for rankcert bundles and witnesses.

It shares no code with rankcert: Python's standard library (fractions, json,
hashlib, struct) for exact input, and mpmath's interval arithmetic
(Debian's python3-mpmath) for the transcendental parts.  For each bundle it
recomputes every certificate's inequalities from the exact instance, decides
them on its own enclosures, and compares with what rankcert said (the
witness file, `rankcert verify --witness`):

  agree      every certificate it decided got the same verdict from rankcert,
             the certified bracket is the same, and each decisive enclosure
             in the witness overlaps the re-checker's enclosure of the same
             quantity (both contain the true value, so they must meet);
  disagree   some verdict, bracket or enclosure contradicts;
  undecided  it could not decide something rankcert decided (e.g. not enough
             precision).

Every certificate kind is re-checked: factor, row_interpolative, neumann,
block_neumann (vertex preimages per block of rows of P = Lambda A_I),
borsuk (the exact polytope test of every block, then the witness rows),
zonal (its rank recomputed from the exact points and coefficients, and its
row errors with Clenshaw's recurrence in intervals),
kron_factor and kron_neumann (per-factor rows of a kronecker instance, the
telescoped error and the per-multi-index neumann row), tail, trivial, sandwich (both row inequalities through the Gibbs matrix of
T) and profile (the exact gauge bound on kappa, the exact spectral-norm
certificate of Z by LDL^T, the dual lower bound, q, tau, tau* and the exact
visible dimension).

Rows: all rows when n <= --all-rows-below (default 48); otherwise a random
subset of --rows rows (default 24) chosen with --seed (default 0), plus the
witness's decisive row.  A row-wise "verified" is then re-checked on that
subset only; the report says so.

usage: /usr/bin/python3 tools/recheck/recheck.py BUNDLE.json WITNESS.json [--json]
       [--dps 30] [--rows 24] [--seed 0] [--all-rows-below 48]
exit: 0 agree, 1 disagree, 2 undecided, 3 input error.
"""
import argparse
import hashlib
import json
import math
import os
import random
import struct
import sys
from fractions import Fraction

from mpmath import iv, libmp


class InputError(Exception):
    pass


# ---- exact numbers -----------------------------------------------------------

def number(x, where):
    """A JSON number or string as an exact Fraction (or the tag 'neg_inf')."""
    if isinstance(x, bool):
        raise InputError(f"{where}: a boolean is not a number")
    if isinstance(x, int):
        return Fraction(x)
    if isinstance(x, Fraction):
        return x
    if isinstance(x, dict) and "rsqrt" in x:
        return ("rsqrt", number(x["rsqrt"], where + ".rsqrt"))
    if isinstance(x, str):
        s = x.strip()
        if s == "-inf":
            return "neg_inf"
        try:
            if s.lower().startswith(("0x", "-0x", "+0x")):
                return Fraction(float.fromhex(s))  # exact: a hex float is a double
            if "/" in s:
                p, q = s.split("/")
                return Fraction(int(p), int(q))
            return Fraction(s)
        except (ValueError, ZeroDivisionError, OverflowError) as e:
            raise InputError(f"{where}: not an exact number: {s[:40]!r} ({e})")
    raise InputError(f"{where}: not a number")


def parse_json_exact(text):
    # Non-integer JSON numbers become the decimal they spell.
    return json.loads(text, parse_float=Fraction)


# ---- arrays --------------------------------------------------------------------

def ieee(bits, ebits, mbits):
    sign = -1 if bits >> (ebits + mbits) else 1
    e = (bits >> mbits) & ((1 << ebits) - 1)
    m = bits & ((1 << mbits) - 1)
    bias = (1 << (ebits - 1)) - 1
    if e == (1 << ebits) - 1:
        return "neg_inf" if (m == 0 and sign < 0) else None
    if e == 0:
        return sign * Fraction(m, 1 << (bias - 1 + mbits))
    v = Fraction((1 << mbits) + m) * Fraction(2) ** (e - bias - mbits)
    return sign * v


DTYPES = {"<f2": (2, lambda b: ieee(struct.unpack("<H", b)[0], 5, 10)),
          "<f4": (4, lambda b: ieee(struct.unpack("<I", b)[0], 8, 23)),
          "<f8": (8, lambda b: ieee(struct.unpack("<Q", b)[0], 11, 52)),
          "|b1": (1, lambda b: Fraction(b[0] != 0)),
          "|u1": (1, lambda b: Fraction(b[0])),
          "<i4": (4, lambda b: Fraction(struct.unpack("<i", b)[0])),
          "<i8": (8, lambda b: Fraction(struct.unpack("<q", b)[0]))}


def read_npy(data, where):
    if data[:6] != b"\x93NUMPY":
        raise InputError(f"{where}: not a .npy file")
    major = data[6]
    if major == 1:
        hlen, off = struct.unpack("<H", data[8:10])[0], 10
    else:
        hlen, off = struct.unpack("<I", data[8:12])[0], 12
    header = data[off:off + hlen].decode("latin1")
    import ast
    h = ast.literal_eval(header)
    descr, fortran, shape = h["descr"], h["fortran_order"], tuple(h["shape"])
    if descr not in DTYPES:
        raise InputError(f"{where}: dtype {descr} not supported")
    size, conv = DTYPES[descr]
    rows, cols = (shape[0], 1) if len(shape) == 1 else (1, 1) if len(shape) == 0 else shape
    body = data[off + hlen:]
    vals = [conv(body[t * size:(t + 1) * size]) for t in range(rows * cols)]
    if fortran and len(shape) == 2:
        vals = [vals[j * rows + i] for i in range(rows) for j in range(cols)]
    return rows, cols, vals, len(shape) == 1


SAFE = {"F16": (2, DTYPES["<f2"][1]), "BF16": (2, lambda b: ieee(struct.unpack("<H", b)[0], 8, 7)),
        "F32": (4, DTYPES["<f4"][1]), "F64": (8, DTYPES["<f8"][1]), "BOOL": (1, DTYPES["|b1"][1]),
        "U8": (1, DTYPES["|u1"][1])}


def read_safetensors(data, name, where):
    n = struct.unpack("<Q", data[:8])[0]
    head = json.loads(data[8:8 + n])
    t = head[name]
    size, conv = SAFE[t["dtype"]]
    b, e = t["data_offsets"]
    body = data[8 + n + b:8 + n + e]
    shape = t["shape"]
    rows, cols = (shape[0], 1) if len(shape) == 1 else shape
    return rows, cols, [conv(body[k * size:(k + 1) * size]) for k in range(rows * cols)], len(shape) == 1


class Arrays:
    def __init__(self, folder, sidecars):
        self.folder = os.path.realpath(folder)
        self.hashes = {s["path"]: s["sha256"] for s in sidecars}

    def file(self, rel, sha, where):
        full = os.path.realpath(os.path.join(self.folder, rel))
        if os.path.isabs(rel) or not full.startswith(self.folder + os.sep):
            raise InputError(f"{where}: sidecar {rel!r} outside the bundle's folder")
        data = open(full, "rb").read()
        if hashlib.sha256(data).hexdigest() != sha:
            raise InputError(f"{where}: sha256 mismatch for {rel}")
        return data

    def load(self, j, where):
        """(rows, cols, row-major values, is_vector)."""
        if "npy" in j:
            return read_npy(self.file(j["npy"], j["sha256"], where), where)
        if "safetensors" in j:
            return read_safetensors(self.file(j["safetensors"], j["sha256"], where), j["tensor"], where)
        shape = j["shape"]
        if "coo" in j:
            rows, cols = (shape[0], 1) if len(shape) == 1 else shape
            vals = [Fraction(0)] * (rows * cols)
            c = j["coo"]
            for r, k, v in zip(c["row"], c["col"], c["val"]):
                vals[r * cols + k] = number(v, where)
            return rows, cols, vals, len(shape) == 1
        rows, cols = (shape[0], 1) if len(shape) == 1 else shape
        return rows, cols, [number(v, where) for v in j["data"]], len(shape) == 1


# ---- intervals -------------------------------------------------------------------

def ivq(q):
    """An interval containing the Fraction q."""
    return iv.mpf(q.numerator) / iv.mpf(q.denominator)


def ends(x):
    """Exact Fraction endpoints of an mpmath interval."""
    a, b = x._mpi_
    pa, qa = libmp.to_rational(a)
    pb, qb = libmp.to_rational(b)
    return Fraction(pa, qa), Fraction(pb, qb)


def le(x, t):
    lo, hi = ends(x)
    return "verified" if hi <= t else "refuted" if lo > t else "undecided"


def lt(x, t):
    lo, hi = ends(x)
    return "verified" if hi < t else "refuted" if lo >= t else "undecided"


def gt(x, t):
    lo, hi = ends(x)
    return "verified" if lo > t else "refuted" if hi <= t else "undecided"


def combine(vs):
    if "refuted" in vs:
        return "refuted"
    return "undecided" if "undecided" in vs else "verified"


# ---- the instance ------------------------------------------------------------------

class Instance:
    def __init__(self, j, arrays):
        self.kind = j["kind"]
        if self.kind == "kronecker":
            # A = A_1 (x) A_2 (x) ...: only the kron_* kinds apply; rows are never formed.
            self.factors = [Instance(f, arrays) for f in j["factors"]]
            self.n = self.N = 1
            for f in self.factors:
                self.n, self.N = self.n * f.n, self.N * f.N
            return
        if self.kind == "matrix":
            self.n, self.N, a, _ = arrays.load(j["a"], "instance.a")
            self.a = [a[i * self.N:(i + 1) * self.N] for i in range(self.n)]
            return
        if self.kind == "logits":
            self.n, self.N, s, _ = arrays.load(j["logits"], "instance.logits")
            self.s = [s[i * self.N:(i + 1) * self.N] for i in range(self.n)]
            self.allowed = [[v != "neg_inf" for v in row] for row in self.s]
            return
        self.n, d, q, _ = arrays.load(j["q"], "instance.q")
        self.N, d2, k, _ = arrays.load(j["k"], "instance.k")
        self.q = [q[i * d:(i + 1) * d] for i in range(self.n)]
        self.k = [k[i * d:(i + 1) * d] for i in range(self.N)]
        scale = number(j["scale"], "instance.scale")
        temp = number(j.get("temperature", 1), "instance.temperature")
        self.scale, self.temp = scale, temp
        bias = j.get("key_bias")
        self.bias = [Fraction(0)] * self.N
        if bias is not None:
            _, _, self.bias, _ = arrays.load(bias, "instance.key_bias")
        mask = j.get("mask", "none") or "none"
        if mask == "none":
            self.allowed = [[True] * self.N for _ in range(self.n)]
        elif mask == "causal":
            self.allowed = [[col <= i + self.N - self.n for col in range(self.N)] for i in range(self.n)]
        else:
            r, c, m, _ = arrays.load(mask, "instance.mask")
            self.allowed = [[m[i * c + col] != 0 for col in range(c)] for i in range(r)]

    def softmax(self):
        if self.kind == "kronecker":
            return all(f.softmax() for f in self.factors)
        return self.kind != "matrix"

    def logits(self, i):
        """Row i of the logits as intervals, None where masked (logits and qk instances)."""
        if self.kind == "logits":
            return [ivq(x) if ok else None for x, ok in zip(self.s[i], self.allowed[i])]
        # The coefficient at the current precision (scale = q or 1/sqrt(q)).
        if isinstance(self.scale, Fraction):
            coef = ivq(self.scale * self.temp)
        else:
            coef = ivq(self.temp) / iv.sqrt(ivq(self.scale[1]))
        out = []
        for col in range(self.N):
            if not self.allowed[i][col]:
                out.append(None)
                continue
            dot = sum((a * b for a, b in zip(self.q[i], self.k[col])), Fraction(0))  # exact
            out.append(coef * ivq(dot) + ivq(self.bias[col]))
        return out

    def coef(self):
        if isinstance(self.scale, Fraction):
            return ivq(self.scale * self.temp)
        return ivq(self.temp) / iv.sqrt(ivq(self.scale[1]))

    def row(self, i):
        """Row i of A as intervals (exact Fractions for matrix instances)."""
        if self.kind == "matrix":
            return [ivq(x) for x in self.a[i]]
        return softmax(self.logits(i))


def softmax(logits):
    shift = max((float(x.mid) for x in logits if x is not None))
    ex = [iv.exp(x - shift) if x is not None else None for x in logits]
    z = sum((e for e in ex if e is not None), iv.mpf(0))
    return [e / z if e is not None else iv.mpf(0) for e in ex]


# ---- exact linear algebra (profile) ------------------------------------------------------

def frac_inverse(M, r):
    """Inverse of an r x r Fraction matrix (row-major list), or None when singular."""
    a = [list(M[i * r:(i + 1) * r]) + [Fraction(int(i == j)) for j in range(r)] for i in range(r)]
    for c in range(r):
        piv = next((i for i in range(c, r) if a[i][c] != 0), None)
        if piv is None:
            return None
        a[c], a[piv] = a[piv], a[c]
        inv = 1 / a[c][c]
        a[c] = [x * inv for x in a[c]]
        for i in range(r):
            if i != c and a[i][c] != 0:
                f = a[i][c]
                a[i] = [x - f * y for x, y in zip(a[i], a[c])]
    return [a[i][r + j] for i in range(r) for j in range(r)]


def frac_rank(M, rows, cols):
    a = [list(M[i * cols:(i + 1) * cols]) for i in range(rows)]
    rank, c = 0, 0
    for c in range(cols):
        piv = next((i for i in range(rank, rows) if a[i][c] != 0), None)
        if piv is None:
            continue
        a[rank], a[piv] = a[piv], a[rank]
        for i in range(rank + 1, rows):
            if a[i][c] != 0:
                f = a[i][c] / a[rank][c]
                a[i] = [x - f * y for x, y in zip(a[i], a[rank])]
        rank += 1
    return rank


def frac_mul(A, B, a, b, c):
    return [sum((A[i * b + k] * B[k * c + j] for k in range(b)), Fraction(0)) for i in range(a) for j in range(c)]


def frac_t(A, a, b):
    return [A[i * b + j] for j in range(b) for i in range(a)]


def frac_pd(H, s):
    """Exact LDL^T without pivoting: True when every pivot is positive (H positive definite)."""
    H = [list(H[i * s:(i + 1) * s]) for i in range(s)]
    for q in range(s):
        for l in range(q):
            H[q][q] -= H[q][l] * H[q][l] * H[l][l]
        if H[q][q] <= 0:
            return False
        for i in range(q + 1, s):
            for l in range(q):
                H[i][q] -= H[i][l] * H[q][l] * H[l][l]
            H[i][q] /= H[q][q]
    return True


def centred(M, rows, cols):
    """Subtract each column's mean (Fractions, row-major lists of rows)."""
    means = [sum((M[i][c] for i in range(rows)), Fraction(0)) / rows for c in range(cols)]
    return [[M[i][c] - means[c] for c in range(cols)] for i in range(rows)]


class Interaction:
    """Rows of the residual C - T (C the double-centred interaction, T = X Y^T)
    and of the Gibbs matrix of T: A~_i = softmax(log A_i - (C - T)_i)."""

    def __init__(self, inst, X, Y, r):
        self.inst, self.X, self.Y, self.r = inst, X, Y, r
        n, N = inst.n, inst.N
        if inst.kind == "qk":
            d = len(inst.q[0])
            self.Qc, self.Kc = centred(inst.q, n, d), centred(inst.k, N, d)
        elif inst.kind == "logits":
            S = inst.s
            rm = [sum(row, Fraction(0)) / N for row in S]
            cm = [sum((S[i][j] for i in range(n)), Fraction(0)) / n for j in range(N)]
            al = sum(rm, Fraction(0)) / n
            self.C = [[S[i][j] - rm[i] - cm[j] + al for j in range(N)] for i in range(n)]
        else:
            self.logA = [[iv.log(ivq(x)) for x in row] for row in inst.a]
            rm = [sum(row, iv.mpf(0)) / N for row in self.logA]
            cm = [sum((self.logA[i][j] for i in range(n)), iv.mpf(0)) / n for j in range(N)]
            al = sum(rm, iv.mpf(0)) / n
            self.Lg = [[self.logA[i][j] - rm[i] - cm[j] + al for j in range(N)] for i in range(n)]

    def residual(self, i):
        inst, r = self.inst, self.r
        out = []
        coef = inst.coef() if inst.kind == "qk" else None
        for j in range(inst.N):
            if inst.kind == "qk":
                c = coef * ivq(sum((a * b for a, b in zip(self.Qc[i], self.Kc[j])), Fraction(0)))
            elif inst.kind == "logits":
                c = ivq(self.C[i][j])
            else:
                c = self.Lg[i][j]
            t = sum((self.X[i * r + u] * self.Y[j * r + u] for u in range(r)), Fraction(0))
            out.append(c - ivq(t))
        return out

    def gibbs(self, i, R):
        inst = self.inst
        if inst.kind == "matrix":
            A = [ivq(x) for x in inst.a[i]]
            At = softmax([self.logA[i][j] - R[j] for j in range(inst.N)])
        else:
            lg = inst.logits(i)
            A = softmax(lg)
            At = softmax([x - R[j] for j, x in enumerate(lg)])
        return A, At


def itanh(x):
    """tanh on an interval: increasing, so the hull of its values at the two ends."""
    lo = 1 - 2 / (iv.exp(2 * x.a) + 1)
    hi = 1 - 2 / (iv.exp(2 * x.b) + 1)
    return iv.mpf([lo.a, hi.b])


def imax2(x, y):
    """An interval holding max(a, b) for every a in x, b in y."""
    return iv.mpf([x.a if x.a >= y.a else y.a, x.b if x.b >= y.b else y.b])


def imin2(x, y):
    return iv.mpf([x.a if x.a <= y.a else y.a, x.b if x.b <= y.b else y.b])


def within(x, lo, hi):
    a, b = ends(x)
    return "verified" if lo <= a and b <= hi else "refuted" if b < lo or a > hi else "undecided"


def ge(x, t):
    a, b = ends(x)
    return "verified" if a >= t else "refuted" if b < t else "undecided"


def interval_claim(cl, key):
    v = cl[key]
    return number(v[0], "claims." + key), number(v[1], "claims." + key)


# ---- certificates --------------------------------------------------------------------

def dense(arrays, j, where):
    r, c, v, isvec = arrays.load(j, where)
    return r, c, v


def check_rows(rows_to_check, value, test):
    """Decide value(t) (an interval) against test for each t; the verdict and the per-row enclosures."""
    out, encl = [], {}
    for t in rows_to_check:
        x = value(t)
        encl[t] = x
        out.append(test(x))
        if out[-1] == "refuted":
            break
    return combine(out), encl


def hull(lo, hi):
    """An interval containing the Fractions lo <= hi."""
    return iv.mpf([ivq(lo).a, ivq(hi).b])


def recheck_kron_factor(inst, arrays, eps, c, idx, rows_to_check, report):
    """E = sum_k prod_{j<k}(a_j + e_j) e_k prod_{j>k} a_j <= eps, e_k the factor's worst row error."""
    where = f"certificates[{idx}]"
    norms = [Fraction(1) if f.softmax() else max(sum(abs(x) for x in row) for row in f.a) for f in inst.factors]
    wdec = report["certificates"][idx].get("decisive", {}).get("factors", [])
    e_lo, e_hi = [], []
    for k, (f, cf) in enumerate(zip(inst.factors, c["factors"])):
        sub = {"kind": "factor", "u": cf["u"], "w": cf["w"]}
        _, encl = recheck_certificate(f, arrays, Fraction(1 << 200), sub, f"{idx}.factors[{k}]",
                                      rows_to_check, report)
        los = [ends(x)[0] for x in encl.values()]
        his = [ends(x)[1] for x in encl.values()]
        e_lo.append(max(max(los), Fraction(0)))
        if len(encl) == f.n:
            e_hi.append(max(his))
        else:
            # Sampled rows: rankcert's bound over all rows must hold for each of them.
            claimed = number(wdec[k]["e_upper"][1], "witness") if k < len(wdec) else None
            if claimed is None or e_lo[-1] > claimed:
                return "refuted", {}
            e_hi.append(claimed)

    def tele(e):
        total, prefix = Fraction(0), Fraction(1)
        for k, x in enumerate(e):
            rest = Fraction(1)
            for a in norms[k + 1:]:
                rest *= a
            total += prefix * x * rest
            prefix *= norms[k] + x
        return total
    lo, hi = tele(e_lo), tele(e_hi)
    return ("verified" if hi <= eps else "refuted" if lo > eps else "undecided"), {None: hull(lo, hi)}


def recheck_kron_neumann(inst, arrays, eps, c, idx, rows_to_check, report):
    """Every multi-index t: |1 - prod d_k| + prod l_k - prod |d_k| < 1 - eps prod rho_k."""
    where = f"certificates[{idx}]"
    rho, ds, ls = Fraction(1), [], []
    for k, (f, cf) in enumerate(zip(inst.factors, c["factors"])):
        rows = cf["rows"]
        Nr, m, R = dense(arrays, cf["r"], f"{where}.factors[{k}].r")
        rho *= max(sum(abs(R[j * m + u]) for u in range(m)) for j in range(Nr))
        nz = [(j, u, ivq(R[j * m + u])) for j in range(Nr) for u in range(m) if R[j * m + u] != 0]
        d, l = [], []
        for t in range(m):
            a = f.row(rows[t])
            v = [iv.mpf(0)] * m
            for j, u, r in nz:
                v[u] += a[j] * r
            d.append(v[t])
            l.append(sum((abs(x) for x in v), iv.mpf(0)))
        ds.append(d)
        ls.append(l)
    thr = 1 - eps * rho
    if thr <= 0:
        return "refuted", {}
    sizes = [len(d) for d in ds]
    total = 1
    for m in sizes:
        total *= m

    def multi(flat):
        t = []
        for m in reversed(sizes):
            t.append(flat % m)
            flat //= m
        return tuple(reversed(t))

    def value(key):
        pd, pl, pa = iv.mpf(1), iv.mpf(1), iv.mpf(1)
        for k, tk in enumerate(key):
            pd, pl, pa = pd * ds[k][tk], pl * ls[k][tk], pa * abs(ds[k][tk])
        return abs(1 - pd) + pl - pa
    keys = [multi(x) for x in rows_to_check(total)]
    dec = report["certificates"][idx].get("decisive", {}).get("t")
    if isinstance(dec, list) and len(dec) == len(sizes) and tuple(dec) not in keys:
        keys.append(tuple(dec))
    return check_rows(keys, value, lambda x: lt(x, thr))


def zonal_rank(inst, cheb):
    """The dimension bound of docs/theory.md ("zonal"), recomputed from the exact data."""
    nz = [k for k, x in enumerate(cheb) if x != 0]
    if not nz:
        return 0
    p, d = nz[-1], len(inst.k[0])

    def on_sphere(pts):
        return all(sum((x * x for x in v), Fraction(0)) == 1 for v in pts)
    if on_sphere(inst.k) or on_sphere(inst.q):
        one_parity = all(k % 2 == p % 2 for k in nz)
        r = math.comb(p + d - 1, d - 1) + (math.comb(p + d - 2, d - 1) if p >= 1 and not one_parity else 0)
    else:
        r = math.comb(p + d, d)
    return min(r, inst.n, inst.N)


def recheck_zonal(inst, eps, c, where, rows_to_check):
    """B_ij = e^{b_j + shift} g(<q_i, k_j>) / Z_i, g = sum_k c_k T_k: its rank and its row errors."""
    if inst.kind != "qk" or not all(all(row) for row in inst.allowed):
        raise InputError(f"{where}: zonal applies only to qk instances without a mask")
    cheb = [number(x, f"{where}.chebyshev[{k}]") for k, x in enumerate(c["chebyshev"])]
    rank = zonal_rank(inst, cheb)
    if c.get("rank") != rank:
        raise InputError(f"{where}.rank: stated {c.get('rank')}, the data prove {rank}")
    shift = number(c["shift"], f"{where}.shift")

    def err(i):
        coef, sh = inst.coef(), ivq(shift)
        cs = [ivq(x) for x in cheb]
        num = den = iv.mpf(0)
        for j in range(inst.N):
            t = ivq(sum((a * b for a, b in zip(inst.q[i], inst.k[j])), Fraction(0)))  # exact dot, then an interval
            x = iv.exp(coef * t - sh)
            b1 = b2 = iv.mpf(0)
            for ck in reversed(cs[1:]):  # Clenshaw
                b1, b2 = ck + 2 * t * b1 - b2, b1
            g = cs[0] + t * b1 - b2
            eb = iv.exp(ivq(inst.bias[j]))
            num += eb * abs(x - g)
            den += eb * x
        return num / den
    return check_rows(rows_to_check(inst.n), err, lambda x: le(x, eps))


def borsuk_polytope(blk, where, n_rows):
    """The exact polytope test of one borsuk block (docs/theory.md): every
    facet is a facet of conv(+-u) (vertices independent, every other vertex
    strictly below the hyperplane w.x = 1 through them), and every ridge of
    the facets +-F lies in exactly two of them.  Raises InputError."""
    verts = [[number(x, where) for x in u] for u in blk["vertices"]]
    V, k = len(verts), len(verts[0]) if verts else 0
    if k == 0 or any(len(u) != k for u in verts):
        raise InputError(f"{where}.vertices: needs 1 or more vertices of one dimension")
    labels = blk.get("labels", [])
    if len(labels) != V or any(len(lb) != 2 or lb[1] not in (1, -1) or not (0 <= lb[0] < n_rows) for lb in labels):
        raise InputError(f"{where}.labels: needs one [row in [0, {n_rows}), 1 or -1] per vertex")
    pts = verts + [[-x for x in u] for u in verts]
    neg = lambda q: q + V if q < V else q - V  # noqa: E731
    ridges = {}
    for f, F in enumerate(blk["facets"]):
        if len(F) != k or len(set(F)) != k or any(not (0 <= q < 2 * V) for q in F):
            raise InputError(f"{where}.facets[{f}]: needs {k} distinct indices in [0, {2 * V})")
        # Solve P w = 1 exactly (Gauss-Jordan over Fractions).
        M = [list(pts[q]) + [Fraction(1)] for q in F]
        for col in range(k):
            piv = next((r for r in range(col, k) if M[r][col] != 0), None)
            if piv is None:
                raise InputError(f"{where}.facets[{f}]: its vertices are linearly dependent")
            M[col], M[piv] = M[piv], M[col]
            for r in range(k):
                if r != col and M[r][col] != 0:
                    fac = M[r][col] / M[col][col]
                    M[r] = [a - fac * b for a, b in zip(M[r], M[col])]
        w = [M[r][k] / M[r][r] for r in range(k)]
        for q in range(2 * V):
            if q not in F and sum(a * b for a, b in zip(w, pts[q])) >= 1:
                raise InputError(f"{where}.facets[{f}]: vertex {q} lies on or beyond this facet's hyperplane")
        for G in (list(F), [neg(q) for q in F]):
            for drop in range(k):
                key = tuple(sorted(G[:drop] + G[drop + 1:]))
                ridges[key] = ridges.get(key, 0) + 1
    bad = [r for r, n in ridges.items() if n != 2]
    if bad:
        raise InputError(f"{where}.facets: the ridge {set(bad[0])} lies in {ridges[bad[0]]} of the facets +-F, not 2")


def recheck_borsuk(inst, arrays, eps, c, idx, rows_to_check):
    """Row t of the label rows: eps c + max over its labels (s, F in block b)
    of (sum_{b' != b} max_{F' in b'} |a_t v_F'| - s a_t v_F) < 0."""
    where = f"certificates[{idx}]"
    blocks = c["blocks"]
    cols, uses = [], {}
    for b, blk in enumerate(blocks):
        borsuk_polytope(blk, f"{where}.blocks[{b}]", inst.n)
        V = len(blk["vertices"])
        for F in blk["facets"]:
            for q in F:
                t, sg = blk["labels"][q % V] if q < V else blk["labels"][q - V]
                uses.setdefault(int(t), set()).add((len(cols), b, int(sg) if q < V else -int(sg)))
            cols.append(b)
    Nr, Fn, Vm = dense(arrays, c["v"], where + ".v")
    if Nr != inst.N or Fn != len(cols):
        raise InputError(f"{where}.v: shape [{Nr}, {Fn}] is not N x F [{inst.N}, {len(cols)}]")
    cnorm = Fraction(0)
    for j in range(Nr):
        mx = [Fraction(0)] * len(blocks)
        for f in range(Fn):
            mx[cols[f]] = max(mx[cols[f]], abs(Vm[j * Fn + f]))
        cnorm = max(cnorm, sum(mx, Fraction(0)))
    ec = ivq(eps * cnorm)
    label_rows = sorted(uses)
    nz = [(j, f, ivq(Vm[j * Fn + f])) for j in range(Nr) for f in range(Fn) if Vm[j * Fn + f] != 0]

    def value(t):
        a = inst.row(label_rows[t])
        d = [iv.mpf(0)] * Fn
        for j, f, x in nz:
            d[f] += a[j] * x
        mx = [iv.mpf(0)] * len(blocks)
        for f in range(Fn):
            mx[cols[f]] = imax2(mx[cols[f]], abs(d[f]))
        total = sum(mx, iv.mpf(0))
        worst = None
        for f, b, sg in sorted(uses[label_rows[t]]):
            x = total - mx[b] - (d[f] if sg > 0 else -d[f])
            worst = x if worst is None else imax2(worst, x)
        return ec + worst
    return check_rows(rows_to_check(len(label_rows)), value, lambda x: lt(x, Fraction(0)))


def recheck_certificate(inst, arrays, eps, c, idx, rows_to_check, report):
    kind, where = c["kind"], f"certificates[{idx}]"
    if kind == "kron_factor":
        return recheck_kron_factor(inst, arrays, eps, c, idx, rows_to_check, report)
    if kind == "kron_neumann":
        return recheck_kron_neumann(inst, arrays, eps, c, idx, rows_to_check, report)
    if kind == "trivial":
        if inst.softmax():
            return ("verified" if Fraction(1) > eps else "refuted"), {}
        best = max(sum(abs(x) for x in row) for row in inst.a)
        return ("verified" if best > eps else "refuted"), {}
    if kind == "zonal":
        return recheck_zonal(inst, eps, c, where, rows_to_check)
    if kind in ("factor", "row_interpolative"):
        if kind == "factor":
            n, k, U = dense(arrays, c["u"], where + ".u")
            N, k2, W = dense(arrays, c["w"], where + ".w")
            if k == 1 and n != inst.n:
                n, k = inst.n, 1
            # B_ij = sum_t U_it W_jt, exactly in rationals.
            bexact = lambda i, j: sum((U[i * k + t] * W[j * k + t] for t in range(k)), Fraction(0))  # noqa: E731
        else:
            rows = c["rows"]
            k = len(rows)
            n, k2, X = dense(arrays, c["x"], where + ".x")
            arows = {r: inst.row(r) for r in rows}
            bexact = None

        def err(i):
            a = inst.row(i)
            total = iv.mpf(0)
            if bexact is None:
                xi = [ivq(X[i * k + t]) for t in range(k)]
            for j in range(inst.N):
                if bexact is not None:
                    b = ivq(bexact(i, j))
                else:
                    b = iv.mpf(0)
                    for t in range(k):
                        b += xi[t] * arows[rows[t]][j]
                total += abs(a[j] - b)
            return total
        return check_rows(rows_to_check(inst.n), err, lambda x: le(x, eps))
    if kind == "neumann":
        rows = c["rows"]
        Nr, m, R = dense(arrays, c["r"], where + ".r")
        rho = max(sum(abs(R[j * m + u]) for u in range(m)) for j in range(Nr))
        thr = 1 - eps * rho
        if thr <= 0:
            return "refuted", {}
        nz = [(j, u, ivq(R[j * m + u])) for j in range(Nr) for u in range(m) if R[j * m + u] != 0]

        def delta(t):
            a = inst.row(rows[t])
            v = [iv.mpf(0)] * m
            for j, u, r in nz:
                v[u] += a[j] * r
            v[t] -= 1
            return sum((abs(x) for x in v), iv.mpf(0))
        return check_rows(rows_to_check(len(rows)), delta, lambda x: lt(x, thr))
    if kind == "block_neumann":
        rows, blocks = c["rows"], c["blocks"]
        p, m = len(rows), sum(len(b) for b in blocks)
        Nr, V, Vm = dense(arrays, c["v"], where + ".v")
        lam = dense(arrays, c["lambda"], where + ".lambda")[2] if "lambda" in c else None
        first = [0]
        for b in blocks:
            first.append(first[-1] + 2 ** (len(b) - 1))
        if V != first[-1] or Nr != inst.N:
            raise InputError(f"{where}.v: shape [{Nr}, {V}] is not N x V [{inst.N}, {first[-1]}]")
        block_of_col = [b for b in range(len(blocks)) for _ in range(first[b], first[b + 1])]
        cnorm = Fraction(0)
        for j in range(Nr):
            mx = [Fraction(0)] * len(blocks)
            for k in range(V):
                x = abs(Vm[j * V + k])
                if x > mx[block_of_col[k]]:
                    mx[block_of_col[k]] = x
            cnorm = max(cnorm, sum(mx, Fraction(0)))
        ls = [sum((abs(lam[t * p + i]) for i in range(p)), Fraction(0)) if lam else Fraction(1) for t in range(m)]
        ecl = [eps * cnorm * l for l in ls]
        if max(ecl) >= 1:
            return "refuted", {}
        where_t = {t: (b, q) for b, blk in enumerate(blocks) for q, t in enumerate(blk)}
        nz = [(j, k, ivq(Vm[j * V + k])) for j in range(Nr) for k in range(V) if Vm[j * V + k] != 0]
        cache = {}

        def arow(i):
            if i not in cache:
                cache[i] = inst.row(rows[i])
            return cache[i]

        def kappa(t):
            if lam:
                pt = [iv.mpf(0)] * inst.N
                for i in range(p):
                    if lam[t * p + i] != 0:
                        li, a = ivq(lam[t * p + i]), arow(i)
                        pt = [x + li * y for x, y in zip(pt, a)]
            else:
                pt = arow(t)
            dot = [iv.mpf(0)] * V
            for j, k, x in nz:
                dot[k] += pt[j] * x
            tb, tq = where_t[t]
            total = ivq(ecl[t])
            for b in range(len(blocks)):
                mx = iv.mpf(0)
                for k in range(first[b], first[b + 1]):
                    s = 0
                    if b == tb:
                        s = 1 if tq == 0 else (-1 if ((k - first[b]) >> (tq - 1)) & 1 else 1)
                    mx = imax2(mx, abs(s - dot[k]))
                total += mx
            return total
        return check_rows(rows_to_check(m), kappa, lambda x: lt(x, Fraction(1)))
    if kind == "borsuk":
        return recheck_borsuk(inst, arrays, eps, c, idx, rows_to_check)
    if kind == "tail":
        rows = c["rows"]
        m = len(rows)
        Nr, p, R = dense(arrays, c["r"], where + ".r")
        fm, f, F = dense(arrays, c["f"], where + ".f")
        k, mu = int(c["k"]), number(c["mu"], where + ".mu")
        rho = max(sum(abs(R[j * p + u]) for u in range(p)) for j in range(Nr))
        ff = [[sum((F[a * f + t] * F[b * f + t] for t in range(f)), Fraction(0)) for b in range(m)] for a in range(m)]
        thr = k * mu + sum(ff[a][a] for a in range(m)) + m * (eps * rho) ** 2
        nz = [(j, u, ivq(R[j * p + u])) for j in range(Nr) for u in range(p) if R[j * p + u] != 0]
        M = []
        for t in range(m):
            a = inst.row(rows[t])
            v = [iv.mpf(0)] * p
            for j, u, r in nz:
                v[u] += a[j] * r
            M.append(v)
        frob = sum((x * x for v in M for x in v), iv.mpf(0))
        H = [[ivq(ff[a][b] + (mu if a == b else 0)) - sum((M[a][u] * M[b][u] for u in range(p)), iv.mpf(0))
              for b in range(m)] for a in range(m)]
        # LDL^T without pivoting: all pivots > 0 proves positive definiteness.
        psd = "verified"
        for q in range(m):
            for l in range(q):
                H[q][q] -= H[q][l] * H[q][l] * H[l][l]
            s = gt(H[q][q], Fraction(0))
            if s != "verified":
                psd = "refuted" if lt(H[q][q], Fraction(0)) == "verified" else "undecided"
                break
            for i in range(q + 1, m):
                for l in range(q):
                    H[i][q] -= H[i][l] * H[q][l] * H[l][l]
                H[i][q] /= H[q][q]
        return combine([gt(frob, thr), psd]), {"frobenius_sq": frob}
    if kind == "sandwich":
        r = int(c["r"])
        _, _, X = dense(arrays, c["x"], where + ".x")
        _, _, Y = dense(arrays, c["y"], where + ".y")
        n, k, U = dense(arrays, c["u"], where + ".u")
        _, _, W = dense(arrays, c["w"], where + ".w")
        t = number(c["tau_star"], where + ".tau_star")
        rest = eps - t
        if rest < 0:
            return "refuted", {}
        ia = Interaction(inst, X, Y, r)
        bounds = (report or {}).get("_sandwich_bounds")

        def two(i):
            A, At = ia.gibbs(i, ia.residual(i))
            e1 = sum((abs(a - b) for a, b in zip(A, At)), iv.mpf(0))
            B = [ivq(sum((U[i * k + u] * W[j * k + u] for u in range(k)), Fraction(0))) for j in range(inst.N)]
            e2 = sum((abs(a - b) for a, b in zip(At, B)), iv.mpf(0))
            return e1, e2

        verdicts, encl = [], {}
        for i in rows_to_check(inst.n):
            e1, e2 = two(i)
            encl[i] = e1
            encl[("gibbs_minus_b", i)] = e2
            verdicts.append(combine([le(e1, t), le(e2, rest)]))
            if verdicts[-1] == "refuted":
                break
        return combine(verdicts), encl
    if kind == "profile":
        r = int(c["r"])
        n, N = inst.n, inst.N
        _, _, X = dense(arrays, c["x"], where + ".x")
        _, _, Y = dense(arrays, c["y"], where + ".y")
        _, _, G = dense(arrays, c["gauge"], where + ".gauge")
        _, _, lam = dense(arrays, c["lambda"], where + ".lambda")
        _, _, mu = dense(arrays, c["mu"], where + ".mu")
        _, s_, zu = dense(arrays, c["zu"], where + ".zu")
        _, _, zv = dense(arrays, c["zv"], where + ".zv")
        zn = number(c["z_norm_sq"], where + ".z_norm_sq")
        cl = c["claims"]
        q_lo, q_hi = interval_claim(cl, "q")
        t_lo, t_hi = interval_claim(cl, "tau")
        k_lo, k_hi = interval_claim(cl, "kappa")
        parts, encl = [], {}
        # kappa <= kappa_hi through the gauge: max_i |x_i G|^2 max_j |y_j G^-T|^2 <= kappa_hi^2 (exact)
        Gi = frac_inverse(G, r)
        if Gi is None or k_hi < 0:
            parts.append("refuted")
        else:
            XG = frac_mul(X, G, n, r, r)
            YG = frac_mul(Y, frac_t(Gi, r, r), N, r, r)
            mx = max(sum((v * v for v in XG[i * r:(i + 1) * r]), Fraction(0)) for i in range(n))
            my = max(sum((v * v for v in YG[j * r:(j + 1) * r]), Fraction(0)) for j in range(N))
            encl["kappa_gauge_sq"] = mx * my
            parts.append("verified" if mx * my <= k_hi * k_hi else "refuted")
        # lambda, mu probability vectors; ||zu zv^T||_2^2 <= z_norm_sq via z_norm_sq P^-1 - Q positive definite
        ok = all(x >= 0 for x in lam + mu) and sum(lam, Fraction(0)) == 1 and sum(mu, Fraction(0)) == 1
        P = frac_mul(frac_t(zu, n, s_), zu, s_, n, s_)
        Q = frac_mul(frac_t(zv, N, s_), zv, s_, N, s_)
        Pi = frac_inverse(P, s_)
        zok = "undecided" if Pi is None else ("verified" if frac_pd([zn * a - b for a, b in zip(Pi, Q)], s_) else "undecided")
        parts.append(combine(["verified" if ok else "refuted", zok]))
        # the dual bound <Mu, Mv> / sqrt(z_norm_sq) >= kappa_lo
        def weighted(z, w, F, rows):
            M = [iv.mpf(0)] * (s_ * r)
            for i in range(rows):
                sw = iv.sqrt(ivq(w[i]))
                for a in range(s_):
                    if z[i * s_ + a] == 0:
                        continue
                    zw = ivq(z[i * s_ + a]) * sw
                    for b in range(r):
                        M[a * r + b] += zw * ivq(F[i * r + b])
            return M
        Mu, Mv = weighted(zu, lam, X, n), weighted(zv, mu, Y, N)
        dual = sum((a * b for a, b in zip(Mu, Mv)), iv.mpf(0)) / iv.sqrt(ivq(zn))
        encl["kappa_dual"] = dual
        parts.append(ge(dual, k_lo))
        # q = max_i oscillation of (C - T)_i, tau = 2 tanh(q/4), tau* = max_i |A_i - A~_i|_1
        if inst.kind == "matrix" and any(x <= 0 for row in inst.a for x in row):
            return "refuted", encl
        ia = Interaction(inst, X, Y, r)
        osc, err = [], []
        for i in range(n):
            R = ia.residual(i)
            mxv, mnv = R[0], R[0]
            for x in R[1:]:
                mxv, mnv = imax2(mxv, x), imin2(mnv, x)
            osc.append(mxv - mnv)
            if "tau_star" in cl:
                A, At = ia.gibbs(i, R)
                err.append(sum((abs(a - b) for a, b in zip(A, At)), iv.mpf(0)))
        def imax(xs):
            m = xs[0]
            for x in xs[1:]:
                m = imax2(m, x)
            return m
        qv = imax(osc)
        tau = 2 * itanh(qv / 4)
        encl["q"], encl["tau"] = qv, tau
        parts += [within(qv, q_lo, q_hi), within(tau, t_lo, t_hi)]
        if "tau_star" in cl:
            ts = imax(err)
            encl["tau_star"] = ts
            parts.append(within(ts, *interval_claim(cl, "tau_star")))
        if "visible_dim" in cl:
            if inst.kind == "qk":
                d = len(inst.q[0])
                Qc = [x for row in centred(inst.q, n, d) for x in row]
                Kc = [x for row in centred(inst.k, N, d) for x in row]
                G1 = frac_mul(frac_t(Qc, n, d), Qc, d, n, d)
                G2 = frac_mul(frac_t(Kc, N, d), Kc, d, N, d)
                vd = frac_rank(frac_mul(G1, G2, d, d, d), d, d)
            elif inst.kind == "logits":
                vd = frac_rank([x for row in Interaction(inst, X, Y, r).C for x in row], n, N)
            else:
                vd = None
            encl["visible_dim"] = vd
            parts.append("undecided" if vd is None else "verified" if vd == int(cl["visible_dim"]) else "refuted")
        return combine(parts), encl
    return "unsupported", {}


def recheck(bundle_path, witness, dps, nrows, seed, all_below):
    iv.dps = dps
    text = open(bundle_path, "rb").read()
    if hashlib.sha256(text).hexdigest() != witness["bundle"]["sha256"]:
        raise InputError(f"{bundle_path}: sha256 differs from the witness's bundle.sha256")
    doc = parse_json_exact(text.decode("utf-8"))
    if doc.get("format") != "rankcert/1":
        raise InputError(f"{bundle_path}: not a rankcert/1 bundle")
    arrays = Arrays(os.path.dirname(bundle_path) or ".", witness.get("sidecars", []))
    inst = Instance(doc["instance"], arrays)
    eps = number(doc["eps"], "eps")
    rng = random.Random(seed)
    notes, findings = [], []
    lower, upper = 0, min(inst.n, inst.N)
    overall = "agree"
    wcerts = witness["certificates"]
    if len(wcerts) != len(doc["certificates"]):
        return "disagree", ["the witness lists a different number of certificates"], []
    for idx, (c, w) in enumerate(zip(doc["certificates"], wcerts)):
        decisive = w.get("decisive", {})
        focus = [decisive.get("row", decisive.get("t"))] if isinstance(decisive.get("row", decisive.get("t")), int) else []

        def rows_to_check(count):
            if count <= all_below:
                return list(range(count))
            pick = sorted(set(rng.sample(range(count), min(nrows, count)) + [r for r in focus if r < count]))
            notes.append(f"cert[{idx}]: {len(pick)} of {count} rows re-checked (seed {seed})")
            return pick

        # A precision ladder of its own: decimal digits dps, 3 dps, 8 dps.
        for digits in (dps, 3 * dps, 8 * dps):
            iv.dps = digits
            verdict, encl = recheck_certificate(inst, arrays, eps, c, idx, rows_to_check, witness)
            if verdict != "undecided":
                break
        iv.dps = dps
        theirs = w["verdict"]
        line = f"cert[{idx}] {c['kind']}: rankcert {theirs}, re-check {verdict}"
        if verdict == "unsupported":
            overall = "undecided" if overall == "agree" else overall
        elif verdict != "undecided" and theirs != "undecided" and verdict != theirs:
            overall = "disagree"
            line += "  <-- DISAGREE"
        elif verdict == "undecided" and theirs != "undecided":
            overall = "undecided" if overall == "agree" else overall
        # The decisive enclosure in the witness must meet ours.
        key = "enclosure" if "enclosure" in decisive else "delta" if "delta" in decisive else None
        rowkey = decisive.get("row", decisive.get("t"))
        if isinstance(rowkey, list):
            rowkey = tuple(rowkey)  # kron_neumann: a multi-index
        ours = encl.get(rowkey) if key else encl.get("frobenius_sq")
        if key is None and "frobenius_sq" in decisive:
            key = "frobenius_sq"
        if ours is not None and key is not None and decisive.get(key, ["-inf", "inf"])[0] != "-inf":
            wl, wh = (number(x, "witness") for x in decisive[key])
            ol, oh = ends(ours)
            if wh < ol or oh < wl:
                overall = "disagree"
                line += f"  <-- witness enclosure [{float(wl)}, {float(wh)}] misses [{float(ol)}, {float(oh)}]"
        # Profile: every enclosure in the witness meets ours; the exact numbers are equal.
        if c["kind"] == "profile":
            for k in ("q", "tau", "kappa_dual", "tau_star"):
                if k in decisive and k in encl and decisive[k][0] != "-inf":
                    wl, wh = (number(x, "witness") for x in decisive[k])
                    ol, oh = ends(encl[k])
                    if wh < ol or oh < wl:
                        overall = "disagree"
                        line += f"  <-- witness {k} [{float(wl)}, {float(wh)}] misses [{float(ol)}, {float(oh)}]"
            if "kappa_gauge_sq" in decisive and "kappa_gauge_sq" in encl and \
                    number(decisive["kappa_gauge_sq"], "witness") != encl["kappa_gauge_sq"]:
                overall = "disagree"
                line += "  <-- witness kappa_gauge_sq differs from the exact value"
            if "visible_dim" in decisive and encl.get("visible_dim") is not None and decisive["visible_dim"] != encl["visible_dim"]:
                overall = "disagree"
                line += f"  <-- witness visible_dim {decisive['visible_dim']}, exact {encl['visible_dim']}"
        # Sandwich: the worst-row bounds of a verified witness hold for every re-checked row.
        if c["kind"] == "sandwich" and theirs == "verified" and "worst_a_minus_gibbs" in decisive:
            b1 = number(decisive["worst_a_minus_gibbs"][1], "witness")
            b2 = number(decisive["worst_gibbs_minus_b"][1], "witness")
            bad = [t for t in encl if isinstance(t, int) and
                   (ends(encl[t])[0] > b1 or ends(encl[("gibbs_minus_b", t)])[0] > b2)]
            if bad:
                overall = "disagree"
                line += f"  <-- row {bad[0]} lies above the witness's bound for every row"
        # A verified row-wise check: the decisive enclosure's upper end bounds
        # every row's value (docs/format.md); each row re-checked here must lie
        # at or below it.
        if theirs == "verified" and key in ("enclosure", "delta") and decisive.get(key, ["-inf", "inf"])[1] != "inf":
            bound = number(decisive[key][1], "witness")
            above = [t for t, x in encl.items() if isinstance(t, int) and ends(x)[0] > bound]
            if above:
                overall = "disagree"
                line += f"  <-- row {above[0]} lies above the witness's bound {float(bound)} for every row"
            elif any(isinstance(t, int) for t in encl):
                notes.append(f"cert[{idx}]: {sum(isinstance(t, int) for t in encl)} re-checked rows lie at or below "
                             f"the witness's bound for every row")
        findings.append(line)
        if verdict == "verified" and c["bound"] == "upper":
            upper = min(upper, int(w["rank"]))
        if verdict == "verified" and c["bound"] == "lower":
            lower = max(lower, int(w["rank"]))
    if all(f.split("re-check ")[1].startswith("verified") for f in findings):
        if (lower, upper) != (witness["lower"], witness["upper"]):
            overall = "disagree"
            findings.append(f"bracket: rankcert [{witness['lower']}, {witness['upper']}], re-check [{lower}, {upper}]")
    return overall, findings, notes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bundle")
    ap.add_argument("witness")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--dps", type=int, default=30)
    ap.add_argument("--rows", type=int, default=24)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--all-rows-below", type=int, default=48)
    ap.add_argument("--all", action="store_true", help="re-check every row (a full recomputation)")
    a = ap.parse_args()
    if a.all:
        a.all_rows_below = 1 << 62
    try:
        witness = json.load(open(a.witness))
        if witness.get("format") != "rankcert-witness/1":
            raise InputError(f"{a.witness}: not a rankcert-witness/1 file")
        verdict, findings, notes = recheck(a.bundle, witness, a.dps, a.rows, a.seed, a.all_rows_below)
    except (InputError, KeyError, ValueError, OSError) as e:
        print(f"recheck: {a.bundle}: input error: {e}", file=sys.stderr)
        return 3
    if a.json:
        print(json.dumps({"bundle": a.bundle, "verdict": verdict, "certificates": findings, "notes": notes}))
    else:
        print(f"{a.bundle}: {verdict}")
        for f in findings + notes:
            print("  " + f)
    return {"agree": 0, "disagree": 1, "undecided": 2}[verdict]


if __name__ == "__main__":
    sys.exit(main())
