#!/usr/bin/python3
"""bench_model_torch.py — the GraphMERT training step in PyTorch 1.13, for scripts/bench/bench_model.lua.

    /usr/bin/python3 scripts/bench/bench_model_torch.py FILL_FRACTION STEPS THREADS
A 2-layer post-LN encoder (hidden 512, 8 heads, FFN 2048, vocabulary 8000) on batch 8 × 1024
nodes (128 roots, 7 leaves), decay multiplied into the scaled scores, padding masked (dense, as
PyTorch users write it), tied LM head, cross-entropy on 15% of the nodes, AdamW.
Prints "torch step <s> rss_mb <MB>" (median step)."""
import math
import sys
import time

import torch
import torch.nn.functional as F

fill, steps, threads = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
torch.manual_seed(0)
B, R, L, Hd, heads, ffn, V, layers = 8, 128, 7, 512, 8, 2048, 8000, 2
N = R * (1 + L)


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(Hd, 3 * Hd)
        self.out = torch.nn.Linear(Hd, Hd)
        self.ln1 = torch.nn.LayerNorm(Hd)
        self.fc1 = torch.nn.Linear(Hd, ffn)
        self.fc2 = torch.nn.Linear(ffn, Hd)
        self.ln2 = torch.nn.LayerNorm(Hd)

    def forward(self, x, decay, allowed):
        q, k, v = self.qkv(x).reshape(B, N, 3, heads, Hd // heads).permute(2, 0, 3, 1, 4)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(Hd // heads) * decay
        s = s.masked_fill(~allowed[:, None, None, :], float("-inf"))
        a = (torch.softmax(s, -1) @ v).permute(0, 2, 1, 3).reshape(B, N, Hd)
        x = self.ln1(x + F.dropout(self.out(a), 0.1))
        return self.ln2(x + F.dropout(self.fc2(F.dropout(F.gelu(self.fc1(x)), 0.1)), 0.1))


emb = torch.nn.Embedding(V, Hd)
model = torch.nn.ModuleList([Layer() for _ in range(layers)])
dense, ln, bias = torch.nn.Linear(Hd, Hd), torch.nn.LayerNorm(Hd), torch.nn.Parameter(torch.zeros(V))
p = torch.nn.Parameter(torch.ones(heads, 1, 1))
params = list(emb.parameters()) + list(model.parameters()) + list(dense.parameters()) + list(ln.parameters()) + [bias, p]
opt = torch.optim.AdamW(params, lr=1e-4)
sp = torch.randint(0, 130, (N, N)).float()
ids = torch.randint(0, V, (B, N))
allowed = torch.ones(B, N, dtype=torch.bool)
leaf = torch.rand(B, R) < fill
allowed[:, R:] = leaf.repeat_interleave(L, 1)
targets = torch.full((B, N), -100)
pick = (torch.rand(B, N) < 0.15) & allowed
targets[pick] = ids[pick]
times = []
for step in range(steps + 1):
    t0 = time.perf_counter()
    opt.zero_grad()
    decay = 0.6 ** F.gelu(torch.sqrt(sp + 1) - p)
    x = F.dropout(emb(ids), 0.1)
    for layer in model:
        x = layer(x, decay, allowed)
    # under CPU autocast ("medium") dense gives bf16, which torch 1.13's layer_norm refuses next to
    # float32 weights (the layers' norms get float32 through their residual sums)
    h = ln(F.gelu(dense(x)).float())
    logits = h[pick] @ emb.weight.T + bias
    loss = F.cross_entropy(logits, targets[pick])
    loss.backward()
    opt.step()
    if step > 0:
        times.append(time.perf_counter() - t0)
rss = 0
for line in open("/proc/self/status"):
    if line.startswith("VmHWM"):
        rss = int(line.split()[1]) / 1024
times.sort()
print(f"torch step {times[len(times) // 2]:.4f} rss_mb {rss:.0f}")
