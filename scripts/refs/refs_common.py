"""refs_common.py — helpers shared by the fixture generators in this folder."""
import json
import struct

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


DTYPES = {"F32": torch.float32, "F64": torch.float64}


def read_safetensors(path):
    """name → tensor of a safetensors file (F32 or F64)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        t = torch.frombuffer(bytearray(data[a:b]), dtype=DTYPES[e["dtype"]]).reshape(e["shape"])
        out[name] = t.clone()
    return out


def write_safetensors(path, tensors):
    """Writes tensors as F32 safetensors, names sorted, with the metadata torch's writer gives."""
    names = sorted(tensors)
    entries, blobs, offset = {}, [], 0
    for name in names:
        raw = tensors[name].contiguous().numpy().astype("<f4").tobytes()
        entries[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    entries["__metadata__"] = {"format": "pt"}
    header = json.dumps(entries, separators=(",", ":")).encode()
    header += b" " * ((8 - len(header) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + b"".join(blobs))
