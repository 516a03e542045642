#!/usr/bin/python3
"""gen_op_fixtures.py — float64 PyTorch references for every differentiable op of the core.

    /usr/bin/python3 scripts/refs/gen_op_fixtures.py spec/fixtures/ops.json

Inputs are drawn with a fixed seed and rounded to float32 first, so the float32 engine and the
float64 reference start from the same numbers. For each case: inputs, the output, a random
cotangent G and grads = d sum(G * output) / d input (a VJP). Index inputs are written 1-based,
as the Lua API takes them. The specs read the JSON; they never need torch.
"""
import sys

import torch
import torch.nn.functional as F

from refs_common import DT, enc, f32, write_cases

torch.manual_seed(20261122)



def randn(*shape):
    return f32(torch.randn(*shape, dtype=DT))


def positive(*shape):
    return f32(torch.rand(*shape, dtype=DT) * 1.5 + 0.5)



CASES = []


def case(name, inputs, fn, index=None):
    """inputs: dict of float tensors (differentiable); index: dict of 0-based long tensors
    (written +1; the cross_entropy case ignores -101 in torch, which is -100 in Lua)."""
    index = index or {}
    leaves = {k: v.clone().requires_grad_(True) for k, v in inputs.items()}
    out = fn(**leaves, **index)
    cot = f32(torch.randn(out.shape, dtype=DT))
    grads = torch.autograd.grad((out * cot).sum(), list(leaves.values()), allow_unused=True)
    entry = {
        "name": name,
        "inputs": {k: enc(v) for k, v in inputs.items()},
        "index": {k: enc((v + 1).to(DT)) for k, v in index.items()},
        "output": enc(out.detach()),
        "cotangent": enc(cot),
        "grads": {k: enc(g if g is not None else torch.zeros_like(leaves[k]))
                  for k, g in zip(leaves, grads)},
    }
    CASES.append(entry)


def main(path):
    case("add_broadcast", {"a": randn(3, 4), "b": randn(4)}, lambda a, b: a + b)
    case("sub_broadcast", {"a": randn(2, 3, 4), "b": randn(3, 1)}, lambda a, b: a - b)
    case("mul_broadcast", {"a": randn(3, 1), "b": randn(1, 4)}, lambda a, b: a * b)
    case("div", {"a": randn(3, 4), "b": positive(3, 4)}, lambda a, b: a / b)
    case("div_broadcast", {"a": randn(2, 3), "b": positive(2, 1)}, lambda a, b: a / b)
    case("add_scalar", {"a": randn(5)}, lambda a: a + 2.5)
    case("rsub_scalar", {"a": randn(5)}, lambda a: 2.5 - a)
    case("mul_scalar", {"a": randn(2, 3)}, lambda a: a * -1.5)
    case("div_scalar", {"a": randn(2, 3)}, lambda a: a / 3.0)
    case("rdiv_scalar", {"a": positive(2, 3)}, lambda a: 2.0 / a)
    case("pow_scalar", {"a": positive(2, 3)}, lambda a: a ** 1.5)
    case("square", {"a": randn(2, 3)}, lambda a: a ** 2)
    case("neg", {"a": randn(4)}, lambda a: -a)
    case("exp", {"a": randn(3, 3)}, lambda a: a.exp())
    case("log", {"a": positive(3, 3)}, lambda a: a.log())
    case("sqrt", {"a": positive(3, 3)}, lambda a: a.sqrt())
    case("tanh", {"a": randn(3, 3)}, lambda a: a.tanh())
    case("gelu", {"a": randn(4, 5) * 2}, lambda a: F.gelu(a))
    case("gelu_tanh", {"a": randn(4, 5) * 2}, lambda a: F.gelu(a, approximate="tanh"))
    case("relu", {"a": randn(4, 5)}, lambda a: F.relu(a))
    case("leaky_relu", {"a": randn(4, 5)}, lambda a: F.leaky_relu(a, 0.1))
    case("sum_dim", {"a": randn(2, 3, 4)}, lambda a: a.sum(1))
    case("sum_all", {"a": randn(3, 4)}, lambda a: a.sum())
    case("mean_dim_keepdim", {"a": randn(3, 4)}, lambda a: a.mean(0, keepdim=True))
    case("mean_all", {"a": randn(3, 4)}, lambda a: a.mean())
    case("max_dim", {"a": randn(3, 5)}, lambda a: a.max(1)[0])
    case("softmax", {"a": randn(3, 5) * 3}, lambda a: a.softmax(1))
    case("softmax_dim0", {"a": randn(4, 2, 3)}, lambda a: a.softmax(0))
    case("log_softmax", {"a": randn(3, 5) * 3}, lambda a: a.log_softmax(1))
    case("matmul", {"a": randn(3, 4), "b": randn(4, 5)}, lambda a, b: a @ b)
    case("matmul_batched", {"a": randn(2, 3, 4), "b": randn(2, 4, 5)}, lambda a, b: a @ b)
    case("matmul_broadcast", {"a": randn(2, 3, 4), "b": randn(4, 5)}, lambda a, b: a @ b)
    case("matmul_broadcast_a", {"a": randn(3, 4), "b": randn(2, 4, 5)}, lambda a, b: a @ b)
    case("matmul_trans_b", {"a": randn(2, 3, 4), "b": randn(5, 4)},
         lambda a, b: a @ b.transpose(-1, -2))
    case("matmul_trans_a", {"a": randn(2, 4, 3), "b": randn(2, 4, 5)},
         lambda a, b: a.transpose(-1, -2) @ b)
    case("reshape", {"a": randn(2, 6)}, lambda a: a.reshape(3, 4))
    case("transpose", {"a": randn(2, 3, 4)}, lambda a: a.transpose(0, 2))
    case("permute", {"a": randn(2, 3, 4)}, lambda a: a.permute(1, 2, 0))
    case("concat", {"a": randn(2, 3), "b": randn(2, 2)}, lambda a, b: torch.cat([a, b], 1))
    case("narrow", {"a": randn(3, 5)}, lambda a: a.narrow(1, 1, 3))
    case("index_select", {"a": randn(5, 3)}, lambda a, idx: a.index_select(0, idx),
         index={"idx": torch.tensor([4, 0, 2, 0])})
    case("gather", {"a": randn(3, 4)}, lambda a, idx: a.gather(1, idx),
         index={"idx": torch.tensor([[0, 3], [1, 1], [2, 0]])})
    case("layer_norm", {"x": randn(2, 3, 6), "w": randn(6), "b": randn(6)},
         lambda x, w, b: F.layer_norm(x, (6,), w, b, 1e-5))
    case("layer_norm_plain", {"x": randn(4, 5) * 3 + 1}, lambda x: F.layer_norm(x, (5,)))
    case("cross_entropy", {"logits": randn(5, 4) * 2},
         lambda logits, target: F.cross_entropy(logits, target, ignore_index=-101),
         index={"target": torch.tensor([3, 0, -101, 1, 2])})
    case("composite", {"x": randn(3, 4), "w": randn(4, 4)},
         lambda x, w: F.gelu(x @ w).softmax(1) * x)
    write_cases(path, "scripts/refs/gen_op_fixtures.py", CASES)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "spec/fixtures/ops.json")
