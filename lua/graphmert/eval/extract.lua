-- extract.lua — a knowledge graph from text with a trained model, and its score against the
-- seed graph (validity in the spirit of the paper's ValidityScore). `graph` is the dataset's
-- seed graph index (gm.data.seed_graph): its linker finds heads, its schema says which
-- relations a head's type allows and which types a relation reaches, its facts what holds.
--
-- triples(model, tok, passages, opts) → extracted triples {head, relation, tail, tokens, score,
--   source, span (the head's first mention: characters, 0-based, end exclusive), decoding}: for
--   each passage {id, text}, each head found and each relation allowed for it (or
--   opts.only), the tails gm.eval.decode gives (opts: graph, relations = name → id, mode, top,
--   tail_end, empty, batch, pack, only = set of names); with empty, only the tails ranked above the
--   empty one (the model's "this head has no such relation"). The passages' queries go to one
--   decode, batched across passages (the same triples as passage by passage); with pack, the
--   heads of a passage are asked together, one relation each per sequence.
-- options(run, graph, relations, choices) → triples' opts: how the run was trained (run.json or
--   its config: tail_end, absent — a model taught absent relations may answer "none", so empty
--   is on unless choices.answer_all) with the caller's choices (mode = "open", top = 5, batch,
--   pack, only, tails)
-- merge(triples, {top = 5, min_score}) → one entry per (head, relation, tail): count = passages
--   supporting it, sources = their ids, score = the best; self-loops and tails without a letter
--   dropped; the top per (head, relation) kept, best first (graphmert.kg.merge has the rule)
-- merger(opts) → the same merge as triples come: m:add(t), then m:each() or m:result(), m:close();
--   with opts.disk = a scratch file's path it is kept on disk (a corpus streams through)
-- queries(tok, layout, passage, opts) → the decoder's queries for one passage and their meta;
--   opts.report, when given, counts the heads found but not asked (truncated, inside)
-- score(triples, graph) → {n, held, valid}: held = the share the seed graph holds (an entity the
--   head names has the relation to an entity the tail names); valid = the share whose tail names
--   an entity of a type the relation reaches
-- score_passage(graph, relations, passage, triples) → one passage's figures for a bootstrap over
--   passages: passage = {text, gold = its seed-graph triples}, triples = what was extracted from
--   it (the top tail per head and relation); → {n, correct (the seed graph holds it), valid,
--   multi (correct with a multi-word tail), multi_token (correct with a tail of several tokens:
--   t.tokens, the decoded tail's token count), gold (its facts whose relation is known and head
--   is found in the text), recalled (of those, extracted), scored = {score, held | recall} for
--   precision–recall curves}
local decode = require("graphmert.eval.decode").decode
local linker = require "graphmert.data.linker"
local normalize = linker.normalize
local merge = require "graphmert.kg.merge"

local M = {}

function M.options(run, graph, relations, choices)
  choices = choices or {}
  return { graph = graph, relations = relations, mode = choices.mode or "open", top = choices.top or 5,
    batch = choices.batch, pack = choices.pack, only = choices.only, tails = choices.tails, tail_end = run.tail_end,
    empty = (run.absent or 0) > 0 and not choices.answer_all }
end

-- A passage's tokens and its heads' places in them: {phrase, at, length (tokens), span = {first
-- character, after the last}} for the first mention of each phrase (gm.data.linker). The text is
-- encoded piece by piece (linker.pieces: the same tokens as encoded whole), so that a mention's
-- words give its tokens whatever the linker folds and the tokenizer keeps (accents). A piece of
-- several words ("glycolytic‐process") has word-by-word tokens when the tokenizer gives it the
-- tokens of its words one after the other (BERT's, which splits it too); else a mention of only
-- some of its words has no tokens of its own: such a phrase, never placed, is in `inside`.
-- Returns the tokens (all of them: the caller fits them to the roots), the heads, and `inside`.
local function placed_heads(tok, graph, text)
  local pieces, toks, words, word_token = linker.pieces(text), {}, {}, {}
  local bounded = {} -- word n starts (and word n - 1 ends) at a token boundary
  for _, p in ipairs(pieces) do
    local ids = tok:encode(text:sub(p.s, p.e - 1))
    local each = #p.words > 1 and {} or nil -- the tokens of the piece's words, when they add up to its own
    if each then
      local joined = {}
      for k, w in ipairs(p.words) do
        each[k] = #joined + 1
        for _, id in ipairs(tok:encode(w)) do joined[#joined + 1] = id end
      end
      if table.concat(joined, " ") ~= table.concat(ids, " ") then each = nil end
    end
    for k, w in ipairs(p.words) do
      words[#words + 1] = w
      word_token[#words] = { piece = p, at = #toks + (each and each[k] or 1), first = k == 1, last = k == #p.words }
      bounded[#words] = k == 1 or each ~= nil
    end
    for _, id in ipairs(ids) do toks[#toks + 1] = id end
  end
  word_token[#words + 1] = { at = #toks + 1 }
  bounded[#words + 1] = true
  local heads, placed, inside = {}, {}, {}
  for _, m in ipairs(graph.linker:mentions(nil, words)) do
    local after = m.first + m.words
    if not placed[m.phrase] and bounded[m.first] and bounded[after] then
      placed[m.phrase], inside[m.phrase] = true, nil
      local from, to = word_token[m.first], word_token[after - 1]
      local first, last = from.piece, to.piece
      local before = utf8.len(text, 1, first.s - 1) or first.s - 1
      heads[#heads + 1] = { phrase = m.phrase, at = from.at, length = word_token[after].at - from.at,
        -- the characters of whole pieces (a mention of some words of a piece has none)
        span = from.first and to.last and { before, before + (utf8.len(text, first.s, last.e - 1) or last.e - first.s) } or nil }
    elseif not placed[m.phrase] then
      inside[m.phrase] = true
    end
  end
  return toks, heads, inside
end

-- The decoder's queries for one passage: each head found in the roots' part of the text with
-- each relation allowed for it; meta[i] names query i's head, relation and the head's span.
-- opts.report (optional) counts the heads that would have been asked but are not: truncated (in
-- the text past the roots) and inside (see placed_heads).
function M.queries(tok, layout, passage, opts)
  local names = {}
  for name in pairs(opts.relations) do names[#names + 1] = name end
  table.sort(names)
  local all, heads, inside = placed_heads(tok, opts.graph, passage.text)
  local toks = layout:fit(all)
  local queries, meta, report = {}, {}, opts.report or {}
  local function asked(phrase) -- the relations a head would be asked
    local out = {}
    for _, name in ipairs(opts.graph:relations_for(phrase, names)) do
      if not opts.only or opts.only[name] then out[#out + 1] = name end
    end
    return out
  end
  for phrase in pairs(inside) do
    if #asked(phrase) > 0 then report.inside = (report.inside or 0) + 1 end
  end
  for _, h in ipairs(heads) do
    local relations = asked(h.phrase)
    if #relations > 0 and h.at + h.length - 1 > #toks then
      report.truncated = (report.truncated or 0) + 1
    elseif h.length > 0 then
      for _, name in ipairs(relations) do
        queries[#queries + 1] = { toks = toks, at = h.at, head_length = h.length, relation = opts.relations[name] }
        meta[#queries] = { head = h.phrase, relation = name, span = h.span }
      end
    end
  end
  return queries, meta
end

function M.triples(model, tok, passages, opts)
  -- every passage's queries in one decode, so that its batches are full across passages
  local queries, meta = {}, {}
  for _, passage in ipairs(passages) do
    local q, m = M.queries(tok, model.layout, passage, opts)
    for i = 1, #q do
      queries[#queries + 1], meta[#queries + 1] = q[i], m[i]
      m[i].source = passage.id
    end
  end
  local out = {}
  if #queries == 0 then return out end
  for qi, candidates in ipairs(decode(model, tok, queries, opts)) do
    for _, c in ipairs(candidates) do
      if c.empty then break end -- the model ranks "no such tail" above the rest
      local tail = tok:decode(c.ids)
      if utf8.len(tail) then -- a tokenizer trained before its pieces were whole characters can cut one
        out[#out + 1] = { head = meta[qi].head, relation = meta[qi].relation, tail = tail, tokens = #c.ids,
          score = c.score, source = meta[qi].source, span = meta[qi].span, decoding = opts.mode or "open" }
      end
    end
  end
  return out
end

-- the merge of extracted triples (graphmert.kg.merge: in memory, or on disk for a corpus)
M.merger, M.merge = merge.merger, merge.merge

-- the entity ids a gold triple's head or tail is (its id when it has one) or an extracted one names
local function ids_of(graph, id, name)
  if id then return { id } end
  return graph:candidates(normalize(name)) or {}
end

function M.score_passage(graph, relations, passage, triples)
  local found, u = {}, { n = #triples, correct = 0, valid = 0, multi = 0, multi_token = 0, gold = 0, recalled = 0,
    scored = {} }
  for _, t in ipairs(triples) do
    local held = graph:holds(t)
    -- recall is asked of entities: the best score of a triple naming head and tail, by any name
    for _, h in ipairs(ids_of(graph, nil, t.head)) do
      for _, x in ipairs(ids_of(graph, nil, t.tail)) do
        local k = h .. "\0" .. t.relation .. "\0" .. x
        if not found[k] or t.score > found[k] then found[k] = t.score end
      end
    end
    if held then u.correct = u.correct + 1 end
    if held and t.tail:find(" ") then u.multi = u.multi + 1 end
    if held and (t.tokens or 1) > 1 then u.multi_token = u.multi_token + 1 end
    if graph:valid(t) then u.valid = u.valid + 1 end
    u.scored[#u.scored + 1] = { score = t.score, held = held }
  end
  local mentioned = {} -- the entities the passage's heads name
  for _, h in ipairs(graph:heads(passage.text)) do
    for _, id in ipairs(graph:candidates(h)) do mentioned[id] = true end
  end
  for _, t in ipairs(passage.gold) do
    local heads, in_text = ids_of(graph, t.head_id, t.head), false
    for _, h in ipairs(heads) do in_text = in_text or mentioned[h] end
    if relations[t.relation] and in_text then
      u.gold = u.gold + 1
      local best
      for _, h in ipairs(heads) do
        for _, x in ipairs(ids_of(graph, t.tail_id, t.tail)) do
          local s = found[h .. "\0" .. t.relation .. "\0" .. x]
          if s and (not best or s > best) then best = s end
        end
      end
      if best then
        u.recalled = u.recalled + 1
        u.scored[#u.scored + 1] = { score = best, recall = true }
      end
    end
  end
  return u
end

function M.score(triples, graph)
  local held, valid = 0, 0
  for _, t in ipairs(triples) do
    if graph:valid(t) then valid = valid + 1 end
    if graph:holds(t) then held = held + 1 end
  end
  local n = math.max(#triples, 1)
  return { n = #triples, held = held / n, valid = valid / n }
end

return M
