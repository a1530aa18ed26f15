"""Record the queries and keys a torch model's attention uses, per layer and
head, and write them as rankcert instances.

    with rankcert.capture(model) as cap:      # any of the families below
        model(tokens)
    paths = cap.write("heads/", name="text")

capture(model) looks at the model's attention modules by structure and
names, as HuggingFace transformers, timm and torch lay them out:
  q_proj / k_proj (llama, qwen2, mistral)  -> capture_llama (post-RoPE, causal)
  query / key Linear (bert, vit)           -> their outputs, no mask unless
                                              an attention_mask hides keys
  c_attn (gpt2)                            -> its first two thirds, causal
  a fused qkv Linear with num_heads (timm)  -> its first two thirds, no mask
  torch.nn.MultiheadAttention              -> capture_mha

capture_llama records post-RoPE queries and keys, exactly as the model
rotates them: it records the output of each attention module's rotary step,
either a submodule named rope / rotary / rotary_emb whose forward returns
the rotated (q, k), or HuggingFace's module-level apply_rotary_pos_emb(q, k,
...) (patched for the duration of the block).  capture_mha records
torch.nn.MultiheadAttention: q = query W_q^T + b_q and k = key W_k^T + b_k,
head by head, with the attention mask it was called with.

Tensors are kept as the model computed them (dtype and bits), one batch
element at a time (batch index b in the instance names when the batch has
more than one element).
"""

import contextlib
import math
import os
import sys

import numpy as np
import torch

from ._files import write_npy
from ._instance import exact_number, instance, rsqrt


class Capture:
    """What a capture block recorded: heads[(layer, head)] = dict(q, k, scale,
    mask, kv_head) with q (B, n, d), k (B, N, d) tensors."""

    def __init__(self):
        self.layers = []   # per layer: dict(q=(B,H,T,d), k=(B,Hkv,T,d), scale, mask)

    def heads(self):
        for l, rec in enumerate(self.layers):
            H, Hkv = rec["q"].shape[1], rec["k"].shape[1]
            for h in range(H):
                yield l, h, h // (H // Hkv), rec

    def write(self, out, name="text", provenance=None, batch=None):
        """One instance per (batch element, layer, head) in OUT, named like
        `rankcert extract` names them (NAME-L{l}-H{h}.json, key files shared
        by the query heads of a key head).  Returns the instance paths."""
        os.makedirs(out, exist_ok=True)
        paths = []
        for l, rec in enumerate(self.layers):
            B = rec["q"].shape[0]
            for b in range(B) if batch is None else [batch]:
                stem0 = name if B == 1 else f"{name}-b{b}"
                Hkv = rec["k"].shape[1]
                kfiles = {}
                for g in range(Hkv):
                    f = f"{stem0}-L{l}-KV{g}.k.npy"
                    kfiles[g] = (f, write_npy(os.path.join(out, f), _numpy(rec["k"][b, g])))
                for l2, h, g, _ in [x for x in self.heads() if x[0] == l]:
                    stem = f"{stem0}-L{l}-H{h}"
                    qf = f"{stem}.q.npy"
                    inst = {"kind": "qk", "q": {"npy": qf, "sha256": write_npy(os.path.join(out, qf), _numpy(rec["q"][b, h]))},
                            "k": {"npy": kfiles[g][0], "sha256": kfiles[g][1]}, "scale": exact_number(rec["scale"], "scale")}
                    mask = rec["mask"]
                    if isinstance(mask, str):
                        inst["mask"] = mask
                    elif mask is not None:
                        mf = f"{stem}.mask.npy"
                        m = mask[b] if mask.dim() == 3 else mask
                        inst["mask"] = {"npy": mf, "sha256": write_npy(os.path.join(out, mf), _numpy(m))}
                    prov = dict(provenance or {})
                    prov.update(layer=l, head=h, kv_head=g, batch=b, captured_by=rec["how"])
                    path = os.path.join(out, stem + ".json")
                    import json
                    with open(path, "w") as f:
                        json.dump({"instance": inst, "provenance": prov}, f, indent=1)
                        f.write("\n")
                    paths.append(path)
        return paths


def _numpy(t):
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.float()   # exact
    return t.numpy()


