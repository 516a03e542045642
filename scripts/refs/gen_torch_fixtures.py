"""gen_torch_fixtures.py — PyTorch checkpoints for spec/torch_load_spec.lua, written by torch.save.

    /usr/bin/python3 scripts/refs/gen_torch_fixtures.py [out_dir=spec/fixtures/torch]

Good files (each NAME.pt with NAME.expected.safetensors beside it: the float32 values torch itself
gives for every entry, `t.float()`, contiguous):
  dtypes.pt     float32, float64, float16 and bfloat16 tensors, with values at their edges
  views.pt      a module's state_dict() (an OrderedDict with _metadata), a transposed tensor, two
                tensors on one storage at different offsets, a strided slice, a tied pair, a
                scalar and an empty tensor
  graphmert.bin GraphMERT's official parameter names, saved the way Hugging Face's
                save_pretrained(safe_serialization=False) does (a plain dict, the tied decoder left
                out, torch.save)
  ints.pt       integer and bool buffers beside one float tensor (refused, or skipped on request)
  views_zip64.pt  views.pt with its directory in ZIP64 form (as archives past 4 GiB have it)
Plus half.safetensors: dtypes.pt's float16 and bfloat16 tensors as safetensors F16/BF16.

Hostile and broken files under bad/: pickles that would run os.system, builtins.eval and
subprocess.Popen (touching MARKER; the generator checks that torch.load really does run them),
damaged zips, forged tensor descriptions (negative stride, huge size, short storage), a deeply
nested and a huge-memo pickle, a missing data.pkl, a compressed entry, a big-endian byteorder, the
legacy (pre-1.6) format and a pickle that is not a dict.
"""
import collections
import io
import json
import os
import pickle
import struct
import subprocess
import sys
import zipfile

import torch
from torch import nn

MARKER = "/tmp/graphmert_torch_load_marker"

ST_DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16"}


def write_safetensors(path, tensors):
    """A safetensors file written here (the safetensors package is not installed): raw bytes of
    each tensor in its own dtype, little-endian, sorted by name."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        raw = t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
        header[name] = {"dtype": ST_DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def save_good(out, name, state):
    torch.save(state, os.path.join(out, name))
    expected = {k: v.detach().float().contiguous() for k, v in state.items() if v.is_floating_point()}
    write_safetensors(os.path.join(out, name.rsplit(".", 1)[0] + ".expected.safetensors"), expected)


def dtypes_state():
    g = torch.Generator().manual_seed(0)
    edges16 = torch.tensor([0.0, -0.0, 1.0, -2.5, 65504.0, -65504.0, 6e-8, 6.1e-5, 1e-4,
                            float("inf"), float("-inf"), 0.333], dtype=torch.float16)
    edgesbf = torch.tensor([0.0, -0.0, 1.0, -2.5, 3.0e38, 1e-38, 9.2e-41, 0.333, float("inf")],
                           dtype=torch.bfloat16)
    return collections.OrderedDict([
        ("f32", torch.randn(2, 3, generator=g)),
        ("f64", torch.tensor([1.0, 1.0 / 3.0, 1e300, -1e-300, 2.0 ** -140], dtype=torch.float64)),
        ("f16", edges16),
        ("f16_matrix", torch.randn(3, 4, generator=g).half()),
        ("bf16", edgesbf),
        ("bf16_matrix", torch.randn(4, 2, generator=g).bfloat16()),
    ])


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3, 4)
        self.norm = nn.LayerNorm(4)


def views_state():
    torch.manual_seed(1)
    block = Block()
    state = block.state_dict()  # an OrderedDict with _metadata
    assert hasattr(state, "_metadata")
    base = torch.arange(20, dtype=torch.float32) / 4
    state["transposed"] = torch.randn(3, 5).t()
    state["shared_head"] = base[2:6]
    state["shared_tail"] = base[8:20].view(3, 4)
    state["every_other"] = base[1::2]
    state["cube_permuted"] = torch.randn(2, 3, 4).permute(2, 0, 1)
    state["tied_a"] = torch.randn(2, 2)
    state["tied_b"] = state["tied_a"]
    state["scalar"] = torch.tensor(7.25)
    state["empty"] = torch.zeros(0, 3)
    state["f16_transposed"] = torch.randn(2, 3).half().t()
    assert not state["transposed"].is_contiguous() and state["shared_head"].storage_offset() == 2
    return state


class Attention(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(h, h) for _ in range(4))


class Layer(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.self_attn = Attention(h)
        self.self_attn_layer_norm = nn.LayerNorm(h)
        self.fc1, self.fc2 = nn.Linear(h, 2 * h), nn.Linear(2 * h, h)
        self.final_layer_norm = nn.LayerNorm(h)


class NodeFeature(nn.Module):
    def __init__(self, v, h, k):
        super().__init__()
        self.atom_encoder = nn.Embedding(v, h, padding_idx=0)
        self.relation_encoder = nn.Embedding(k, 2 * h)
        self.relation_matrix_encoder = nn.Embedding(k, h * h)


class Encoder(nn.Module):
    def __init__(self, v, h, k):
        super().__init__()
        self.graph_node_feature = NodeFeature(v, h, k)
        self.layers = nn.ModuleList([Layer(h) for _ in range(2)])


class Head(nn.Module):
    def __init__(self, v, h):
        super().__init__()
        self.dense, self.layer_norm = nn.Linear(h, h), nn.LayerNorm(h)
        self.decoder = nn.Linear(h, v)
        self.bias = nn.Parameter(torch.zeros(v))


class TinyGraphMert(nn.Module):
    """The official model's module tree (names only; tiny sizes)."""

    def __init__(self, v=11, h=4, k=3):
        super().__init__()
        self.graphmert = nn.Module()
        self.graphmert.graph_encoder = Encoder(v, h, k)
        self.lm_head = Head(v, h)
        self.lm_head.decoder.weight = self.graphmert.graph_encoder.graph_node_feature.atom_encoder.weight


