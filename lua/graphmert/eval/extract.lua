-- extract.lua — a knowledge graph from text with a trained model, and its score against WordNet
-- (validity in the spirit of the paper's ValidityScore).
--
-- seed_graph(wordnet) → graph: lemmas (lower-cased lemma → synset keys), and per relation the
--   parts of speech of its heads and of its tails in the seed graph (what "a head of its kind"
--   and "a tail of the kind the relation reaches" mean here)
-- heads(text, lemmas, max_words = 3) → head strings found in the text (lemmas, longest match
--   first, multi-word, case-folded, at most one per position), each once, in order of first
--   appearance; a one-word match that is an English function word (M.function_words: "a", "in",
--   "or", "be", ... — WordNet also has them as the letter a, Indiana, Oregon) is not a mention
-- relations_for(graph, head, names) → the relation names of `names` that the seed graph has for
--   heads of this head's parts of speech
-- known_tails(graph, tok, relations, leaves) → relation id → token-id lists of the lemmas of the
--   kinds the relation reaches that fit the leaves (constrained decoding's list)
-- triples(model, tok, passages, opts) → extracted triples {head, relation, tail, tokens, score,
--   source, decoding}: for each passage {id, text}, each head found and each relation allowed for it (or
--   opts.only), the tails gm.eval.decode gives (opts: graph, relations = name → id, mode, top,
--   tail_end, empty, batch, only = set of names); with empty, only the tails ranked above the
--   empty one (the model's "this head has no such relation")
-- merge(triples, {top = 5, min_score}) → one entry per (head, relation, tail): count = passages
--   supporting it, sources = their ids, score = the best; self-loops and tails without a letter
--   dropped; the top per (head, relation) kept, best first
-- queries(tok, layout, passage, opts) → the decoder's queries for one passage and their meta
-- holds(graph, wordnet, t), valid(graph, t) → one triple's held and valid flags
-- score(triples, graph, wordnet) → {n, held, valid}: held = the share WordNet holds (a synset of
--   the head has the relation to a synset of the tail); valid = the share whose tail is a lemma
--   of a part of speech the relation reaches
-- score_passage(graph, wordnet, relations, passage, triples) → one passage's figures for a
--   bootstrap over passages: passage = {text, gold = its WordNet triples}, triples = what was
--   extracted from it (the top tail per head and relation); → {n, correct (WordNet holds it),
--   valid, multi (correct with a multi-word tail), multi_token (correct with a tail of several
--   tokens: t.tokens, the decoded tail's token count), gold (its facts whose relation is known and
--   head is found in the text), recalled (of those, extracted), scored = {score, held | recall}
--   for precision–recall curves}
local gm = require "graphmert"
local decode = require("graphmert.eval.decode").decode

local M = {}

local function pos_of(key) return key:sub(-1) end

function M.seed_graph(wn)
  local lemmas, head_kinds, tail_kinds = {}, {}, {}
  for key, s in pairs(wn.synsets) do
    for _, l in ipairs(s.lemmas) do
      local k = l:lower()
      lemmas[k] = lemmas[k] or {}
      lemmas[k][#lemmas[k] + 1] = key
    end
    for _, p in ipairs(s.pointers) do
      head_kinds[p.relation] = head_kinds[p.relation] or {}
      head_kinds[p.relation][pos_of(key)] = true
      tail_kinds[p.relation] = tail_kinds[p.relation] or {}
      tail_kinds[p.relation][pos_of(p.target)] = true
    end
  end
  return { lemmas = lemmas, head_kinds = head_kinds, tail_kinds = tail_kinds }
end

M.function_words = {}
for w in ([[a an the this that these those some any each every no all both either neither
  in on at by for from of off to up down into onto upon out over under with within without about
  above below across after before behind beside between beyond during except inside near
  outside past since through throughout till toward towards until via per than as like
  and or but nor so yet if then else when while because although though unless whether
  i me my we us our you your he him his she her it its they them their who whom whose which what
  be am is are was were been being have has had do does did done will would shall should can
  could may might must not also only very too just more most less least such own same other
  there here where how why one]]):gmatch("%a+") do M.function_words[w] = true end

function M.heads(text, lemmas, max_words)
  local words = gm.data.tokenizer.pretokenize(text)
  local found, seen, i = {}, {}, 1
  while i <= #words do
    local hit
    for len = math.min(max_words or 3, #words - i + 1), 1, -1 do
      local phrase = table.concat(words, " ", i, i + len - 1)
      if lemmas[phrase] and phrase:match("%a") then hit = { phrase, len } break end
    end
    if hit then
      if not seen[hit[1]] and not (hit[2] == 1 and M.function_words[hit[1]]) then
        seen[hit[1]] = true
        found[#found + 1] = hit[1]
      end
      i = i + hit[2]
    else
      i = i + 1
    end
  end
  return found
end

-- whether a lemma has a synset of a part of speech in `kinds`
local function of_kind(graph, lemma, kinds)
  for _, key in ipairs(graph.lemmas[lemma:lower()] or {}) do
    if kinds and kinds[pos_of(key)] then return true end
  end
  return false
end

function M.relations_for(graph, head, names)
  local out = {}
  for _, name in ipairs(names) do
    if of_kind(graph, head, graph.head_kinds[name]) then out[#out + 1] = name end
  end
  return out
end

function M.known_tails(graph, tok, relations, leaves)
  local encoded, out = {}, {}
  for lemma in pairs(graph.lemmas) do
    local ids = tok:encode(lemma)
    if #ids > 0 and #ids <= leaves then encoded[lemma] = ids end
  end
  for name, id in pairs(relations) do
    local list = {}
    for lemma, ids in pairs(encoded) do
      if of_kind(graph, lemma, graph.tail_kinds[name]) then list[#list + 1] = ids end
    end
    out[id] = list
  end
  return out
end

-- The decoder's queries for one passage: each head found (in the roots' part of the text) with
-- each relation allowed for it; meta[i] names query i's head and relation.
function M.queries(tok, layout, passage, opts)
  local names = {}
  for name in pairs(opts.relations) do names[#names + 1] = name end
  table.sort(names)
  local toks = layout:fit(tok:encode(passage.text))
  local queries, meta = {}, {}
  for _, head in ipairs(M.heads(passage.text, opts.graph.lemmas)) do
    local h = tok:encode(head)
    local at = #h > 0 and layout.find(toks, h)
    if at then
      for _, name in ipairs(M.relations_for(opts.graph, head, names)) do
        if not opts.only or opts.only[name] then
          queries[#queries + 1] = { toks = toks, at = at, head_length = #h, relation = opts.relations[name] }
          meta[#queries] = { head = head, relation = name }
        end
      end
    end
  end
  return queries, meta
end

function M.triples(model, tok, passages, opts)
  local out = {}
  for _, passage in ipairs(passages) do
    local queries, meta = M.queries(tok, model.layout, passage, opts)
    if #queries > 0 then
      local found = decode(model, tok, queries, opts)
      for qi, candidates in ipairs(found) do
        for _, c in ipairs(candidates) do
          if c.empty then break end -- the model ranks "no such tail" above the rest
          out[#out + 1] = { head = meta[qi].head, relation = meta[qi].relation, tail = tok:decode(c.ids),
            tokens = #c.ids, score = c.score, source = passage.id, decoding = opts.mode or "open" }
        end
      end
    end
  end
  return out
end

function M.merge(triples, opts)
  opts = opts or {}
  local by_key, order = {}, {}
  for _, t in ipairs(triples) do
    if t.tail:match("%a") and t.tail:lower() ~= t.head:lower() and (not opts.min_score or t.score >= opts.min_score) then
      local key = t.head .. "\0" .. t.relation .. "\0" .. t.tail
      local e = by_key[key]
      if not e then
        e = { head = t.head, relation = t.relation, tail = t.tail, tokens = t.tokens, score = t.score, count = 0,
          sources = {}, decoding = t.decoding, seen = {} }
        by_key[key] = e
        order[#order + 1] = e
      end
      if not e.seen[t.source] then
        e.seen[t.source] = true
        e.count = e.count + 1
        e.sources[#e.sources + 1] = t.source
      end
      if t.score > e.score then e.score = t.score end
    end
  end
  local groups, group_order = {}, {}
  for _, e in ipairs(order) do
    e.seen = nil
    local key = e.head .. "\0" .. e.relation
    if not groups[key] then groups[key] = {}; group_order[#group_order + 1] = key end
    table.insert(groups[key], e)
  end
  local out = {}
  for _, key in ipairs(group_order) do
    local g = groups[key]
    table.sort(g, function(x, y) return x.score > y.score or (x.score == y.score and x.count > y.count) end)
    for k = 1, math.min(#g, opts.top or 5) do out[#out + 1] = g[k] end
  end
  return out
end

-- whether WordNet holds triple t: a synset of the head has the relation to a synset of the tail
function M.holds(graph, wn, t)
  local targets = {}
  for _, k in ipairs(graph.lemmas[t.tail:lower()] or {}) do targets[k] = true end
  for _, hk in ipairs(graph.lemmas[t.head:lower()] or {}) do
    for _, p in ipairs(wn.synsets[hk].pointers) do
      if p.relation == t.relation and targets[p.target] then return true end
    end
  end
  return false
end

-- whether t's tail is an entity of a kind its relation reaches
function M.valid(graph, t) return of_kind(graph, t.tail, graph.tail_kinds[t.relation]) end

local function key(t) return (t.head .. "\0" .. t.relation .. "\0" .. t.tail):lower() end

function M.score_passage(graph, wn, relations, passage, triples)
  local found, u = {}, { n = #triples, correct = 0, valid = 0, multi = 0, multi_token = 0, gold = 0, recalled = 0,
    scored = {} }
  for _, t in ipairs(triples) do
    local held = M.holds(graph, wn, t)
    found[key(t)] = t.score
    if held then u.correct = u.correct + 1 end
    if held and t.tail:find(" ") then u.multi = u.multi + 1 end
    if held and (t.tokens or 1) > 1 then u.multi_token = u.multi_token + 1 end
    if M.valid(graph, t) then u.valid = u.valid + 1 end
    u.scored[#u.scored + 1] = { score = t.score, held = held }
  end
  local heads = {}
  for _, h in ipairs(M.heads(passage.text, graph.lemmas)) do heads[h] = true end
  for _, t in ipairs(passage.gold) do
    if relations[t.relation] and heads[t.head:lower()] then
      u.gold = u.gold + 1
      local s = found[key(t)]
      if s then
        u.recalled = u.recalled + 1
        u.scored[#u.scored + 1] = { score = s, recall = true }
      end
    end
  end
  return u
end

function M.score(triples, graph, wn)
  local held, valid = 0, 0
  for _, t in ipairs(triples) do
    if M.valid(graph, t) then valid = valid + 1 end
    if M.holds(graph, wn, t) then held = held + 1 end
  end
  local n = math.max(#triples, 1)
  return { n = #triples, held = held / n, valid = valid / n }
end

return M
