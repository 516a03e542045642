-- ablation_pictures.lua — the ablation grid's pictures (gnuplot, through gm.experiment.plot):
-- training loss per variant, the metrics per λ with their intervals, attention mass by graph
-- distance next to the learned decay, and the learned p per head.
--   draw(g, out) → the markdown lines showing the pictures written into `out` (none without gnuplot)
-- g: an ablation_grid whose cells hold their results and whose variants their summary
-- (ablation_figures.summarize).
local cjson = require "cjson"
local figures = require "graphmert.experiment.ablation_figures"
local report = require "graphmert.experiment.report"

local M = {}

local function block(name, rows)
  local lines = { "$" .. name .. " << EOD" }
  for _, r in ipairs(rows) do lines[#lines + 1] = table.concat(r, " ") end
  lines[#lines + 1] = "EOD"
  return table.concat(lines, "\n")
end

-- training loss: mean over seeds and the band between the lowest and highest seed, averaged over
-- windows of steps (single steps are too noisy to read)
local function loss_picture(g, picture)
  local steps = g.cfg.steps
  local window = math.max(1, steps // 50)
  local loss_blocks, loss_plots = {}, { {}, {} }
  for vi, v in ipairs(g.variants) do
    local rows = {}
    for first = 1, steps, window do
      local last = math.min(steps, first + window - 1)
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
end

-- metrics per λ with their intervals (no decay drawn at λ = 1, where the decay factor is 1)
local function metrics_picture(g, picture)
  local shown = { "mlm_acc", "entities_tail10", "facts_tail10", "precision" }
  local metric_cmds, metric_blocks = { "set multiplot layout 2,2", "set xlabel 'λ (1 = no decay)'", "set xrange [0.3:1.05]" }, {}
  for hi, hgat in ipairs { true, false } do
    for mi, key in ipairs(shown) do
      local rows = {}
      for _, v in ipairs(g.variants) do
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
    for _, m in ipairs(figures.metrics) do if m.key == key then label = m.name end end
    metric_cmds[#metric_cmds + 1] = string.format("set title '%s (mean over seeds, 95%% interval)'", label)
    metric_cmds[#metric_cmds + 1] = string.format("plot $M1_%d using ($1-0.005):2:3:4 with yerrorlines lw 2 title 'H-GAT on', " ..
      "$M2_%d using ($1+0.005):2:3:4 with yerrorlines lw 2 title 'H-GAT off'", mi, mi)
  end
  metric_cmds[#metric_cmds + 1] = "unset multiplot"
  picture("metrics_by_lambda.png", "metrics per λ", metric_cmds)
end

-- attention mass by graph distance next to the learned decay factor (mean over heads), per λ,
-- H-GAT as in the reference; and the learned p per head
local function attention_pictures(g, picture)
  local att_blocks, att_plot, decay_plot, p_plot = {}, {}, {}, {}
  for vi, v in ipairs(g.variants) do
    if v.hgat == (g.cfg.grid.reference.hgat ~= false) then
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
end

function M.draw(g, out)
  local pictures = {}
  local function picture(file, title, commands)
    if report.plot(out .. "/" .. file, "pngcairo size 1200,700 noenhanced", commands) then
      pictures[#pictures + 1] = string.format("![%s](%s)", title, file)
    end
  end
  loss_picture(g, picture)
  metrics_picture(g, picture)
  attention_pictures(g, picture)
  return pictures
end

return M
