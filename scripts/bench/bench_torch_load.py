"""bench_torch_load.py — a paper-size GraphMERT state dict (about 78.6M float32 parameters,
315 MB) written twice into OUT_DIR: pytorch_model.bin by torch.save and model.safetensors, for
timing gm.torch_load against gm.safetensors.load (scripts/bench/bench_torch_load.lua). Not committed.
    /usr/bin/python3 scripts/bench/bench_torch_load.py OUT_DIR
"""
import collections
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "refs"))
from gen_torch_fixtures import write_safetensors  # noqa: E402


def paper_state(v=30522, h=512, ffn=2048, layers=12, relations=30):
    g = torch.Generator().manual_seed(0)
    shapes = collections.OrderedDict()
    enc = "graphmert.graph_encoder."
    shapes[enc + "graph_node_feature.atom_encoder.weight"] = (v, h)
    shapes[enc + "graph_node_feature.relation_encoder.weight"] = (relations, 2 * h)
    shapes[enc + "graph_node_feature.relation_matrix_encoder.weight"] = (relations, h * h)
    for i in range(layers):
        p = f"{enc}layers.{i}."
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            shapes[p + f"self_attn.{proj}.weight"], shapes[p + f"self_attn.{proj}.bias"] = (h, h), (h,)
        shapes[p + "fc1.weight"], shapes[p + "fc1.bias"] = (ffn, h), (ffn,)
        shapes[p + "fc2.weight"], shapes[p + "fc2.bias"] = (h, ffn), (h,)
        for norm in ("self_attn_layer_norm", "final_layer_norm"):
            shapes[p + norm + ".weight"], shapes[p + norm + ".bias"] = (h,), (h,)
    for head in ("graphmert.head", "lm_head"):
        shapes[head + ".dense.weight"], shapes[head + ".dense.bias"] = (h, h), (h,)
        shapes[head + ".layer_norm.weight"], shapes[head + ".layer_norm.bias"] = (h,), (h,)
    shapes["lm_head.bias"] = (v,)
    shapes["lm_pair_head.position_embeddings.weight"] = (7, h)
    for i, (n_in, n_out) in enumerate([(3 * h, h), (h, h), (h, v)]):
        shapes[f"lm_pair_head.mlp.{i}.weight"], shapes[f"lm_pair_head.mlp.{i}.bias"] = (n_out, n_in), (n_out,)
    return collections.OrderedDict((k, torch.randn(*s, generator=g)) for k, s in shapes.items())


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    state = paper_state()
    print(f"{sum(t.numel() for t in state.values()) / 1e6:.2f}M parameters")
    torch.save(state, os.path.join(out, "pytorch_model.bin"))
    write_safetensors(os.path.join(out, "model.safetensors"), state)


if __name__ == "__main__":
    main()
