#!/usr/bin/python3
"""bench_digress_torch.py — DiGress's NodeEdgeBlock in PyTorch, written as upstream's
(cvignac/DiGress src/models/transformer_model.py, masked softmax of layers.py), for
scripts/bench/bench_digress.lua.

    /usr/bin/python3 scripts/bench/bench_digress_torch.py bs n dx de dy heads threads reps

Prints "torch forward <s> backward <s>" (medians; backward = forward + backward)."""
import math
import sys
import time

import torch
from torch import nn

bs, n, dx, de, dy, H, threads, reps = (int(x) for x in sys.argv[1:9])
torch.set_num_threads(threads)
torch.manual_seed(0)
df = dx // H


def pool(t):  # Xtoy / Etoy: mean, min, max, std over nodes (or pairs)
    return torch.hstack((t.mean(1), t.min(1)[0], t.max(1)[0], t.std(1)))


class NodeEdgeBlock(nn.Module):
    def __init__(self):
        super().__init__()
        L = nn.Linear
        self.q, self.k, self.v = L(dx, dx), L(dx, dx), L(dx, dx)
        self.e_add, self.e_mul = L(de, dx), L(de, dx)
        self.y_e_mul, self.y_e_add, self.y_x_mul, self.y_x_add = L(dy, dx), L(dy, dx), L(dy, dx), L(dy, dx)
        self.y_y, self.x_y, self.e_y = L(dy, dy), L(4 * dx, dy), L(4 * de, dy)
        self.x_out, self.e_out = L(dx, dx), L(dx, de)
        self.y_out = nn.Sequential(L(dy, dy), nn.ReLU(), L(dy, dy))

    def forward(self, X, E, y, node_mask):
        x_mask = node_mask.unsqueeze(-1)
        e_mask1, e_mask2 = x_mask.unsqueeze(2), x_mask.unsqueeze(1)
        Q = (self.q(X) * x_mask).reshape(bs, n, H, df).unsqueeze(2)
        K = (self.k(X) * x_mask).reshape(bs, n, H, df).unsqueeze(1)
        Y = Q * K / math.sqrt(df)
        E1 = (self.e_mul(E) * e_mask1 * e_mask2).reshape(bs, n, n, H, df)
        E2 = (self.e_add(E) * e_mask1 * e_mask2).reshape(bs, n, n, H, df)
        Y = Y * (E1 + 1) + E2
        newE = Y.flatten(start_dim=3)
        newE = self.y_e_add(y).unsqueeze(1).unsqueeze(1) + (self.y_e_mul(y).unsqueeze(1).unsqueeze(1) + 1) * newE
        newE = self.e_out(newE) * e_mask1 * e_mask2
        softmax_mask = e_mask2.expand(-1, n, -1, H).bool()
        Ym = Y.clone()
        Ym[~softmax_mask.unsqueeze(-1).expand_as(Y)] = -float("inf")
        attn = torch.softmax(Ym, dim=2)
        V = (self.v(X) * x_mask).reshape(bs, n, H, df).unsqueeze(1)
        wV = (attn * V).sum(dim=2).flatten(start_dim=2)
        newX = self.y_x_add(y).unsqueeze(1) + (self.y_x_mul(y).unsqueeze(1) + 1) * wV
        newX = self.x_out(newX) * x_mask
        new_y = self.y_out(self.y_y(y) + self.x_y(pool(X)) + self.e_y(pool(E.reshape(bs, n * n, de))))
        return newX, newE, new_y


block = NodeEdgeBlock()
X = torch.randn(bs, n, dx, requires_grad=True)
E = torch.randn(bs, n, n, de, requires_grad=True)
y = torch.randn(bs, dy, requires_grad=True)
mask = torch.ones(bs, n)
mask[:, n - n // 8:] = 0  # the last eighth of every graph is padding


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


fwd, both = [], []
with torch.no_grad():
    block(X, E, y, mask)
for _ in range(reps):
    t0 = time.perf_counter()
    with torch.no_grad():
        block(X, E, y, mask)
    fwd.append(time.perf_counter() - t0)
for _ in range(reps):
    t0 = time.perf_counter()
    a, b, c = block(X, E, y, mask)
    (a.sum() + b.sum() + c.sum()).backward()
    both.append(time.perf_counter() - t0)
    block.zero_grad()
    X.grad = E.grad = y.grad = None
print(f"torch forward {median(fwd):.4f} backward {median(both):.4f}")
