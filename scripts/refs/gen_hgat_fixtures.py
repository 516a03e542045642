#!/usr/bin/python3
"""gen_hgat_fixtures.py — float64 PyTorch references for H-GAT relation fusion, written from
GRAPHMERT_SPEC §3 (official form: LeakyReLU 0.01, softmax over the head tokens, t' = t + Σ α W_r h),
both with a_r read interleaved (official code) and concatenated (paper).

    /usr/bin/python3 scripts/refs/gen_hgat_fixtures.py spec/fixtures/hgat.json
Indices are written 1-based (rel: rows of W; start: rows of heads)."""
import json
import sys

import torch
import torch.nn.functional as F

from refs_common import DT, enc, f32

torch.manual_seed(20261125)




def hgat(tails, heads, W, a, rel, start, count, interleaved):
    outs = []
    H = tails.shape[1]
    for i in range(tails.shape[0]):
        r, s, c = rel[i] - 1, start[i] - 1, count[i]
        u = W[r] @ tails[i]
        w = heads[s:s + c] @ W[r].T                    # [m, H]
        if interleaved:
            z = torch.stack([u.expand_as(w), w], -1).reshape(c, 2 * H)   # [u0, w0, u1, w1, ...]
        else:
            z = torch.cat([u.expand_as(w), w], -1)
        e = F.leaky_relu(z @ a[r], 0.01)
        alpha = torch.softmax(e, 0)
        outs.append(alpha @ w)
    return torch.stack(outs)


def main(path):
    H, K = 4, 3
    rel, start, count = [1, 3, 3, 2], [1, 3, 3, 5], [2, 2, 2, 1]
    cases = []
    for interleaved in (True, False):
        inputs = {"tails": f32(torch.randn(4, H, dtype=DT)), "heads": f32(torch.randn(5, H, dtype=DT)),
                  "W": f32(torch.randn(K, H, H, dtype=DT) * 0.5), "a": f32(torch.randn(K, 2 * H, dtype=DT))}
        leaves = {k: v.clone().requires_grad_(True) for k, v in inputs.items()}
        out = hgat(leaves["tails"], leaves["heads"], leaves["W"], leaves["a"], rel, start, count, interleaved)
        cot = f32(torch.randn(out.shape, dtype=DT))
        grads = torch.autograd.grad((out * cot).sum(), list(leaves.values()))
        cases.append({"interleaved": interleaved, "rel": rel, "start": start, "count": count,
                      "inputs": {k: enc(v) for k, v in inputs.items()}, "output": enc(out.detach()),
                      "cotangent": enc(cot), "grads": {k: enc(g) for k, g in zip(leaves, grads)}})
    with open(path, "w") as f:
        json.dump({"generator": "scripts/refs/gen_hgat_fixtures.py", "cases": cases}, f)
    print("wrote", path)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "spec/fixtures/hgat.json")
