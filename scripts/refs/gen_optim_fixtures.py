#!/usr/bin/python3
"""gen_optim_fixtures.py — torch.optim.AdamW trajectories and a PyTorch state dict written in
the safetensors format (by hand from the format's definition: Debian has no safetensors package).

    /usr/bin/python3 scripts/refs/gen_optim_fixtures.py spec/fixtures
writes spec/fixtures/adamw.json and spec/fixtures/torch_state_dict.safetensors (+ .json with the
expected values)."""
import json
import os
import struct
import sys

import torch

from refs_common import enc

torch.manual_seed(20261124)



def adamw(out):
    w = torch.randn(3, 4)
    b = torch.randn(4)
    grads = [(torch.randn(3, 4), torch.randn(4)) for _ in range(4)]
    pw, pb = w.clone().requires_grad_(True), b.clone().requires_grad_(True)
    opt = torch.optim.AdamW([{"params": [pw], "weight_decay": 0.1}, {"params": [pb], "weight_decay": 0.0}],
                            lr=0.01, betas=(0.9, 0.99), eps=1e-8)
    steps = []
    for gw, gb in grads:
        pw.grad, pb.grad = gw.clone(), gb.clone()
        opt.step()
        steps.append({"weight": enc(pw.detach()), "bias": enc(pb.detach())})
    with open(os.path.join(out, "adamw.json"), "w") as f:
        json.dump({"lr": 0.01, "betas": [0.9, 0.99], "eps": 1e-8, "weight_decay": 0.1,
                   "weight": enc(w), "bias": enc(b),
                   "grads": [{"weight": enc(gw), "bias": enc(gb)} for gw, gb in grads],
                   "steps": steps}, f)


def state_dict_file(out):
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.LayerNorm(2))
    sd = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    header, blobs, offset = {}, [], 0
    for name in sorted(sd):
        data = sd[name].numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(sd[name].shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(os.path.join(out, "torch_state_dict.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    with open(os.path.join(out, "torch_state_dict.json"), "w") as f:
        json.dump({k: enc(v) for k, v in sd.items()}, f)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "spec/fixtures"
    adamw(out)
    state_dict_file(out)
    print("wrote adamw.json and torch_state_dict.safetensors to", out)
