"""Tests of the Python package (python/rankcert) and of the routes in from
NumPy, PyTorch and HuggingFace-layout checkpoints.

Run: RANKCERT=build/rankcert PYTHONPATH=python /usr/bin/python3 -m unittest tests/python/test_package.py
Tests that need torch are skipped with a message when it is absent
(./build.sh test installs Debian's python3-torch).  numpy is required.
"""

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

import rankcert  # noqa: E402
from rankcert import llama2c  # noqa: E402

try:
    import torch
    from rankcert.models import Llama, Llama2Tokenizer
except ImportError:  # pragma: no cover
    torch = None

CKPT = os.path.join(ROOT, "data", "stories260K", "stories260K.bin")
TOK = os.path.join(ROOT, "data", "stories260K", "tok512.bin")
LONG = os.path.join(ROOT, "certificates", "real", "texts", "long.txt")
needs_torch = unittest.skipIf(torch is None, "python3-torch is not installed (apt-get install python3-torch; ./build.sh test installs it)")


def rc(*args, ok=(0,)):
    p = subprocess.run([rankcert.executable()] + [str(a) for a in args], capture_output=True, text=True)
    if p.returncode not in ok:
        raise AssertionError(f"rankcert {' '.join(map(str, args))}: exit {p.returncode}: {p.stderr.strip()}")
    return p


def long_text():
    with open(LONG) as f:
        return f.read().rstrip("\n")


def sidecar_hashes(folder):
    """instance file -> (q sha256, k sha256) of every instance in a folder."""
    out = {}
    for f in sorted(os.listdir(folder)):
        if f.endswith(".json"):
            with open(os.path.join(folder, f)) as fh:
                inst = json.load(fh)["instance"]
            out[f] = (inst["q"]["sha256"], inst["k"]["sha256"])
    return out


def softmax64(q, k, hs, causal=True):
    s = (q.astype(np.float64) @ k.astype(np.float64).T) / np.sqrt(hs)
    if causal:
        n, N = s.shape
        s = np.where(np.tril(np.ones((n, N), dtype=bool), N - n), s, -np.inf)
    s = s - s.max(axis=1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=1, keepdims=True)


class InstanceTests(unittest.TestCase):
    def test_arrays_of_every_float_dtype_are_kept_bit_exact_and_bracketed(self):
        rng = np.random.default_rng(1)
        with tempfile.TemporaryDirectory() as d:
            for dt in (np.float16, np.float32, np.float64):
                q = rng.standard_normal((12, 4)).astype(dt)
                k = rng.standard_normal((12, 4)).astype(dt)
                p = rankcert.instance(os.path.join(d, f"h-{np.dtype(dt).name}.json"), q=q, k=k, scale=0.5, mask="causal",
                                      provenance={"test": "dtype"})
                with open(p) as f:
                    doc = json.load(f)
                self.assertEqual(doc["instance"]["scale"], "0x1.0000000000000p-1")
                back = np.load(os.path.join(d, doc["instance"]["q"]["npy"]))
                self.assertEqual(back.dtype, np.dtype(dt))
                self.assertEqual(back.tobytes(), q.tobytes())
                res = rankcert.bracket(p, eps=[0.1, 0.2], out=os.path.join(d, "out"), time_budget=5)
                self.assertEqual([r["verdict"] for r in res], ["verified", "verified"])
                for r in res:
                    self.assertLessEqual(r["lower"], r["upper"])
                    v = rankcert.verify(r["bundle"])
                    self.assertEqual(v["verdict"], "verified")
                    self.assertEqual((v["lower"], v["upper"]), (r["lower"], r["upper"]))

    def test_known_answer_identity_matrix(self):
        with tempfile.TemporaryDirectory() as d:
            p = rankcert.instance(os.path.join(d, "eye.json"), matrix=np.eye(6))
            (r,) = rankcert.bracket(p, eps="1/2", out=d, time_budget=5)
            # ||I - B||_row-l1 <= 1/2 forces rank 6 (diagonal dominance), and I itself has rank 6.
            self.assertEqual((r["lower"], r["upper"], r["closed"]), (6, 6, True))

    def test_bad_inputs_are_refused_naming_the_field(self):
        with tempfile.TemporaryDirectory() as d:
            q = np.ones((3, 2), dtype=np.float32)
            bad = q.copy()
            bad[1, 1] = np.nan
            with self.assertRaisesRegex(ValueError, r"^q: non-finite entry at \(1, 1\)"):
                rankcert.instance(os.path.join(d, "a.json"), q=bad, k=q, scale=1)
            with self.assertRaisesRegex(ValueError, "^k: expected 2 axes"):
                rankcert.instance(os.path.join(d, "a.json"), q=q, k=np.ones(3), scale=1)
            with self.assertRaisesRegex(ValueError, "^scale: inf is not finite"):
                rankcert.instance(os.path.join(d, "a.json"), q=q, k=q, scale=float("inf"))
            with self.assertRaisesRegex(ValueError, "exactly one of"):
                rankcert.instance(os.path.join(d, "a.json"), q=q, k=q, scale=1, logits=q)
            with self.assertRaisesRegex(rankcert.RankcertError, "no such file|cannot open"):
                rankcert.verify(os.path.join(d, "missing.json"))

    def test_logits_with_minus_inf_and_boolean_mask(self):
        rng = np.random.default_rng(2)
        s = rng.standard_normal((8, 8))
        s[np.triu_indices(8, 1)] = -np.inf
        with tempfile.TemporaryDirectory() as d:
            p = rankcert.instance(os.path.join(d, "s.json"), logits=s)
            (r,) = rankcert.bracket(p, eps=0.1, out=d, time_budget=5)
            self.assertEqual(r["verdict"], "verified")
            m = np.tril(np.ones((8, 8), dtype=bool))
            q, k = rng.standard_normal((8, 3)), rng.standard_normal((8, 3))
            p1 = rankcert.instance(os.path.join(d, "m.json"), q=q, k=k, scale="1/2", mask=m)
            p2 = rankcert.instance(os.path.join(d, "c.json"), q=q, k=k, scale="1/2", mask="causal")
            r1 = rankcert.bracket(p1, eps=0.1, out=os.path.join(d, "o1"), time_budget=5)[0]
            r2 = rankcert.bracket(p2, eps=0.1, out=os.path.join(d, "o2"), time_budget=5)[0]
            self.assertEqual(r1["verdict"], "verified")
            self.assertEqual(r2["verdict"], "verified")


