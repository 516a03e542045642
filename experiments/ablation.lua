-- ablation.lua — the λ × H-GAT ablation as evidence: every cell of the config's grid (λ ∈
-- grid.lambdas, false = no decay; H-GAT in grid.hgat; training seeds grid.seeds) trained on one
-- budget and one data split, then for every metric the mean over seeds with a 95% interval and
-- each variant's paired difference against the reference cell (grid.reference, by default the
-- official λ = 0.6 with H-GAT), and pictures (gnuplot).
--   graphmert experiments/ablation.lua [--config experiments/configs/ablation.lua] [--out out/ablation]
--                                      [--steps N]
-- Metrics, each on units that are the same for every cell (so differences pair unit by unit):
--   MLM acc      masked-token accuracy on the held-out entities' sequences (units: sequences)
--   facts/entities tail@1, tail@10, MRR@10  whole tails decoded without their length and ranked
--                among the known tails, on held-out facts (seen text) and held-out entities'
--                triples (unseen text) (units: triples)
--   precision    extraction from held-out passages, top tail per head and relation, constrained
--                decoding, held by the seed graph (units: passages)
-- Intervals: percentile bootstrap (2,000 resamples) drawing the seeds and, once for all seeds, the
-- units (gm.eval.stats.over_seeds / paired_over_seeds); a difference is marked better (▲) or
-- worse (▼) only when its interval excludes 0.
-- Each finished cell is written to OUT/cells/<cell>.json (atomically): a stopped grid (Ctrl-C, a
-- crash) is resumed by running the same command again. Under MPI (mpirun -np K) rank r trains
-- the cells r, r + K, ... by itself (1 thread each is the efficient setting for small models);
-- rank 0 then writes results.md, summary.json and the pictures.
local gm = require "graphmert"
local ex = gm.experiment
local dist = gm.distributed
local stats, extract = gm.eval.stats, gm.eval.extract
local cjson = require "cjson"

local session <close> = dist.session() -- ends MPI at the end, or the whole job on an error
local main, say = dist.is_main(), dist.say

local args = ex.args.parse(arg, ex.args.training("ablation.lua",
  "The λ × H-GAT ablation over seeds, with intervals, paired differences and pictures.", "out/ablation"))
args.config = ex.args.training_config("ablation.lua", args)
local cfg = ex.config.load(args.config, args.data and { data = { dir = args.data } })
ex.apply_settings(cfg)
if args.steps then cfg.steps = args.steps end
local grid = cfg.grid
local cells_dir = args.out .. "/cells"
ex.args.folder("ablation.lua", args.out, true) -- checked and made before any work, by every rank (each writes cells)
ex.args.folder("ablation.lua", cells_dir, true)

