-- heldout_extraction.lua — what experiments/extract_eval.lua measures: extraction from passages
-- the model never saw (the held-out entities' passages), the top tail per (head, relation)
-- scored against the seed graph, for GraphMERT, the same budget's model without decay and H-GAT
-- (the run's baseline/ folder, when it exists), the most frequent training tail per relation
-- asked the same queries, and the dataset's string rules (all, and the generic ones alone).
--   systems(script, checkpoint, d, data_dir) → the systems compared, their models loaded and the
--     rules of the dataset (data_dir's patterns.tsv and the generic ones) measured
--   prepare(script, cli[, checked]) → run, cfg, tok, d, relations: the run and its dataset,
--     prepared and checked against each other
--   halves(script, config, d) → validation, test, exclude (preparation.heldout_halves), or a
--     usage error when a half is empty
--   rule_list(script, d, data_dir) → those rules, each scored by its precision on the training
--     passages; the built-in ones; what measuring found (graphmert.kg.rules)
--   run(systems, e)             each system's per-passage scores (system.units) and time; the
--     pipelines' (graphmert.experiment.heldout_pipeline: with the model and without) also
--     ranked_units, every candidate's, for precision at recall
--   table(systems, e) → the report's lines     pr_curve(systems, out_dir) → whether pr.png was drawn
-- e: {d (prepared data), tok, graph, relations (name → id), opts (gm.eval.extract.options),
-- passages, decoding, checkpoint, implied (gm.eval.implied along the subsumption relation, or nil)}
local gm = require "graphmert"
local args = require "graphmert.experiment.args"
local preparation = require "graphmert.experiment.preparation"
local progress = require "graphmert.experiment.progress"
local report = require "graphmert.experiment.report"
local run_folder = require "graphmert.experiment.run_folder"
local data_options = require "graphmert.experiment.data_options"
local extract, stats = gm.eval.extract, gm.eval.stats
local merge = require "graphmert.kg.merge"
local rules = require "graphmert.kg.rules"
local heldout_pipeline = require "graphmert.experiment.heldout_pipeline"

local M = {}

-- The dataset's string rules as systems (graphmert.kg.rules): all of them together, and each
-- kind of built-in rule alone (subsumption, genus and specialization only with a subsumption
-- relation; the parallel or the affix rules of every relation, one system each). Every
-- rule is measured on the training passages only, so that a score — its precision there — says
-- nothing of the held-out ones, and reads no fact of a held-out entity; a rules file that does
-- not read is the command's usage error.
function M.rule_list(script, d, data_dir)
  local path = data_dir and data_dir .. "/patterns.tsv"
  local list = path and gm.stat(path) and args.try(script, rules.read, path, d.graph) or {}
  local exclude = preparation.heldout_entities(d)
  local generic = rules.builtin(d.graph, exclude) -- (the affix rules learned without the held-out facts)
  for _, rule in ipairs(generic) do list[#list + 1] = rule end
  if #list == 0 then return list, generic end
  local train = {}
  for i, r in ipairs(d.train) do train[i] = { id = r.id, text = r.text, entity = r.about } end
  local measured, warnings = rules.measure(list, d.graph, train, { facts = rules.facts(d.graph, exclude), exclude = exclude })
  for _, w in ipairs(warnings) do io.stderr:write("warning: ", w, "\n") end
  rules.score(list, measured)
  return list, generic, measured
end

-- all the rules, and each kind of built-in rule alone
local function rule_systems(script, d, data_dir)
  local list, generic, measured = M.rule_list(script, d, data_dir)
  if #list == 0 then return {} end
  local systems, kinds = { { name = "rules", rules = list, measured = measured } }, {}
  for _, rule in ipairs(generic) do
    local kind = kinds[rule.generic]
    if not kind then
      kind = { name = rule.generic .. " rule alone", rules = {} }
      kinds[rule.generic] = kind
      systems[#systems + 1] = kind
    end
    kind.rules[#kind.rules + 1] = rule
  end
  return systems
end

-- The run and the dataset it was trained on, checked against each other, for a command that
-- works on the held-out passages (evaluate, calibrate): cli = its options (checkpoint, config,
-- data, precision); checked() runs once the arguments hold, before the dataset is read.
function M.prepare(script, cli, checked)
  local function fail(msg) args.fail(script, msg) end
  if not cli.checkpoint then fail("--checkpoint is required (see --help)") end
  args.apply_precision(cli)
  local run = args.try(script, run_folder.read_run, cli.checkpoint)
  -- a run sized from its data (train --data, no config) holds its config: the folder's own file, read
  -- as its run.json is (a path run.json names elsewhere is never followed)
  local own = cli.checkpoint .. "/config.lua"
  local owned = not cli.config and not cli.data and gm.stat(own) ~= nil
  if owned then cli.config = own end
  if not cli.config then
    fail(string.format("--config is required: the config the run was trained with (run.json records %s%s)", tostring(run.config),
      run.data.dir and (", with data " .. tostring(run.data.dir)) or ""))
  end
  if checked then checked() end
  local cfg = args.try(script, data_options.config, cli)
  if owned and run.settings and run.settings ~= require("graphmert.experiment.variants").settings(cfg) then
    fail(string.format("%s has changed since the run was trained: give the config it was trained with (--config)", own))
  end
  if not run_folder.same_data(cfg.data, run.data) then
    fail(string.format("%s names data %s, but the run was trained on %s (pass --data when training had it)", cli.config,
      run_folder.data_string(cfg.data), run_folder.data_string(run.data)))
  end
  local tok = args.try(script, run_folder.load_tokenizer, cli.checkpoint, run)
  gm.manual_seed(cfg.seed)
  local d = args.try(script, preparation.prepare, cfg, tok)
  if table.concat(d.graph.relation_names, ",") ~= table.concat(run.relations, ",") then -- every figure would be 0
    fail(string.format("the dataset's relations (%s) are not the run's (%s): is it the dataset the run was trained on?",
      table.concat(d.graph.relation_names, ", "), table.concat(run.relations, ", ")))
  end
  local relations = {}
  for id, name in ipairs(run.relations) do relations[name] = id end
  return run, cfg, tok, d, relations
end

-- the held-out passages' halves (preparation.heldout_halves), refused as a usage error when
-- either is empty: the rerankers are fit on one and every system measured on the other
function M.halves(script, config, d)
  local validation, test, exclude = preparation.heldout_halves(d)
  if #test == 0 or #validation == 0 then
    args.fail(script, string.format("%s holds %s out of training (heldout): the rerankers are fit on the passages of one " ..
      "half of the held-out entities and every system is measured on the other", config,
      #d.heldout == 0 and "no entity" or "too few entities"))
  end
  return validation, test, exclude
end

-- GraphMERT, its baseline when the run has one, the most frequent tail, and the dataset's rules;
-- every checkpoint loads and every rule is read before any work
function M.systems(script, checkpoint, d, data_dir)
  local systems = { { name = "GraphMERT", dir = checkpoint } }
  local baseline_dir = checkpoint .. "/baseline"
  if gm.stat(baseline_dir .. "/run.json") then systems[2] = { name = "no decay, no H-GAT", dir = baseline_dir } end
  systems[#systems + 1] = { name = "most frequent tail" }
  local rule_list = {}
  for _, system in ipairs(rule_systems(script, d, data_dir)) do
    systems[#systems + 1] = system
    if system.name == "rules" then rule_list = system.rules end
  end
  for _, system in ipairs(systems) do
    if system.dir then system.model = args.try(script, run_folder.load_model, system.dir) end
  end
  for _, system in ipairs(heldout_pipeline.systems(systems[1].model, rule_list)) do systems[#systems + 1] = system end
  return systems
end

-- the most frequent tail of each relation in training, for the frequency baseline
local function frequent_tails(d, tok)
  local frequent = {}
  local ranked, totals = gm.eval.tails_by_frequency(d.train)
  for rel, list in pairs(ranked) do
    frequent[rel] = { tail = list[1][1], tokens = #tok:encode(list[1][1]), score = math.log(list[1][2] / totals[rel]) }
  end
  return frequent
end

-- the baseline's triples for a passage: the most frequent tail for every query a model is asked
local function frequent_triples(e, frequent, p, into)
  local _, meta = extract.queries(e.tok, e.d.layout, p, e.opts)
  for _, m in ipairs(meta) do
    local f = frequent[m.relation]
    if f then
      table.insert(into, { head = m.head, relation = m.relation, tail = f.tail, tokens = f.tokens, score = f.score,
        source = p.id })
    end
  end
end

-- one system that is no pipeline: its triples passage by passage, the top tail per head and relation
local function run_one(system, e, frequent)
  local passages, opts = e.passages, e.opts
  local units, t0 = {}, gm.clock()
  local line = progress.new { stream = io.stderr, total = #passages }
  local model = system.model
  if model and e.decoding == "constrained" and not opts.tails then
    opts.tails = e.graph:known_tails(e.tok, e.relations, model.layout.leaves)
  end
  -- the passages in chunks (extract.triples batches across a chunk's passages), scored one by one
  local CHUNK = 32
  for first = 1, #passages, CHUNK do
    local chunk = table.move(passages, first, math.min(#passages, first + CHUNK - 1), 1, {})
    local per = {}
    for _, p in ipairs(chunk) do per[p.id] = {} end
    if model then
      for _, t in ipairs(extract.triples(model, e.tok, chunk, opts)) do table.insert(per[t.source], t) end
    elseif system.rules then
      e.rule_facts = e.rule_facts or rules.facts(e.graph, e.exclude) -- (none of a held-out entity's)
      for _, p in ipairs(chunk) do per[p.id] = rules.propose(system.rules, e.graph, p, { facts = e.rule_facts }) end
    else
      for _, p in ipairs(chunk) do frequent_triples(e, frequent, p, per[p.id]) end
    end
    for i, p in ipairs(chunk) do
      units[first + i - 1] = extract.score_passage(e.graph, e.relations, p, merge.merge(per[p.id], { top = 1 }), e.implied)
    end
    local done = first + #chunk - 1
    line:update(done, string.format("%-20s %d/%d passages", system.name, done, #passages))
  end
  line:finish()
  system.seconds = gm.clock() - t0
  system.units = units
end

function M.run(systems, e)
  local frequent = frequent_tails(e.d, e.tok)
  for _, system in ipairs(systems) do
    if system.pipeline then heldout_pipeline.run(system, e) else run_one(system, e, frequent) end
  end
end

local function sum(units, field)
  local s = 0
  for _, u in ipairs(units) do s = s + u[field] end
  return s
end
local function field_ratio(num, den) return stats.ratio(function(u) return u[num] end, function(u) return u[den] end) end

-- GraphMERT's precision against each other system's, passage by passage
local function differences(systems, passages, lines)
  for i = 2, #systems do
    -- the same passages under both systems: pair unit k of one with unit k of the other
    if systems[1].extracted == 0 or systems[i].extracted == 0 then
      lines[#lines + 1] = string.format("GraphMERT − %s, precision: no difference to take (%s extracted no triple)",
        systems[i].name, systems[1].extracted == 0 and "GraphMERT" or systems[i].name)
    else
      local pairs = {}
      for k = 1, #passages do pairs[k] = { systems[1].units[k], systems[i].units[k] } end
      local l, h, v = stats.paired(pairs,
        stats.ratio(function(p) return p[1].correct end, function(p) return p[1].n end),
        stats.ratio(function(p) return p[2].correct end, function(p) return p[2].n end))
      lines[#lines + 1] = string.format("GraphMERT − %s, precision: %+.3f [%+.3f, %+.3f]%s", systems[i].name, v, l, h,
        (l > 0 and " (better)") or (h < 0 and " (worse)") or " (the interval includes 0)")
    end
  end
end

function M.table(systems, e)
  local passages, opts = e.passages, e.opts
  local lines = {
    string.format("# Extraction on %d held-out passages (%s decoding, top tail per head and relation%s; %s)", #passages,
      e.decoding, opts.empty and ", unless the model ranks \"none\" first" or "",
      opts.pack and "a passage's heads asked together" or "one query per sequence"), "",
    string.format("`%s`, %s; 95%% intervals: percentile bootstrap over passages (1,000 resamples).", e.checkpoint,
      preparation.summary(e.d)), "",
    "| model | triples | precision [95% CI] | recall [95% CI] | validity [95% CI] | multi-token share of correct | multi-word share of correct [95% CI] | passages/s |",
    "|---|---|---|---|---|---|---|---|" }
  for _, s in ipairs(systems) do
    local u = s.units
    local n, correct = sum(u, "n"), sum(u, "correct")
    s.extracted = n
    -- a share with its interval; of nothing it is "-", not 0: a system that asserts no triple has
    -- no precision
    local function cell(num, den)
      if sum(u, den) == 0 then return "-" end
      local l, h, v = stats.bootstrap(u, field_ratio(num, den))
      return string.format("%.3f [%.3f, %.3f]", v, l, h)
    end
    lines[#lines + 1] = string.format("| %s | %d | %s | %s | %s | %s | %s | %s |", s.name, n,
      n > 0 and cell("correct", "n") or "- (no triples)", cell("recalled", "gold"), cell("valid", "n"),
      correct > 0 and not s.rules and not (s.pipeline and not s.pipeline.model) and string.format("%.3f", sum(u, "multi_token") / correct) or "-", cell("multi", "correct"),
      (s.dir or (s.pipeline and s.pipeline.model)) and string.format("%.1f", #passages / s.seconds) or "-")
  end
  if #systems > 1 then
    lines[#lines + 1] = ""
    differences(systems, passages, lines)
  end
  return lines
end

-- precision and recall over score thresholds (each system's own score scale): pr.csv, and pr.png
-- when gnuplot draws it
function M.pr_curve(systems, out_dir)
  local csv, blocks = { "system,threshold,precision,recall" }, {}
  for _, s in ipairs(systems) do
    local block = {}
    local units = s.ranked_units or s.units
    local all, gold = {}, sum(units, "gold")
    for _, u in ipairs(units) do for _, e in ipairs(u.scored) do all[#all + 1] = e end end
    table.sort(all, function(a, b) return a.score > b.score end)
    local n, correct, recalled = 0, 0, 0
    for i, e in ipairs(all) do
      if e.recall then recalled = recalled + 1 else n = n + 1; if e.held then correct = correct + 1 end end
      if (i == #all or all[i + 1].score < e.score) and n > 0 then
        local p, r = correct / n, gold > 0 and recalled / gold or 0
        csv[#csv + 1] = string.format('"%s",%.6f,%.6f,%.6f', s.name, e.score, p, r)
        block[#block + 1] = string.format("%.6f %.6f", r, p)
      end
    end
    blocks[#blocks + 1] = block
  end
  local f = assert(io.open(out_dir .. "/pr.csv", "w"))
  f:write(table.concat(csv, "\n"), "\n")
  f:close()
  local plot = { "set xlabel 'recall of held-out facts'", "set ylabel 'precision'", "set key bottom right" }
  local series = {}
  for i, s in ipairs(systems) do
    plot[#plot + 1] = string.format("$S%d << EOD\n%s\nEOD", i, #blocks[i] > 0 and table.concat(blocks[i], "\n") or "0 0")
    -- (a system with one score, a lone rule, is one point: a line through it would not show)
    series[#series + 1] = string.format("$S%d using 1:2 with %s title '%s'", i, #blocks[i] > 1 and "lines" or "points pt 7 ps 1.5",
      s.name)
  end
  plot[#plot + 1] = "plot " .. table.concat(series, ", ")
  return report.plot(out_dir .. "/pr.png", "png size 900,600", plot)
end

return M
