"""rankcert.instance: write an exact instance from NumPy arrays or torch tensors."""

import fractions
import json
import math
import os

import numpy as np

from ._files import write_npy, write_safetensors


def rsqrt(d):
    """The exact real number 1/sqrt(d), as an instance scale."""
    if isinstance(d, bool) or int(d) != d or d <= 0 or d >= 2 ** 62:
        raise ValueError(f"rsqrt: {d!r} is not a positive integer below 2^62")
    return {"rsqrt": int(d)}


def exact_number(x, field):
    """A JSON spelling of x that the checker reads as exactly x.
    int, Fraction, decimal/rational strings, and binary floats (their exact
    value, as a C99 hex float) are accepted; non-finite values are refused."""
    if isinstance(x, dict):
        if set(x) != {"rsqrt"}:
            raise ValueError(f"{field}: only {{'rsqrt': d}} is a valid object")
        return rsqrt(x["rsqrt"])
    if isinstance(x, str):
        if x.startswith("rsqrt:"):
            return rsqrt(int(x[6:]))
        return x
    if isinstance(x, bool):
        raise ValueError(f"{field}: {x!r} is not a number")
    if isinstance(x, int):
        return str(x)
    if isinstance(x, fractions.Fraction):
        return f"{x.numerator}/{x.denominator}"
    try:
        import torch
        if isinstance(x, torch.Tensor):
            x = x.item()
    except ImportError:
        pass
    if isinstance(x, (np.floating, np.integer)):
        x = x.item()
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"{field}: {x!r} is not finite")
        return float.hex(x)
    raise ValueError(f"{field}: {type(x).__name__} is not a number")


def _as_array(x, field, ndim, allow_neg_inf=False):
    """(kind, payload): ('npy', numpy array) or ('bf16', (shape, raw bytes))."""
    try:
        import torch
        if isinstance(x, torch.Tensor):
            x = x.detach().cpu()
            if x.dtype == torch.bfloat16:
                if x.dim() not in ndim:
                    raise ValueError(f"{field}: expected {ndim[0]} axes, found shape {tuple(x.shape)}")
                f = x.float()
                if not torch.isfinite(f).all() and not allow_neg_inf:
                    raise ValueError(f"{field}: non-finite entry")
                raw = x.contiguous().view(torch.int16).numpy().astype("<i2").tobytes()
                return "bf16", (list(x.shape), raw)
            x = x.numpy()
    except ImportError:
        pass
    a = np.asarray(x)
    if a.ndim not in ndim:
        raise ValueError(f"{field}: expected {ndim[0]} axes, found shape {a.shape}")
    if a.dtype.kind == "f":
        if a.dtype.itemsize not in (2, 4, 8):
            raise ValueError(f"{field}: dtype {a.dtype} (use float16, bfloat16, float32 or float64)")
        bad = ~np.isfinite(a)
        if allow_neg_inf:
            bad &= ~np.isneginf(a)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(f"{field}: non-finite entry at {idx}")
    elif a.dtype.kind not in "biu":
        raise ValueError(f"{field}: dtype {a.dtype} is not numeric")
    return "npy", a


class _Pending:
    """An array checked and converted, written only once every input is valid."""

    def __init__(self, x, field, ndim=(2,), allow_neg_inf=False):
        self.field = field
        self.kind, self.payload = _as_array(x, field, ndim, allow_neg_inf)

    def write(self, folder, stem):
        if self.kind == "bf16":
            name = f"{stem}.{self.field}.safetensors"
            shape, raw = self.payload
            sha = write_safetensors(os.path.join(folder, name), {self.field: ("BF16", shape, raw)})
            return {"safetensors": name, "tensor": self.field, "sha256": sha}
        name = f"{stem}.{self.field}.npy"
        return {"npy": name, "sha256": write_npy(os.path.join(folder, name), self.payload)}


def instance(path, *, q=None, k=None, scale=None, mask=None, temperature=None, key_bias=None, logits=None,
             matrix=None, provenance=None):
    """Write an exact instance (JSON + sidecars next to it) and return its path.

    Exactly one of (q, k, scale), logits, matrix.  Arrays are NumPy arrays or
    torch tensors, float16/bfloat16/float32/float64 (or integer/boolean
    arrays, exact as they are), stored bit for bit (the checker reads each
    float as the exact dyadic rational of its bits).
      q: n x d queries, k: N x d keys, scale: a number (int, Fraction, "1/8",
         float = its exact binary value) or rsqrt(d) for 1/sqrt(d);
      mask: "causal", "none", or an n x N boolean array, True = may attend
            (torch's attn_mask means the opposite: pass ~attn_mask);
      key_bias: length-N additive log-weights; temperature: a number;
      logits: n x N (-inf marks masked entries); matrix: n x N attention matrix.
    provenance: any JSON-serialisable dict, recorded with the instance.
    Every argument is checked before anything is written: a ValueError leaves
    no file behind, and the JSON appears whole or not at all.
    """
    path = os.fspath(path)
    folder = os.path.dirname(path) or "."
    stem = os.path.basename(path)
    if stem.endswith(".json"):
        stem = stem[:-5]
    given = [q is not None, logits is not None, matrix is not None]
    if sum(given) != 1:
        raise ValueError("instance: give exactly one of q (with k and scale), logits, matrix")
    # Phase 1: check and convert everything.
    arrays, inst = [], {}
    if q is not None:
        if k is None or scale is None:
            raise ValueError("instance: q needs k and scale")
        arrays += [_Pending(q, "q"), _Pending(k, "k")]
        inst = {"kind": "qk", "scale": exact_number(scale, "scale")}
        if temperature is not None:
            inst["temperature"] = exact_number(temperature, "temperature")
        if key_bias is not None:
            arrays.append(_Pending(key_bias, "key_bias", ndim=(1,)))
        if mask is not None:
            if isinstance(mask, str):
                if mask not in ("causal", "none"):
                    raise ValueError(f"mask: {mask!r} (use 'causal', 'none' or a boolean array)")
                inst["mask"] = mask
            else:
                m = np.asarray(mask.detach().cpu().numpy() if hasattr(mask, "detach") else mask)
                if m.dtype != np.bool_:
                    raise ValueError(f"mask: dtype {m.dtype}; give a boolean array (True = may attend)")
                arrays.append(_Pending(m, "mask"))
    elif logits is not None:
        inst = {"kind": "logits"}
        arrays.append(_Pending(logits, "logits", allow_neg_inf=True))
    else:
        inst = {"kind": "matrix"}
        arrays.append(_Pending(matrix, "a"))
    try:
        prov_text = json.dumps(provenance, allow_nan=False) if provenance is not None else None
    except (TypeError, ValueError) as e:
        raise ValueError(f"provenance: not JSON-serialisable ({e})") from None
    # Phase 2: write the sidecars, then the JSON through a temporary name.
    os.makedirs(folder, exist_ok=True)
    for a in arrays:
        inst[a.field] = a.write(folder, stem)
    doc = {"instance": inst}
    if prov_text is not None:
        doc["provenance"] = json.loads(prov_text)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    return path