def _find_rotary(mod):
    for name in ("rope", "rotary", "rotary_emb"):
        sub = getattr(mod, name, None)
        if isinstance(sub, torch.nn.Module):
            return sub
    return None


@contextlib.contextmanager
def capture_llama(model, scale=None):
    """Record post-RoPE q and k of every llama-style attention module (one with
    q_proj and k_proj) in the order the modules are listed.  scale defaults
    to the module's `scaling` attribute, else 1/sqrt(head size); the mask is
    causal."""
    attn = [m for m in model.modules() if hasattr(m, "q_proj") and hasattr(m, "k_proj")]
    if not attn:
        raise ValueError("capture_llama: no module with q_proj and k_proj in the model")
    cap = Capture()
    cap.layers = [None] * len(attn)
    handles, patched = [], []
    current = [None]

    def record(i, q, k, how):
        hs = q.shape[-1]
        s = getattr(attn[i], "scaling", None) if scale is None else scale
        # A float scaling within two units in the last place of 1/sqrt(hs) is
        # the model's rounding of 1/sqrt(hs): the instance takes the exact value.
        ideal = s is None or math.isclose(float(s), 1 / math.sqrt(hs), rel_tol=2.0 ** -51, abs_tol=0)
        cap.layers[i] = {"q": q.detach().clone(), "k": k.detach().clone(), "scale": rsqrt(hs) if ideal else s,
                         "mask": "causal", "how": how}

    for i, m in enumerate(attn):
        rot = _find_rotary(m)
        if rot is not None:
            handles.append(rot.register_forward_hook(lambda mod, inp, out, i=i: record(i, out[0], out[1], "rotary submodule output")))
        else:
            handles.append(m.register_forward_pre_hook(lambda mod, inp, i=i: current.__setitem__(0, i)))
            pymod = sys.modules[type(m).__module__]
            fn = getattr(pymod, "apply_rotary_pos_emb", None)
            if fn is None:
                raise ValueError(f"capture_llama: {type(m).__name__} has no rotary submodule and its module has no apply_rotary_pos_emb")
            if not any(p[0] is pymod for p in patched):
                def wrapped(*a, _fn=fn, **kw):
                    q, k = _fn(*a, **kw)
                    record(current[0], q, k, "apply_rotary_pos_emb output")
                    return q, k
                patched.append((pymod, fn))
                pymod.apply_rotary_pos_emb = wrapped
    try:
        yield cap
    finally:
        for h in handles:
            h.remove()
        for pymod, fn in patched:
            pymod.apply_rotary_pos_emb = fn
    missing = [i for i, r in enumerate(cap.layers) if r is None]
    if missing:
        cap.layers = [r for r in cap.layers if r is not None]


def _causal(mask, L, S):
    if mask is None or mask.shape[-2:] != (L, S):
        return False
    if mask.dtype == torch.bool:
        return torch.equal(mask, ~torch.ones(L, S, dtype=torch.bool).tril(S - L))
    inf = torch.isneginf(mask)
    return torch.equal(inf, ~torch.ones(L, S, dtype=torch.bool).tril(S - L)) and bool((mask[~inf] == 0).all())


