-- ablation_grid.lua — the λ × H-GAT ablation's grid (experiments/ablation.lua): its variants (λ
-- in grid.lambdas, false = no decay; H-GAT in grid.hgat) and their cells (one per training seed
-- in grid.seeds), each trained on the same budget and data split and measured on units that are
-- the same for every cell. A finished cell is written to CELLS/<cell>.json (atomically), so a
-- stopped grid is resumed by running the same command again; under MPI rank r runs the cells r,
-- r + K, ... by itself.
--   new(cfg, d, cells_dir) → grid {variants, cells, reference, passages, ...}
--   run(grid)        this rank's cells, those not finished before
--   collect(grid)    (rank 0, after every rank) cell.result for every cell
local gm = require "graphmert"
local cjson = require "cjson"
local dist = require "graphmert.distributed"
local args = require "graphmert.experiment.args"
local metrics = require "graphmert.experiment.metrics"
local preparation = require "graphmert.experiment.preparation"
local progress = require "graphmert.experiment.progress"
local trainer = require "graphmert.experiment.trainer"
local variants = require "graphmert.experiment.variants"
local extract = gm.eval.extract
local merge = require "graphmert.kg.merge"

local M = {}

local SCRIPT = "ablation.lua"

local function lambda_name(l) return l and string.format("%g", l) or "none" end