def graphmert_state():
    torch.manual_seed(2)
    model = TinyGraphMert()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_()
    # save_pretrained(safe_serialization=False): state_dict minus _keys_to_ignore_on_save, as a
    # plain dict, through torch.save
    ignore = {"lm_head.decoder.weight", "lm_head.decoder.bias"}
    state = {k: v for k, v in model.state_dict().items() if k not in ignore}
    assert "graphmert.graph_encoder.layers.0.self_attn.q_proj.weight" in state
    return state


def ints_state():
    return collections.OrderedDict([
        ("weight", torch.tensor([[1.5, -2.0]])),
        ("position_ids", torch.arange(4).unsqueeze(0)),
        ("int32", torch.tensor([1, 2], dtype=torch.int32)),
        ("int16", torch.tensor([3], dtype=torch.int16)),
        ("int8", torch.tensor([-4], dtype=torch.int8)),
        ("uint8", torch.tensor([5], dtype=torch.uint8)),
        ("mask", torch.tensor([True, False])),
    ])


# ---- hostile and broken files ------------------------------------------------------------------


class Call:
    """An object whose unpickling calls fn(*args): what a malicious checkpoint carries."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


def check_runs(path):
    """torch.load (weights_only off, as in 1.13) really runs the payload: the fixture is live."""
    if os.path.exists(MARKER):
        os.remove(MARKER)
    subprocess.run([sys.executable, "-c", f"import torch; torch.load({path!r})"], capture_output=True)
    assert os.path.exists(MARKER), f"{path} did not run its payload under torch.load"
    os.remove(MARKER)


def zip_bytes(entries, compress=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compress) as z:
        for name, data in entries:  # a fixed date: the same bytes on every run
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, compress_type=compress)
    return buf.getvalue()


class ForgedStorage:
    def __init__(self, storage_type, key, numel):
        self.pid = ("storage", storage_type, key, "cpu", numel)


class ForgedTensor:
    """A tensor description with any offset, size and stride (torch.save writes only valid ones)."""

    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, tuple(size), tuple(stride), False, collections.OrderedDict())

    def __reduce__(self):
        return torch._utils._rebuild_tensor_v2, self.args


class ForgingPickler(pickle.Pickler):
    def persistent_id(self, obj):
        return obj.pid if isinstance(obj, ForgedStorage) else None


def forged_checkpoint(tensors, storages):
    """tensors: name → ForgedTensor; storages: key → bytes. The layout torch.save uses."""
    buf = io.BytesIO()
    ForgingPickler(buf, protocol=2).dump(collections.OrderedDict(tensors))
    entries = [("archive/data.pkl", buf.getvalue()), ("archive/version", b"3\n")]
    entries += [(f"archive/data/{k}", v) for k, v in storages.items()]
    return zip_bytes(entries)


def raw_pickle_checkpoint(pkl):
    return zip_bytes([("archive/data.pkl", pkl), ("archive/version", b"3\n")])


def as_zip64(data):
    """The same archive with every size and offset in ZIP64 fields, as torch.save writes archives
    past 4 GiB: saturated central directory fields, a ZIP64 extra field per entry, and the ZIP64
    end record and locator before the classic end record."""
    infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    cd_offset = struct.unpack("<I", data[data.rfind(b"PK\x05\x06") + 16:][:4])[0]
    body, cd = data[:cd_offset], b""
    for i in infos:
        name = i.filename.encode()
        extra = struct.pack("<HHQQQ", 1, 24, i.file_size, i.compress_size, i.header_offset)
        cd += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 45, 45, 0, 0, 0, 0, i.CRC,
                          0xFFFFFFFF, 0xFFFFFFFF, len(name), len(extra), 0, 0, 0, 0, 0xFFFFFFFF) + name + extra
    z64_offset = len(body) + len(cd)
    z64 = struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, len(infos), len(infos), len(cd), len(body))
    locator = struct.pack("<4sIQI", b"PK\x06\x07", 0, z64_offset, 1)
    eocd = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    out = body + cd + z64 + locator + eocd
    with zipfile.ZipFile(io.BytesIO(out)) as z:  # Python's reader agrees
        assert [(x.filename, z.read(x)) for x in z.infolist()] == [(x.filename, zipfile.ZipFile(io.BytesIO(data)).read(x)) for x in infos]
    return out


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def bad_files(out, good_path):
    bad = os.path.join(out, "bad")
    os.makedirs(bad, exist_ok=True)
    touch = f"touch {MARKER}"
    payloads = {
        "os_system.pt": Call(os.system, touch),
        "builtins_eval.pt": Call(eval, f"__import__('os').system({touch!r})"),
        "subprocess_popen.pt": Call(subprocess.Popen, ["touch", MARKER]),
    }
    for name, payload in payloads.items():
        path = os.path.join(bad, name)
        # a real state dict with the payload as one more entry, as an attacker would ship it
        torch.save(collections.OrderedDict([("weight", torch.ones(2)), ("evil", payload)]), path)
        check_runs(path)
    # the same call spelled as GLOBAL 'os system' by hand (pickle itself writes posix.system)
    write(os.path.join(bad, "os_system_by_hand.pt"), raw_pickle_checkpoint(
        b"\x80\x02cos\nsystem\nq\x00X" + struct.pack("<I", len(touch)) + touch.encode() + b"\x85R."))

    good = open(good_path, "rb").read()
    write(os.path.join(bad, "truncated.pt"), good[: len(good) // 2])
    eocd = good.rfind(b"PK\x05\x06")
    past = bytearray(good)
    past[eocd + 16: eocd + 20] = struct.pack("<I", len(good) + 1000)  # directory offset
    write(os.path.join(bad, "directory_past_end.pt"), bytes(past))

    floats = struct.pack("<4f", 1, 2, 3, 4)
    fs = torch.FloatStorage
    write(os.path.join(bad, "negative_stride.pt"), forged_checkpoint(
        {"w": ForgedTensor(ForgedStorage(fs, "0", 4), 3, [4], [-1])}, {"0": floats}))
    write(os.path.join(bad, "huge_size.pt"), forged_checkpoint(
        {"w": ForgedTensor(ForgedStorage(fs, "0", 4), 0, [1 << 40, 1 << 20], [1 << 20, 1])}, {"0": floats}))
    write(os.path.join(bad, "huge_stride.pt"), forged_checkpoint(
        {"w": ForgedTensor(ForgedStorage(fs, "0", 4), 0, [4], [1 << 62])}, {"0": floats}))
    write(os.path.join(bad, "view_past_storage.pt"), forged_checkpoint(
        {"w": ForgedTensor(ForgedStorage(fs, "0", 4), 2, [3], [1])}, {"0": floats}))
    write(os.path.join(bad, "short_storage.pt"), forged_checkpoint(
        {"w": ForgedTensor(ForgedStorage(fs, "0", 16), 0, [16], [1])}, {"0": floats}))
    write(os.path.join(bad, "missing_storage.pt"), forged_checkpoint(
        {"w": ForgedTensor(ForgedStorage(fs, "7", 4), 0, [4], [1])}, {"0": floats}))

    write(os.path.join(bad, "deep_nesting.pt"), raw_pickle_checkpoint(b"\x80\x02" + b"(" * 5000 + b"."))
    write(os.path.join(bad, "huge_memo.pt"), raw_pickle_checkpoint(b"\x80\x02}r\xf0\xff\xff\xff."))
    write(os.path.join(bad, "no_data_pkl.pt"), zip_bytes([("archive/version", b"3\n"), ("archive/data/0", floats)]))
    with zipfile.ZipFile(good_path) as z:
        entries = [(i.filename, z.read(i)) for i in z.infolist()]
    write(os.path.join(bad, "compressed.pt"), zip_bytes(entries, zipfile.ZIP_DEFLATED))
    prefix = entries[0][0].split("/")[0]
    write(os.path.join(bad, "big_endian.pt"), zip_bytes(entries + [(prefix + "/byteorder", b"big")]))
    torch.save({"w": torch.ones(2)}, os.path.join(bad, "legacy.pt"), _use_new_zipfile_serialization=False)
    torch.save([torch.ones(2)], os.path.join(bad, "not_a_dict.pt"))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "spec/fixtures/torch"
    os.makedirs(out, exist_ok=True)
    dtypes = dtypes_state()
    save_good(out, "dtypes.pt", dtypes)
    write_safetensors(os.path.join(out, "half.safetensors"),
                      {k: v for k, v in dtypes.items() if v.dtype in (torch.float16, torch.bfloat16)})
    save_good(out, "views.pt", views_state())
    save_good(out, "graphmert.bin", graphmert_state())
    save_good(out, "ints.pt", ints_state())
    with open(os.path.join(out, "views.pt"), "rb") as f:
        write(os.path.join(out, "views_zip64.pt"), as_zip64(f.read()))
    bad_files(out, os.path.join(out, "views.pt"))
    print(f"wrote fixtures to {out} with torch {torch.__version__}")


if __name__ == "__main__":
    main()
