"""A llama-style torch model for llama2.c checkpoints and HuggingFace llama
folders, a llama2.c tokenizer, and a converter to the HuggingFace layout.

The model is an ordinary torch module (embedding, RMSNorm, attention with a
`rope` submodule, SwiGLU), so the capture helpers and the user's own hooks
work on it.  With exact=True every float32 operation runs in the order and
rounding of llama2.c's run.c (and of `rankcert extract`): dot products
accumulate one term at a time, exp/pow/cos/sin are the C library's expf,
powf, cosf, sinf.  Its post-RoPE queries and keys are then bit-identical to
the C++ forward pass, which is how the tests tie the Python route to
`rankcert extract`.  exact=False uses torch's own kernels (fast; equal within
float error).
"""

import ctypes
import ctypes.util
import json
import math
import os
import struct

import numpy as np
import torch
from torch import nn

from ._files import read_safetensors
from .llama2c import Llama2Tokenizer, export_hf, hf_permute, read_llama2c  # noqa: F401 (re-exported)

_libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
for _f in ("expf", "cosf", "sinf"):
    getattr(_libm, _f).argtypes = [ctypes.c_float]
    getattr(_libm, _f).restype = ctypes.c_float
_libm.powf.argtypes = [ctypes.c_float, ctypes.c_float]
_libm.powf.restype = ctypes.c_float


def _c_expf(x):
    """The C library's expf on every entry of a float32 tensor."""
    flat = x.contiguous().view(-1).tolist()
    f = _libm.expf
    return torch.tensor([f(v) for v in flat], dtype=torch.float32).view(x.shape)


def _dot_last(x, w, exact):
    """x (..., n) @ w.T for w (d, n): the linear map of nn.Linear without bias."""
    if not exact:
        return x @ w.t()
    acc = torch.zeros(x.shape[:-1] + (w.shape[0],), dtype=torch.float32)
    for j in range(w.shape[1]):
        acc = acc + x[..., j:j + 1] * w[:, j]
    return acc


class Linear(nn.Linear):
    """nn.Linear without bias that can run in llama2.c's summation order."""

    def __init__(self, n_in, n_out, exact):
        super().__init__(n_in, n_out, bias=False)
        self.exact = exact

    def forward(self, x):
        return _dot_last(x, self.weight, self.exact)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps, exact):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps, self.exact = eps, exact

    def forward(self, x):
        if not self.exact:
            return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))
        ss = torch.zeros(x.shape[:-1] + (1,), dtype=torch.float32)
        for j in range(x.shape[-1]):
            ss = ss + x[..., j:j + 1] * x[..., j:j + 1]
        ss = ss / torch.tensor(float(x.shape[-1]), dtype=torch.float32)
        ss = ss + torch.tensor(self.eps, dtype=torch.float32)
        ss = torch.tensor(1.0, dtype=torch.float32) / torch.sqrt(ss)
        return self.weight * (ss * x)


