-- ablation_figures.lua — the ablation grid's figures (experiments/ablation.lua): for every metric,
-- the mean over seeds with a 95% interval and each variant's paired difference against the
-- reference cell, the most frequent tail for scale, and results.md and summary.json.
--   metrics: {name, key, units(result) → the cell's units, statistic}
--   summarize(g, config_name) → summary (summary.json's table; v.summary for each variant)
--   write(g, summary, pictures, out, config_name) → results.md's text, written with summary.json
-- Intervals: percentile bootstrap (2,000 resamples) drawing the seeds and, once for all seeds, the
-- units (gm.eval.stats.over_seeds / paired_over_seeds); a difference is marked better (▲) or
-- worse (▼) only when its interval excludes 0.
local gm = require "graphmert"
local cjson = require "cjson"
local metrics = require "graphmert.experiment.metrics"
local preparation = require "graphmert.experiment.preparation"
local stats = gm.eval.stats

local M = {}

local function ranks_metric(field, keep)
  return { units = function(r) return r[field] end,
           statistic = stats.ratio(function(rank) return keep(rank) end, function() return 1 end) }
end
M.metrics = {
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
    M.metrics[#M.metrics + 1] = entry
  end
end
M.metrics[#M.metrics + 1] = { name = "precision", key = "precision",
  units = function(r) return r.extraction end,
  statistic = stats.ratio(function(u) return u[1] end, function(u) return u[2] end) }

local BOOT = { samples = 2000, seed = 1 }
-- a figure over no units (e.g. a split without held-out facts) is NaN: "-" in the tables, null
-- in summary.json, left out of the pictures
local function figure(low, high, value)
  if value ~= value then return nil end
  return { value = value, low = low, high = high }
end

-- a variant's units of one metric, seed by seed
local function units_of(v, metric)
  local out = {}
  for s, cell in ipairs(v.cells) do out[s] = metric.units(cell.result) end
  return out
end

function M.summarize(g, config_name)
  local cfg, reference = g.cfg, g.reference
  local summary = { config = config_name, steps = cfg.steps, batch = cfg.batch, seeds = cfg.grid.seeds, variants = {} }
  for _, v in ipairs(g.variants) do
    local entry = { name = v.name, lambda = v.lambda, hgat = v.hgat, metrics = {}, differences = {} }
    for _, m in ipairs(M.metrics) do
      entry.metrics[m.key] = figure(stats.over_seeds(units_of(v, m), m.statistic, BOOT))
      if reference and v ~= reference then
        entry.differences[m.key] = figure(stats.paired_over_seeds(units_of(v, m), units_of(reference, m), m.statistic, BOOT))
      end
    end
    summary.variants[#summary.variants + 1] = entry
    v.summary = entry
  end
  -- the most frequent training tail per relation, for scale (not trained: intervals over triples)
  local frequent = metrics.baseline_metrics(g.d, cfg)
  local frequent_row = {}
  for _, m in ipairs(M.metrics) do
    local part = m.key:match("^(%a+)_")
    if part == "facts" or part == "entities" then
      frequent_row[m.key] = figure(stats.bootstrap(frequent[part].tail.ranks, m.statistic, BOOT))
    end
  end
  summary.most_frequent_tail = frequent_row
  return summary
end

local function cellfmt(x) return x and string.format("%.3f [%.3f, %.3f]", x.value, x.low, x.high) or "-" end
local function difffmt(x, is_reference)
  if is_reference then return "(reference)" end
  if not x then return "-" end
  local mark = (x.low > 0 and " ▲") or (x.high < 0 and " ▼") or ""
  return string.format("%+.3f [%+.3f, %+.3f]%s", x.value, x.low, x.high, mark)
end
local function md_table(first, rows)
  local head = { first }
  for _, m in ipairs(M.metrics) do head[#head + 1] = m.name end
  local lines = { "| " .. table.concat(head, " | ") .. " |", "|" .. string.rep("---|", #head) }
  for _, r in ipairs(rows) do lines[#lines + 1] = "| " .. table.concat(r, " | ") .. " |" end
  return table.concat(lines, "\n")
end

function M.write(g, summary, pictures, out, config_name)
  local cfg, d, cells, reference = g.cfg, g.d, g.cells, g.reference
  local mean_rows, diff_rows = {}, {}
  for _, v in ipairs(g.variants) do
    local row, drow = { v.name }, { v.name }
    for _, m in ipairs(M.metrics) do
      row[#row + 1] = cellfmt(v.summary.metrics[m.key])
      drow[#drow + 1] = difffmt(v.summary.differences[m.key], v == reference)
    end
    mean_rows[#mean_rows + 1], diff_rows[#diff_rows + 1] = row, drow
  end
  local frow = { "most frequent tail" }
  for _, m in ipairs(M.metrics) do frow[#frow + 1] = cellfmt(summary.most_frequent_tail[m.key]) end
  mean_rows[#mean_rows + 1] = frow

  local seconds = 0
  for _, cell in ipairs(cells) do seconds = seconds + cell.result.seconds end
  local seed_list = {}
  for i, s in ipairs(cfg.grid.seeds) do seed_list[i] = tostring(math.tointeger(s)) end
  local md = {
    "# λ × H-GAT ablation on " .. d.dataset_name, "",
    string.format("`%s`, %d steps of batch %d per cell, seeds %s, %d cells (%.0f cell-seconds); %s.", config_name,
      cfg.steps, cfg.batch, table.concat(seed_list, ", "), #cells, seconds, preparation.summary(d)), "",
    string.format("Units: %d held-out sequences (MLM acc), %d held-out facts, %d held-out entities' triples, %d held-out passages (precision: top tail per head and relation, constrained decoding). " ..
      "Intervals: 95%% percentile bootstrap, %d resamples of the seeds and of the units.",
      #cells[1].result.acc_units.hits, #cells[1].result.facts, #cells[1].result.entities, #g.passages, BOOT.samples), "",
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
    local ok_write, werr = gm.write_atomic(out .. "/" .. f[1], { f[2] })
    if not ok_write then error("ablation.lua: " .. werr, 0) end
  end
  return report
end

return M
