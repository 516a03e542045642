-- injection.lua — which triples a training record carries, copy by copy, when a config asks for
-- more than its head's facts (cfg.mentions, cfg.absent). Extraction asks a model about every
-- entity mention of a passage and every relation allowed for it; a model trained only on each
-- record's head, and only on relations that hold, has seen neither.
--
-- plan(train, wn, graph, relation_names, cfg) sets record.placements on the training records: a
-- list of copies, each a list of triples {head, relation, tail, absent} for gm.data.corpus.build:
--   copy c carries the head's c-th fact as before (the last copy also the facts left over, so the
--     build report stays complete) — records are repeated max(1, min(copies, facts)) times;
--   mentions: each other seed-graph entity mentioned in the text (gm.eval.extract.heads) carries
--     one fact of the synsets its lemma names, drawn per copy from the training facts (held-out
--     synsets and facts never appear: they are not in `train`);
--   absent = a: each mention root with probability a (mentions only), and one extra copy of the head with probability a, carries a
--     relation that no synset of its lemma has in WordNet (all of it, held-out parts included, so
--     a held-out fact is never taught as absent) among those allowed for its kind, with
--     absent = true and an empty tail.
-- Draws come from a seeded LCG of their own, so the plan depends on cfg.seed alone.
local extract = require "graphmert.eval.extract"

local M = {}

local function generator(seed)
  local state = seed % 2147483646 + 1
  return function()
    state = state * 48271 % 2147483647
    return (state - 1) / 2147483646
  end
end

local function pick(list, u) return list[1 + math.floor(u * #list) % #list] end

-- lemma (lower-cased) → the training facts of the synsets it names, their head set to the lemma
local function facts_by_lemma(train, wn)
  local out = {}
  for _, r in ipairs(train) do
    local s = r.synset and wn.synsets[r.synset]
    if s and #r.triples > 0 then
      for _, l in ipairs(s.lemmas) do
        local k = l:lower()
        out[k] = out[k] or {}
        for _, t in ipairs(r.triples) do
          table.insert(out[k], { head = k, relation = t.relation, tail = t.tail })
        end
      end
    end
  end
  return out
end

-- lemma → the relations allowed for its kind that none of its synsets has (made on demand)
local function absent_relations(wn, graph, names)
  local cache = {}
  return function(lemma)
    local k = lemma:lower()
    if cache[k] then return cache[k] end
    local present = {}
    for _, key in ipairs(graph.lemmas[k] or {}) do
      for _, p in ipairs(wn.synsets[key].pointers) do present[p.relation] = true end
    end
    local list = {}
    for _, name in ipairs(extract.relations_for(graph, k, names)) do
      if not present[name] then list[#list + 1] = name end
    end
    cache[k] = list
    return list
  end
end

function M.plan(train, wn, graph, relation_names, cfg)
  local rand = generator(cfg.seed)
  local by_lemma = cfg.mentions and facts_by_lemma(train, wn) or {}
  local absent_of = absent_relations(wn, graph, relation_names)
  local share = cfg.absent or 0
  local function absent_triple(head)
    local list = absent_of(head)
    if #list == 0 then return nil end
    return { head = head, relation = pick(list, rand()), tail = "", absent = true }
  end
  for _, r in ipairs(train) do
    local s = r.synset and wn.synsets[r.synset]
    local own = s and s.lemmas[1] or (r.triples[1] and r.triples[1].head)
    local mentions = {} -- heads() gives each lemma once; the record's own head keeps its facts
    if cfg.mentions then
      local own_key = own and own:lower()
      for _, h in ipairs(extract.heads(r.text, graph.lemmas)) do
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
        if not t and by_lemma[h] then t = pick(by_lemma[h], rand()) end
        copy[#copy + 1] = t
      end
    end
    r.placements = copies
  end
end

return M
