-- bench_distributed.lua — data-parallel training-step time under MPI for the README's cost
-- model: the 2-layer hidden-512 GraphMERT of scripts/bench/bench_model.lua (batch 8 × 1024 nodes, 15%
-- of the leaves filled), the global batch shared by the ranks as experiments/train.lua does.
--   mpirun -np K graphmert scripts/bench/bench_distributed.lua [steps=3] [threads=1]
-- Rank 0 prints the median step time and the all-reduce time within it (after a barrier, so
-- without the wait for a slower rank).
local gm = require "graphmert"
local dist = gm.distributed
local shard = require "graphmert.experiment.shard"
local session <close> = dist.session()

local steps = math.tointeger(tonumber(arg[1]) or 3)
local threads = math.tointeger(tonumber(arg[2]) or 1)
gm.set_num_threads(threads)
gm.manual_seed(0)
local model, batch = require("scripts.bench.bench_common").graphmert_step_setup(0.15)
local B = batch.ids:size(1)
local params = model:parameters()
local opt = gm.optim.adamw(model:named_parameters(), { lr = 1e-4 })
local share = shard.rows(batch, shard.range(B, dist.rank(), dist.size()))
local counts = model:loss_counts(batch)
local numel = 0
for _, p in ipairs(params) do numel = numel + p:numel() end

local step_times, reduce_times = {}, {}
for step = 0, steps do
  dist.barrier()
  local t0 = gm.clock()
  opt:zero_grad()
  model:loss(share, { counts = counts }):backward()
  dist.barrier() -- the all-reduce alone, without waiting for a slower rank
  local t1 = gm.clock()
  dist.allreduce_grads(params, {}, { op = "sum" })
  local t2 = gm.clock()
  opt:step()
  if step > 0 then step_times[#step_times + 1], reduce_times[#reduce_times + 1] = gm.clock() - t0, t2 - t1 end
end
table.sort(step_times)
table.sort(reduce_times)
local mid = (#step_times + 1) // 2
if dist.is_main() then
  print(string.format("ranks %d threads %d params %d step %.3f s (%.3f steps/s) allreduce %.4f s (%.1f%%)", dist.size(),
    threads, numel, step_times[mid], 1 / step_times[mid], reduce_times[mid], 100 * reduce_times[mid] / step_times[mid]))
end
