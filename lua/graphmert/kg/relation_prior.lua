-- relation_prior.lua — how likely a head has any tail at all for a relation, before any text is
-- read: learned from the seed graph's entities, from the head's type and the words of its name.
-- In the Gene Ontology 98.5–99.6% of the regulates edges have "regulation" in the head's name,
-- yet every biological process could be asked all three: a query the prior finds hopeless is not
-- asked, and the prior is one of the reranker's features (graphmert.kg.reranker).
--
-- For each relation, a logistic regression (gm.optim.logistic) over the entities of a type the
-- relation takes as head: the head's type, and whether its name has each of the WORDS words
-- that tell most about the relation (by information gain; among words of at least MIN_COUNT
-- entities). A logistic regression, not naive Bayes: the words of a name are far from
-- independent, and naive Bayes, multiplying their ratios, put GO terms that all have is_a at a
-- prior of 10⁻⁶.
--   relation_prior.fit(graph[, exclude]) → a prior over the graph's entities but those in the set
--     `exclude` (id → true: the held-out entities, so that the prior says nothing of them)
--   prior:probability(head_id, relation) → the probability (0 where the relation does not take
--     the head's type)
--   prior:to_table() / relation_prior.from_table(t, graph, where) → plain tables (JSON) and back,
--     checked, asking about `graph`'s entities
local normalize = require("graphmert.data.linker").normalize
local logistic = require "graphmert.optim.logistic"

local M = {}

local Prior = {}
Prior.__index = Prior

local MIN_COUNT = 3 -- a word of fewer entities tells nothing
local WORDS = 40

local function words_of(name)
  local set, out = {}, {}
  for w in normalize(name):gmatch("%S+") do
    if not set[w] then set[w] = true; out[#out + 1] = w end
  end
  return out
end

local function takes(graph, relation, type)
  local types = graph.head_types[relation]
  return types == "*" or (types ~= nil and types[type] ~= nil)
end

local function entropy(p)
  if p <= 0 or p >= 1 then return 0 end
  return -(p * math.log(p) + (1 - p) * math.log(1 - p))
end

-- the words that tell most about whether an entity has the relation: the largest information
-- gains, ties by word
local function telling_words(counts, with, total)
  local base, scored = entropy(with / total), {}
  for w, c in pairs(counts) do
    local n = c[1] + c[2]
    if n >= MIN_COUNT and n < total then
      local rest = total - n
      local gain = base - (n / total) * entropy(c[1] / n) - (rest / total) * entropy((with - c[1]) / rest)
      scored[#scored + 1] = { w, gain }
    end
  end
  table.sort(scored, function(a, b) return a[2] > b[2] or (a[2] == b[2] and a[1] < b[1]) end)
  local out = {}
  for i = 1, math.min(WORDS, #scored) do out[i] = scored[i][1] end
  return out
end

-- an entity's features for one relation's regression: its type's indicator, then its words'
local function features(r, type, words)
  local row = {}
  for j, t in ipairs(r.types) do row[j] = t == type and 1 or 0 end
  local has = {}
  for _, w in ipairs(words) do has[w] = true end
  for j, w in ipairs(r.words) do row[#r.types + j] = has[w] and 1 or 0 end
  return row
end

function M.fit(graph, exclude)
  exclude = exclude or {}
  local ids = {}
  for id in pairs(graph.name) do if not exclude[id] then ids[#ids + 1] = id end end
  table.sort(ids) -- (a fixed order: the same fit on every run)
  local relations = {}
  for _, relation in ipairs(graph.relation_names) do
    local tails = graph.tails[relation] or {}
    local heads, counts, seen_types, with = {}, {}, {}, 0
    for _, id in ipairs(ids) do
      local type = graph.type[id]
      if takes(graph, relation, type) then
        local has = tails[id] ~= nil
        local words = words_of(graph.name[id])
        heads[#heads + 1] = { type = type, words = words, has = has }
        seen_types[type] = true
        if has then with = with + 1 end
        for _, w in ipairs(words) do
          local c = counts[w] or { 0, 0 }
          counts[w] = c
          c[has and 1 or 2] = c[has and 1 or 2] + 1
        end
      end
    end
    local r = { types = {}, words = telling_words(counts, with, #heads) }
    for t in pairs(seen_types) do r.types[#r.types + 1] = t end
    table.sort(r.types)
    if with == 0 or with == #heads then
      r.constant = with == 0 and 0 or 1 -- (nothing to learn: every head has it, or none)
    else
      local rows, labels = {}, {}
      for i, h in ipairs(heads) do rows[i], labels[i] = features(r, h.type, h.words), h.has end
      r.model = logistic.to_table(logistic.fit(rows, labels, { l2 = 1 }))
    end
    relations[relation] = r
  end
  return setmetatable({ relations = relations, graph = graph }, Prior)
end

function Prior:probability(head_id, relation)
  local r = self.relations[relation]
  local type = self.graph.type[head_id]
  if not r or not takes(self.graph, relation, type) then return 0 end
  if r.constant then return r.constant end
  return logistic.probability(r.model, { features(r, type, words_of(self.graph.name[head_id] or "")) })[1]
end

function Prior:to_table()
  return { relations = self.relations }
end

function M.from_table(t, graph, where)
  where = where or "relation prior"
  if type(t) ~= "table" or type(t.relations) ~= "table" then error(where .. ": must hold `relations`", 2) end
  for relation, r in pairs(t.relations) do
    local at = string.format("%s: relation %s", where, tostring(relation))
    if type(r) ~= "table" or type(r.types) ~= "table" or type(r.words) ~= "table" then
      error(at .. " must hold types, words and a model", 0)
    end
    if r.constant ~= nil and r.constant ~= 0 and r.constant ~= 1 then error(at .. ": constant must be 0 or 1", 0) end
    if r.constant == nil then
      if r.model == nil then error(at .. " must hold types, words and a model", 0) end
      r.model = logistic.from_table(r.model, at)
      if #r.model.weights ~= #r.types + #r.words then
        error(string.format("%s: %d weights for %d types and %d words", at, #r.model.weights, #r.types, #r.words), 0)
      end
    end
  end
  return setmetatable({ relations = t.relations, graph = graph }, Prior)
end

return M
