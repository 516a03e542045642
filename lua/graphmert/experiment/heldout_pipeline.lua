-- heldout_pipeline.lua — the extraction pipeline whose scores are probabilities, in the held-out
-- evaluation (experiments/extract_eval.lua): candidates from every source scored by the model
-- (graphmert.kg.candidates), queries the relation prior finds hopeless not asked, and a reranker
-- (graphmert.kg.reranker) fit on the validation half of the held-out entities and measured on
-- the test half, which is every system's test. Two systems: the full pipeline, and the same
-- pipeline with every model feature removed (rules, prior and reranker alone), which says what the
-- model adds.
--   systems(model, rules) → the two systems (the first only with a model)
--   context(system, e) → the candidates' context (graphmert.kg.candidates) of the system on e
--   fit(system, e) → its reranker fit on e.validation, and the context (an error when the
--     candidates give nothing to learn from)
--   run(system, e)  fits the system's reranker on e.validation and scores e.passages (when the
--     validation candidates hold none, or all, no reranker is fit: system.unfit says so, and the
--     system asserts nothing): its units
--     (the triples of probability ≥ THRESHOLD, for the main table), ranked_units (the candidates of
--     probability ≥ RANKED, for precision at recall), predictions ({p, held} of every test candidate) and seconds
--   calibration(systems, out_dir) → the report's lines (expected calibration error, reliability
--     table) and reliability.png through gnuplot when it is there
-- e (heldout_extraction's, with): validation (passages), prior (graphmert.kg.relation_prior),
--   exclude (the held-out entities), tok, graph, relations, opts, d
local gm = require "graphmert"
local candidates = require "graphmert.kg.candidates"
local reranker = require "graphmert.kg.reranker"
local calibration = require "graphmert.eval.calibration"
local extract = require "graphmert.eval.extract"
local progress = require "graphmert.experiment.progress"
local report = require "graphmert.experiment.report"

local M = {}

M.THRESHOLD = 0.5 -- the main table's triples: those the pipeline gives at least even odds
M.PRIOR = 0.01    -- a query below this prior is not asked
M.TOP = 10        -- the model's candidates per query
-- the ranked candidates (precision at recall) of at least this probability: the others, most of
-- them, never reach a recall of the table's (WordNet's hundreds of thousands made its bootstrap
-- take an hour)
M.RANKED = 0.01

