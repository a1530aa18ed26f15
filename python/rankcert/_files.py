"""File formats the instances use: .npy (written byte for byte as the C++
producer writes it), safetensors, SHA-256.  Standard library + numpy only."""

import hashlib
import json
import struct

import numpy as np

_NPY_DESCR = {np.dtype("<f2"): "<f2", np.dtype("<f4"): "<f4", np.dtype("<f8"): "<f8",
              np.dtype("bool"): "|b1", np.dtype("uint8"): "|u1", np.dtype("<i4"): "<i4", np.dtype("<i8"): "<i8"}


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def npy_bytes(a):
    """A .npy (format 1.0, C order) image of a; the header is spelt exactly as
    `rankcert extract` spells it, so equal arrays give equal files and hashes
    (numpy's own np.save pads its header differently between versions)."""
    a = np.ascontiguousarray(a)
    descr = _NPY_DESCR.get(a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype)
    if descr is None:
        raise ValueError(f"dtype {a.dtype} cannot be stored exactly in a .npy sidecar")
    a = a.astype(a.dtype.newbyteorder("<"), copy=False)
    shape = "(" + ", ".join(str(s) for s in a.shape) + ("," if a.ndim == 1 else "") + ")"
    header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }"
    header += " " * ((-(10 + len(header) + 1)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + a.tobytes()


def write_npy(path, a):
    """Write a and return the file's SHA-256."""
    data = npy_bytes(a)
    with open(path, "wb") as f:
        f.write(data)
    return hashlib.sha256(data).hexdigest()


_ST_DTYPES = {"F16": "<f2", "F32": "<f4", "F64": "<f8", "BOOL": "bool", "U8": "uint8", "I32": "<i4", "I64": "<i8",
              "BF16": "<u2"}


def write_safetensors(path, tensors, metadata=None):
    """tensors: name -> numpy array, or (dtype_name, shape, raw little-endian bytes)
    for dtypes numpy lacks (BF16).  Returns the file's SHA-256."""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    names = {np.dtype("<f2"): "F16", np.dtype("<f4"): "F32", np.dtype("<f8"): "F64", np.dtype("bool"): "BOOL",
             np.dtype("uint8"): "U8", np.dtype("<i4"): "I32", np.dtype("<i8"): "I64"}
    for name, t in tensors.items():
        if isinstance(t, tuple):
            dt, shape, raw = t
        else:
            t = np.ascontiguousarray(t)
            dt, shape, raw = names[t.dtype], list(t.shape), t.astype(t.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((-len(h)) % 8)
    data = struct.pack("<Q", len(h)) + h + b"".join(blobs)
    with open(path, "wb") as f:
        f.write(data)
    return hashlib.sha256(data).hexdigest()


def read_safetensors(path):
    """name -> numpy array (BF16 widened to float32, exactly)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        raw = np.frombuffer(data, dtype=_ST_DTYPES[e["dtype"]], count=(b - a) // np.dtype(_ST_DTYPES[e["dtype"]]).itemsize,
                            offset=8 + n + a)
        if e["dtype"] == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        out[name] = raw.reshape(e["shape"]).copy()
    return out
