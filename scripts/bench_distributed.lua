-- bench_distributed.lua — data-parallel training-step time under MPI for the README's cost
-- model: the 2-layer hidden-512 GraphMERT of scripts/bench_model.lua (batch 8 × 1024 nodes, 15%
-- of the leaves filled), the global batch shared by the ranks as experiments/train.lua does.
--   mpirun -np K graphmert scripts/bench_distributed.lua [steps=3] [threads=1]
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
local R, L, V, B, fill = 128, 7, 8000, 8, 0.15
local model = gm.nn.GraphMERT { vocab = V, hidden = 512, layers = 2, heads = 8, ffn = 2048, roots = R, leaves = L,
  relations = 4, sbo = false }
local params = model:parameters()
local opt = gm.optim.adamw(model:named_parameters(), { lr = 1e-4 })
local ids, valid, relation, head_length = {}, {}, {}, {}
local r, leaf = gm.rand(B, R * (1 + L)):totable(), gm.rand(B, R):totable()
for b = 1, B do
  ids[b], valid[b], relation[b], head_length[b] = {}, {}, {}, {}
  for n = 1, R * (1 + L) do
    local root = n <= R and n or (n - R - 1) // L + 1
    local filled = n <= R or leaf[b][root] < fill
    ids[b][n], valid[b][n] = filled and (5 + math.floor(r[b][n] * (V - 5))) or 1, filled and 1 or 0
  end
  for root = 1, R do
    local has = leaf[b][root] < fill
    relation[b][root], head_length[b][root] = has and 1 + root % 4 or 0, has and 1 or 0
  end
end
local batch = gm.data.masking.mask({ ids = gm.tensor(ids), valid = gm.tensor(valid), relation = relation,
  head_length = head_length }, { vocab = V, mask_id = 4, special = { [1] = true }, layout = gm.layout { roots = R, leaves = L } })
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
