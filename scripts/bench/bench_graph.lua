-- bench_graph.lua — time to build the all-pairs hop table of leafy chains (7 leaves a root)
-- with the closed form and with BFS, its bytes, and the decay mask on it.
--   graphmert scripts/bench/bench_graph.lua
local gm = require "graphmert"

-- the median of reps timings (the first run also pays for waking the threads)
local function median_of(reps, fn)
  local times = {}
  for _ = 1, reps do
    local t0 = gm.clock()
    local r = fn()
    times[#times + 1] = gm.clock() - t0
    if r and r.release then r:release() end
  end
  table.sort(times)
  return times[(#times + 1) // 2]
end

print(string.format("threads: %d", gm.get_num_threads()))
print(string.format("%8s %8s %14s %14s %12s", "nodes", "roots", "closed form", "BFS", "bytes"))
for _, nodes in ipairs { 1024, 4096, 16384 } do
  local g = gm.leafy_chain { roots = nodes // 8, leaves = 7 }
  local reps = nodes <= 4096 and 21 or 3
  local closed = median_of(reps, function() return g:distances { method = "closed_form", cache = false } end)
  local bfs = median_of(reps, function() return g:distances { method = "bfs", cache = false } end)
  print(string.format("%8d %8d %12.3f ms %12.3f ms %12d", nodes, nodes // 8, closed * 1e3, bfs * 1e3,
    nodes * nodes * 2))
end

gm.graph_cache_clear()
local g = gm.leafy_chain { roots = 128, leaves = 7 }
local first = median_of(1, function() g:distances() end)
local hit = median_of(5, function() g:distances() end)
print(string.format("cache, 1024 nodes: first request %.3f ms, a hit %.4f ms; %s",
  first * 1e3, hit * 1e3, (function() local s = gm.graph_cache_stats()
    return string.format("%d hits, %d misses, %d bytes", s.hits, s.misses, s.bytes) end)()))

local d = g:distances()
local p = gm.ones(8, 1, 1):requires_grad(true)
local fwd = median_of(5, function() return gm.decay_mask(d, { lambda = 0.6, p = p }) end)
local both = median_of(5, function()
  local f = gm.decay_mask(d, { lambda = 0.6, p = p })
  f:sum():backward()
  p:zero_grad()
end)
print(string.format("decay mask [8, 1024, 1024]: forward %.2f ms, forward+backward %.2f ms", fwd * 1e3, both * 1e3))