@contextlib.contextmanager
def capture_mha(model):
    """Record q and k of every torch.nn.MultiheadAttention in the model."""
    mods = [m for m in model.modules() if isinstance(m, torch.nn.MultiheadAttention)]
    if not mods:
        raise ValueError("capture_mha: no torch.nn.MultiheadAttention in the model")
    cap = Capture()
    cap.layers = [None] * len(mods)
    originals = []

    def wrap(i, m, forward):
        def f(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None, *args, **kw):
            if m.bias_k is not None or m.add_zero_attn:
                raise ValueError("capture_mha: bias_k / add_zero_attn are not supported")
            q_in, k_in = query, key
            if m.batch_first and q_in.dim() == 3:
                q_in, k_in = q_in.transpose(0, 1), k_in.transpose(0, 1)
            if q_in.dim() == 2:
                q_in, k_in = q_in.unsqueeze(1), k_in.unsqueeze(1)
            E, H = m.embed_dim, m.num_heads
            hs = E // H
            if m._qkv_same_embed_dim:
                wq, wk = m.in_proj_weight[:E], m.in_proj_weight[E:2 * E]
            else:
                wq, wk = m.q_proj_weight, m.k_proj_weight
            bq = m.in_proj_bias[:E] if m.in_proj_bias is not None else None
            bk = m.in_proj_bias[E:2 * E] if m.in_proj_bias is not None else None
            with torch.no_grad():
                q = torch.nn.functional.linear(q_in, wq, bq)   # (L, B, E)
                k = torch.nn.functional.linear(k_in, wk, bk)   # (S, B, E)
            L, B, S = q.shape[0], q.shape[1], k.shape[0]
            q = q.permute(1, 0, 2).reshape(B, L, H, hs).transpose(1, 2)
            k = k.permute(1, 0, 2).reshape(B, S, H, hs).transpose(1, 2)
            if attn_mask is None and key_padding_mask is None and kw.get("is_causal"):
                mask = "causal"
            elif attn_mask is not None and key_padding_mask is None and _causal(attn_mask, L, S):
                mask = "causal"
            else:
                allowed = torch.ones(B, L, S, dtype=torch.bool)
                if attn_mask is not None:
                    am = attn_mask if attn_mask.dtype == torch.bool else torch.isneginf(attn_mask)
                    if attn_mask.dtype != torch.bool and not bool((attn_mask[~am] == 0).all()):
                        raise ValueError("capture_mha: additive float masks other than 0/-inf are not supported (use rankcert.instance(logits=...))")
                    if am.dim() == 3:
                        raise ValueError("capture_mha: per-head 3-D attn_mask is not supported")
                    allowed &= ~am
                if key_padding_mask is not None:
                    kp = key_padding_mask if key_padding_mask.dtype == torch.bool else torch.isneginf(key_padding_mask)
                    allowed &= ~kp.reshape(B, 1, S)
                mask = None if bool(allowed.all()) else allowed
            cap.layers[i] = {"q": q.detach().clone(), "k": k.detach().clone(), "scale": rsqrt(hs), "mask": mask,
                             "how": "torch.nn.MultiheadAttention input projections"}
            return forward(query, key, value, key_padding_mask=key_padding_mask, need_weights=need_weights,
                           attn_mask=attn_mask, *args, **kw)
        return f

    for i, m in enumerate(mods):
        originals.append((m, m.forward))
        m.forward = wrap(i, m, m.forward)
    try:
        yield cap
    finally:
        for m, fwd in originals:
            m.forward = fwd
        cap.layers = [r for r in cap.layers if r is not None]


def _heads_of(m):
    for name in ("num_attention_heads", "num_heads", "n_head", "n_heads"):
        v = getattr(m, name, None)
        if isinstance(v, int) and v > 0:
            return v
    cfg = getattr(m, "config", None)
    v = getattr(cfg, "num_attention_heads", None) if cfg is not None else None
    if isinstance(v, int) and v > 0:
        return v
    raise ValueError(f"capture: {type(m).__name__}: no head count (num_attention_heads / num_heads)")


