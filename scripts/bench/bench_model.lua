-- bench_model.lua — GraphMERT training-step throughput and peak RSS next to the same model in
-- PyTorch 1.13 (scripts/bench/bench_model_torch.py), in one run: a 2-layer model (hidden 512, 8
-- heads, FFN 2048, vocabulary 8000) on batch 8 × 1024 nodes, every leaf filled and 15% filled.
--   graphmert scripts/bench/bench_model.lua [steps=3] [threads=2] [fill...]
-- Each configuration runs in its own process, so peak RSS is per configuration.
local gm = require "graphmert"
local bench = require "scripts.bench.bench_common"

local steps = math.tointeger(tonumber(arg[1]) or 3)
local threads = math.tointeger(tonumber(arg[2]) or 2)

local function rss_mb()
  for line in io.lines("/proc/self/status") do
    local kb = line:match("^VmHWM:%s+(%d+)")
    if kb then return tonumber(kb) / 1024 end
  end
end

if arg[3] == "--child" then -- one configuration, in this process
  local fill = tonumber(arg[4])
  gm.set_num_threads(threads)
  gm.manual_seed(0)
  local model, masked, real = bench.graphmert_step_setup(fill)
  local opt = gm.optim.adamw(model:named_parameters(), { lr = 1e-4 })
  local times = {}
  for step = 0, steps do
    local t0 = gm.clock()
    opt:zero_grad()
    local loss = model:loss(masked)
    loss:backward()
    opt:step()
    if step > 0 then times[#times + 1] = gm.clock() - t0 end
    loss:release()
  end
  table.sort(times)
  print(string.format("graphmert step %.4f rss_mb %.0f real %d peak_live_mb %.0f", times[(#times + 1) // 2], rss_mb(), real, gm.memory().peak / 2 ^ 20))
  os.exit(0)
end

local tokens = 8 * 1024
print(string.format("GraphMERT 2 layers, hidden 512, 8 heads, FFN 2048, vocab 8000, batch 8 x 1024 nodes, %d threads, median of %d steps", threads, steps))
print(string.format("%-14s %12s %14s %10s   %12s %14s %10s   %8s %8s", "leaves filled", "graphmert s", "tokens/s", "RSS MB",
  "pytorch s", "tokens/s", "RSS MB", "speed", "RSS"))
local self_cmd = string.format("%s %s %d %d --child", arg[-1], arg[0], steps, threads)
for _, fill in ipairs { 1.0, 0.15 } do
  local p = io.popen(string.format("%s %g", self_cmd, fill))
  local line = p:read("a")
  p:close()
  local t, rss = line:match("graphmert step ([%d.]+) rss_mb ([%d.]+)")
  local tl = bench.torch_output("bench_model_torch.py", string.format("%g", fill), steps, threads) or ""
  local tt, trss = tl:match("torch step ([%d.]+) rss_mb ([%d.]+)")
  t, rss, tt, trss = tonumber(t), tonumber(rss), tonumber(tt), tonumber(trss)
  if not t then error("graphmert run failed: " .. line) end
  print(string.format("%-14s %12.3f %14.0f %10.0f   %12s %14s %10s   %8s %8s", string.format("%d%%", fill * 100), t, tokens / t, rss,
    tt and string.format("%.3f", tt) or "-", tt and string.format("%.0f", tokens / tt) or "-", trss and string.format("%.0f", trss) or "-",
    tt and string.format("%.2fx", tt / t) or "-", trss and string.format("%.2f", rss / trss) or "-"))
end
print("tokens/s counts all 8 x 1024 node slots; targets: >= 1.5x PyTorch with every leaf filled at <= half its RSS, >= 4x with 15% filled")
