#!/usr/bin/python3
"""gen_attention_fixtures.py — float64 PyTorch references for the fused attention with
GraphMERT's decay mask (the cases gen_refs.py does not cover).

    /usr/bin/python3 scripts/refs/gen_attention_fixtures.py spec/fixtures/attention_decay.json

The decay is f = λ^GELU(√(sp + 1) − p_h) on a leafy chain's hop counts, so the gradients reach
p through both the attention and the decay mask. Masks are 1 = allowed. A query row with no
allowed key is defined as 0 output (safe softmax). Same encoding as gen_op_fixtures.py.
"""
import math
import sys

import torch
import torch.nn.functional as F

from refs_common import DT, enc, f32, write_cases

torch.manual_seed(20261123)




def leafy_hops(R, Lv):
    """hop counts of a leafy chain with path leaf edges (the official layout)."""
    n = R * (Lv + 1)
    hops = torch.zeros(n, n, dtype=DT)
    for s in range(n):
        rs, as_ = (s, -1) if s < R else ((s - R) // Lv, (s - R) % Lv)
        for t in range(n):
            rt, at = (t, -1) if t < R else ((t - R) // Lv, (t - R) % Lv)
            if rs == rt and as_ >= 0 and at >= 0:
                gap = abs(as_ - at)
                d = 0 if gap == 0 else (1 if gap == 1 else 2)
            else:
                d = abs(rs - rt) + (as_ >= 0) + (at >= 0)
            hops[s, t] = d
    return hops


def attention(q, k, v, decay, mode, renorm, allowed):
    """softmax over keys of (decay ⊙ qkᵀ/√d) masked, or decay applied to the weights."""
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if decay is not None and mode == "scores":
        s = s * decay
    row_any = allowed.any(-1, keepdim=True)
    s = s.masked_fill(~allowed, float("-inf")).masked_fill(~row_any, 0.0)
    a = torch.softmax(s, -1) * row_any
    if decay is not None and mode == "weights":
        a = a * decay
        if renorm:
            a = a / (a.sum(-1, keepdim=True) + (~row_any).to(DT))
    return a @ v


def main(path):
    B, H, R, Lv, d = 2, 2, 3, 2, 4
    N = R * (Lv + 1)
    sp = leafy_hops(R, Lv)
    lam = 0.6
    cases = []
    for name, mode, renorm in [("decay_scores", "scores", False), ("decay_weights", "weights", False),
                               ("decay_weights_renorm", "weights", True)]:
        q = f32(torch.randn(B, H, N, d, dtype=DT))
        k = f32(torch.randn(B, H, N, d, dtype=DT))
        v = f32(torch.randn(B, H, N, d + 1, dtype=DT))
        p = f32(torch.tensor([1.0, 0.4], dtype=DT))
        key_mask = torch.ones(B, N, dtype=torch.bool)
        key_mask[1, N - 2:] = False          # padding of the second sequence
        attn_mask = torch.ones(N, N, dtype=torch.bool)
        attn_mask[2, :] = False              # a query row with no allowed key
        attn_mask[0, 4] = False
        allowed = key_mask[:, None, None, :] & attn_mask[None, None]
        leaves = {"q": q.clone().requires_grad_(True), "k": k.clone().requires_grad_(True),
                  "v": v.clone().requires_grad_(True), "p": p.clone().requires_grad_(True)}
        decay = lam ** F.gelu(torch.sqrt(sp + 1) - leaves["p"][:, None, None])
        decay.retain_grad()
        out = attention(leaves["q"], leaves["k"], leaves["v"], decay, mode, renorm, allowed)
        cot = f32(torch.randn(out.shape, dtype=DT))
        (out * cot).sum().backward()
        cases.append({
            "name": name, "decay_mode": mode, "renormalize": renorm, "lambda": lam,
            "inputs": {"q": enc(q), "k": enc(k), "v": enc(v), "p": enc(p), "sp": enc(sp),
                       "key_mask": enc(key_mask.to(DT)), "attn_mask": enc(attn_mask.to(DT))},
            "output": enc(out.detach()), "cotangent": enc(cot),
            "grads": {"q": enc(leaves["q"].grad), "k": enc(leaves["k"].grad),
                      "v": enc(leaves["v"].grad), "p": enc(leaves["p"].grad),
                      "decay": enc(decay.grad)},
        })
    write_cases(path, "scripts/refs/gen_attention_fixtures.py", cases)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "spec/fixtures/attention_decay.json")