def _split_heads(x, H):
    """(B, T, H*hs) -> (B, H, T, hs)."""
    B, T, E = x.shape
    if E % H:
        raise ValueError(f"capture: width {E} is not a multiple of {H} heads")
    return x.reshape(B, T, H, E // H).transpose(1, 2)


def _allowed_from_additive(mask, B, L, S, who):
    """HF's extended attention mask (0 where allowed, a large negative number
    where not; (B, 1, 1, S) or (B, 1, L, S)) or a boolean mask as a boolean
    (B, L, S) tensor of allowed keys, or None when every key is allowed."""
    if mask is None:
        return None
    if mask.dtype == torch.bool:
        allowed = mask
    else:
        blocked = mask < -1e3
        if not bool((mask[~blocked] == 0).all()):
            raise ValueError(f"capture: {who}: an additive attention mask other than 0 / large negative (use rankcert.instance(logits=...))")
        allowed = ~blocked
    while allowed.dim() > 3:
        if allowed.shape[1] != 1:
            raise ValueError(f"capture: {who}: a per-head attention mask is not supported")
        allowed = allowed[:, 0]
    allowed = allowed.expand(B, L, S).clone()
    return None if bool(allowed.all()) else allowed


@contextlib.contextmanager
def capture(model, scale=None):
    """Record per-head q and k of every attention module of a HuggingFace-,
    timm- or torch-style model (see the module docstring for the families),
    in the order model.modules() lists them.  Yields a Capture."""
    mods = list(model.modules())
    if any(hasattr(m, "q_proj") and hasattr(m, "k_proj") for m in mods):
        with capture_llama(model, scale) as cap:
            yield cap
        return
    if any(isinstance(m, torch.nn.MultiheadAttention) for m in mods):
        with capture_mha(model) as cap:
            yield cap
        return
    found = []
    for m in mods:
        if isinstance(getattr(m, "query", None), torch.nn.Module) and isinstance(getattr(m, "key", None), torch.nn.Module):
            found.append((m, "query/key"))
        elif isinstance(getattr(m, "c_attn", None), torch.nn.Module):
            found.append((m, "c_attn"))
        elif isinstance(getattr(m, "qkv", None), torch.nn.Linear):
            for norm in ("q_norm", "k_norm"):
                sub = getattr(m, norm, None)
                if sub is not None and not isinstance(sub, torch.nn.Identity):
                    raise ValueError(f"capture: {type(m).__name__}: {norm} after the qkv projection is not supported")
            found.append((m, "qkv"))
    if not found:
        raise ValueError("capture: no attention module found (q_proj/k_proj, query/key, c_attn, qkv or nn.MultiheadAttention)")
    cap = Capture()
    cap.layers = [None] * len(found)
    handles, originals = [], []
    state = [dict() for _ in found]

    def finish(i):
        st = state[i]
        if "q" not in st or "k" not in st:
            return
        m, how = found[i]
        q, k = st.pop("q"), st.pop("k")
        H = _heads_of(m)
        q, k = _split_heads(q, H), _split_heads(k, H)
        hs = q.shape[-1]
        s = scale if scale is not None else getattr(m, "scale", None)
        ideal = s is None or (isinstance(s, float) and math.isclose(s, 1 / math.sqrt(hs), rel_tol=2.0 ** -51, abs_tol=0))
        B, L, S = q.shape[0], q.shape[2], k.shape[2]
        if how == "c_attn":
            if st.get("mask") is not None and _allowed_from_additive(st["mask"], B, L, S, type(m).__name__) is not None:
                raise ValueError("capture: gpt2-style attention with a padding mask is not supported (capture unpadded inputs)")
            mask = "causal"
        else:
            mask = _allowed_from_additive(st.get("mask"), B, L, S, type(m).__name__)
        cap.layers[i] = {"q": q.detach().clone(), "k": k.detach().clone(), "scale": rsqrt(hs) if ideal else s,
                         "mask": mask, "how": {"query/key": "query and key Linear outputs", "c_attn": "c_attn output, first two thirds",
                                               "qkv": "fused qkv Linear output, first two thirds"}[how]}

    def on_output(i, part):
        def hook(mod, inp, out):
            if part == "fused":
                E3 = out.shape[-1]
                state[i]["q"], state[i]["k"] = out[..., :E3 // 3], out[..., E3 // 3:2 * E3 // 3]
            else:
                state[i][part] = out
            finish(i)
        return hook

    def wrap(i, m, forward):
        def f(*args, **kw):
            mask = kw.get("attention_mask")
            if mask is None and len(args) > 1 and isinstance(args[1], torch.Tensor):
                mask = args[1]   # forward(hidden_states, attention_mask, ...)
            state[i]["mask"] = mask
            return forward(*args, **kw)
        return f

    for i, (m, how) in enumerate(found):
        if how == "query/key":
            handles.append(m.query.register_forward_hook(on_output(i, "q")))
            handles.append(m.key.register_forward_hook(on_output(i, "k")))
        else:
            handles.append(getattr(m, how).register_forward_hook(on_output(i, "fused")))
        originals.append((m, m.forward))
        m.forward = wrap(i, m, m.forward)
    try:
        yield cap
    finally:
        for h in handles:
            h.remove()
        for m, fwd in originals:
            m.forward = fwd
        cap.layers = [r for r in cap.layers if r is not None]