class Rope(nn.Module):
    """Rotary embeddings.  style "pairs": adjacent pairs (2i, 2i+1) rotate
    together (Meta / llama2.c); style "halves": i and i + hs/2 (HuggingFace's
    rotate_half).  forward(q, k) with q (B, H, T, hs), k (B, Hkv, T, hs)
    returns the rotated (q, k); capture_llama records this output."""

    def __init__(self, head_size, theta, style, exact):
        super().__init__()
        self.hs, self.theta, self.style, self.exact = head_size, theta, style, exact

    def tables(self, T):
        half = self.hs // 2
        cos = np.zeros((T, half), dtype=np.float32)
        sin = np.zeros((T, half), dtype=np.float32)
        for i in range(half):
            if self.exact:   # llama2.c: 1.0f / powf(theta, (float)(2i) / (float)hs), cosf/sinf of (float)pos * freq
                freq = np.float32(1.0) / np.float32(_libm.powf(self.theta, float(np.float32(2 * i) / np.float32(self.hs))))
                for t in range(T):
                    v = np.float32(t) * freq
                    cos[t, i], sin[t, i] = _libm.cosf(float(v)), _libm.sinf(float(v))
            else:
                freq = 1.0 / (self.theta ** (2 * i / self.hs))
                cos[:, i] = np.cos(np.arange(T) * freq)
                sin[:, i] = np.sin(np.arange(T) * freq)
        return torch.from_numpy(cos), torch.from_numpy(sin)

    def rotate(self, x, cos, sin):
        if self.style == "pairs":
            x0, x1 = x[..., 0::2], x[..., 1::2]
        else:
            x0, x1 = x[..., : self.hs // 2], x[..., self.hs // 2:]
        y0 = x0 * cos - x1 * sin
        y1 = x0 * sin + x1 * cos
        if self.style == "pairs":
            return torch.stack((y0, y1), dim=-1).flatten(-2)
        return torch.cat((y0, y1), dim=-1)

    def forward(self, q, k):
        cos, sin = self.tables(q.shape[-2])
        return self.rotate(q, cos, sin), self.rotate(k, cos, sin)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, rope, exact):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_size, self.exact = n_heads, n_kv_heads, dim // n_heads, exact
        hs = self.head_size
        self.q_proj = Linear(dim, n_heads * hs, exact)
        self.k_proj = Linear(dim, n_kv_heads * hs, exact)
        self.v_proj = Linear(dim, n_kv_heads * hs, exact)
        self.o_proj = Linear(n_heads * hs, dim, exact)
        self.rope = rope

    def forward(self, x):
        B, T, _ = x.shape
        hs = self.head_size
        q = self.q_proj(x).view(B, T, self.n_heads, hs).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_kv_heads, hs).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_kv_heads, hs).transpose(1, 2)
        q, k = self.rope(q, k)
        rep = self.n_heads // self.n_kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        if not self.exact:
            s = (q @ k.transpose(-1, -2)) / math.sqrt(hs)
            att = torch.softmax(s.masked_fill(~causal, float("-inf")), dim=-1)
            out = att @ v
        else:
            s = torch.zeros(B, self.n_heads, T, T, dtype=torch.float32)
            for i in range(hs):
                s = s + q[..., :, i:i + 1] * k[..., :, i].unsqueeze(-2)
            s = s / torch.sqrt(torch.tensor(float(hs), dtype=torch.float32))
            s = s.masked_fill(~causal, float("-inf"))
            mx = s.max(dim=-1, keepdim=True).values
            d = (s - mx)
            e = torch.zeros_like(d)
            rows, cols = causal.nonzero(as_tuple=True)
            e[..., rows, cols] = _c_expf(d[..., rows, cols])
            sm = torch.zeros(B, self.n_heads, T, 1, dtype=torch.float32)
            for t in range(T):
                sm = sm + e[..., t:t + 1]
            att = e / sm
            out = torch.zeros(B, self.n_heads, T, hs, dtype=torch.float32)
            for t in range(T):
                out = out + att[..., t:t + 1] * v[..., t:t + 1, :]
        return self.o_proj(out.transpose(1, 2).reshape(B, T, self.n_heads * hs))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden, exact):
        super().__init__()
        self.gate_proj, self.up_proj, self.down_proj = Linear(dim, hidden, exact), Linear(dim, hidden, exact), Linear(hidden, dim, exact)
        self.exact = exact

    def forward(self, x):
        h = self.gate_proj(x)
        if self.exact:
            one = torch.tensor(1.0, dtype=torch.float32)
            h = h * (one / (one + _c_expf(-h)))
        else:
            h = torch.nn.functional.silu(h)
        return self.down_proj(h * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, cfg, exact):
        super().__init__()
        hs = cfg["dim"] // cfg["n_heads"]
        self.input_layernorm = RMSNorm(cfg["dim"], cfg["norm_eps"], exact)
        self.self_attn = Attention(cfg["dim"], cfg["n_heads"], cfg["n_kv_heads"],
                                   Rope(hs, cfg["rope_theta"], cfg["rope_style"], exact), exact)
        self.post_attention_layernorm = RMSNorm(cfg["dim"], cfg["norm_eps"], exact)
        self.mlp = FeedForward(cfg["dim"], cfg["hidden_dim"], exact)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):
    """A llama-family decoder.  forward(tokens (B, T) long) -> logits (B, T, V)."""

    def __init__(self, cfg, exact=False):
        super().__init__()
        self.cfg = dict(cfg)
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["dim"])
        self.layers = nn.ModuleList(Block(cfg, exact) for _ in range(cfg["n_layers"]))
        self.norm = RMSNorm(cfg["dim"], cfg["norm_eps"], exact)
        self.lm_head = Linear(cfg["dim"], cfg["vocab_size"], exact)

    def forward(self, tokens):
        x = self.embed_tokens(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))

    @torch.no_grad()
    def generate(self, prompt, steps):
        """Greedy continuation (arg-max) of a list of token ids."""
        out = list(prompt)
        for _ in range(steps):
            if len(out) >= self.cfg["seq_len"]:
                break
            logits = self(torch.tensor([out]))[0, -1]
            out.append(int(torch.argmax(logits)))
        return out

    @classmethod
    def from_llama2c(cls, path, exact=False):
        """Load a llama2.c ("version 0") checkpoint, e.g. data/stories260K/stories260K.bin."""
        w, cfg = read_llama2c(path)
        cfg.update(rope_style="pairs", norm_eps=1e-5, rope_theta=10000.0)
        return cls._load(cfg, w, exact)

    @classmethod
    def from_hf(cls, folder, exact=False):
        """Load a HuggingFace llama folder (config.json + model.safetensors), with
        HuggingFace's own RoPE (rotate_half) on its permuted q/k weights."""
        with open(os.path.join(folder, "config.json")) as f:
            c = json.load(f)
        t = read_safetensors(os.path.join(folder, "model.safetensors"))
        cfg = {"dim": c["hidden_size"], "hidden_dim": c["intermediate_size"], "n_layers": c["num_hidden_layers"],
               "n_heads": c["num_attention_heads"], "n_kv_heads": c.get("num_key_value_heads") or c["num_attention_heads"],
               "vocab_size": c["vocab_size"], "seq_len": c["max_position_embeddings"], "norm_eps": c.get("rms_norm_eps", 1e-6),
               "rope_theta": c.get("rope_theta", 10000.0), "rope_style": "halves"}
        w = {"embed": t["model.embed_tokens.weight"], "norm": t["model.norm.weight"],
             "lm_head": t.get("lm_head.weight", t["model.embed_tokens.weight"])}
        for l in range(cfg["n_layers"]):
            p = f"model.layers.{l}."
            w[l] = {k: t[p + v] for k, v in (("att_norm", "input_layernorm.weight"), ("wq", "self_attn.q_proj.weight"),
                                            ("wk", "self_attn.k_proj.weight"), ("wv", "self_attn.v_proj.weight"),
                                            ("wo", "self_attn.o_proj.weight"), ("ffn_norm", "post_attention_layernorm.weight"),
                                            ("w1", "mlp.gate_proj.weight"), ("w2", "mlp.down_proj.weight"),
                                            ("w3", "mlp.up_proj.weight"))}
        return cls._load(cfg, w, exact)

    @classmethod
    def _load(cls, cfg, w, exact):
        m = cls(cfg, exact)
        t = lambda a: torch.from_numpy(np.array(a, dtype=np.float32))
        with torch.no_grad():
            m.embed_tokens.weight.copy_(t(w["embed"]))
            m.norm.weight.copy_(t(w["norm"]))
            m.lm_head.weight.copy_(t(w["lm_head"]))
            for l, b in enumerate(m.layers):
                L = w[l]
                b.input_layernorm.weight.copy_(t(L["att_norm"]))
                b.post_attention_layernorm.weight.copy_(t(L["ffn_norm"]))
                for mod, key in ((b.self_attn.q_proj, "wq"), (b.self_attn.k_proj, "wk"), (b.self_attn.v_proj, "wv"),
                                 (b.self_attn.o_proj, "wo"), (b.mlp.gate_proj, "w1"), (b.mlp.down_proj, "w2"),
                                 (b.mlp.up_proj, "w3")):
                    mod.weight.copy_(t(L[key]))
        return m.eval()


