-- bench_core.lua — the foundation's figures: t:matmul GFLOP/s at 1024x1024x1024 next to
-- OpenBLAS called directly (build/bin/bench_sgemm), and the cost of one tiny op from Lua.
--   make bench        (or: graphmert scripts/bench/bench_core.lua [threads])
local gm = require "graphmert"

local threads = tonumber(arg and arg[1]) or gm.get_num_threads()
gm.set_num_threads(threads)

local n, reps = 1024, 10
local a, b = gm.rand(n, n), gm.rand(n, n)
a:matmul(b) -- warm up
local best = math.huge
for _ = 1, reps do
  local t0 = gm.clock()
  local c = a:matmul(b)
  local t = gm.clock() - t0
  c:release()
  if t < best then best = t end
end
local gflops = 2 * n ^ 3 / best / 1e9

local direct = io.popen(string.format("OPENBLAS_NUM_THREADS=%d ./build/bin/bench_sgemm %d %d", threads, n, reps))
local line = direct and direct:read("l") or ""
if direct then direct:close() end
local blas_gflops = tonumber(line:match("^sgemm %d+ [%d.]+ ([%d.]+)"))

print(string.format("threads: %d", threads))
print(string.format("t:matmul %dx%dx%d: %.4f s, %.1f GFLOP/s", n, n, n, best, gflops))
if blas_gflops then
  print(string.format("OpenBLAS sgemm direct: %.1f GFLOP/s; t:matmul reaches %.1f%% of it (target >= 95%%)",
    blas_gflops, 100 * gflops / blas_gflops))
else
  print("OpenBLAS sgemm direct: build/bin/bench_sgemm missing (run `make bench`)")
end

-- tiny ops: 1-element tensors, so the cost is the Lua -> C -> Lua round trip and allocation
local x, y = gm.ones(1), gm.ones(1)
local calls = 1000000
for _, case in ipairs {
  { "x + y (tensor + tensor)", function() return x + y end },
  { "x * 2 (tensor * number)", function() return x * 2 end },
  { "x:exp()", function() return x:exp() end },
} do
  local f = case[2]
  for _ = 1, 1000 do f() end
  local t0 = gm.clock()
  for _ = 1, calls do f() end
  local per_call = (gm.clock() - t0) / calls
  print(string.format("tiny op %-26s %.3f us per call (target <= 2 us)", case[1], per_call * 1e6))
end
