-- ablation.lua — the λ ablation: λ ∈ {none, 0.4, 0.6, 0.8, 0.9} × H-GAT on/off, each trained
-- with the same seed, data and budget; writes results.md (masked-token accuracy and tail
-- prediction, with the most-frequent-tail baseline), losses.csv and loss.png (gnuplot) into the
-- output folder.
--   graphmert experiments/ablation.lua [--config experiments/configs/wordnet_small.lua]
--                                      [--out out/ablation] [--steps N]
-- Under MPI (mpirun -np K) the ranks share each batch (gm.experiment.trainer); rank 0 prints,
-- writes the results and runs the tail-prediction tables.
local gm = require "graphmert"
local ex = gm.experiment
local dist = gm.distributed

local session <close> = dist.session() -- ends MPI at the end, or the whole job on an error
local main, say = dist.is_main(), dist.say

local args = ex.args.parse(arg, ex.args.training("ablation.lua",
  "The λ × H-GAT ablation: every variant with the same seed, data and budget.", "out/ablation"))
local cfg = ex.config.load(args.config)
ex.apply_settings(cfg)
if args.steps then cfg.steps = args.steps end
os.execute("mkdir -p " .. args.out)

gm.manual_seed(cfg.seed)
local d = ex.prepare(cfg)
say(ex.summary(d), "\n")

local variants = {}
for _, lambda in ipairs { false, 0.4, 0.6, 0.8, 0.9 } do
  for _, hgat in ipairs { true, false } do
    variants[#variants + 1] = { lambda = lambda, hgat = hgat,
      name = string.format("λ=%s / H-GAT %s", lambda and tostring(lambda) or "none", hgat and "on" or "off") }
  end
end

local rows, curves = {}, {}
for v, var in ipairs(variants) do
  local c = ex.variant(cfg, { lambda = var.lambda, hgat = var.hgat })
  gm.manual_seed(cfg.seed) -- the same initialisation, masks and batches for every variant
  local model = ex.model(d, c)
  dist.broadcast(model:parameters(), 0)
  local opt = gm.optim.adamw(model:named_parameters(), { lr = c.lr, weight_decay = c.weight_decay })
  curves[v] = {}
  local t0 = gm.clock()
  local train_step = ex.trainer(d, c, model, opt)
  for step = 1, c.steps do
    curves[v][step] = train_step(step)
    say(string.format("\r%-24s step %d/%d  loss %.4f   ", var.name, step, c.steps, curves[v][step]))
    if main then io.flush() end
  end
  local acc = ex.masked_accuracy(d, c, model)
  local tails = main and ex.tail_metrics(d, c, model)
  rows[v] = { name = var.name, acc = acc, tails = tails }
  if main then
    io.write(string.format("\n  %.0f s; masked-token accuracy %.3f, tail hits@10 %.3f (facts) %.3f (synsets)\n",
      gm.clock() - t0, acc, tails.facts.hits10, tails.synsets.hits10))
  end
end
if not main then return end

rows[#rows + 1] = { name = "most frequent tail", tails = ex.baseline_metrics(d, cfg) }
local md = { "# λ ablation on WordNet 3.0", "",
  string.format("`%s`, %d steps of batch %d, seed %d; %s.", args.config, cfg.steps, cfg.batch, cfg.seed, ex.summary(d)), "",
  ex.table(rows), "" }
md[#md + 1] = "![training loss](loss.png)"
local f = assert(io.open(args.out .. "/results.md", "w"))
f:write(table.concat(md, "\n"), "\n")
f:close()

local csv = assert(io.open(args.out .. "/losses.csv", "w"))
local head = { "step" }
for _, var in ipairs(variants) do head[#head + 1] = '"' .. var.name .. '"' end
csv:write(table.concat(head, ","), "\n")
for step = 1, cfg.steps do
  local row = { tostring(step) }
  for v = 1, #variants do row[#row + 1] = string.format("%.5f", curves[v][step]) end
  csv:write(table.concat(row, ","), "\n")
end
csv:close()

local plot = { "set terminal png size 1000,600", string.format("set output '%s/loss.png'", args.out),
  "set datafile separator ','", "set key autotitle columnhead", "set xlabel 'step'", "set ylabel 'training loss'",
  string.format("plot for [c=2:%d] '%s/losses.csv' using 1:c with lines", #variants + 1, args.out) }
local gp = io.popen("gnuplot 2>&1", "w")
local plotted = gp and gp:write(table.concat(plot, "\n"), "\n") and gp:close()
print(table.concat(md, "\n"))
if not plotted then print("(gnuplot not available: no loss.png)") end
