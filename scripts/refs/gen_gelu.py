"""GELU (exact, erf form) and its derivative in float64 on a dense grid, for spec/gelu_spec.lua:
graphmert computes erf with its own branch-free polynomial (gm_internal.h), checked here
against Python's float64 math.erf. Only the standard library is needed.
    python3 scripts/refs/gen_gelu.py > spec/fixtures/refs/gelu_dense.json"""
import json, math

xs = []
for i in range(-1200, 1201):  # [-12, 12] in steps of 0.01
    xs.append(i / 100)
# around erf's seam (|x| / sqrt(2) = 1) and its clamp (= 4), tiny and large values
for c in (math.sqrt(2), 4 * math.sqrt(2)):
    xs += [s * (c + d * 1e-4) for s in (1, -1) for d in range(-20, 21)]
xs += [1e-30, -1e-30, 1e-6, -1e-6, 30.0, -30.0]


def f32(v):
    import struct
    return struct.unpack("f", struct.pack("f", v))[0]


xs = [f32(x) for x in xs]  # the float32 inputs graphmert sees
gelu = [0.5 * x * (1 + math.erf(x / math.sqrt(2))) for x in xs]
grad = [0.5 * (1 + math.erf(x / math.sqrt(2))) + x / math.sqrt(2 * math.pi) * math.exp(-0.5 * x * x) for x in xs]
print(json.dumps({"x": xs, "gelu": gelu, "grad": grad}))
