-- implied.lua — whether the seed graph implies a triple it does not hold: its tail is an
-- ancestor, along the dataset's subsumption relation (is_a in the Gene Ontology, hypernym in
-- WordNet: the relation the schema declares transitive), of a tail the seed graph gives the head.
-- "glucose catabolic process is_a carbohydrate metabolic process" holds by implication when GO
-- says glucose catabolic process is_a glucose metabolic process is_a ... carbohydrate metabolic
-- process. A more general tail is true but says less; evaluation counts it apart ("implied
-- precision"), never as held.
--
--   local imp = implied.new(graph, "is_a")   -- graph: gm.data.seed_graph
--   imp:holds(t) → true when the seed graph holds t ({head, relation, tail}, names) or implies it
--   imp:ancestors(id) → set of the entity ids above id along the relation (not id itself)
-- Ancestors are found once per entity and kept (the Gene Ontology's deepest term has about a
-- hundred); a cycle in the relation ends the walk, it does not loop.
local linker = require "graphmert.data.linker"

local M = {}

local Implied = {}
Implied.__index = Implied

function M.new(graph, relation)
  return setmetatable({ graph = graph, relation = relation, up = graph.tails[relation] or {}, memo = {} }, Implied)
end

function Implied:ancestors(id)
  local found = self.memo[id]
  if found then return found end
  found = {}
  local queue, head = { id }, 1
  while queue[head] do
    local parents = self.up[queue[head]]
    head = head + 1
    if parents then
      for _, p in ipairs(linker.split(parents)) do
        if not found[p] and p ~= id then
          found[p] = true
          queue[#queue + 1] = p
        end
      end
    end
  end
  self.memo[id] = found
  return found
end

function Implied:holds(t)
  local g = self.graph
  if g:holds(t) then return true end
  local heads = g:candidates(linker.normalize(t.head))
  local tails = g:candidates(linker.normalize(t.tail))
  local by_head = g.tails[t.relation]
  if not heads or not tails or not by_head then return false end
  for _, h in ipairs(heads) do
    for _, known in ipairs(by_head[h] and linker.split(by_head[h]) or {}) do
      local above = self:ancestors(known)
      for _, x in ipairs(tails) do
        if above[x] then return true end
      end
    end
  end
  return false
end

return M