class SelectorTests(unittest.TestCase):
    def test_stacked_tensor_selectors_cut_the_same_bits(self):
        rng = np.random.default_rng(3)
        Q = rng.standard_normal((2, 3, 10, 4)).astype(np.float32)
        K = rng.standard_normal((2, 3, 10, 4)).astype(np.float32)
        with tempfile.TemporaryDirectory() as d:
            np.save(os.path.join(d, "Q.npy"), Q)
            rankcert.write_safetensors(os.path.join(d, "K.safetensors"), {"keys": K})
            rc("bracket", "--q", os.path.join(d, "Q.npy") + "[1,2]", "--k", os.path.join(d, "K.safetensors") + ":keys[1,2]",
               "--scale", "1/2", "--mask", "causal", "--eps", "0.1", "--out", os.path.join(d, "o"), "--time-budget", "5", "-q")
            with open(os.path.join(d, "o", "Q-1-2-eps0.1.json")) as f:
                inst = json.load(f)["instance"]
            self.assertEqual(np.load(os.path.join(d, "o", inst["q"]["npy"])).tobytes(), Q[1, 2].tobytes())
            self.assertEqual(np.load(os.path.join(d, "o", inst["k"]["npy"])).tobytes(), K[1, 2].tobytes())
            p = rc("bracket", "--q", os.path.join(d, "Q.npy") + "[2,0]", "--k", os.path.join(d, "Q.npy") + "[0,0]",
                   "--scale", "1", "--out", d, ok=(3,))
            self.assertRegex(p.stderr, r"Q\.npy: index 2 out of range on axis 0 \(shape \[2, 3, 10, 4\]\)")
            self.assertEqual(len(p.stderr.strip().splitlines()), 1)
            p = rc("bracket", "--q", os.path.join(d, "Q.npy") + "[1]", "--k", os.path.join(d, "Q.npy") + "[0,0]",
                   "--scale", "1", "--out", d, ok=(3,))
            self.assertIn("leaves 3 axes", p.stderr)
            p = rc("bracket", "--q", os.path.join(d, "Q.npy") + "[a]", "--k", os.path.join(d, "Q.npy") + "[0,0]",
                   "--scale", "1", "--out", d, ok=(3,))
            self.assertIn("is not an index", p.stderr)


