"""The official checkpoint folder spec/fixtures/official/seed1 in the other layouts the official
trainer and Hugging Face write: pytorch_model.bin (torch.save of the state dict, as
save_safetensors: false gives), and both formats sharded in two with their index JSON.
  /usr/bin/python3 scripts/refs/gen_official_folders.py   (from the repository root)
"""
import json
import os
import shutil

import torch

from refs_common import read_safetensors, write_safetensors

SRC = "spec/fixtures/official/seed1"
OUT = "spec/fixtures/official/layouts"


def folder(name):
    path = os.path.join(OUT, name)
    os.makedirs(path, exist_ok=True)
    shutil.copy(os.path.join(SRC, "config.json"), path)
    return path


def main():
    state = read_safetensors(os.path.join(SRC, "model.safetensors"))
    torch.save(state, os.path.join(folder("bin"), "pytorch_model.bin"))
    names = sorted(state)
    halves = [names[: len(names) // 2], names[len(names) // 2:]]
    for kind, ext, write in (("bin_sharded", "bin", lambda p, t: torch.save(t, p)),
                             ("safetensors_sharded", "safetensors", write_safetensors)):
        path = folder(kind)
        prefix = "pytorch_model" if ext == "bin" else "model"
        weight_map = {}
        for i, part in enumerate(halves):
            shard = f"{prefix}-{i + 1:05d}-of-00002.{ext}"
            write(os.path.join(path, shard), {n: state[n] for n in part})
            weight_map.update({n: shard for n in part})
        with open(os.path.join(path, f"{prefix}.{ext}.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": sum(t.numel() * 4 for t in state.values())}, "weight_map": weight_map}, f, indent=2)


if __name__ == "__main__":
    main()
