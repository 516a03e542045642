-- bench_torch_load.lua — the time to load a checkpoint with gm.torch_load (a .bin or .pt file)
-- or gm.safetensors.load (anything else); run it under /usr/bin/time -v for the peak RSS.
--   graphmert scripts/bench/bench_torch_load.lua FILE [repeats=3]
local gm = require "graphmert"
local path, repeats = assert(arg[1], "usage: bench_torch_load.lua FILE [repeats]"), tonumber(arg[2] or 3)
local load = (path:match("%.bin$") or path:match("%.pt$")) and gm.torch_load or gm.safetensors.load
local best, count, numel = math.huge, 0, 0
for _ = 1, repeats do
  collectgarbage()
  local t0 = gm.clock()
  local tensors = load(path)
  best = math.min(best, gm.clock() - t0)
  count, numel = 0, 0
  for _, t in pairs(tensors) do count, numel = count + 1, numel + t:numel() end
end
print(string.format("%s: %d tensors, %.2fM values, best of %d: %.3f s", path, count, numel / 1e6, repeats, best))
