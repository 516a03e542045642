-- score_kg.lua — how much of an extracted knowledge graph does a dataset's seed graph hold, how
-- much does its relation schema allow, and how much did a person accept? Reads a kg.sqlite store
-- (the top triples per head and relation, as kg.jsonl lists them) or a kg.jsonl, the seed graph
-- of the training run --checkpoint names (the one extract read) or of the dataset --config or
-- --data names, and a review the KG page exported (--gold).
--   graphmert score --kg out/tiny/kg.sqlite --config tiny [--top 5]
--   graphmert score --kg out/tiny/kg.jsonl --data experiments/data/tiny
--   graphmert score --kg out/tiny/kg.jsonl --checkpoint out/tiny
--   graphmert score --kg out/tiny/kg.jsonl --gold review.jsonl [--config tiny]
-- Prints, overall and per relation: the triples, the share the seed graph holds (precision
-- against it, with a 95% Wilson interval over triples) and the share whose head and tail types
-- the schema allows (validity). With --gold: the triples reviewed and the share accepted
-- (precision by review, with its interval over the reviewed triples); decisions about triples
-- the graph lacks are counted on stderr, not scored.
local gm = require "graphmert"
local ex = gm.experiment
local data_options = require "graphmert.experiment.data_options"
local stats = gm.eval.stats

local args = ex.args.parse(arg, {
  script = "score_kg.lua", about = "Score an extracted knowledge graph (kg.sqlite or kg.jsonl) against a dataset's seed graph.",
  { "kg", nil, "a kg.sqlite store or a kg.jsonl file" },
  { "checkpoint", nil, "a training run whose seed graph to score against (the dataset it was trained on)" },
  { "config", nil, "a config whose dataset to score against (a file or a shipped config's name)" },
  { "data", nil, "a dataset folder to score against" },
  { "top", 5, "triples kept per (head, relation) from a store", type = "integer", min = 1 },
  { "gold", nil, "a review exported by the KG page (review.jsonl): precision by a person's decisions" },
})
local function fail(msg) ex.args.fail("score_kg.lua", msg) end
if not args.kg then fail("--kg is required (see --help)") end
if args.checkpoint and (args.data or args.config) then fail("give one of --checkpoint, --data and --config") end
data_options.check("score_kg.lua", args, not (args.gold or args.checkpoint), "--checkpoint RUN, or --gold review.jsonl")

local info = gm.stat(args.kg)
if not info or info.type ~= "file" then fail(args.kg .. ": not a file") end
local triples = ex.args.try("score_kg.lua", gm.kg.read, args.kg, { top = args.top })
local graph = ex.args.try("score_kg.lua", data_options.seed_graph, args)
if graph and #triples > 0 then -- a graph scored against another dataset than its own scores 0 by every measure
  local known, foreign, n_foreign = {}, {}, 0
  for _, name in ipairs(graph.relation_names) do known[name] = true end
  for _, t in ipairs(triples) do
    if not known[t.relation] then foreign[t.relation], n_foreign = true, n_foreign + 1 end
  end
  local names = {}
  for name in pairs(foreign) do names[#names + 1] = name end
  table.sort(names)
  if #names > 0 then
    local said = string.format("%s's relation%s %s %s not in %s's schema (%s)", args.kg, #names > 1 and "s" or "",
      table.concat(names, ", "), #names > 1 and "are" or "is", graph.dataset, table.concat(graph.relation_names, ", "))
    if n_foreign == #triples then fail(said .. ": is it the dataset the graph was extracted with?") end
    io.stderr:write(said .. ": their triples count as neither held nor valid\n")
  end
end
local verdicts -- kg.key → 1 accepted, 0 rejected
if args.gold then
  verdicts = {}
  local in_kg, lacking = {}, 0
  for _, t in ipairs(triples) do in_kg[gm.kg.key(t)] = true end
  for _, d in ipairs(ex.args.try("score_kg.lua", gm.kg.read_review, args.gold)) do
    local key = gm.kg.key(d)
    if in_kg[key] then verdicts[key] = d.verdict == "accept" and 1 or 0 else lacking = lacking + 1 end
  end
  if lacking > 0 then
    io.stderr:write(string.format("%s: %d decisions are about triples %s lacks (not scored)\n", args.gold, lacking, args.kg))
  end
end

-- the share of units that are 1, with its 95% interval: triples are judged one by one, so Wilson's
-- score interval, which stays honest for a handful of them (a bootstrap over one triple is [x, x])
local function interval(units, value)
  local yes = 0
  for _, u in ipairs(units) do yes = yes + value(u) end
  local lo, hi, x = stats.wilson(yes, #units)
  return string.format("%.3f [%.3f, %.3f]", x, lo, hi)
end

-- a graph whose scores are all probabilities (graphmert calibrate's reranker): their mean, the
-- share of its triples expected to hold, beside the share that does
local calibrated = #triples > 0
for _, t in ipairs(triples) do calibrated = calibrated and t.decoding == gm.kg.CALIBRATED end

local function row(name, list)
  local cells = { string.format("| %-24s | %7d |", name, #list) }
  if calibrated then
    local sum = 0
    for _, t in ipairs(list) do sum = sum + t.score end
    cells[#cells + 1] = string.format(" %.3f |", #list > 0 and sum / #list or 0)
  end
  if graph then
    local units = {}
    for i, t in ipairs(list) do units[i] = { held = graph:holds(t) and 1 or 0, valid = graph:valid(t) and 1 or 0 } end
    if #units == 0 then
      cells[#cells + 1] = " - | - |"
    else
      local valid = stats.ratio(function(u) return u.valid end, function() return 1 end)(units)
      cells[#cells + 1] = string.format(" %s | %.3f |", interval(units, function(u) return u.held end), valid)
    end
  end
  if verdicts then
    local reviewed = {}
    for _, t in ipairs(list) do reviewed[#reviewed + 1] = verdicts[gm.kg.key(t)] end
    cells[#cells + 1] = string.format(" %8d | %s |", #reviewed,
      #reviewed > 0 and interval(reviewed, function(v) return v end) or "-")
  end
  return table.concat(cells)
end

local by_relation, names = {}, {}
for _, t in ipairs(triples) do
  if not by_relation[t.relation] then by_relation[t.relation] = {}; names[#names + 1] = t.relation end
  table.insert(by_relation[t.relation], t)
end
table.sort(names)
local header, rule = { "| relation                 | triples |" }, { "|--------------------------|---------|" }
if calibrated then
  header[#header + 1] = " mean probability |"
  rule[#rule + 1] = "------------------|"
end
if graph then
  header[#header + 1] = " held by the seed graph (95% CI) | valid by the schema |"
  rule[#rule + 1] = "----------------------------------|---------------------|"
end
if verdicts then
  header[#header + 1] = " reviewed | accepted by review (95% CI) |"
  rule[#rule + 1] = "----------|-----------------------------|"
end
local lines = { table.concat(header), table.concat(rule), row("all", triples) }
for _, name in ipairs(names) do lines[#lines + 1] = row(name, by_relation[name]) end
if calibrated then
  lines[#lines + 1] = "(scores are probabilities: the mean is the share of the triples expected to hold on text like the " ..
    "run's held-out passages; the seed graph counts a true fact it lacks as wrong)"
end
print(table.concat(lines, "\n"))