function M.systems(with_model, rules)
  local out = {}
  if with_model then out[1] = { name = "pipeline", pipeline = { model = with_model, rules = rules } } end
  out[#out + 1] = { name = "pipeline without model", pipeline = { rules = rules } }
  return out
end

local function relation_list(relations)
  local list = {}
  for name in pairs(relations) do list[#list + 1] = name end
  table.sort(list)
  return list
end

-- a chunk's candidates, CHUNK passages a decode, with a progress line
local function all_candidates(ctx, passages, label)
  local out, CHUNK = {}, 32
  local line = progress.new { stream = io.stderr, total = #passages }
  for first = 1, #passages, CHUNK do
    local chunk = table.move(passages, first, math.min(#passages, first + CHUNK - 1), 1, {})
    for i, list in ipairs(candidates.of(ctx, chunk)) do out[first + i - 1] = list end
    local done = first + #chunk - 1
    line:update(done, string.format("%-20s %d/%d passages", label, done, #passages))
  end
  line:finish()
  return out
end

local function held(graph, c)
  return graph:holds { head = graph.name[c.head_id], relation = c.relation, tail = graph.name[c.tail_id] }
end

-- the candidates' context for a system (its model or none) on e's data
function M.context(system, e)
  local p = system.pipeline
  -- (constrained whatever the others' decoding: the candidates are the seed graph's entities)
  local opts = setmetatable({ mode = "constrained" }, { __index = e.opts })
  if p.model then
    e.constrained_tails = e.constrained_tails or e.graph:known_tails(e.tok, e.relations, p.model.layout.leaves)
    opts.tails = e.constrained_tails
  end
  return candidates.context { graph = e.graph, tok = e.tok, layout = e.d.layout, relations = e.relations, prior = e.prior,
    rules = p.rules, model = p.model, opts = opts, top = M.TOP, threshold = M.PRIOR, exclude = e.exclude,
    unseen = e.exclude }
end

function M.fit(system, e)
  local graph, ctx = e.graph, M.context(system, e)
  local fit_on, labels = {}, {}
  for _, list in ipairs(all_candidates(ctx, e.validation, system.name .. " (fit)")) do
    for _, c in ipairs(list) do
      fit_on[#fit_on + 1] = c
      labels[#labels + 1] = held(graph, c)
    end
  end
  return reranker.fit(fit_on, labels, { relations = relation_list(e.relations), model = system.pipeline.model ~= nil }), ctx
end

function M.run(system, e)
  local graph = e.graph
  local ok, fitted, ctx = pcall(M.fit, system, e)
  -- (a small split can hold no candidate that holds: the pipeline asserts nothing, and says why;
  -- any other error, Ctrl-C among them, goes on up)
  if not ok and tostring(fitted):sub(1, #reranker.NOTHING) ~= reranker.NOTHING then error(fitted, 0) end
  if not ok then
    system.unfit = tostring(fitted):sub(#reranker.NOTHING + 1)
    system.units, system.seconds = {}, 0
    for k, passage in ipairs(e.passages) do system.units[k] = extract.score_passage(graph, e.relations, passage, {}, e.implied) end
    return
  end
  system.reranker = fitted
  local t0 = gm.clock()
  local per = all_candidates(ctx, e.passages, system.name)
  system.seconds = gm.clock() - t0
  system.units, system.ranked_units, system.predictions = {}, {}, {}
  for k, list in ipairs(per) do
    local best, order = {}, {} -- one triple per head, relation and tail entity: its best probability
    for _, c in ipairs(list) do
      local t = system.reranker:triple(graph, c)
      local key = c.head_id .. "\0" .. c.relation .. "\0" .. c.tail_id
      system.predictions[#system.predictions + 1] = { t.score, held(graph, c) }
      if not best[key] then order[#order + 1] = key end
      if not best[key] or t.score > best[key].score then best[key] = t end
    end
    local all, kept = {}, {}
    for _, key in ipairs(order) do
      if best[key].score >= M.RANKED then all[#all + 1] = best[key] end
      if best[key].score >= M.THRESHOLD then kept[#kept + 1] = best[key] end
    end
    local passage = e.passages[k]
    system.units[k] = extract.score_passage(graph, e.relations, passage, kept, e.implied)
    system.ranked_units[k] = extract.score_passage(graph, e.relations, passage, all, e.implied)
  end
end

function M.calibration(systems, out_dir)
  local lines = { "## Calibration of the pipelines' probabilities", "",
    string.format("The reranker is fit on the validation half of the held-out entities and measured here, on the test half; " ..
      "every candidate is counted (not only those of probability ≥ %.1f). Expected calibration error: 10 equal bins, " ..
      "Σ share × |mean probability − share that holds|.", M.THRESHOLD), "",
    "| system | fit on (candidates, holding) | test candidates | expected calibration error | per bin: mean probability → share that holds (candidates) |",
    "|---|---|---|---|---|" }
  local plot, series = { "set xlabel 'probability given'", "set ylabel 'share that holds'", "set key top left",
    "set xrange [0:1]", "set yrange [0:1]" }, { "x title 'calibrated' with lines dt 2 lc rgb 'gray'" }
  for i, s in ipairs(systems) do
    if s.unfit then
      lines[#lines + 1] = string.format("| %s | no reranker: %s | - | - | - |", s.name, s.unfit)
    elseif s.predictions then
      local ece, bins = calibration.ece(s.predictions)
      local cells, points = {}, {}
      for _, b in ipairs(bins) do
        if b.count > 0 then
          cells[#cells + 1] = string.format("%.2f → %.2f (%d)", b.mean, b.observed, b.count)
          points[#points + 1] = string.format("%.6f %.6f", b.mean, b.observed)
        end
      end
      s.ece = ece
      lines[#lines + 1] = string.format("| %s | %d, %d | %d | %s | %s |", s.name, s.reranker.examples, s.reranker.positives,
        #s.predictions, ece and string.format("%.3f", ece) or "-", table.concat(cells, "; "))
      plot[#plot + 1] = string.format("$R%d << EOD\n%s\nEOD", i, #points > 0 and table.concat(points, "\n") or "0 0")
      series[#series + 1] = string.format("$R%d using 1:2 with linespoints pt 7 title '%s'", i, s.name)
    end
  end
  plot[#plot + 1] = "plot " .. table.concat(series, ", ")
  local drawn = report.plot(out_dir .. "/reliability.png", "png size 700,600", plot)
  lines[#lines + 1] = ""
  lines[#lines + 1] = drawn and "![reliability of the pipelines' probabilities](reliability.png)" or "(gnuplot not available: no reliability.png)"
  return lines
end

return M
