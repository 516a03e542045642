-- long_run.lua — memory over a long run: STEPS (10,000) training steps of a tiny GraphMERT on
-- random sequences with masking, AdamW, clipping and a checkpoint every 1,000 steps; prints RSS,
-- gm.memory().live and the Lua heap at steps 1,000 .. STEPS and fails when live bytes grow or
-- RSS does: the median of its readings (every 100 steps) over the last quarter of the run 5% or
-- more above their median over the first quarter after step 1,000. RSS swings by ±6% around a
-- flat level as the C library's heap grows and trims, so two single readings (what this compared
-- before) failed a run without a leak about one time in five; a leak moves the whole level.
--   graphmert scripts/test/long_run.lua [STEPS]
local gm = require "graphmert"

local steps = math.tointeger(tonumber(arg[1]) or 10000)
-- quarters of the readings from step 1,000 on, every 100 steps: two readings each at least
if not steps or steps < 1700 then error("long_run.lua: STEPS must be a whole number of at least 1,700 (got " .. tostring(arg[1]) .. ")") end
gm.manual_seed(1)
local R, L, V = 8, 2, 50
local model = gm.nn.GraphMERT { vocab = V, relations = 2, roots = R, leaves = L, hidden = 16, layers = 1, heads = 2, ffn = 32 }
local opt = gm.optim.adamw(model:named_parameters(), { lr = 1e-3 })
local mask_opts = { vocab = V, mask_id = 4, layout = gm.layout { roots = R, leaves = L }, special = { [1] = true, [2] = true, [3] = true } }
local ckpt = os.tmpname()

local function rss_kib()
  for line in io.lines("/proc/self/status") do
    local v = line:match("^VmRSS:%s+(%d+) kB")
    if v then return tonumber(v) end
  end
end

local function random_batch(B)
  local ids, valid, relation, head_length = {}, {}, {}, {}
  for b = 1, B do
    ids[b], valid[b], relation[b], head_length[b] = {}, {}, {}, {}
    for n = 1, R * (1 + L) do ids[b][n], valid[b][n] = 5 + math.random(V - 5), 1 end
    ids[b][1] = 2
    for r = 1, R do relation[b][r], head_length[b][r] = math.random(0, 2), 1 end
  end
  return { ids = gm.tensor(ids), valid = gm.tensor(valid), relation = relation, head_length = head_length }
end

local function median(xs)
  local s = table.move(xs, 1, #xs, 1, {})
  table.sort(s)
  return s[(#s + 1) // 2]
end

math.randomseed(1)
local first_rss, first_live
local readings = {} -- RSS every 100 steps from step 1,000
local t0 = gm.clock()
for step = 1, steps do
  local batch = gm.data.masking.mask(random_batch(4), mask_opts)
  opt:zero_grad()
  local loss = model:loss(batch)
  loss:backward()
  gm.optim.clip_grad_norm(model:parameters(), 1.0)
  opt:step()
  if step >= 1000 and step % 100 == 0 then
    collectgarbage()
    readings[#readings + 1] = rss_kib()
  end
  if step % 1000 == 0 then
    gm.checkpoint.save(ckpt, { model = model, optimizer = opt, step = step })
    collectgarbage()
    local rss, live = rss_kib(), gm.memory().live
    first_rss, first_live = first_rss or rss, first_live or live
    print(string.format("step %5d  loss %.3f  RSS %d KiB (%+.2f%% from step 1000)  live %d bytes  Lua heap %.0f KiB  %.1f s",
      step, loss:item(), rss, 100 * (rss - first_rss) / first_rss, live, collectgarbage("count"), gm.clock() - t0))
  end
end
os.remove(ckpt)
collectgarbage()
local live = gm.memory().live
local quarter = #readings // 4
local early, late = median(table.move(readings, 1, quarter, 1, {})), median(table.move(readings, #readings - quarter + 1, #readings, 1, {}))
local growth = (late - early) / early
print(string.format("RSS median %d KiB over the first quarter after step 1000, %d KiB over the last: %+.2f%% (limit +5%%); live bytes %d → %d",
  early, late, 100 * growth, first_live, live))
if growth >= 0.05 or live > first_live then os.exit(1) end