local d = ex.args.try("ablation.lua", ex.prepare, cfg) -- a dataset's error is the user's: one line
say(ex.summary(d), "\n")
local passages = ex.heldout_passages(d, grid.passages)
local probe = {}
for first = 1, math.min(grid.probe_sequences, #d.eval_seqs), cfg.batch do
  probe[#probe + 1] = gm.data.corpus.batch(d.eval_seqs, first, math.min(cfg.batch, grid.probe_sequences - first + 1))
end

local function lambda_name(l) return l and string.format("%g", l) or "none" end
local variants, cells = {}, {}
for _, lambda in ipairs(grid.lambdas) do
  for _, hgat in ipairs(grid.hgat) do
    local v = { lambda = lambda, hgat = hgat, cells = {},
      name = string.format("λ=%s, H-GAT %s", lambda_name(lambda), hgat and "on" or "off") }
    v.reference = lambda == (grid.reference.lambda or false) and hgat == (grid.reference.hgat ~= false)
    variants[#variants + 1] = v
    for _, seed in ipairs(grid.seeds) do
      local cell = { variant = v, seed = math.tointeger(seed),
        name = string.format("lambda-%s_hgat-%s_seed-%d", lambda_name(lambda), hgat and "on" or "off", seed) }
      cell.path = cells_dir .. "/" .. cell.name .. ".json"
      v.cells[#v.cells + 1] = cell
      cells[#cells + 1] = cell
    end
  end
end

-- what a cell's figures depend on besides its λ, H-GAT and seed: a cell of other settings is not kept
local setup = ex.settings(cfg, gm.json.flat({ steps = cfg.steps, data = cfg.data }))

local function read_cell(cell)
  local f = io.open(cell.path, "r")
  if not f then return nil end
  local ok, result = pcall(cjson.decode, f:read("a"))
  f:close()
  if not ok or type(result) ~= "table" or result.name ~= cell.name then
    ex.args.fail("ablation.lua", string.format("%s is not a finished cell (remove it to run the cell again)", cell.path))
  end
  if result.setup ~= setup then
    local differ = gm.json.differences(result.setup or "{}", setup)
    ex.args.fail("ablation.lua", string.format("%s was run with other settings (%s%s): give another --out, or remove %s to "
      .. "start over", cell.path, table.concat(differ, "; ", 1, math.min(#differ, 4)), #differ > 4 and "; ..." or "", cells_dir))
  end
  return result
end

-- Trains one cell and measures everything; the cell's json is its only output.
local function run_cell(cell, index)
  local v = cell.variant
  local c = ex.variant(cfg, { lambda = v.lambda, hgat = v.hgat })
  c.seed = cell.seed
  local dd = ex.reorder(d, cell.seed)
  gm.manual_seed(cell.seed)
  local model = ex.model(dd, c)
  local opt = gm.optim.adamw(model:named_parameters(), { lr = c.lr, weight_decay = c.weight_decay })
  local train_step = ex.trainer(dd, c, model, opt, { alone = true })
  local losses, t0 = {}, gm.clock()
  local progress = ex.progress.new { stream = io.stdout, total = c.steps, enabled = main }
  for step = 1, c.steps do
    losses[step] = train_step(step)
    progress:update(step, string.format("cell %d/%d %-34s step %d/%d  loss %.4f", index, #cells, cell.name, step, c.steps, losses[step]))
  end
  progress:finish()
  local train_seconds = gm.clock() - t0
  local acc, _, per_sequence = ex.masked_accuracy(dd, c, model, { alone = true })
  local tails = ex.tail_metrics(dd, c, model)
  local opts = gm.eval.extract.options(cfg, d.graph, d.relations, { mode = "constrained", top = 1, tails = ex.known_tails(d) })
  local extraction = {}
  model:evaluating(function()
    for i, p in ipairs(passages) do
      local u = extract.score_passage(d.graph, d.relations, p,
        extract.merge(extract.triples(model, d.tok, { p }, opts), { top = 1 }))
      extraction[i] = { u.correct, u.n, u.valid, u.multi }
    end
  end)
  local per_node, mass = gm.eval.attention_by_distance(model, probe)
  local factors, p = gm.eval.decay_by_distance(model, math.max(#mass - 1, 0))
  local hits, totals = {}, {}
  for i, u in ipairs(per_sequence) do hits[i], totals[i] = u.hits, u.total end
  local result = { name = cell.name, setup = setup, lambda = v.lambda, hgat = v.hgat, seed = cell.seed, steps = c.steps,
    train_seconds = train_seconds, seconds = gm.clock() - t0, losses = losses, acc = acc,
    acc_units = { hits = hits, totals = totals },
    facts = tails.facts.tail.ranks, entities = tails.entities.tail.ranks, extraction = extraction,
    attention = per_node, attention_mass = mass, decay = factors and { factors = factors, p = p } or cjson.null }
  local ok, err = gm.write_atomic(cell.path, { cjson.encode(result) })
  if not ok then error("ablation.lua: " .. err, 0) end
  if main then io.write(string.format("  %.0f s; MLM acc %.3f\n", result.seconds, acc)) end
  return result
end

local t_start = gm.clock()
local ok, err = pcall(function()
  for i, cell in ipairs(cells) do
    if (i - 1) % dist.size() == dist.rank() then
      if read_cell(cell) then
        say(string.format("cell %d/%d %s: kept from an earlier run\n", i, #cells, cell.name))
      else
        run_cell(cell, i)
      end
    end
  end
end)
if not ok then
  if gm.errors.kind(err) == "interrupted" then
    say(string.format("\ninterrupted: the finished cells are kept in %s; run the same command to go on\n", cells_dir))
    os.exit(130)
  end
  error(err, 0)
end
dist.barrier()
if not main then return end

-- everything below is rank 0's: the cells of every rank are on disk
for _, cell in ipairs(cells) do
  cell.result = read_cell(cell)
  if not cell.result then error("ablation.lua: cell " .. cell.name .. " did not finish", 0) end
end

local function ranks_metric(field, keep)
  return { units = function(r) return r[field] end,
           statistic = stats.ratio(function(rank) return keep(rank) end, function() return 1 end) }
end
local metrics = {
  { name = "MLM acc", key = "mlm_acc",
    units = function(r)
      local out = {}
      for i, h in ipairs(r.acc_units.hits) do out[i] = { h, r.acc_units.totals[i] } end
      return out
    end,
    statistic = stats.ratio(function(u) return u[1] end, function(u) return u[2] end) },
}
for _, part in ipairs { "facts", "entities" } do
  for _, m in ipairs {
    { "tail@1", function(rank) return rank == 1 and 1 or 0 end },
    { "tail@10", function(rank) return rank <= 10 and 1 or 0 end },
    { "MRR@10", function(rank) return rank <= 10 and 1 / rank or 0 end } } do
    local entry = ranks_metric(part, m[2])
    entry.name, entry.key = part .. " " .. m[1], part .. "_" .. m[1]:lower():gsub("@", "")
    metrics[#metrics + 1] = entry
  end
end
metrics[#metrics + 1] = { name = "precision", key = "precision",
  units = function(r) return r.extraction end,
  statistic = stats.ratio(function(u) return u[1] end, function(u) return u[2] end) }

local BOOT = { samples = 2000, seed = 1 }
-- a figure over no units (e.g. a split without held-out facts) is NaN: "-" in the tables, null
-- in summary.json, left out of the pictures
local function figure(low, high, value)
  if value ~= value then return nil end
  return { value = value, low = low, high = high }
end
local reference
for _, v in ipairs(variants) do if v.reference then reference = v end end

local function tables(v, metric)
  local out = {}
  for s, cell in ipairs(v.cells) do out[s] = metric.units(cell.result) end
  return out
end

local summary = { config = args.config, steps = cfg.steps, batch = cfg.batch, seeds = grid.seeds, variants = {} }
for _, v in ipairs(variants) do
  local entry = { name = v.name, lambda = v.lambda, hgat = v.hgat, metrics = {}, differences = {} }
  for _, m in ipairs(metrics) do
    entry.metrics[m.key] = figure(stats.over_seeds(tables(v, m), m.statistic, BOOT))
    if reference and v ~= reference then
      entry.differences[m.key] = figure(stats.paired_over_seeds(tables(v, m), tables(reference, m), m.statistic, BOOT))
    end
  end
  summary.variants[#summary.variants + 1] = entry
  v.summary = entry
end

-- the most frequent training tail per relation, for scale (not trained: intervals over triples)
local frequent = ex.baseline_metrics(d, cfg)
local frequent_row = {}
for _, m in ipairs(metrics) do
  local part = m.key:match("^(%a+)_")
  if part == "facts" or part == "entities" then
    frequent_row[m.key] = figure(stats.bootstrap(frequent[part].tail.ranks, m.statistic, BOOT))
  end
end
summary.most_frequent_tail = frequent_row

local function cellfmt(x) return x and string.format("%.3f [%.3f, %.3f]", x.value, x.low, x.high) or "-" end
local function difffmt(x, is_reference)
  if is_reference then return "(reference)" end
  if not x then return "-" end
  local mark = (x.low > 0 and " ▲") or (x.high < 0 and " ▼") or ""
  return string.format("%+.3f [%+.3f, %+.3f]%s", x.value, x.low, x.high, mark)
end
local function md_table(first, rows)
  local head = { first }
  for _, m in ipairs(metrics) do head[#head + 1] = m.name end
  local lines = { "| " .. table.concat(head, " | ") .. " |", "|" .. string.rep("---|", #head) }
  for _, r in ipairs(rows) do lines[#lines + 1] = "| " .. table.concat(r, " | ") .. " |" end
  return table.concat(lines, "\n")
end

local mean_rows, diff_rows = {}, {}
for _, v in ipairs(variants) do
  local row, drow = { v.name }, { v.name }
  for _, m in ipairs(metrics) do
    row[#row + 1] = cellfmt(v.summary.metrics[m.key])
    drow[#drow + 1] = difffmt(v.summary.differences[m.key], v == reference)
  end
  mean_rows[#mean_rows + 1], diff_rows[#diff_rows + 1] = row, drow
end
local frow = { "most frequent tail" }
for _, m in ipairs(metrics) do frow[#frow + 1] = cellfmt(frequent_row[m.key]) end
mean_rows[#mean_rows + 1] = frow

-- pictures -----------------------------------------------------------------------------------
local function block(name, rows)
  local lines = { "$" .. name .. " << EOD" }
  for _, r in ipairs(rows) do lines[#lines + 1] = table.concat(r, " ") end
  lines[#lines + 1] = "EOD"
  return table.concat(lines, "\n")
end
local pictures = {}
local function picture(file, title, commands)
  if ex.plot(args.out .. "/" .. file, "pngcairo size 1200,700 noenhanced", commands) then pictures[#pictures + 1] = string.format("![%s](%s)", title, file) end
end

-- training loss: mean over seeds and the band between the lowest and highest seed, averaged over
-- windows of steps (single steps are too noisy to read)
local window = math.max(1, cfg.steps // 50)
local loss_blocks, loss_plots = {}, { {}, {} }
for vi, v in ipairs(variants) do
  local rows = {}
  for first = 1, cfg.steps, window do
    local last = math.min(cfg.steps, first + window - 1)
    local per_seed = {}
    for s, cell in ipairs(v.cells) do
      local sum = 0
      for step = first, last do sum = sum + cell.result.losses[step] end
      per_seed[s] = sum / (last - first + 1)
    end
    local mean, lo, hi = 0, math.huge, -math.huge
    for _, x in ipairs(per_seed) do mean, lo, hi = mean + x / #per_seed, math.min(lo, x), math.max(hi, x) end
    rows[#rows + 1] = { (first + last) / 2, mean, lo, hi }
  end
  loss_blocks[#loss_blocks + 1] = block("L" .. vi, rows)
  local panel = loss_plots[v.hgat and 1 or 2]
  panel[#panel + 1] = string.format("$L%d using 1:3:4 with filledcurves fs transparent solid 0.15 lc %d notitle, " ..
    "$L%d using 1:2 with lines lw 2 lc %d title '%s'", vi, #panel + 1, vi, #panel + 1, v.name)
end
local loss_cmds = { table.concat(loss_blocks, "\n"), "set multiplot layout 1,2",
  "set xlabel 'step'", "set ylabel 'training loss (mean over seeds, band: lowest to highest seed)'" }
for i, panel in ipairs(loss_plots) do
  if #panel > 0 then
    loss_cmds[#loss_cmds + 1] = string.format("set title 'H-GAT %s'", i == 1 and "on" or "off")
    loss_cmds[#loss_cmds + 1] = "plot " .. table.concat(panel, ", ")
  end
end
loss_cmds[#loss_cmds + 1] = "unset multiplot"
picture("loss.png", "training loss per variant", loss_cmds)

-- metrics per λ with their intervals (no decay drawn at λ = 1, where the decay factor is 1)
local shown = { "mlm_acc", "entities_tail10", "facts_tail10", "precision" }
local metric_cmds, metric_blocks = { "set multiplot layout 2,2", "set xlabel 'λ (1 = no decay)'", "set xrange [0.3:1.05]" }, {}
for hi, hgat in ipairs { true, false } do
  for mi, key in ipairs(shown) do
    local rows = {}
    for _, v in ipairs(variants) do
      if v.hgat == hgat then
        local x = v.summary.metrics[key]
        if x then rows[#rows + 1] = { v.lambda or 1, x.value, x.low, x.high } end
      end
    end
    table.sort(rows, function(a, b) return a[1] < b[1] end)
    metric_blocks[#metric_blocks + 1] = block(string.format("M%d_%d", hi, mi), #rows > 0 and rows or { { 0, 0, 0, 0 } })
  end
end
metric_cmds[#metric_cmds + 1] = table.concat(metric_blocks, "\n")
for mi, key in ipairs(shown) do
  local label
  for _, m in ipairs(metrics) do if m.key == key then label = m.name end end
  metric_cmds[#metric_cmds + 1] = string.format("set title '%s (mean over seeds, 95%% interval)'", label)
  metric_cmds[#metric_cmds + 1] = string.format("plot $M1_%d using ($1-0.005):2:3:4 with yerrorlines lw 2 title 'H-GAT on', " ..
    "$M2_%d using ($1+0.005):2:3:4 with yerrorlines lw 2 title 'H-GAT off'", mi, mi)
end
metric_cmds[#metric_cmds + 1] = "unset multiplot"
picture("metrics_by_lambda.png", "metrics per λ", metric_cmds)

-- attention mass by graph distance next to the learned decay factor (mean over heads), per λ,
-- H-GAT on; and the learned p per head
local att_blocks, att_plot, decay_plot, p_plot = {}, {}, {}, {}
for vi, v in ipairs(variants) do
  if v.hgat == (grid.reference.hgat ~= false) then
    local rows, hops = {}, #v.cells[1].result.attention
    for h = 1, hops do
      local mass, factor, has_decay = 0, 0, false
      for _, cell in ipairs(v.cells) do
        mass = mass + (cell.result.attention[h] or 0) / #v.cells
        local dk = cell.result.decay
        if dk ~= cjson.null then
          has_decay = true
          local f = 0
          for _, per_head in ipairs(dk.factors) do f = f + per_head[h] / #dk.factors end
          factor = factor + f / #v.cells
        end
      end
      rows[h] = { h - 1, mass, has_decay and factor or 1 }
    end
    att_blocks[#att_blocks + 1] = block("A" .. vi, rows)
    att_plot[#att_plot + 1] = string.format("$A%d using 1:2 with linespoints lw 2 title '%s'", vi, v.name)
    decay_plot[#decay_plot + 1] = string.format("$A%d using 1:3 with linespoints lw 2 title '%s'", vi, v.name)
    if v.lambda then
      local prow = {}
      for k = 1, #v.cells[1].result.decay.p do
        local mean, lo, hi = 0, math.huge, -math.huge
        for _, cell in ipairs(v.cells) do
          local x = cell.result.decay.p[k]
          mean, lo, hi = mean + x / #v.cells, math.min(lo, x), math.max(hi, x)
        end
        prow[k] = { k, mean, lo, hi }
      end
      att_blocks[#att_blocks + 1] = block("P" .. vi, prow)
      p_plot[#p_plot + 1] = string.format("$P%d using 1:2:3:4 with yerrorlines lw 2 title '%s'", vi, v.name)
    end
  end
end
if #att_plot > 0 then
  picture("attention_by_distance.png", "attention mass by graph distance and the learned decay", {
    table.concat(att_blocks, "\n"), "set multiplot layout 1,2", "set xlabel 'hops from the root'",
    "set title 'attention weight a root gives one node at h hops'", "set logscale y",
    "set ylabel 'mean weight (over layers, heads, roots, seeds)'", "plot " .. table.concat(att_plot, ", "),
    "unset logscale y", "set title 'learned decay λ^GELU(√(h+1) − p)'", "set ylabel 'factor on the logits (mean over heads, seeds)'",
    "plot " .. table.concat(decay_plot, ", "), "unset multiplot" })
end
if #p_plot > 0 then
  picture("p_by_head.png", "learned p per head", { table.concat(att_blocks, "\n"), "set xlabel 'head'",
    "set ylabel 'learned p (mean over seeds; bars: lowest to highest seed)'", "set xtics 1",
    "set title 'learned p per head after training (initialised at 1)'", "plot " .. table.concat(p_plot, ", ") })
end

-- results ------------------------------------------------------------------------------------
local seconds = 0
for _, cell in ipairs(cells) do seconds = seconds + cell.result.seconds end
local seed_list = {}
for i, s in ipairs(grid.seeds) do seed_list[i] = tostring(math.tointeger(s)) end
local md = {
  "# λ × H-GAT ablation on " .. d.dataset_name, "",
  string.format("`%s`, %d steps of batch %d per cell, seeds %s, %d cells (%.0f cell-seconds); %s.", args.config,
    cfg.steps, cfg.batch, table.concat(seed_list, ", "), #cells, seconds, ex.summary(d)), "",
  string.format("Units: %d held-out sequences (MLM acc), %d held-out facts, %d held-out entities' triples, %d held-out passages (precision: top tail per head and relation, constrained decoding). " ..
    "Intervals: 95%% percentile bootstrap, %d resamples of the seeds and of the units.",
    #cells[1].result.acc_units.hits, #cells[1].result.facts, #cells[1].result.entities, #passages, BOOT.samples), "",
  "## Mean over seeds [95% interval]", "", md_table("variant", mean_rows), "" }
if reference then
  md[#md + 1] = string.format("## Paired difference against %s [95%% interval]; ▲ better, ▼ worse (the interval excludes 0)", reference.name)
  md[#md + 1] = ""
  md[#md + 1] = md_table("variant", diff_rows)
  md[#md + 1] = ""
end
for _, p in ipairs(pictures) do md[#md + 1] = p end
local report = table.concat(md, "\n") .. "\n"
for _, f in ipairs { { "results.md", report }, { "summary.json", cjson.encode(summary) .. "\n" } } do
  local ok_write, werr = gm.write_atomic(args.out .. "/" .. f[1], { f[2] })
  if not ok_write then error("ablation.lua: " .. werr, 0) end
end
print(report)
if #pictures == 0 then print("(gnuplot not available: no pictures)") end
print(string.format("done in %.0f s: %s/results.md", gm.clock() - t_start, args.out))
