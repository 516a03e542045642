-- candidates.lua — every tail worth asking about for a passage's queries, from every source, each
-- scored by the model where it can: what the reranker (graphmert.kg.reranker) turns into
-- probabilities.
--
-- A query is a head the passage mentions (placed as extraction places it: gm.eval.extract.queries)
-- and a relation its type allows, asked only when the relation prior (graphmert.kg.relation_prior)
-- gives it at least `threshold`. Its candidate tails, one per entity (the sources of a tail named
-- twice are merged):
--   top_k       the model's constrained top K over the relation's known tails
--   mention     an entity the passage mentions that the relation may reach from the head
--   rules       the tails the dataset's rules propose (graphmert.kg.rules: the best score among
--               them, a rule's measured precision or an affix rewrite's, and how many rules agree)
--   subsumer    for the subsumption relation, the head's lexical subsumers ("inner membrane" for
--               "mitochondrial inner membrane"); subsumer_tail: a subsumer's own tails of the
--               relation in the seed graph (its parents, for is_a)
-- With a model every candidate whose name fits the leaf slots gets the model's score (its mean
-- log-probability per slot), and the query the score of "none" (with a model taught absent).
--
--   candidates.context{graph, tok, layout, relations (name → id), prior, rules (scored, or {}),
--     model (nil: no model features), opts (gm.eval.extract.options'; constrained), top (K),
--     threshold, exclude (entity ids → true: no fact of theirs, as head or tail, is read for a
--     tail's count, its ancestors or a subsumer's tails), unseen
--     (entity ids → true: the run's held-out entities, whose facts training never showed)} → ctx
--   candidates.of(ctx, passages) → per passage (in order) a list of candidates {head_id, relation,
--     tail_id, head (the mention's phrase), span (its first mention, as gm.eval.extract gives it),
--     source (the passage's id), own (the head is the passage's entity), seen (the head is not
--     one of ctx.unseen: its facts were in the model's training), prior,
--     sources = {top_k, mention, subsumer, subsumer_tail = true}, rule_precision, rules,
--     model_score, rank (in the model's top K), best (the query's best model score), none,
--     tail_in_head (the share of the tail's words in the head's name), tail_words_in_passage (in
--     the passage), tail_in_passage (its whole name), same_last_word (the head's), under_subsumer
--     (the tail is a lexical subsumer of the head or below one along the subsumption relation),
--     above_other, below_other (it is above or below another candidate of the query along the
--     subsumption relation: 1 or 0), tail_count, tokens}
local decode = require("graphmert.eval.decode").decode
local extract = require "graphmert.eval.extract"
local linker = require "graphmert.data.linker"
local tail_list = require "graphmert.data.tail_list"
local rules_mod = require "graphmert.kg.rules"
local implied = require "graphmert.eval.implied"
local normalize = linker.normalize

local M = {}

-- relation → tail id → how many of the known facts have it
local function tail_counts(facts)
  local out = {}
  for relation, by_head in pairs(facts) do
    local c = {}
    for _, joined in pairs(by_head) do
      for id in joined:gmatch("[^%z]+") do c[id] = (c[id] or 0) + 1 end
    end
    out[relation] = c
  end
  return out
end

function M.context(c)
  for _, key in ipairs { "graph", "relations", "prior", "layout" } do
    if c[key] == nil then error("candidates.context: " .. key .. " is required", 2) end
  end
  if c.model and (not c.opts or c.opts.mode ~= "constrained") then
    error("candidates.context: a model's candidates need opts of constrained decoding", 2)
  end
  c.rules, c.top, c.threshold, c.unseen = c.rules or {}, c.top or 10, c.threshold or 0, c.unseen or {}
  c.facts = rules_mod.facts(c.graph, c.exclude or {}) -- (what the candidates may know)
  c.counts = tail_counts(c.facts)
  c.implied = c.graph.subsumption and implied.new({ tails = c.facts }, c.graph.subsumption)
  return c
end

-- the entity a head phrase names for a relation: the passage's own entity when the phrase may
-- name it (a synonym two terms share names the one the passage is about), else the first of its
-- entities the relation takes as a head
local function head_entity(graph, relation, phrase, own)
  local types, first = graph.head_types[relation], nil
  for _, id in ipairs(graph:candidates(phrase) or {}) do
    if types == "*" or (types and types[graph.type[id]]) then
      if id == own then return id end
      first = first or id
    end
  end
  return first
end

local function word_set(text)
  local set = {}
  for w in text:gmatch("%S+") do set[w] = true end
  return set
end

-- the share of a tail's words that the head's name has too
local function overlap(tail, head_words)
  local n, shared = 0, 0
  for w in tail:gmatch("%S+") do
    n = n + 1
    if head_words[w] then shared = shared + 1 end
  end
  return n > 0 and shared / n or 0
end

-- whether entity id is one of the subsumers, or below one along the subsumption relation
local function under(ctx, subsumers, id)
  if subsumers[id] then return true end
  if not ctx.implied or not next(subsumers) then return false end
  for above in pairs(ctx.implied:ancestors(id)) do
    if subsumers[above] then return true end
  end
  return false
end

-- the query's candidate for tail entity id (made on first sight, with what needs no model)
local function candidate(ctx, query, id)
  local c = query.tails[id]
  if not c then
    local name = normalize(ctx.graph.name[id])
    c = { head_id = query.head_id, relation = query.relation, tail_id = id, head = query.head, own = query.own,
      seen = not ctx.unseen[query.head_id],
      prior = query.prior, sources = {}, rules = 0, rule_precision = 0, tail_in_head = overlap(name, query.head_words),
      tail_words_in_passage = overlap(name, query.passage_words),
      same_last_word = name:match("(%S+)$") == query.last_word and 1 or 0,
      under_subsumer = under(ctx, query.subsumers, id) and 1 or 0,
      tail_in_passage = query.text:find(" " .. name .. " ", 1, true) and 1 or 0,
      tail_count = (ctx.counts[query.relation] or {})[id] or 0, source = query.source, span = query.span }
    query.tails[id] = c
    query.order[#query.order + 1] = c
  end
  return c
end

-- one passage's queries (those the prior lets through) with their non-model candidates
local function passage_queries(ctx, passage)
  local graph = ctx.graph
  local queries, meta = extract.queries(ctx.tok, ctx.layout, passage, ctx.opts or { graph = graph, relations = ctx.relations })
  local mentioned = graph:heads(passage.text)
  local proposed = {} -- head id \0 relation → the rules' proposals
  if #ctx.rules > 0 then
    for _, t in ipairs(rules_mod.propose(ctx.rules, graph, passage, { facts = ctx.facts })) do
      local k = t.head_id .. "\0" .. t.relation
      proposed[k] = proposed[k] or {}
      table.insert(proposed[k], t)
    end
  end
  local text = " " .. normalize(passage.text) .. " "
  local passage_words = word_set(text)
  local out = {}
  for i, q in ipairs(queries) do
    local m = meta[i]
    local head_id = head_entity(graph, m.relation, m.head, passage.entity)
    local prior = head_id and ctx.prior:probability(head_id, m.relation) or 0
    if head_id and prior >= ctx.threshold then
      local head_name = normalize(graph.name[head_id])
      local subsumers = graph.subsumption and rules_mod.subsumers(graph, graph.subsumption, head_id) or {}
      local query = { query = q, head_id = head_id, relation = m.relation, head = m.head, prior = prior, tails = {}, order = {},
        own = head_id == passage.entity, source = passage.id, span = m.span, text = text, passage_words = passage_words,
        head_words = word_set(head_name), last_word = head_name:match("(%S+)$"), subsumers = {} }
      for _, id in ipairs(subsumers) do query.subsumers[id] = true end
      for _, phrase in ipairs(mentioned) do
        local id = rules_mod.tail_entity(graph, m.relation, head_id, phrase)
        if id then candidate(ctx, query, id).sources.mention = true end
      end
      for _, t in ipairs(proposed[head_id .. "\0" .. m.relation] or {}) do
        local c = candidate(ctx, query, t.tail_id)
        c.rules = c.rules + 1
        c.rule_precision = math.max(c.rule_precision, t.score or 0)
      end
      if graph.subsumption then
        for _, s in ipairs(subsumers) do
          if m.relation == graph.subsumption then candidate(ctx, query, s).sources.subsumer = true end
          for id in ((ctx.facts[m.relation] or {})[s] or ""):gmatch("[^%z]+") do
            if rules_mod.fits(graph, m.relation, head_id, id) then candidate(ctx, query, id).sources.subsumer_tail = true end
          end
        end
      end
      out[#out + 1] = query
    end
  end
  return out
end

-- the model's scores: its top K (new candidates) and every other candidate's score, one decode
local function model_scores(ctx, queries)
  local tok, leaves = ctx.tok, ctx.layout.leaves
  local asked = {}
  for i, query in ipairs(queries) do
    local lists, rows = {}, {}
    for _, c in ipairs(query.order) do
      local ids = tok:encode(ctx.graph.name[c.tail_id])
      c.tokens = #ids
      if #ids >= 1 and #ids <= leaves then lists[#lists + 1], rows[#lists + 1] = ids, c end
    end
    local q = setmetatable({ extra = #lists > 0 and tail_list.new(lists, leaves, tok.pad_id) or nil }, { __index = query.query })
    asked[i], query.rows = q, rows
  end
  local opts = setmetatable({ top = ctx.top }, { __index = ctx.opts })
  local ranked, scored = decode(ctx.model, tok, asked, opts)
  for i, query in ipairs(queries) do
    local s = scored[i]
    query.none = s.none
    for row, c in pairs(query.rows) do c.model_score = s.extra[row] end
    local rank = 0
    for _, cand in ipairs(ranked[i]) do
      if not cand.empty then
        rank = rank + 1
        query.best = query.best or cand.score
        local id = rules_mod.tail_entity(ctx.graph, query.relation, query.head_id, tok:decode(cand.ids))
        if id then
          local c = candidate(ctx, query, id)
          c.tokens = c.tokens or #cand.ids
          c.sources.top_k = true
          c.rank = c.rank or rank
          if not c.model_score or cand.score > c.model_score then c.model_score = cand.score end
        end
      end
    end
  end
end

-- along the subsumption relation, which of a query's candidates lie above another (more general:
-- the seed graph keeps the nearest parents, so a tail above another candidate is often implied,
-- not held) and which below another
local function nesting(ctx, query)
  if not ctx.implied then return end
  for _, c in ipairs(query.order) do c.above_other, c.below_other = 0, 0 end
  for _, c in ipairs(query.order) do
    local up = ctx.implied:ancestors(c.tail_id)
    for _, o in ipairs(query.order) do
      if o ~= c and up[o.tail_id] then c.below_other, o.above_other = 1, 1 end
    end
  end
end

function M.of(ctx, passages)
  local all, per = {}, {}
  for p, passage in ipairs(passages) do
    per[p] = passage_queries(ctx, passage)
    for _, q in ipairs(per[p]) do all[#all + 1] = q end
  end
  if ctx.model and #all > 0 then model_scores(ctx, all) end
  for _, q in ipairs(all) do nesting(ctx, q) end
  local out = {}
  for p, queries in ipairs(per) do
    local list = {}
    for _, q in ipairs(queries) do
      for _, c in ipairs(q.order) do
        c.best, c.none = q.best, q.none
        list[#list + 1] = c
      end
    end
    out[p] = list
  end
  return out
end

return M
