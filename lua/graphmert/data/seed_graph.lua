-- seed_graph.lua — what extraction and evaluation ask of a dataset's seed graph, indexed once:
-- the linker over every entity name and alias (gm.data.linker), each entity's type, the types
-- each relation joins (the schema, or those its triples join), and the facts it holds.
--
--   local g = seed_graph.new(dataset)
--   g:heads(text) → the distinct entity phrases mentioned in the text (normalised), in order
--   g:candidates(phrase) → the ranked entity ids a name or alias denotes (nil: none)
--   g:entity(text) → the entity a name or alias (any case, not normalised) denotes first, and its
--     preferred name (nil: none) — how a knowledge graph names what extraction found
--   g:relations_for(phrase, names) → the relations of `names` whose schema allows a head of a
--     type the phrase's entities have
--   g:present(phrase) → set of the relations the phrase's entities have as heads in the seed graph
--   g:known_tails(tok, relations, leaves) → relation id → token-id lists of the names and
--     aliases of the types the relation reaches that fit the leaves (constrained decoding's list)
--   g:holds(t) → whether a head candidate of t.head has t.relation to a tail candidate of t.tail
--   g:valid(t) → whether t.tail names an entity of a type t.relation reaches
-- Phrases are strings; a triple's head and tail are normalised before they are looked up.
-- Everything is kept in flat tables of strings (no table per entity or triple), so a graph of
-- 10⁵ entities costs the collector little during training.
local linker = require "graphmert.data.linker"

local M = {}

local Graph = {}
Graph.__index = Graph

function M.new(ds)
  local g = setmetatable({ type = {}, name = {}, facts = {}, has = {}, relation_names = ds.relation_names,
    head_types = {}, tail_types = {} }, Graph)
  local count = {}
  for _, t in ipairs(ds.triples) do
    g.facts[t.head .. "\0" .. t.relation .. "\0" .. t.tail] = true
    g.has[t.head .. "\0" .. t.relation] = true
    count[t.head] = (count[t.head] or 0) + 1
    count[t.tail] = (count[t.tail] or 0) + 1
  end
  for name, s in pairs(ds.schema) do g.head_types[name], g.tail_types[name] = s.head, s.tail end
  g.linker = linker.new(ds.link)
  for _, id in ipairs(ds.entity_order) do
    local e = ds.entities[id]
    g.type[id], g.name[id] = e.type, e.name
    g.linker:add(id, e.name, true, count[id])
    for _, a in ipairs(e.aliases) do g.linker:add(id, a, false, count[id]) end
  end
  g.linker:freeze()
  return g
end

function Graph:heads(text) return self.linker:heads(text) end

function Graph:candidates(phrase) return self.linker:candidates(phrase) end

function Graph:entity(text)
  local ids = self.linker:candidates(linker.normalize(text))
  if ids then return ids[1], self.name[ids[1]] end
end

-- whether a phrase names an entity of a type in `types` (a set, or "*" for any)
local function of_type(g, phrase, types)
  if not types then return false end
  local ids = g.linker:candidates(phrase)
  if not ids then return false end
  if types == "*" then return true end
  for _, id in ipairs(ids) do if types[g.type[id]] then return true end end
  return false
end

function Graph:relations_for(phrase, names)
  local out = {}
  for _, name in ipairs(names) do
    if of_type(self, phrase, self.head_types[name]) then out[#out + 1] = name end
  end
  return out
end

function Graph:present(phrase)
  local out = {}
  for _, id in ipairs(self.linker:candidates(phrase) or {}) do
    for _, name in ipairs(self.relation_names) do
      if self.has[id .. "\0" .. name] then out[name] = true end
    end
  end
  return out
end

function Graph:known_tails(tok, relations, leaves)
  local phrases = {}
  for phrase in pairs(self.linker.index) do phrases[#phrases + 1] = phrase end
  table.sort(phrases) -- a fixed order: ties rank the same on every run
  local encoded = {}
  for _, phrase in ipairs(phrases) do
    local ids = tok:encode(phrase)
    if #ids > 0 and #ids <= leaves then encoded[#encoded + 1] = { phrase, ids } end
  end
  local out = {}
  for name, id in pairs(relations) do
    local list = {}
    for _, e in ipairs(encoded) do
      if of_type(self, e[1], self.tail_types[name]) then list[#list + 1] = e[2] end
    end
    out[id] = list
  end
  return out
end

function Graph:holds(t)
  local heads, tails = self.linker:candidates(linker.normalize(t.head)), self.linker:candidates(linker.normalize(t.tail))
  if not heads or not tails then return false end
  for _, h in ipairs(heads) do
    for _, x in ipairs(tails) do
      if self.facts[h .. "\0" .. t.relation .. "\0" .. x] then return true end
    end
  end
  return false
end

function Graph:valid(t) return of_type(self, linker.normalize(t.tail), self.tail_types[t.relation]) end

return M
