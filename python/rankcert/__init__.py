"""rankcert for PyTorch and NumPy users.

Write exact instances from arrays or tensors, capture the queries and keys of
a torch model's attention heads, and run the C++ programs: bracket (search,
every result verified by the trusted checker) and verify (the checker).
The package never decides a verdict itself.

    import rankcert
    rankcert.instance("head.json", q=Q, k=K, scale=rankcert.rsqrt(64), mask="causal")
    results = rankcert.bracket("head.json", eps=[0.05, 0.1], out="out/")
    rankcert.verify(results[0]["bundle"])["verdict"]      # 'verified'

See docs/python.md.
"""

from ._files import npy_bytes, read_safetensors, sha256_file, write_npy, write_safetensors
from ._instance import exact_number, instance, rsqrt
from ._run import RankcertError, bracket, executable, extract, verify

__all__ = ["instance", "rsqrt", "exact_number", "bracket", "verify", "extract", "executable", "RankcertError",
           "capture", "capture_llama", "capture_mha", "Capture", "write_npy", "npy_bytes", "write_safetensors",
           "read_safetensors", "sha256_file"]


def __getattr__(name):
    # torch is optional: the capture helpers import it only when asked for.
    if name in ("capture", "capture_llama", "capture_mha", "Capture"):
        from . import _capture
        return getattr(_capture, name)
    raise AttributeError(f"module 'rankcert' has no attribute {name!r}")
