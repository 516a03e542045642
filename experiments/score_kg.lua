-- score_kg.lua — how much of an extracted knowledge graph does a dataset's seed graph hold, and
-- how much does its relation schema allow? Reads a kg.sqlite store (the top triples per head and
-- relation, as kg.jsonl lists them) or a kg.jsonl, and the dataset --config or --data names.
--   graphmert score --kg out/tiny/kg.sqlite --config tiny [--top 5]
--   graphmert score --kg out/tiny/kg.jsonl --data experiments/data/tiny
-- Prints, overall and per relation: the triples, the share the seed graph holds (precision
-- against it, with a 95% bootstrap interval over triples) and the share whose head and tail types
-- the schema allows (validity).
local gm = require "graphmert"
local ex = gm.experiment
local stats = gm.eval.stats

local args = ex.args.parse(arg, {
  script = "score_kg.lua", about = "Score an extracted knowledge graph (kg.sqlite or kg.jsonl) against a dataset's seed graph.",
  { "kg", nil, "a kg.sqlite store or a kg.jsonl file" },
  { "config", nil, "a config whose dataset to score against (a file or a shipped config's name)" },
  { "data", nil, "a dataset folder to score against" },
  { "top", 5, "triples kept per (head, relation) from a store", type = "integer", min = 1 },
})
local function fail(msg) ex.args.fail("score_kg.lua", msg) end
if not args.kg then fail("--kg is required (see --help)") end
if not args.data == not args.config then fail("give --data DIR or --config FILE (see --help)") end

local info = gm.stat(args.kg)
if not info or info.type ~= "file" then fail(args.kg .. ": not a file") end
local triples = ex.args.try("score_kg.lua", gm.kg.read, args.kg, { top = args.top })
local graph = gm.data.seed_graph.new(ex.args.try("score_kg.lua", ex.named_dataset, args))

local function row(name, list)
  local units = {}
  for i, t in ipairs(list) do units[i] = { held = graph:holds(t) and 1 or 0, valid = graph:valid(t) and 1 or 0 } end
  local lo, hi, held = stats.bootstrap(units, stats.ratio(function(u) return u.held end, function() return 1 end))
  local valid = stats.ratio(function(u) return u.valid end, function() return 1 end)(units)
  if #units == 0 then return string.format("| %-24s | %7d | - | - |", name, 0) end
  return string.format("| %-24s | %7d | %.3f [%.3f, %.3f] | %.3f |", name, #units, held, lo, hi, valid)
end

local by_relation, names = {}, {}
for _, t in ipairs(triples) do
  if not by_relation[t.relation] then by_relation[t.relation] = {}; names[#names + 1] = t.relation end
  table.insert(by_relation[t.relation], t)
end
table.sort(names)
local lines = { "| relation                 | triples | held by the seed graph (95% CI) | valid by the schema |",
  "|--------------------------|---------|----------------------------------|---------------------|", row("all", triples) }
for _, name in ipairs(names) do lines[#lines + 1] = row(name, by_relation[name]) end
print(table.concat(lines, "\n"))