class HuggingFaceLayoutTests(unittest.TestCase):
    def test_llama_hf_layout_gives_byte_identical_qk(self):
        with tempfile.TemporaryDirectory() as d:
            llama2c.export_hf(CKPT, os.path.join(d, "hf"))
            rc("extract", "--checkpoint", CKPT, "--tokenizer", TOK, "--text-file", LONG, "--out", os.path.join(d, "a"), "--name", "long")
            rc("extract", "--hf", os.path.join(d, "hf"), "--tokenizer", TOK, "--text-file", LONG, "--out", os.path.join(d, "b"),
               "--name", "long")
            a, b = sidecar_hashes(os.path.join(d, "a")), sidecar_hashes(os.path.join(d, "b"))
            self.assertEqual(len(a), 40)
            self.assertEqual(a, b)
            # The permutation matters: without undoing it the queries differ.
            with open(os.path.join(d, "hf", "config.json")) as f:
                cfg = json.load(f)
            cfg["model_type"] = "falcon"
            with open(os.path.join(d, "hf", "config.json"), "w") as f:
                json.dump(cfg, f)
            p = rc("extract", "--hf", os.path.join(d, "hf"), "--tokens", "1,2", "--out", d, ok=(3,))
            self.assertIn("model_type", p.stderr)
            # mistral: the llama path; a sliding window shorter than the text is refused.
            cfg["model_type"] = "mistral"
            cfg["sliding_window"] = 4
            with open(os.path.join(d, "hf", "config.json"), "w") as f:
                json.dump(cfg, f)
            p = rc("extract", "--hf", os.path.join(d, "hf"), "--tokens", "1,2,3,4,5", "--out", d, ok=(3,))
            self.assertIn("sliding_window", p.stderr)
            rc("extract", "--hf", os.path.join(d, "hf"), "--tokens", "1,2,3,4", "--out", os.path.join(d, "m"), "--name", "m")
            with open(os.path.join(d, "m", "m-L0-H0.json")) as f:
                self.assertEqual(json.load(f)["provenance"]["model_type"], "mistral")

    def test_gpt2_layout_matches_a_direct_computation(self):
        rng = np.random.default_rng(4)
        E, H, L, V, P, T = 16, 4, 2, 50, 32, 20
        w = {"wte.weight": rng.standard_normal((V, E)), "wpe.weight": 0.1 * rng.standard_normal((P, E)),
             "ln_f.weight": 1 + 0.1 * rng.standard_normal(E), "ln_f.bias": 0.1 * rng.standard_normal(E)}
        for l in range(L):
            p = f"h.{l}."
            w.update({p + "ln_1.weight": 1 + 0.1 * rng.standard_normal(E), p + "ln_1.bias": 0.1 * rng.standard_normal(E),
                      p + "attn.c_attn.weight": 0.3 * rng.standard_normal((E, 3 * E)), p + "attn.c_attn.bias": 0.1 * rng.standard_normal(3 * E),
                      p + "attn.c_proj.weight": 0.3 * rng.standard_normal((E, E)), p + "attn.c_proj.bias": 0.1 * rng.standard_normal(E),
                      p + "ln_2.weight": 1 + 0.1 * rng.standard_normal(E), p + "ln_2.bias": 0.1 * rng.standard_normal(E),
                      p + "mlp.c_fc.weight": 0.3 * rng.standard_normal((E, 4 * E)), p + "mlp.c_fc.bias": 0.1 * rng.standard_normal(4 * E),
                      p + "mlp.c_proj.weight": 0.3 * rng.standard_normal((4 * E, E)), p + "mlp.c_proj.bias": 0.1 * rng.standard_normal(E)})
        w = {k: v.astype(np.float32) for k, v in w.items()}
        tokens = rng.integers(0, V, T)
        # Direct float64 computation of GPT-2's q and k (HF GPT2Model semantics).
        def ln(x, g, b):
            m = x.mean(-1, keepdims=True)
            return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b
        x = w["wte.weight"][tokens].astype(np.float64) + w["wpe.weight"][:T]
        want = []
        for l in range(L):
            p = f"h.{l}."
            qkv = ln(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"]) @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
            q, k, v = qkv[:, :E], qkv[:, E:2 * E], qkv[:, 2 * E:]
            want.append((q, k))
            hs = E // H
            a = np.concatenate([softmax64(q[:, h * hs:(h + 1) * hs], k[:, h * hs:(h + 1) * hs], hs) @ v[:, h * hs:(h + 1) * hs]
                                for h in range(H)], axis=1)
            x = x + a @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
            f = ln(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"]) @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"]
            f = 0.5 * f * (1 + np.tanh(np.sqrt(2 / np.pi) * (f + 0.044715 * f ** 3)))
            x = x + f @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
        with tempfile.TemporaryDirectory() as d:
            hf = os.path.join(d, "gpt2")
            os.makedirs(hf)
            with open(os.path.join(hf, "config.json"), "w") as f:
                json.dump({"model_type": "gpt2", "n_embd": E, "n_head": H, "n_layer": L, "n_positions": P, "vocab_size": V,
                           "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"}, f)
            rankcert.write_safetensors(os.path.join(hf, "model.safetensors"), {"transformer." + k: v for k, v in w.items()})
            rc("extract", "--hf", hf, "--tokens", ",".join(map(str, tokens)), "--out", os.path.join(d, "out"), "--name", "g")
            hs = E // H
            for l in range(L):
                for h in range(H):
                    with open(os.path.join(d, "out", f"g-L{l}-H{h}.json")) as f:
                        doc = json.load(f)
                    self.assertEqual(doc["instance"]["scale"], {"rsqrt": hs})
                    self.assertEqual(doc["provenance"]["token_ids"], [int(t) for t in tokens])
                    q = np.load(os.path.join(d, "out", doc["instance"]["q"]["npy"]))
                    k = np.load(os.path.join(d, "out", doc["instance"]["k"]["npy"]))
                    np.testing.assert_allclose(q, want[l][0][:, h * hs:(h + 1) * hs], rtol=1e-4, atol=1e-4)
                    np.testing.assert_allclose(k, want[l][1][:, h * hs:(h + 1) * hs], rtol=1e-4, atol=1e-4)
            p = rc("extract", "--hf", hf, "--tokens", "1,2,99", "--out", d, ok=(3,))
            self.assertIn("outside the vocabulary", p.stderr)
            p = rc("extract", "--hf", hf, "--text", "hello", "--out", d, ok=(3,))
            self.assertIn("needs --tokens", p.stderr)


def _ln64(x, g, b, eps):
    m = x.mean(-1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps) * g + b


def _gelu_erf(z):
    from math import erf
    return 0.5 * z * (1 + np.vectorize(erf)(z / np.sqrt(2)))


def _encoder_weights(rng, E, I, L, layer_names, family):
    """Random weights of a bert or vit encoder in HF key names (no prefix)."""
    w = {}
    for l in range(L):
        h = f"encoder.layer.{l}."
        for lin, (o, i) in layer_names.items():
            w[h + lin + ".weight"] = 0.3 * rng.standard_normal((o, i))
            w[h + lin + ".bias"] = 0.1 * rng.standard_normal(o)
        lns = ["attention.output.LayerNorm", "output.LayerNorm"] if family == "bert" else ["layernorm_before", "layernorm_after"]
        for n in lns:
            w[h + n + ".weight"] = 1 + 0.1 * rng.standard_normal(E)
            w[h + n + ".bias"] = 0.1 * rng.standard_normal(E)
    return w


def _encoder_qk64(w, x, E, H, L, family, eps):
    """Float64 forward pass of HF BertModel (post-LN) / ViTModel (pre-LN): every layer's q and k."""
    att = "attention.self." if family == "bert" else "attention.attention."
    lin = lambda h, n, z: z @ w[h + n + ".weight"].T + w[h + n + ".bias"]
    out, hs = [], E // H
    for l in range(L):
        h = f"encoder.layer.{l}."
        z = _ln64(x, w[h + "layernorm_before.weight"], w[h + "layernorm_before.bias"], eps) if family == "vit" else x
        q, k, v = lin(h, att + "query", z), lin(h, att + "key", z), lin(h, att + "value", z)
        out.append((q, k))
        heads = []
        for j in range(H):
            s = q[:, j * hs:(j + 1) * hs] @ k[:, j * hs:(j + 1) * hs].T / np.sqrt(hs)
            s = np.exp(s - s.max(1, keepdims=True))
            heads.append((s / s.sum(1, keepdims=True)) @ v[:, j * hs:(j + 1) * hs])
        o = lin(h, "attention.output.dense", np.concatenate(heads, axis=1))
        if family == "vit":
            x = x + o
            f = _gelu_erf(lin(h, "intermediate.dense", _ln64(x, w[h + "layernorm_after.weight"], w[h + "layernorm_after.bias"], eps)))
            x = x + lin(h, "output.dense", f)
        else:
            x = _ln64(x + o, w[h + "attention.output.LayerNorm.weight"], w[h + "attention.output.LayerNorm.bias"], eps)
            f = _gelu_erf(lin(h, "intermediate.dense", x))
            x = _ln64(x + lin(h, "output.dense", f), w[h + "output.LayerNorm.weight"], w[h + "output.LayerNorm.bias"], eps)
    return out


class Qwen2Tests(unittest.TestCase):
    def test_qwen2_matches_a_float64_forward_pass(self):
        # HF Qwen2 semantics: RMSNorm, q/k/v Linear with bias, rotate_half RoPE
        # (rope_theta from the config), grouped-query attention, SwiGLU.
        rng = np.random.default_rng(13)
        E, H, KV, L, I, V, T, theta = 16, 4, 2, 2, 24, 30, 9, 1e6
        hs = E // H
        w = {"model.embed_tokens.weight": rng.standard_normal((V, E)), "model.norm.weight": 1 + 0.1 * rng.standard_normal(E)}
        for l in range(L):
            p = f"model.layers.{l}."
            w.update({p + "input_layernorm.weight": 1 + 0.1 * rng.standard_normal(E),
                      p + "post_attention_layernorm.weight": 1 + 0.1 * rng.standard_normal(E),
                      p + "self_attn.q_proj.weight": 0.3 * rng.standard_normal((E, E)), p + "self_attn.q_proj.bias": rng.standard_normal(E),
                      p + "self_attn.k_proj.weight": 0.3 * rng.standard_normal((KV * hs, E)), p + "self_attn.k_proj.bias": rng.standard_normal(KV * hs),
                      p + "self_attn.v_proj.weight": 0.3 * rng.standard_normal((KV * hs, E)), p + "self_attn.v_proj.bias": rng.standard_normal(KV * hs),
                      p + "self_attn.o_proj.weight": 0.3 * rng.standard_normal((E, E)),
                      p + "mlp.gate_proj.weight": 0.3 * rng.standard_normal((I, E)), p + "mlp.up_proj.weight": 0.3 * rng.standard_normal((I, E)),
                      p + "mlp.down_proj.weight": 0.3 * rng.standard_normal((E, I))})
        w = {k: v.astype(np.float32) for k, v in w.items()}
        tokens = rng.integers(0, V, T)
        rms = lambda x, g: x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-6) * g
        inv = 1.0 / theta ** (np.arange(0, hs, 2) / hs)
        ang = np.arange(T)[:, None] * inv[None, :]
        cos, sin = np.concatenate([np.cos(ang)] * 2, 1), np.concatenate([np.sin(ang)] * 2, 1)
        rot = lambda x: x * cos + np.concatenate([-x[:, hs // 2:], x[:, :hs // 2]], 1) * sin
        x = w["model.embed_tokens.weight"][tokens].astype(np.float64)
        want = []
        for l in range(L):
            p = f"model.layers.{l}."
            h = rms(x, w[p + "input_layernorm.weight"])
            lin = lambda n: h @ w[p + n + ".weight"].T + w[p + n + ".bias"]
            q, k, v = lin("self_attn.q_proj"), lin("self_attn.k_proj"), lin("self_attn.v_proj")
            qs = [rot(q[:, j * hs:(j + 1) * hs]) for j in range(H)]
            ks = [rot(k[:, g * hs:(g + 1) * hs]) for g in range(KV)]
            want.append((qs, ks))
            out = []
            for j in range(H):
                s = qs[j] @ ks[j // (H // KV)].T / np.sqrt(hs)
                s[np.triu_indices(T, 1)] = -np.inf
                s = np.exp(s - s.max(1, keepdims=True))
                out.append((s / s.sum(1, keepdims=True)) @ v[:, (j // (H // KV)) * hs:(j // (H // KV) + 1) * hs])
            x = x + np.concatenate(out, 1) @ w[p + "self_attn.o_proj.weight"].T
            h2 = rms(x, w[p + "post_attention_layernorm.weight"])
            g = h2 @ w[p + "mlp.gate_proj.weight"].T
            x = x + ((g / (1 + np.exp(-g))) * (h2 @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
        # extract writes each head in adjacent-pair order: column 2i + j is HF's column j * hs/2 + i.
        perm = [j * (hs // 2) + i for i in range(hs // 2) for j in range(2)]
        with tempfile.TemporaryDirectory() as d:
            hf = os.path.join(d, "qwen2")
            os.makedirs(hf)
            cfg = {"model_type": "qwen2", "hidden_size": E, "intermediate_size": I, "num_hidden_layers": L,
                   "num_attention_heads": H, "num_key_value_heads": KV, "vocab_size": V, "max_position_embeddings": 64,
                   "rms_norm_eps": 1e-6, "rope_theta": theta, "hidden_act": "silu", "tie_word_embeddings": True,
                   "use_sliding_window": False, "sliding_window": 4}
            with open(os.path.join(hf, "config.json"), "w") as f:
                json.dump(cfg, f)
            rankcert.write_safetensors(os.path.join(hf, "model.safetensors"), w)
            rc("extract", "--hf", hf, "--tokens", ",".join(map(str, tokens)), "--out", os.path.join(d, "out"), "--name", "q")
            for l in range(L):
                for j in range(H):
                    with open(os.path.join(d, "out", f"q-L{l}-H{j}.json")) as f:
                        doc = json.load(f)
                    self.assertEqual(doc["instance"]["mask"], "causal")
                    q = np.load(os.path.join(d, "out", doc["instance"]["q"]["npy"]))
                    k = np.load(os.path.join(d, "out", doc["instance"]["k"]["npy"]))
                    np.testing.assert_allclose(q, want[l][0][j][:, perm], rtol=1e-4, atol=1e-4)
                    np.testing.assert_allclose(k, want[l][1][j // (H // KV)][:, perm], rtol=1e-4, atol=1e-4)
            # use_sliding_window with a window shorter than the tokens: refused.
            with open(os.path.join(hf, "config.json"), "w") as f:
                json.dump(dict(cfg, use_sliding_window=True), f)
            p = rc("extract", "--hf", hf, "--tokens", ",".join(map(str, tokens)), "--out", d, ok=(3,))
            self.assertIn("sliding_window", p.stderr)
            # A missing bias names the tensor.
            del w["model.layers.1.self_attn.k_proj.bias"]
            rankcert.write_safetensors(os.path.join(hf, "model.safetensors"), w)
            with open(os.path.join(hf, "config.json"), "w") as f:
                json.dump(cfg, f)
            p = rc("extract", "--hf", hf, "--tokens", "1,2", "--out", d, ok=(3,))
            self.assertRegex(p.stderr, "k_proj.bias|config implies")
            self.assertEqual(len(p.stderr.strip().splitlines()), 1)


MIRRORS = r'''
import torch
from torch import nn

class BertSelfAttention(nn.Module):  # transformers' names and forward signature
    def __init__(self, E, H):
        super().__init__()
        self.num_attention_heads, self.attention_head_size = H, E // H
        self.query, self.key, self.value = nn.Linear(E, E), nn.Linear(E, E), nn.Linear(E, E)
    def forward(self, hidden_states, attention_mask=None, head_mask=None, output_attentions=False):
        B, T, E = hidden_states.shape
        sh = lambda x: x.view(B, T, self.num_attention_heads, self.attention_head_size).transpose(1, 2)
        q, k, v = sh(self.query(hidden_states)), sh(self.key(hidden_states)), sh(self.value(hidden_states))
        s = q @ k.transpose(-1, -2) / self.attention_head_size ** 0.5
        if attention_mask is not None:
            s = s + attention_mask
        self.last_probs = torch.softmax(s, -1)
        return ((self.last_probs @ v).transpose(1, 2).reshape(B, T, E),)

class ViTSelfAttention(BertSelfAttention):
    def forward(self, hidden_states, head_mask=None, output_attentions=False):
        return super().forward(hidden_states)

class Encoder(nn.Module):  # BertModel-like: extended additive mask from a 0/1 attention_mask
    def __init__(self, cls, E, H, L):
        super().__init__()
        self.layer = nn.ModuleList([cls(E, H) for _ in range(L)])
    def forward(self, x, attention_mask=None):
        ext = None
        if attention_mask is not None:
            ext = (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for m in self.layer:
            x = torch.tanh(m(x, ext)[0] if ext is not None else m(x)[0])
        return x

class Conv1D(nn.Module):  # transformers.pytorch_utils.Conv1D: x W + b, W [in, out]
    def __init__(self, nf, nx):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.3)
        self.bias = nn.Parameter(torch.randn(nf) * 0.1)
    def forward(self, x):
        return x @ self.weight + self.bias

class GPT2Attention(nn.Module):
    def __init__(self, E, H):
        super().__init__()
        self.num_heads, self.head_dim, self.split_size = H, E // H, E
        self.c_attn, self.c_proj = Conv1D(3 * E, E), Conv1D(E, E)
    def forward(self, hidden_states, layer_past=None, attention_mask=None, head_mask=None, use_cache=False):
        B, T, E = hidden_states.shape
        q, k, v = self.c_attn(hidden_states).split(self.split_size, dim=2)
        sh = lambda x: x.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        q, k, v = sh(q), sh(k), sh(v)
        s = (q @ k.transpose(-1, -2)) / self.head_dim ** 0.5
        s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
        self.last_probs = torch.softmax(s, -1)
        return (self.c_proj((self.last_probs @ v).transpose(1, 2).reshape(B, T, E)),)

class Attention(nn.Module):  # timm's vision_transformer.Attention
    def __init__(self, E, H):
        super().__init__()
        self.num_heads, self.head_dim = H, E // H
        self.scale = self.head_dim ** -0.5
        self.qkv, self.q_norm, self.k_norm, self.proj = nn.Linear(E, 3 * E), nn.Identity(), nn.Identity(), nn.Linear(E, E)
    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        self.last_probs = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)
        return self.proj((self.last_probs @ v).transpose(1, 2).reshape(B, N, C))
'''


@needs_torch
class GenericCaptureTests(unittest.TestCase):
    # rankcert.capture(model) on torch modules that mirror transformers' and
    # timm's attention classes (names, submodules, forward signatures).
    def setUp(self):
        import types
        self.m = types.ModuleType("mirrors")
        exec(compile(MIRRORS, "mirrors", "exec"), self.m.__dict__)

    def agree(self, cap, modules, B, d, name, causal, allowed=None):
        """The captured q, k reproduce each module's own probabilities (float64 softmax, same mask)."""
        paths = cap.write(d, name=name)
        for l, mod in enumerate(modules):
            H = mod.last_probs.shape[1]
            for b in range(B):
                for h in range(H):
                    stem = f"{name}-L{l}-H{h}" if B == 1 else f"{name}-b{b}-L{l}-H{h}"
                    with open(os.path.join(d, stem + ".json")) as f:
                        inst = json.load(f)["instance"]
                    q = np.load(os.path.join(d, inst["q"]["npy"]))
                    k = np.load(os.path.join(d, inst["k"]["npy"]))
                    s = (q.astype(np.float64) @ k.astype(np.float64).T) / np.sqrt(q.shape[1])
                    if causal:
                        self.assertEqual(inst["mask"], "causal")
                        s = np.where(np.tril(np.ones(s.shape, dtype=bool)), s, -np.inf)
                    elif allowed is not None:   # the batch's mask, all true where nothing is padded
                        m = np.load(os.path.join(d, inst["mask"]["npy"]))
                        self.assertTrue(np.array_equal(m, np.broadcast_to(allowed[b][None, :], s.shape)))
                        s = np.where(m, s, -np.inf)
                    else:
                        self.assertNotIn("mask", inst)   # no mask: every key
                    e = np.exp(s - s.max(1, keepdims=True))
                    p = e / e.sum(1, keepdims=True)
                    self.assertLess(np.abs(mod.last_probs[b, h].double().numpy() - p).sum(1).max(), 1e-5)
        return paths

    def test_bert_and_vit_query_key(self):
        torch.manual_seed(5)
        E, H, L, T = 16, 2, 2, 10
        for cls in ("BertSelfAttention", "ViTSelfAttention"):
            model = self.m.Encoder(getattr(self.m, cls), E, H, L)
            x = torch.randn(2, T, E)
            with torch.no_grad(), rankcert.capture(model) as cap:
                model(x)
            with tempfile.TemporaryDirectory() as d:
                paths = self.agree(cap, list(model.layer), 2, d, "e", causal=False)
                self.assertEqual(len(paths), 2 * L * H)
                if cls == "ViTSelfAttention":
                    res = rankcert.bracket(paths[0], eps=0.1, out=os.path.join(d, "out"), time_budget=3)
                    self.assertEqual(res[0]["verdict"], "verified")
        # bert with padding: the hidden keys are masked in the instance.
        model = self.m.Encoder(self.m.BertSelfAttention, E, H, L)
        am = torch.ones(2, T, dtype=torch.long)
        am[1, -3:] = 0
        with torch.no_grad(), rankcert.capture(model) as cap:
            model(torch.randn(2, T, E), attention_mask=am)
        with tempfile.TemporaryDirectory() as d:
            self.agree(cap, list(model.layer), 2, d, "p", causal=False, allowed=am.bool().numpy())

    def test_gpt2_c_attn_and_timm_qkv(self):
        torch.manual_seed(6)
        E, H, T = 16, 4, 12
        g = torch.nn.ModuleList([self.m.GPT2Attention(E, H) for _ in range(2)])
        model = torch.nn.Sequential(*g)
        with torch.no_grad(), rankcert.capture(model) as cap:
            x = torch.randn(1, T, E)
            for m in g:
                x = m(x)[0]
        with tempfile.TemporaryDirectory() as d:
            self.agree(cap, list(g), 1, d, "g", causal=True)
        t = torch.nn.Sequential(self.m.Attention(E, H), self.m.Attention(E, H))
        with torch.no_grad(), rankcert.capture(t) as cap:
            t(torch.randn(1, T, E))
        with tempfile.TemporaryDirectory() as d:
            self.agree(cap, list(t), 1, d, "t", causal=False)
        # A q_norm after the fused projection is refused, as is a model without attention.
        t[0].q_norm = torch.nn.LayerNorm(E // H)
        with self.assertRaisesRegex(ValueError, "q_norm"):
            with rankcert.capture(t):
                pass
        with self.assertRaisesRegex(ValueError, "no attention module"):
            with rankcert.capture(torch.nn.Linear(3, 3)):
                pass


class EncoderFamilyTests(unittest.TestCase):
    # extract --hf for bert and vit folders: q and k against an independent
    # float64 forward pass, no mask, and one-line errors.
    E, H, L, I = 16, 2, 2, 32

    def layer_names(self, family):
        E, I = self.E, self.I
        att = "attention.self." if family == "bert" else "attention.attention."
        return {att + "query": (E, E), att + "key": (E, E), att + "value": (E, E), "attention.output.dense": (E, E),
                "intermediate.dense": (I, E), "output.dense": (E, I)}

    def check(self, d, name, want, T):
        hs = self.E // self.H
        for l in range(self.L):
            for h in range(self.H):
                with open(os.path.join(d, f"{name}-L{l}-H{h}.json")) as f:
                    doc = json.load(f)
                self.assertEqual(doc["instance"]["mask"], "none")
                self.assertEqual(doc["instance"]["scale"], {"rsqrt": hs})
                q = np.load(os.path.join(d, doc["instance"]["q"]["npy"]))
                k = np.load(os.path.join(d, doc["instance"]["k"]["npy"]))
                self.assertEqual(q.shape, (T, hs))
                np.testing.assert_allclose(q, want[l][0][:, h * hs:(h + 1) * hs], rtol=1e-4, atol=1e-4)
                np.testing.assert_allclose(k, want[l][1][:, h * hs:(h + 1) * hs], rtol=1e-4, atol=1e-4)

    def provenance_and_bracket(self, out, stem, family, key):
        """The written provenance names the family; one head brackets to a verified bundle."""
        with open(os.path.join(out, stem + ".json")) as f:
            prov = json.load(f)["provenance"]
        self.assertEqual(prov["model_type"], family)
        self.assertIn(key, prov)
        p = rc("bracket", "--instance", os.path.join(out, stem + ".json"), "--eps", "0.1", "--out", os.path.join(out, "br"),
               "--time-budget", "3", "--json", "-q", ok=(0, 2))
        self.assertEqual(json.loads(p.stdout)["results"][0]["verdict"], "verified")

    def test_bert_matches_a_float64_forward_pass(self):
        rng = np.random.default_rng(11)
        E, H, L, I, V, P, T = self.E, self.H, self.L, self.I, 40, 24, 13
        w = _encoder_weights(rng, E, I, L, self.layer_names("bert"), "bert")
        w.update({"embeddings.word_embeddings.weight": rng.standard_normal((V, E)),
                  "embeddings.position_embeddings.weight": 0.1 * rng.standard_normal((P, E)),
                  "embeddings.token_type_embeddings.weight": 0.1 * rng.standard_normal((2, E)),
                  "embeddings.LayerNorm.weight": 1 + 0.1 * rng.standard_normal(E),
                  "embeddings.LayerNorm.bias": 0.1 * rng.standard_normal(E)})
        w = {k: v.astype(np.float32) for k, v in w.items()}
        tokens = rng.integers(0, V, T)
        x = (w["embeddings.word_embeddings.weight"][tokens].astype(np.float64) + w["embeddings.position_embeddings.weight"][:T]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = _ln64(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], 1e-12)
        want = _encoder_qk64(w, x, E, H, L, "bert", 1e-12)
        with tempfile.TemporaryDirectory() as d:
            hf = os.path.join(d, "bert")
            os.makedirs(hf)
            cfg = {"model_type": "bert", "hidden_size": E, "num_hidden_layers": L, "num_attention_heads": H,
                   "intermediate_size": I, "max_position_embeddings": P, "vocab_size": V, "type_vocab_size": 2,
                   "layer_norm_eps": 1e-12, "hidden_act": "gelu"}
            with open(os.path.join(hf, "config.json"), "w") as f:
                json.dump(cfg, f)
            # BertForSequenceClassification's layout: every key under "bert."
            rankcert.write_safetensors(os.path.join(hf, "model.safetensors"), {"bert." + k: v for k, v in w.items()})
            toks = ",".join(map(str, tokens))
            rc("extract", "--hf", hf, "--tokens", toks, "--out", os.path.join(d, "out"), "--name", "b")
            self.check(os.path.join(d, "out"), "b", want, T)
            self.provenance_and_bracket(os.path.join(d, "out"), "b-L1-H0", "bert", "config.json_sha256")
            for args, msg in [(["--tokens", "1,2,40"], "outside the vocabulary"),
                              (["--tokens", ",".join(["1"] * (P + 1))], "max_position_embeddings"),
                              (["--text", "hello"], "needs --tokens")]:
                p = rc("extract", "--hf", hf, *args, "--out", d, ok=(3,))
                self.assertIn(msg, p.stderr)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1)
            bad = dict(cfg, hidden_act="relu")
            with open(os.path.join(hf, "config.json"), "w") as f:
                json.dump(bad, f)
            p = rc("extract", "--hf", hf, "--tokens", toks, "--out", d, ok=(3,))
            self.assertIn("hidden_act", p.stderr)
            with open(os.path.join(hf, "config.json"), "w") as f:
                json.dump(dict(cfg, num_hidden_layers=3), f)
            p = rc("extract", "--hf", hf, "--tokens", toks, "--out", d, ok=(3,))
            self.assertRegex(p.stderr, "config implies|no tensor")

    def test_vit_matches_a_float64_forward_pass(self):
        rng = np.random.default_rng(12)
        E, H, L, I, C, S, Pt = self.E, self.H, self.L, self.I, 3, 12, 4
        G = S // Pt
        w = _encoder_weights(rng, E, I, L, self.layer_names("vit"), "vit")
        w.update({"embeddings.cls_token": rng.standard_normal((1, 1, E)),
                  "embeddings.position_embeddings": 0.1 * rng.standard_normal((1, G * G + 1, E)),
                  "embeddings.patch_embeddings.projection.weight": 0.2 * rng.standard_normal((E, C, Pt, Pt)),
                  "embeddings.patch_embeddings.projection.bias": 0.1 * rng.standard_normal(E),
                  "layernorm.weight": np.ones(E), "layernorm.bias": np.zeros(E)})
        w = {k: v.astype(np.float32) for k, v in w.items()}
        img = rng.standard_normal((1, C, S, S)).astype(np.float32)
        # Patch embedding as a convolution with stride = kernel, patches row by row.
        Wp = w["embeddings.patch_embeddings.projection.weight"].astype(np.float64)
        patches = [np.tensordot(Wp, img[0, :, r * Pt:(r + 1) * Pt, c * Pt:(c + 1) * Pt].astype(np.float64), axes=3)
                   + w["embeddings.patch_embeddings.projection.bias"] for r in range(G) for c in range(G)]
        x = np.vstack([w["embeddings.cls_token"][0].astype(np.float64), np.array(patches)]) + w["embeddings.position_embeddings"][0]
        want = _encoder_qk64(w, x, E, H, L, "vit", 1e-12)
        with tempfile.TemporaryDirectory() as d:
            hf = os.path.join(d, "vit")
            os.makedirs(hf)
            cfg = {"model_type": "vit", "hidden_size": E, "num_hidden_layers": L, "num_attention_heads": H,
                   "intermediate_size": I, "image_size": S, "patch_size": Pt, "num_channels": C,
                   "layer_norm_eps": 1e-12, "hidden_act": "gelu", "qkv_bias": True}
            with open(os.path.join(hf, "config.json"), "w") as f:
                json.dump(cfg, f)
            # ViTForImageClassification's layout: "vit." prefix.
            rankcert.write_safetensors(os.path.join(hf, "model.safetensors"), {"vit." + k: v for k, v in w.items()})
            np.save(os.path.join(d, "img.npy"), img)
            rc("extract", "--hf", hf, "--pixels", os.path.join(d, "img.npy"), "--out", os.path.join(d, "out"), "--name", "v")
            self.check(os.path.join(d, "out"), "v", want, G * G + 1)
            self.provenance_and_bracket(os.path.join(d, "out"), "v-L1-H1", "vit", "pixels_sha256")
            np.save(os.path.join(d, "small.npy"), img[:, :, :8, :8])
            np.save(os.path.join(d, "gray.npy"), img[:, :1])
            bad = img.copy()
            bad[0, 0, 0, 0] = np.nan
            np.save(os.path.join(d, "nan.npy"), bad)
            for args, msg in [(["--pixels", os.path.join(d, "small.npy")], "image_size is 12 x 12"),
                              (["--pixels", os.path.join(d, "gray.npy")], "shape must be [3, H, W]"),
                              (["--pixels", os.path.join(d, "nan.npy")], "non-finite"),
                              (["--tokens", "1,2"], "needs --pixels"),
                              (["--pixels", os.path.join(d, "none.npy")], "none.npy")]:
                p = rc("extract", "--hf", hf, *args, "--out", d, ok=(3,))
                self.assertIn(msg, p.stderr)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1)


class SampledTextTests(unittest.TestCase):
    # extract --generate --seed: the held-out texts of bench/fresh_bench.py.
    def gen(self, *extra):
        return rc("extract", "--checkpoint", CKPT, "--tokenizer", TOK, "--generate", "Once upon a time", "--steps", "40", *extra).stdout

    def test_a_seed_names_one_text_and_seeds_differ(self):
        a, b, c = self.gen("--seed", "7"), self.gen("--seed", "7"), self.gen("--seed", "8")
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)
        self.assertTrue(a.startswith("Once upon a time"))
        self.assertNotEqual(a, self.gen())  # not the greedy text

    def test_temperature_towards_zero_is_the_greedy_continuation(self):
        self.assertEqual(self.gen("--seed", "3", "--temperature", "0.001"), self.gen())

    def test_bad_temperature_is_one_line(self):
        p = rc("extract", "--checkpoint", CKPT, "--tokenizer", TOK, "--generate", "Once", "--seed", "1", "--temperature", "0", ok=(3,))
        self.assertIn("temperature", p.stderr)
        self.assertNotEqual(p.returncode, 0)


@needs_torch
class TorchTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tok = Llama2Tokenizer(TOK, 512)
        cls.exact = Llama.from_llama2c(CKPT, exact=True)

    def test_torch_llama_reproduces_the_cpp_greedy_continuation(self):
        want = rc("extract", "--checkpoint", CKPT, "--tokenizer", TOK, "--generate", "Once upon a time", "--steps", "40").stdout
        got = self.tok.decode(self.exact.generate(self.tok.encode("Once upon a time"), 40))
        self.assertEqual(got + "\n", want)

    def test_captured_qk_have_the_instance_hashes_of_rankcert_extract(self):
        with tempfile.TemporaryDirectory() as d:
            rc("extract", "--checkpoint", CKPT, "--tokenizer", TOK, "--text-file", LONG, "--out", os.path.join(d, "cpp"), "--name", "long")
            t0 = time.time()
            with torch.no_grad(), rankcert.capture_llama(self.exact) as cap:
                self.exact(torch.tensor([self.tok.encode(long_text())]))
            paths = cap.write(os.path.join(d, "py"), name="long", provenance={"text": long_text()})
            sys.stderr.write(f"[python capture of 40 heads, 94 tokens: {time.time() - t0:.2f}s] ")
            self.assertEqual(len(paths), 40)
            self.assertEqual(sidecar_hashes(os.path.join(d, "cpp")), sidecar_hashes(os.path.join(d, "py")))
            # torch's own softmax of the captured tensors against a float64 softmax of the instance's exact numbers.
            rec = cap.layers[2]
            q, k = rec["q"][0, 5], rec["k"][0, 5 // 2]   # stories260K: 8 query heads, 4 key heads
            n = q.shape[0]
            mask = torch.ones(n, n, dtype=torch.bool).tril()
            att = torch.softmax(((q @ k.T) / 8 ** 0.5).masked_fill(~mask, float("-inf")), dim=-1).numpy()
            with open(os.path.join(d, "py", "long-L2-H5.json")) as f:
                inst = json.load(f)["instance"]
            exact = softmax64(np.load(os.path.join(d, "py", inst["q"]["npy"])), np.load(os.path.join(d, "py", inst["k"]["npy"])), 8)
            self.assertLess(np.abs(att - exact).sum(axis=1).max(), 1e-5)

    def test_hf_style_rope_on_hf_weights_gives_the_same_attention(self):
        with tempfile.TemporaryDirectory() as d:
            llama2c.export_hf(CKPT, os.path.join(d, "hf"))
            hf = Llama.from_hf(os.path.join(d, "hf"))
            plain = Llama.from_llama2c(CKPT)
            ids = torch.tensor([self.tok.encode(long_text())])
            with torch.no_grad():
                with rankcert.capture_llama(hf) as a:
                    la = hf(ids)
                with rankcert.capture_llama(plain) as b:
                    lb = plain(ids)
            self.assertLess(float((la - lb).abs().max()), 1e-3)
            for l in range(5):
                qa, ka = a.layers[l]["q"][0], a.layers[l]["k"][0].repeat_interleave(2, dim=0)
                qb, kb = b.layers[l]["q"][0], b.layers[l]["k"][0].repeat_interleave(2, dim=0)
                # Same logits (up to float error), different coordinates: the HF heads are a permutation.
                self.assertLess(float((qa @ ka.transpose(-1, -2) - qb @ kb.transpose(-1, -2)).abs().max()), 1e-3)
                self.assertGreater(float((qa - qb).abs().max()), 1e-2)

    def test_capture_through_a_module_level_apply_rotary_pos_emb(self):
        import types
        mod = types.ModuleType("fake_hf_llama")
        src = '''
import torch
def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)
def apply_rotary_pos_emb(q, k, cos, sin):
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
class Attn(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.h, self.hs = heads, dim // heads
        self.q_proj = torch.nn.Linear(dim, dim, bias=False)
        self.k_proj = torch.nn.Linear(dim, dim, bias=False)
        self.scaling = self.hs ** -0.5
    def forward(self, x):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.hs).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.h, self.hs).transpose(1, 2)
        inv = 1.0 / (10000 ** (torch.arange(0, self.hs, 2).float() / self.hs))
        f = torch.outer(torch.arange(T).float(), inv)
        emb = torch.cat((f, f), dim=-1)
        q, k = apply_rotary_pos_emb(q, k, emb.cos(), emb.sin())
        s = (q @ k.transpose(-1, -2)) * self.scaling
        s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
        self.last_weights = torch.softmax(s, dim=-1)
        return self.last_weights
'''
        exec(compile(src, "fake_hf_llama", "exec"), mod.__dict__)
        sys.modules["fake_hf_llama"] = mod
        try:
            torch.manual_seed(0)
            m = torch.nn.Sequential(mod.Attn(16, 2), )
            x = torch.randn(1, 12, 16)
            with torch.no_grad(), rankcert.capture_llama(m) as cap:
                m(x)
            self.assertIs(mod.apply_rotary_pos_emb.__name__, "apply_rotary_pos_emb")
            with tempfile.TemporaryDirectory() as d:
                cap.write(d, name="f")
                for h in range(2):
                    with open(os.path.join(d, f"f-L0-H{h}.json")) as f:
                        inst = json.load(f)["instance"]
                    self.assertEqual(inst["scale"], {"rsqrt": 8})
                    exact = softmax64(np.load(os.path.join(d, inst["q"]["npy"])), np.load(os.path.join(d, inst["k"]["npy"])), 8)
                    self.assertLess(np.abs(m[0].last_weights[0, h].numpy() - exact).sum(axis=1).max(), 1e-5)
        finally:
            del sys.modules["fake_hf_llama"]

    def test_multihead_attention_capture_agrees_with_torch_weights_and_brackets(self):
        torch.manual_seed(1)
        E, H, T = 32, 4, 24
        for batch_first in (False, True):
            mha = torch.nn.MultiheadAttention(E, H, batch_first=batch_first)
            model = torch.nn.Sequential()
            model.add_module("attn", mha)
            x = torch.randn((2, T, E) if batch_first else (T, 2, E))
            causal = torch.ones(T, T, dtype=torch.bool).triu(1)   # torch: True = masked
            with torch.no_grad(), rankcert.capture_mha(model) as cap:
                _, weights = mha(x, x, x, attn_mask=causal, need_weights=True, average_attn_weights=False)
            self.assertEqual(cap.layers[0]["mask"], "causal")
            with tempfile.TemporaryDirectory() as d:
                paths = cap.write(d, name="mha")
                self.assertEqual(len(paths), 2 * H)
                for b in range(2):
                    for h in range(H):
                        with open(os.path.join(d, f"mha-b{b}-L0-H{h}.json")) as f:
                            inst = json.load(f)["instance"]
                        exact = softmax64(np.load(os.path.join(d, inst["q"]["npy"])), np.load(os.path.join(d, inst["k"]["npy"])), E // H)
                        self.assertLess(np.abs(weights[b, h].numpy() - exact).sum(axis=1).max(), 1e-5)
                res = rankcert.bracket(paths[0], eps=0.1, out=os.path.join(d, "out"), time_budget=5)
                self.assertEqual(res[0]["verdict"], "verified")
                self.assertEqual(rankcert.verify(res[0]["bundle"])["verdict"], "verified")
        # A key padding mask becomes an explicit boolean mask.
        pad = torch.zeros(2, T, dtype=torch.bool)
        pad[1, -3:] = True
        with torch.no_grad(), rankcert.capture_mha(model) as cap:
            mha(x, x, x, key_padding_mask=pad)
        m = cap.layers[0]["mask"]
        self.assertTrue(bool(m[0].all()))
        self.assertFalse(bool(m[1][:, -3:].any()))

    def test_bfloat16_tensors_are_kept_bit_exact(self):
        torch.manual_seed(2)
        q = torch.randn(10, 4).to(torch.bfloat16)
        k = torch.randn(10, 4).to(torch.bfloat16)
        with tempfile.TemporaryDirectory() as d:
            p = rankcert.instance(os.path.join(d, "bf.json"), q=q, k=k, scale=rankcert.rsqrt(4), mask="causal")
            with open(p) as f:
                inst = json.load(f)["instance"]
            self.assertIn("safetensors", inst["q"])
            back = rankcert.read_safetensors(os.path.join(d, inst["q"]["safetensors"]))["q"]
            self.assertTrue(np.array_equal(back, q.float().numpy()))
            (r,) = rankcert.bracket(p, eps=0.1, out=d, time_budget=5)
            self.assertEqual(r["verdict"], "verified")


class ReadmeExampleTests(unittest.TestCase):
    @needs_torch
    def test_the_readme_python_example_runs_as_written(self):
        with open(os.path.join(ROOT, "README.md")) as f:
            readme = f.read()
        m = re.search(r"<!-- python-example -->\s*```python\n(.*?)```", readme, re.S)
        self.assertIsNotNone(m, "README.md has no python example block")
        with tempfile.TemporaryDirectory() as d:
            # A scratch copy of the layout the example expects (python/, data/), so it writes nothing into the tree.
            for sub in ("python", "data"):
                os.symlink(os.path.join(ROOT, sub), os.path.join(d, sub))
            p = subprocess.run([sys.executable, "-c", m.group(1)], cwd=d, capture_output=True, text=True, timeout=600)
            self.assertEqual(p.returncode, 0, p.stderr)
            lines = p.stdout.strip().splitlines()
            self.assertEqual(len(lines), 2, p.stdout)
            for line in lines:
                self.assertTrue(line.endswith("verified"), line)
            self.assertTrue(os.path.exists(os.path.join(d, "example", "bundles", "lily-L0-H0-eps0.1.json")))


if __name__ == "__main__":
    unittest.main()
