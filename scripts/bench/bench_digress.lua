-- bench_digress.lua — DiGress's NodeEdgeBlock forward and forward+backward at bs=8, n=64,
-- dx=256, de=64, dy=64, 8 heads (the last eighth of each graph padded), next to the same math in
-- PyTorch (scripts/bench/bench_digress_torch.py, same thread count) when python3-torch is installed.
--   graphmert scripts/bench/bench_digress.lua [bs n dx de dy heads threads reps]
local gm = require "graphmert"
local bench = require "scripts.bench.bench_common"

local v = {}
for i, default in ipairs { 8, 64, 256, 64, 64, 8, 2, 5 } do v[i] = math.tointeger(tonumber(arg[i]) or default) end
local bs, n, dx, de, dy, H, threads, reps = table.unpack(v)
gm.set_num_threads(threads)
gm.manual_seed(0)

local block = gm.nn.NodeEdgeBlock { dx = dx, de = de, dy = dy, heads = H }
local X = gm.randn(bs, n, dx):requires_grad(true)
local E = gm.randn(bs, n, n, de):requires_grad(true)
local y = gm.randn(bs, dy):requires_grad(true)
local rows = {}
for b = 1, bs do
  rows[b] = {}
  for j = 1, n do rows[b][j] = j <= n - n // 8 and 1 or 0 end
end
local mask = gm.tensor(rows)

local fwd, both = {}, {}
gm.no_grad(function() block(X, E, y, mask) end)
for _ = 1, reps do
  local t0 = gm.clock()
  gm.no_grad(function() block(X, E, y, mask) end)
  fwd[#fwd + 1] = gm.clock() - t0
end
gm.reset_peak_memory()
local live_before = gm.memory().live
for _ = 1, reps do
  local t0 = gm.clock()
  local a, b, c = block(X, E, y, mask)
  ;(a:sum() + b:sum() + c:sum()):backward()
  both[#both + 1] = gm.clock() - t0
  block:zero_grad()
  for _, t in ipairs { X, E, y } do t:zero_grad() end
end
local peak = gm.memory().peak - live_before
local t_fwd, t_both = bench.median(fwd), bench.median(both)
print(string.format("NodeEdgeBlock bs=%d n=%d dx=%d de=%d dy=%d heads=%d, %d threads, median of %d", bs, n, dx, de, dy, H,
  threads, reps))
print(string.format("graphmert  forward %.4f s   forward+backward %.4f s   peak extra memory %.1f MiB", t_fwd, t_both,
  peak / 2 ^ 20))
local tf, tb = bench.torch_forward_backward("bench_digress_torch.py", bs, n, dx, de, dy, H, threads, reps)
if tf then
  print(string.format("pytorch    forward %.4f s   forward+backward %.4f s", tf, tb))
  print(string.format("speed-up   forward %.2fx   forward+backward %.2fx (target >= 1.5x)", tf / t_fwd, tb / t_both))
else
  print("pytorch    not available (install python3-torch to compare)")
end
