#!/usr/bin/python3
"""bench_attention_torch.py — the same attention math in PyTorch (for scripts/bench/bench_attention.lua).

    /usr/bin/python3 scripts/bench/bench_attention_torch.py B H N d threads reps

softmax((q kᵀ/√d) ⊙ decay) v with decay [H, N, N] requiring grad; prints
"torch forward <s> backward <s>" (medians)."""
import sys
import time

import torch

B, H, N, d, threads, reps = (int(x) for x in sys.argv[1:7])
torch.set_num_threads(threads)
torch.manual_seed(0)
q, k, v = (torch.randn(B, H, N, d, requires_grad=True) for _ in range(3))
decay = torch.rand(H, N, N, requires_grad=True)


def attention():
    s = (q @ k.transpose(-1, -2)) * (d ** -0.5)
    s = s * decay
    return torch.softmax(s, -1) @ v


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


fwd, both = [], []
with torch.no_grad():
    attention()
for _ in range(reps):
    t0 = time.perf_counter()
    with torch.no_grad():
        attention()
    fwd.append(time.perf_counter() - t0)
for _ in range(reps):
    t0 = time.perf_counter()
    out = attention()
    out.backward(torch.ones_like(out))
    both.append(time.perf_counter() - t0)
    q.grad = k.grad = v.grad = decay.grad = None
print(f"torch forward {median(fwd):.4f} backward {median(both):.4f}")
