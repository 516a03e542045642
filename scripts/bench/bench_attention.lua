-- bench_attention.lua — the fused attention at B=8, H=8, N=1024, d=64 with a [H, N, N] decay
-- in scores mode: forward and forward+backward seconds and effective GFLOP/s, next to the same
-- math in PyTorch (python3-torch, same thread count) when it is installed.
--   graphmert scripts/bench/bench_attention.lua [B H N d threads reps]
local gm = require "graphmert"
local bench = require "scripts.bench.bench_common"

local B, H, N, d = tonumber(arg[1]) or 8, tonumber(arg[2]) or 8, tonumber(arg[3]) or 1024, tonumber(arg[4]) or 64
local threads, reps = tonumber(arg[5]) or 2, tonumber(arg[6]) or 5
B, H, N, d, threads, reps = math.tointeger(B), math.tointeger(H), math.tointeger(N), math.tointeger(d),
    math.tointeger(threads), math.tointeger(reps)
gm.set_num_threads(threads)
gm.manual_seed(0)

local q = gm.randn(B, H, N, d):requires_grad(true)
local k = gm.randn(B, H, N, d):requires_grad(true)
local v = gm.randn(B, H, N, d):requires_grad(true)
local decay = gm.rand(H, N, N):requires_grad(true)
local opts = { decay = decay, decay_mode = "scores" }

local fwd, both = {}, {}
gm.no_grad(function() gm.attention(q, k, v, opts) end)
for _ = 1, reps do
  local t0 = gm.clock()
  gm.no_grad(function() return gm.attention(q, k, v, opts) end):release()
  fwd[#fwd + 1] = gm.clock() - t0
end
local ones = gm.ones(B, H, N, d)
gm.reset_peak_memory()
local live_before = gm.memory().live
for _ = 1, reps do
  local t0 = gm.clock()
  local out = gm.attention(q, k, v, opts)
  out:backward(ones)
  both[#both + 1] = gm.clock() - t0
  out:release()
  for _, t in ipairs { q, k, v, decay } do t:zero_grad() end
end
local peak_extra = gm.memory().peak - live_before
local t_fwd, t_both = bench.median(fwd), bench.median(both)
-- effective FLOPs: forward Q Kᵀ and P V (4 B H N² d); backward dV, dP, dQ, dK (8 B H N² d)
local flops_fwd, flops_both = 4 * B * H * N * N * d, 12 * B * H * N * N * d

print(string.format("attention B=%d H=%d N=%d d=%d, decay [H,N,N] in scores mode, %d threads, median of %d",
  B, H, N, d, threads, reps))
print(string.format("graphmert  forward %.3f s (%.1f GFLOP/s)   forward+backward %.3f s (%.1f GFLOP/s)",
  t_fwd, flops_fwd / t_fwd / 1e9, t_both, flops_both / t_both / 1e9))
print(string.format("           peak extra memory during forward+backward: %.1f MiB (an [B,H,N,N] buffer would be %.1f MiB)",
  peak_extra / 2 ^ 20, B * H * N * N * 4 / 2 ^ 20))

local tf, tb = bench.torch_forward_backward("bench_attention_torch.py", B, H, N, d, threads, reps)
if tf then
  print(string.format("pytorch    forward %.3f s (%.1f GFLOP/s)   forward+backward %.3f s (%.1f GFLOP/s)",
    tf, flops_fwd / tf / 1e9, tb, flops_both / tb / 1e9))
  print(string.format("speed-up   forward %.2fx   forward+backward %.2fx (target >= 3x)", tf / t_fwd, tb / t_both))
else
  print("pytorch    not available (install python3-torch to compare)")
end
print(string.format("sgemm ceiling for reference: see `make bench` (t:matmul GFLOP/s); target >= 55%% of it"))
