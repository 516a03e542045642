-- heldout_tables.lua — the held-out evaluation's tables beside the main one
-- (graphmert.experiment.heldout_extraction), for every system compared, from its per-passage
-- units (gm.eval.extract.score_passage's), with 95% percentile bootstrap intervals over passages:
--   ranking(systems, implied) → lines: precision and implied precision (a triple the seed graph
--     implies along the subsumption relation counts: gm.eval.implied), and the precision each
--     system reaches at recall 0.10, 0.20 and 0.30 ranked by its own score (gm.eval.ranking: the
--     best over the thresholds that reach it; "-" where none does) and the recall it keeps at
--     precision 0.70, and those again counting only the triples and facts of the passage's own
--     entity
--   by_relation(systems, implied) → lines: the same figures per relation and by head: the
--     passage's own entity (its subject) or another entity it mentions (a rule system's rows: its
--     rules' relations only)
local stats = require "graphmert.eval.stats"
local ranking = require "graphmert.eval.ranking"

local M = {}

M.RECALLS = { 0.10, 0.20, 0.30 }
M.PRECISION = 0.70 -- the precision at which the recall kept is given

local function sum(units, field)
  local s = 0
  for _, u in ipairs(units) do s = s + u[field] end
  return s
end

-- a share with its interval over the units, "-" when nothing is counted
local function share(units, num, den)
  if sum(units, den) == 0 then return "-" end
  local l, h, v = stats.bootstrap(units, stats.ratio(function(u) return u[num] end, function(u) return u[den] end))
  return string.format("%.3f [%.3f, %.3f]", v, l, h)
end

local function at_recall(units, recall)
  local l, h, v = ranking.precision_at_interval(units, recall)
  if not v then return "-" end
  return string.format("%.3f [%.3f, %.3f]", v, l, h)
end

local function at_precision(units)
  local l, h, v = ranking.recall_at_interval(units, M.PRECISION)
  return string.format("%.3f [%.3f, %.3f]", v, l, h)
end

-- the units with only the triples and facts of heads that are the passage's own entity: what a
-- new passage adds about its subject, not facts of the entities it mentions, which a model
-- trained with `mentions` was shown (they count as held, but are no news)
local function own_units(units)
  local out = {}
  for k, u in ipairs(units) do
    local v = { scored = {}, gold = 0 }
    for _, e in ipairs(u.scored) do if e.own then v.scored[#v.scored + 1] = e end end
    for _, f in ipairs(u.facts) do if f.own then v.gold = v.gold + 1 end end
    out[k] = v
  end
  return out
end

local function verdict(low, high)
  return (low > 0 and " (better)") or (high < 0 and " (worse)") or " (the interval includes 0)"
end

-- the pipeline's precision at each recall, and its recall at precision 0.70, against the systems
-- it must beat: the same pipeline without the model (what the model adds) and the rules alone,
-- paired over passages

local function differences_at_recall(systems, lines)
  local by_name = {}
  for _, s in ipairs(systems) do by_name[s.name] = s end
  local pipeline = by_name["pipeline"]
  if not (pipeline and pipeline.ranked_units) then return end
  local added = false
  for _, other in ipairs { by_name["pipeline without model"], by_name["rules"] } do
    local units = other and (other.ranked_units or other.units)
    if units and #units == #pipeline.ranked_units then
      for _, r in ipairs(M.RECALLS) do
        local l, h, v = ranking.difference_at_interval(pipeline.ranked_units, units, r)
        if not added then lines[#lines + 1] = ""; added = true end
        lines[#lines + 1] = v and string.format("pipeline − %s, precision at recall %.2f: %+.3f [%+.3f, %+.3f]%s", other.name,
          r, v, l, h, verdict(l, h))
          or string.format("pipeline − %s, precision at recall %.2f: - (%s does not reach it)", other.name, r,
            ranking.precision_at(pipeline.ranked_units, r) and other.name or "the pipeline")
      end
      local l, h, v = ranking.recall_difference_interval(pipeline.ranked_units, units, M.PRECISION)
      lines[#lines + 1] = string.format("pipeline − %s, recall at precision %.2f: %+.3f [%+.3f, %+.3f]%s", other.name, M.PRECISION,
        v, l, h, verdict(l, h))
    end
  end
end

function M.ranking(systems, implied)
  local head = { "| system | triples | precision [95% CI] | implied precision [95% CI] |" }
  local rule = { "|---|---|---|---|" }
  for _, r in ipairs(M.RECALLS) do
    head[#head + 1] = string.format(" precision at recall %.2f [95%% CI] |", r)
    rule[#rule + 1] = "---|"
  end
  head[#head + 1], rule[#rule + 1] = string.format(" recall at precision %.2f [95%% CI] |", M.PRECISION), "---|"
  local lines = { "## Precision by each system's own ranking, and implied precision", "",
    "Each system's triples ranked by its own score (GraphMERT's mean log-probability, a rule's precision on the " ..
    "training passages or an affix rewrite's on the seed graph, the frequency of the most frequent tail); precision at a recall is the best over the " ..
    "score thresholds that reach that recall of the held-out facts (\"-\": none does); recall at a precision, the " ..
    "largest of the thresholds whose precision is at least that (0: none). " ..
    (implied and string.format("Implied precision also counts a triple whose tail is an ancestor, along %s, of " ..
      "a tail the seed graph gives the head: true, but more general.", implied.relation)
      or "Implied precision needs a subsumption relation in the schema; this dataset marks none, so it is precision."),
    "", table.concat(head), table.concat(rule) }
  for _, s in ipairs(systems) do
    local row = { string.format("| %s | %d | %s | %s |", s.name, sum(s.units, "n"), share(s.units, "correct", "n"),
      share(s.units, "implied", "n")) }
    for _, r in ipairs(M.RECALLS) do row[#row + 1] = " " .. at_recall(s.ranked_units or s.units, r) .. " |" end
    row[#row + 1] = " " .. at_precision(s.ranked_units or s.units) .. " |"
    lines[#lines + 1] = table.concat(row)
  end
  differences_at_recall(systems, lines)
  lines[#lines + 1] = ""
  lines[#lines + 1] = "The same precision at recall counting only the triples whose head is the passage's own entity (the " ..
    "held-out entity: facts no training passage showed), and its facts:"
  lines[#lines + 1] = ""
  head, rule = { "| system |" }, { "|---|" }
  for _, r in ipairs(M.RECALLS) do
    head[#head + 1] = string.format(" own heads: precision at recall %.2f [95%% CI] |", r)
    rule[#rule + 1] = "---|"
  end
  head[#head + 1], rule[#rule + 1] = string.format(" own heads: recall at precision %.2f [95%% CI] |", M.PRECISION), "---|"
  lines[#lines + 1], lines[#lines + 2] = table.concat(head), table.concat(rule)
  for _, s in ipairs(systems) do
    local units, row = own_units(s.ranked_units or s.units), { "| " .. s.name .. " |" }
    for _, r in ipairs(M.RECALLS) do row[#row + 1] = " " .. at_recall(units, r) .. " |" end
    row[#row + 1] = " " .. at_precision(units) .. " |"
    lines[#lines + 1] = table.concat(row)
  end
  return lines
end

-- per passage, the counts of the triples and facts of one relation and kind of head
local function subset(units, relation, own)
  local out = {}
  for k, u in ipairs(units) do
    local v = { n = 0, correct = 0, implied = 0, gold = 0, recalled = 0 }
    for _, t in ipairs(u.triples) do
      if t.relation == relation and t.own == own then
        v.n = v.n + 1
        if t.held then v.correct = v.correct + 1 end
        if t.implied then v.implied = v.implied + 1 end
      end
    end
    for _, f in ipairs(u.facts) do
      if f.relation == relation and f.own == own then
        v.gold = v.gold + 1
        if f.recalled then v.recalled = v.recalled + 1 end
      end
    end
    out[k] = v
  end
  return out
end

function M.by_relation(systems, implied)
  local relations, seen = {}, {}
  for _, s in ipairs(systems) do
    for _, u in ipairs(s.units) do
      for _, list in ipairs { u.triples, u.facts } do
        for _, t in ipairs(list) do
          if not seen[t.relation] then seen[t.relation] = true; relations[#relations + 1] = t.relation end
        end
      end
    end
  end
  table.sort(relations)
  local lines = { "## By relation, and by head: the passage's own entity or another it mentions", "",
    "| system | relation | head | triples | precision [95% CI] | implied precision [95% CI] | facts | recall [95% CI] |",
    "|---|---|---|---|---|---|---|---|" }
  for _, s in ipairs(systems) do
    -- (a rule system speaks of its rules' relations only: rows of the others would be noise)
    local speaks
    if s.rules then
      speaks = {}
      for _, rule in ipairs(s.rules) do speaks[rule.relation] = true end
    end
    for _, relation in ipairs(relations) do
      for _, own in ipairs((not speaks or speaks[relation]) and { true, false } or {}) do
        local u = subset(s.units, relation, own)
        local n, gold = sum(u, "n"), sum(u, "gold")
        if n > 0 or gold > 0 then
          lines[#lines + 1] = string.format("| %s | %s | %s | %d | %s | %s | %d | %s |", s.name, relation,
            own and "own" or "other", n, share(u, "correct", "n"), implied and share(u, "implied", "n") or "-", gold,
            share(u, "recalled", "gold"))
        end
      end
    end
  end
  return lines
end

return M
