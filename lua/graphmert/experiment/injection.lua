-- injection.lua — which triples a training record carries, copy by copy, when a config asks for
-- more than its head's facts (cfg.mentions, cfg.absent). Extraction asks a model about every
-- entity mention of a passage and every relation allowed for it; a model trained only on each
-- record's head, and only on relations that hold, has seen neither.
--
-- plan(train, graph, names, relation_names, cfg) sets record.placements on the training records
-- (graph: gm.data.seed_graph; names: entity id → its normalised names): a list of copies, each a
-- list of triples {head, relation, tail, absent} for gm.data.corpus.build:
--   copy c carries the head's c-th fact as before (the last copy also the facts left over, so the
--     build report stays complete) — records are repeated max(1, min(copies, facts)) times;
--   mentions: each other seed-graph entity mentioned in the text (graph:heads) carries one fact
--     of the entities its name denotes, drawn per copy from the training facts (held-out entities
--     and facts never appear: they are not in `train`);
--   absent = a: each mention root with probability a (mentions only), and one extra copy of the
--     head with probability a, carries a relation that no entity of its name has in the seed
--     graph (all of it, held-out parts included, so a held-out fact is never taught as absent)
--     among those its type allows, with absent = true and an empty tail.
-- Draws come from a seeded LCG of their own, so the plan depends on cfg.seed alone.
local normalize = require("graphmert.data.linker").normalize

local M = {}

local function generator(seed)
  local state = seed % 2147483646 + 1
  return function()
    state = state * 48271 % 2147483647
    return (state - 1) / 2147483646
  end
end

local function pick(list, u) return list[1 + math.floor(u * #list) % #list] end

-- name (normalised) → the training facts of the entities it names, their head set to the name
local function facts_by_name(train, names)
  local out = {}
  for _, r in ipairs(train) do
    if r.entity and #r.triples > 0 then
      for _, k in ipairs(names[r.entity]) do
        out[k] = out[k] or {}
        for _, t in ipairs(r.triples) do
          table.insert(out[k], { head = k, relation = t.relation, tail = t.tail })
        end
      end
    end
  end
  return out
end

-- name → the relations allowed for its types that none of its entities has (made on demand)
local function absent_relations(graph, relation_names)
  local cache = {}
  return function(head)
    local k = normalize(head)
    if cache[k] then return cache[k] end
    local present, list = graph:present(k), {}
    for _, name in ipairs(graph:relations_for(k, relation_names)) do
      if not present[name] then list[#list + 1] = name end
    end
    cache[k] = list
    return list
  end
end

function M.plan(train, graph, names, relation_names, cfg)
  local rand = generator(cfg.seed)
  local by_name = cfg.mentions and facts_by_name(train, names) or {}
  local absent_of = absent_relations(graph, relation_names)
  local share = cfg.absent or 0
  local function absent_triple(head)
    local list = absent_of(head)
    if #list == 0 then return nil end
    return { head = head, relation = pick(list, rand()), tail = "", absent = true }
  end
  for _, r in ipairs(train) do
    local own = r.head or (r.triples[1] and r.triples[1].head)
    local mentions = {} -- heads() gives each name once; the record's own head keeps its facts
    if cfg.mentions then
      local own_key = own and normalize(own)
      for _, h in ipairs(graph:heads(r.text)) do
        if h ~= own_key then mentions[#mentions + 1] = h end
      end
    end
    local n = math.max(1, math.min(cfg.copies or 1, #r.triples))
    local copies = {}
    for c = 1, n do
      copies[c] = c < n and { r.triples[c] } or { table.unpack(r.triples, c) }
    end
    if own and share > 0 and rand() < share then copies[#copies + 1] = { absent_triple(own) } end
    for _, copy in ipairs(copies) do
      for _, h in ipairs(mentions) do
        local t = rand() < share and absent_triple(h) or nil
        if not t and by_name[h] then t = pick(by_name[h], rand()) end
        copy[#copy + 1] = t
      end
    end
    r.placements = copies
  end
end

return M
