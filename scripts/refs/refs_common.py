"""refs_common.py — helpers shared by the fixture generators in this folder."""
import json

import torch

DT = torch.float64


def f32(t):
    """Rounds to float32 and back, so float32 engines and float64 references start equal."""
    return t.to(torch.float32).to(DT)


def enc(t):
    """A tensor as {"shape": [...], "data": [row-major floats]}, the fixtures' encoding."""
    return {"shape": list(t.shape), "data": [float(v) for v in t.reshape(-1).tolist()]}


def write_cases(path, generator, cases):
    """Writes {"generator", "torch", "cases"} compactly, as the specs read it."""
    with open(path, "w") as f:
        json.dump({"generator": generator, "torch": torch.__version__, "cases": cases}, f,
                  separators=(",", ":"))
    print(f"wrote {len(cases)} cases to {path}")
