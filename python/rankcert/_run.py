"""Run the installed C++ programs and return their --json results.

The package never decides a verdict itself: every verdict comes from the
trusted checker (`rankcert verify`, or the checker run inside
`rankcert bracket`)."""

import json
import os
import shutil
import subprocess


class RankcertError(RuntimeError):
    """rankcert exited with an input/usage error (3) or an internal error (4)."""

    def __init__(self, message, returncode):
        super().__init__(message)
        self.returncode = returncode


def executable():
    """The rankcert program: $RANKCERT, else `rankcert` on PATH, else the
    build/ folder of the source tree this package sits in."""
    env = os.environ.get("RANKCERT")
    if env:
        return env
    found = shutil.which("rankcert")
    if found:
        return found
    here = os.path.dirname(os.path.realpath(__file__))
    local = os.path.join(here, "..", "..", "build", "rankcert")
    if os.path.exists(local):
        return os.path.normpath(local)
    raise RankcertError("rankcert: program not found (build it with ./build.sh, or set RANKCERT=/path/to/rankcert)", 3)


def _run(args, ok=(0, 1, 2), stream_stderr=False):
    p = subprocess.run([executable()] + [str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=None if stream_stderr else subprocess.PIPE, text=True)
    if p.returncode not in ok:
        err = (p.stderr or "").strip().splitlines()
        raise RankcertError(err[-1] if err else f"rankcert {args[0]}: exit {p.returncode}", p.returncode)
    return p


def verify(path, witness=None, max_prec=None):
    """`rankcert verify PATH --json`: the rankcert-result/1 document as a dict.
    Its "status" (and each result's "verdict") is the checker's."""
    args = ["verify", path, "--json", "--quiet"]
    if witness:
        args += ["--witness", witness]
    if max_prec:
        args += ["--max-prec", max_prec]
    p = _run(args)
    doc = json.loads(p.stdout)
    doc.setdefault("exit_status", p.returncode)
    return doc


def bracket(instance, eps=0.1, out=".", time_budget=None, progress=False, extra=()):
    """`rankcert bracket --instance INSTANCE --eps ... --out OUT --json`.
    Returns one dict per eps: eps, lower, upper, closed, verdict, bundle, ...
    Every bundle it names was verified by the checker before it was written."""
    if isinstance(eps, (list, tuple)):
        eps = ",".join(str(e) for e in eps)
    args = ["bracket", "--instance", instance, "--eps", eps, "--out", out, "--json"]
    if time_budget is not None:
        args += ["--time-budget", time_budget]
    if not progress:
        args.append("--quiet")
    args += list(extra)
    p = _run(args, stream_stderr=progress)
    return json.loads(p.stdout)["results"]


def extract(out, checkpoint=None, hf=None, tokenizer=None, text=None, tokens=None, name="text"):
    """`rankcert extract`: every head of a llama2.c or HuggingFace model over a
    text (or token ids), as instances in OUT."""
    args = ["extract", "--out", out, "--name", name]
    if checkpoint:
        args += ["--checkpoint", checkpoint]
    if hf:
        args += ["--hf", hf]
    if tokenizer:
        args += ["--tokenizer", tokenizer]
    if text is not None:
        args += ["--text", text]
    if tokens is not None:
        args += ["--tokens", ",".join(str(int(t)) for t in tokens)]
    return _run(args, ok=(0,)).stdout
