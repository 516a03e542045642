-- rule_extraction.lua — `graphmert extract --extractor rules`: a knowledge graph from string
-- rules alone (graphmert.kg.rules), no model. The rules are the dataset's patterns file
-- (patterns.tsv in its folder, or --patterns FILE) and the built-in ones (rules.builtin: the
-- subsumption and genus rules of its subsumption relation, the parallel rule of each relation,
-- the specialization rule of the relation mirroring the subsumption one, the affix rules its
-- facts teach).
-- Each rule is first measured on the dataset's own passages against its seed graph, and a
-- triple's score is the measured precision of the rule that proposed it (of an affix rule's
-- rewrite, on the seed graph): the share of such triples that hold, which a user can threshold
-- (--min-score 0.8). The triples then go through extract's journal, merge and outputs as a
-- model's do; a triple's `decoding` names its rule
-- ("rule:regulation of X"). The precision is measured on constrained tails: under --decoding open
-- a tail naming no entity keeps its rule's score, which then says less.
--
--   rule_extraction.prepare(cli, dataset, graph, only) → {list (the rules of the relations `only`
--     names, a set, or all when nil; scored), measured, patterns
--     (the file read, or nil), propose(chunk, opts) → the chunk's triples}, after printing each
--     rule's figures and the warnings measuring gave; an error when there is no rule
local gm = require "graphmert"
local rules = require "graphmert.kg.rules"

local M = {}

-- the patterns file: --patterns, else the dataset folder's patterns.tsv when there is one
local function patterns_path(cli, dataset)
  if cli.patterns then return cli.patterns end
  local dir = dataset.name
  local info = dir and gm.stat(dir)
  local path = info and info.type == "directory" and dir .. "/patterns.tsv"
  return path and gm.stat(path) and path or nil
end

local function report(list, measured)
  print("rules, measured on the dataset's own passages (proposed: distinct triples; precision: (held + 1) / (proposed + 2)):")
  for _, rule in ipairs(list) do
    local m = measured[rule.label]
    print(string.format("  %-40s %-22s proposed %7d  held %7d  precision %.3f", rule.label, rule.relation, m.proposed, m.held,
      m.precision))
  end
end

function M.prepare(cli, dataset, graph, only)
  local patterns = patterns_path(cli, dataset)
  local list = patterns and rules.read(patterns, graph) or {}
  -- (the parallel rules alone only pass a known part's tails on to longer names: too little to
  -- call an extractor)
  local enough = #list > 0
  for _, rule in ipairs(rules.builtin(graph)) do
    list[#list + 1] = rule
    enough = enough or rule.generic ~= "parallel"
  end
  if not enough then
    error("no rules: " .. (patterns and (patterns .. " holds none") or "the dataset has no patterns.tsv (--patterns names one)")
      .. ", its schema marks no subsumption relation (relations.tsv's fourth column: docs/datasets.md) and its facts teach"
      .. " no affix rule", 0)
  end
  local kept = {}
  for _, rule in ipairs(list) do if not only or only[rule.relation] then kept[#kept + 1] = rule end end
  local measured, warnings = rules.measure(kept, graph, dataset.passages)
  for _, w in ipairs(warnings) do io.stderr:write("warning: ", w, "\n") end
  rules.score(kept, measured)
  report(kept, measured)
  local open = cli.decoding == "open"
  return { list = kept, measured = measured, patterns = patterns, propose = function(chunk)
    local out = {}
    for _, p in ipairs(chunk) do
      for _, t in ipairs(rules.propose(kept, graph, p, { open = open })) do
        t.decoding = "rule:" .. t.rule
        out[#out + 1] = t
      end
    end
    return out
  end }
end

return M
