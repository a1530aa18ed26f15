"""llama2.c checkpoints and tokenizers without torch: read the weights,
encode and decode text as llama2.c's run.c does, and write a checkpoint in
the HuggingFace llama layout (as HuggingFace's converter would)."""

import json
import os
import struct

import numpy as np

from ._files import write_safetensors


def read_llama2c(path):
    """(weights, config) of a llama2.c version-0 checkpoint."""
    with open(path, "rb") as f:
        data = f.read()
    dim, hid, L, H, KV, V, S = struct.unpack("<7i", data[:28])
    shared = V > 0
    V = abs(V)
    hs, kv = dim // H, dim * KV // H
    a = np.frombuffer(data, dtype="<f4", offset=28)
    pos = 0

    def take(*shape):
        nonlocal pos
        n = int(np.prod(shape))
        out = a[pos:pos + n].reshape(shape)
        pos += n
        return out

    emb = take(V, dim)
    att_norm, wq, wk, wv, wo = take(L, dim), take(L, dim, dim), take(L, kv, dim), take(L, kv, dim), take(L, dim, dim)
    ffn_norm, w1, w2, w3 = take(L, dim), take(L, hid, dim), take(L, dim, hid), take(L, hid, dim)
    norm = take(dim)
    take(S, hs)  # legacy RoPE tables
    lm_head = emb if shared else take(V, dim)
    w = {"embed": emb, "norm": norm, "lm_head": lm_head}
    for l in range(L):
        w[l] = {"att_norm": att_norm[l], "wq": wq[l], "wk": wk[l], "wv": wv[l], "wo": wo[l], "ffn_norm": ffn_norm[l],
                "w1": w1[l], "w2": w2[l], "w3": w3[l]}
    cfg = {"dim": dim, "hidden_dim": hid, "n_layers": L, "n_heads": H, "n_kv_heads": KV, "vocab_size": V, "seq_len": S}
    return w, cfg


def hf_permute(w, n_heads):
    """HuggingFace's converter permutation of q_proj/k_proj rows (pairs -> halves)."""
    d1, d2 = w.shape
    return w.reshape(n_heads, d1 // n_heads // 2, 2, d2).transpose(0, 2, 1, 3).reshape(d1, d2)


def export_hf(checkpoint, folder):
    """Write a llama2.c checkpoint as a HuggingFace llama folder (config.json,
    model.safetensors, float32), permuting q/k rows as HuggingFace's converter does."""
    w, c = read_llama2c(checkpoint)
    os.makedirs(folder, exist_ok=True)
    t = {"model.embed_tokens.weight": w["embed"], "model.norm.weight": w["norm"]}
    if w["lm_head"] is not w["embed"]:
        t["lm_head.weight"] = w["lm_head"]
    for l in range(c["n_layers"]):
        p, L = f"model.layers.{l}.", w[l]
        t.update({p + "input_layernorm.weight": L["att_norm"],
                  p + "self_attn.q_proj.weight": hf_permute(L["wq"], c["n_heads"]),
                  p + "self_attn.k_proj.weight": hf_permute(L["wk"], c["n_kv_heads"]),
                  p + "self_attn.v_proj.weight": L["wv"], p + "self_attn.o_proj.weight": L["wo"],
                  p + "post_attention_layernorm.weight": L["ffn_norm"], p + "mlp.gate_proj.weight": L["w1"],
                  p + "mlp.down_proj.weight": L["w2"], p + "mlp.up_proj.weight": L["w3"]})
    write_safetensors(os.path.join(folder, "model.safetensors"), t, {"format": "pt"})
    config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": c["dim"],
              "intermediate_size": c["hidden_dim"], "num_hidden_layers": c["n_layers"],
              "num_attention_heads": c["n_heads"], "num_key_value_heads": c["n_kv_heads"],
              "vocab_size": c["vocab_size"], "max_position_embeddings": c["seq_len"], "rms_norm_eps": 1e-5,
              "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": "lm_head.weight" not in t,
              "torch_dtype": "float32"}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    return folder


class Llama2Tokenizer:
    """llama2.c's tokenizer (tok*.bin): encode as run.c does, decode pieces."""

    def __init__(self, path, vocab_size):
        with open(path, "rb") as f:
            data = f.read()
        off = 4
        self.vocab, self.scores = [], []
        for _ in range(vocab_size):
            score, n = struct.unpack("<fi", data[off:off + 8])
            off += 8
            self.vocab.append(data[off:off + n])
            self.scores.append(score)
            off += n
        self.ids = {p: i for i, p in reversed(list(enumerate(self.vocab)))}

    def encode(self, text, bos=True):
        toks = [1] if bos else []
        if text:
            toks.append(self.ids[b" "])
        for ch in text:
            b = ch.encode("utf-8")
            if b in self.ids:
                toks.append(self.ids[b])
            else:
                toks.extend(x + 3 for x in b)
        while True:
            best, best_id, best_i = -1e10, -1, 0
            for i in range(len(toks) - 1):
                j = self.ids.get(self.vocab[toks[i]] + self.vocab[toks[i + 1]])
                if j is not None and self.scores[j] > best:
                    best, best_id, best_i = self.scores[j], j, i
            if best_id < 0:
                return toks
            toks[best_i:best_i + 2] = [best_id]

    def decode(self, tokens):
        out = b""
        for prev, t in zip(tokens, tokens[1:]):
            p = self.vocab[t]
            if prev == 1 and p.startswith(b" "):
                p = p[1:]
            if len(p) == 6 and p.startswith(b"<0x") and p.endswith(b">"):
                p = bytes([int(p[3:5], 16)])
            out += p
        return out.decode("utf-8", errors="replace")