-- The grid of a config (cfg.grid) on prepared data d: the held-out passages extraction is
-- measured on, the sequences attention is probed on, the variants and their cells, and what a
-- cell's figures depend on besides its λ, H-GAT and seed (a cell of other settings is not kept).
function M.new(cfg, d, cells_dir)
  local grid = cfg.grid
  local g = { cfg = cfg, d = d, cells_dir = cells_dir, variants = {}, cells = {},
    passages = preparation.heldout_passages(d, grid.passages), probe = {} }
  for first = 1, math.min(grid.probe_sequences, #d.eval_seqs), cfg.batch do
    g.probe[#g.probe + 1] = gm.data.corpus.batch(d.eval_seqs, first, math.min(cfg.batch, grid.probe_sequences - first + 1))
  end
  for _, lambda in ipairs(grid.lambdas) do
    for _, hgat in ipairs(grid.hgat) do
      local v = { lambda = lambda, hgat = hgat, cells = {},
        name = string.format("λ=%s, H-GAT %s", lambda_name(lambda), hgat and "on" or "off") }
      v.reference = lambda == (grid.reference.lambda or false) and hgat == (grid.reference.hgat ~= false)
      if v.reference then g.reference = v end
      g.variants[#g.variants + 1] = v
      for _, seed in ipairs(grid.seeds) do
        local cell = { variant = v, seed = math.tointeger(seed),
          name = string.format("lambda-%s_hgat-%s_seed-%d", lambda_name(lambda), hgat and "on" or "off", seed) }
        cell.path = cells_dir .. "/" .. cell.name .. ".json"
        v.cells[#v.cells + 1] = cell
        g.cells[#g.cells + 1] = cell
      end
    end
  end
  g.setup = variants.settings(cfg, gm.json.flat({ steps = cfg.steps, data = cfg.data }))
  return g
end

-- a cell's result from an earlier run, nil when there is none; one of other settings, or not
-- whole, is a usage error
local function read_cell(g, cell)
  local f = io.open(cell.path, "r")
  if not f then return nil end
  local ok, result = pcall(cjson.decode, f:read("a"))
  f:close()
  if not ok or type(result) ~= "table" or result.name ~= cell.name then
    args.fail(SCRIPT, string.format("%s is not a finished cell (remove it to run the cell again)", cell.path))
  end
  if result.setup ~= g.setup then
    local differ = gm.json.differences(result.setup or "{}", g.setup)
    args.fail(SCRIPT, string.format("%s was run with other settings (%s%s): give another --out, or remove %s to "
      .. "start over", cell.path, table.concat(differ, "; ", 1, math.min(#differ, 4)), #differ > 4 and "; ..." or "", g.cells_dir))
  end
  return result
end

-- Trains one cell and measures everything; the cell's json is its only output.
local function run_cell(g, cell, index)
  local cfg, d, main = g.cfg, g.d, dist.is_main()
  local v = cell.variant
  local c = variants.variant(cfg, { lambda = v.lambda, hgat = v.hgat })
  c.seed = cell.seed
  local dd = preparation.reorder(d, cell.seed)
  gm.manual_seed(cell.seed)
  local model = variants.model(dd, c)
  local opt = gm.optim.adamw(model:named_parameters(), { lr = c.lr, weight_decay = c.weight_decay })
  local train_step = trainer.trainer(dd, c, model, opt, { alone = true })
  local losses, t0 = {}, gm.clock()
  local line = progress.new { stream = io.stdout, total = c.steps, enabled = main }
  for step = 1, c.steps do
    losses[step] = train_step(step)
    line:update(step, string.format("cell %d/%d %-34s step %d/%d  loss %.4f", index, #g.cells, cell.name, step, c.steps, losses[step]))
  end
  line:finish()
  local train_seconds = gm.clock() - t0
  local acc, _, per_sequence = trainer.masked_accuracy(dd, c, model, { alone = true })
  local tails = metrics.tail_metrics(dd, c, model)
  local opts = extract.options(cfg, d.graph, d.relations, { mode = "constrained", top = 1, tails = metrics.known_tails(d) })
  local extraction = {}
  model:evaluating(function()
    for i, p in ipairs(g.passages) do
      local u = extract.score_passage(d.graph, d.relations, p,
        merge.merge(extract.triples(model, d.tok, { p }, opts), { top = 1 }))
      extraction[i] = { u.correct, u.n, u.valid, u.multi }
    end
  end)
  local per_node, mass = gm.eval.attention_by_distance(model, g.probe)
  local factors, p = gm.eval.decay_by_distance(model, math.max(#mass - 1, 0))
  local hits, totals = {}, {}
  for i, u in ipairs(per_sequence) do hits[i], totals[i] = u.hits, u.total end
  local result = { name = cell.name, setup = g.setup, lambda = v.lambda, hgat = v.hgat, seed = cell.seed, steps = c.steps,
    train_seconds = train_seconds, seconds = gm.clock() - t0, losses = losses, acc = acc,
    acc_units = { hits = hits, totals = totals },
    facts = tails.facts.tail.ranks, entities = tails.entities.tail.ranks, extraction = extraction,
    attention = per_node, attention_mass = mass, decay = factors and { factors = factors, p = p } or cjson.null }
  local ok, err = gm.write_atomic(cell.path, { cjson.encode(result) })
  if not ok then error("ablation.lua: " .. err, 0) end
  if main then io.write(string.format("  %.0f s; MLM acc %.3f\n", result.seconds, acc)) end
  return result
end

-- Runs this rank's cells, keeping those an earlier run finished; a Ctrl-C ends the process
-- (status 130) with the finished cells kept.
function M.run(g)
  local ok, err = pcall(function()
    for i, cell in ipairs(g.cells) do
      if (i - 1) % dist.size() == dist.rank() then
        if read_cell(g, cell) then
          dist.say(string.format("cell %d/%d %s: kept from an earlier run\n", i, #g.cells, cell.name))
        else
          run_cell(g, cell, i)
        end
      end
    end
  end)
  if not ok then
    if gm.errors.kind(err) == "interrupted" then
      dist.say(string.format("\ninterrupted: the finished cells are kept in %s; run the same command to go on\n", g.cells_dir))
      os.exit(130)
    end
    error(err, 0)
  end
end

-- Every cell's result, read back from disk (the cells of every rank are there once all ran).
function M.collect(g)
  for _, cell in ipairs(g.cells) do
    cell.result = read_cell(g, cell)
    if not cell.result then error("ablation.lua: cell " .. cell.name .. " did not finish", 0) end
  end
end

return M
