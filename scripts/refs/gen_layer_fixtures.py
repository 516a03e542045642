#!/usr/bin/python3
"""gen_layer_fixtures.py — a float64 PyTorch reference for one GraphMERT encoder layer
(post-LN: x = LN(x + Attn(x)); x = LN(x + fc2(GELU(fc1(x))))) with the decay multiplied into the
scaled scores and key padding, dropout off. Parameter names are graphmert's state_dict names.

    /usr/bin/python3 scripts/refs/gen_layer_fixtures.py spec/fixtures/encoder_layer.json"""
import json
import math
import sys

import torch
import torch.nn.functional as F

from refs_common import DT, enc, f32

torch.manual_seed(20261126)
B, N, E, H, FF = 2, 6, 8, 2, 12




def layer(P, x, decay, key_mask):
    qkv = x @ P["self_attn.in_proj_weight"].T + P["self_attn.in_proj_bias"]
    q, k, v = qkv.reshape(B, N, 3, H, E // H).permute(2, 0, 3, 1, 4)
    s = (q @ k.transpose(-1, -2)) / math.sqrt(E // H) * decay
    s = s.masked_fill(key_mask[:, None, None, :] == 0, float("-inf"))
    a = (torch.softmax(s, -1) @ v).permute(0, 2, 1, 3).reshape(B, N, E)
    a = a @ P["self_attn.out_proj.weight"].T + P["self_attn.out_proj.bias"]
    x = F.layer_norm(x + a, (E,), P["self_attn_layer_norm.weight"], P["self_attn_layer_norm.bias"])
    h = F.gelu(x @ P["fc1.weight"].T + P["fc1.bias"]) @ P["fc2.weight"].T + P["fc2.bias"]
    return F.layer_norm(x + h, (E,), P["final_layer_norm.weight"], P["final_layer_norm.bias"])


def main(path):
    shapes = {"self_attn.in_proj_weight": (3 * E, E), "self_attn.in_proj_bias": (3 * E,),
              "self_attn.out_proj.weight": (E, E), "self_attn.out_proj.bias": (E,),
              "self_attn_layer_norm.weight": (E,), "self_attn_layer_norm.bias": (E,),
              "fc1.weight": (FF, E), "fc1.bias": (FF,), "fc2.weight": (E, FF), "fc2.bias": (E,),
              "final_layer_norm.weight": (E,), "final_layer_norm.bias": (E,)}
    P = {k: f32(torch.randn(*s, dtype=DT) * (0.4 if "weight" in k and "norm" not in k else 0.2)
              + (1.0 if "norm.weight" in k else 0.0)) for k, s in shapes.items()}
    x, decay = f32(torch.randn(B, N, E, dtype=DT)), f32(torch.rand(H, N, N, dtype=DT) + 0.2)
    key_mask = torch.ones(B, N, dtype=DT)
    key_mask[1, 4:] = 0
    leaves = {k: v.clone().requires_grad_(True) for k, v in {**P, "x": x, "decay": decay}.items()}
    out = layer({k: leaves[k] for k in P}, leaves["x"], leaves["decay"], key_mask)
    cot = f32(torch.randn(out.shape, dtype=DT))
    grads = torch.autograd.grad((out * cot).sum(), list(leaves.values()))
    with open(path, "w") as f:
        json.dump({"generator": "scripts/refs/gen_layer_fixtures.py", "dims": {"E": E, "H": H, "ffn": FF},
                   "params": {k: enc(v) for k, v in P.items()}, "x": enc(x), "decay": enc(decay),
                   "key_mask": enc(key_mask), "output": enc(out.detach()), "cotangent": enc(cot),
                   "grads": {k: enc(g) for k, g in zip(leaves, grads)}}, f)
    print("wrote", path)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "spec/fixtures/encoder_layer.json")
