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
-- queries(tok, layout, passage, opts) → the decoder's queries for one passage and their meta;
--   opts.report, when given, counts the heads found but not asked (truncated, inside)
-- score(triples, graph) → {n, held, valid}: held = the share the seed graph holds (an entity the
--   head names has the relation to an entity the tail names); valid = the share whose tail names
--   an entity of a type the relation reaches
-- score_passage(graph, relations, passage, triples[, implied]) → one passage's figures for a bootstrap over
--   passages: passage = {text, gold = its seed-graph triples}, triples = what was extracted from
--   it (the top tail per head and relation); → {n, correct (the seed graph holds it), valid,
--   multi (correct with a multi-word tail), multi_token (correct with a tail of several tokens:
--   t.tokens, the decoded tail's token count), gold (its facts whose relation is known and head
--   is found in the text), recalled (of those, extracted), scored = {score, held | recall} for
--   precision–recall curves, implied (held, or implied by the seed graph: `implied`, a
--   gm.eval.implied, when given), and per triple {relation, own (its head is the passage's
--   subject), held, implied} and per fact {relation, own, recalled}, for tables split by them}
local decode = require("graphmert.eval.decode").decode
local linker = require "graphmert.data.linker"
local bert_text = require "graphmert.data.bert_text"
local normalize = linker.normalize

local M = {}

function M.options(run, graph, relations, choices)
  choices = choices or {}
  return { graph = graph, relations = relations, mode = choices.mode or "open", top = choices.top or 5,
    batch = choices.batch, pack = choices.pack, only = choices.only, tails = choices.tails, tail_end = run.tail_end,
    empty = (run.absent or 0) > 0 and not choices.answer_all }
end

-- Where the words of a piece of several words ("glycolytic‐process", "liver’s": the linker
-- splits at marks the trained tokenizer keeps inside a word) start and stop in its tokens `ids`:
-- word k spans ids[start[k]] .. ids[stop[k] - 1], nil where it does not begin or end on a
-- token's edge. The tokens are its words' own one after the other (BERT's, which splits there
-- too), or they spell the piece's bytes (a trained tokenizer's), so that a word's bytes (first,
-- after: from bert_text.words_at, relative to the piece) tell its tokens.
local function word_tokens(tok, ids, words, first, after, bytes)
  local joined, start, stop = {}, {}, {}
  for k, w in ipairs(words) do
    start[k] = #joined + 1
    for _, id in ipairs(tok:encode(w)) do joined[#joined + 1] = id end
    stop[k] = #joined + 1
  end
  if table.concat(joined, " ") == table.concat(ids, " ") then return start, stop end
  if not tok:spells(ids) then return {}, {} end -- ([UNK] stands for bytes it does not say)
  local token_at, offset = { [0] = 1 }, 0 -- byte offset in the piece → the token that starts there
  for i, id in ipairs(ids) do
    local p = tok.pieces[id]
    offset = offset + #p - (p:sub(1, 2) == "##" and 2 or 0)
    token_at[offset] = i + 1
  end
  if offset ~= bytes then return {}, {} end
  start, stop = {}, {}
  for k = 1, #words do start[k], stop[k] = token_at[first[k] - 1], token_at[after[k] - 1] end
  return start, stop
end

-- A passage's tokens and its heads' places in them: {phrase, at, length (tokens), span = {first
-- character, after the last}} for the first mention of each phrase (gm.data.linker) that begins
-- and ends on a token's edge. The text is encoded piece by piece (linker.pieces: the same tokens
-- as encoded whole, but for a word the tokenizer cannot spell: see below), so that a mention's
-- words give its tokens whatever the linker folds and the tokenizer keeps (case, accents, marks
-- inside a word). Returns the tokens (all of them: the
-- caller fits them to the roots), the heads, and the phrases never placed (`inside`: a mention
-- ending inside a token).
local function placed_heads(tok, graph, text)
  local toks, words, where = {}, {}, {} -- where[n]: word n's tokens and bytes in the text
  for _, p in ipairs(linker.pieces(text)) do
    local surface = text:sub(p.s, p.e - 1)
    local ids = tok:encode(surface)
    if #p.words == 1 then
      words[#words + 1] = p.words[1]
      where[#words] = { at = #toks + 1, stop = #toks + #ids + 1, s = p.s, e = p.e }
    elseif #p.words > 1 then
      local _, first, after = bert_text.words_at(surface, true)
      local start, stop
      if #ids == 1 and ids[1] == tok.unk_id then
        -- a word the tokenizer cannot spell whole ("“liver”" with no piece for “): encoded at the
        -- linker's word edges instead, so that the words it can spell are not lost in one [UNK]
        ids, start, stop = {}, {}, {}
        for k = 1, #p.words do
          start[k] = #ids + 1
          for _, id in ipairs(tok:encode(surface:sub(first[k], after[k] - 1))) do ids[#ids + 1] = id end
          stop[k] = #ids + 1
        end
      else
        start, stop = word_tokens(tok, ids, p.words, first, after, #surface)
      end
      for k, w in ipairs(p.words) do
        words[#words + 1] = w
        where[#words] = { at = start[k] and #toks + start[k], stop = stop[k] and #toks + stop[k], s = p.s + first[k] - 1,
          e = p.s + after[k] - 1 }
      end
    end
    for _, id in ipairs(ids) do toks[#toks + 1] = id end
  end
  local heads, placed, inside = {}, {}, {}
  local surface = linker.surface(text, function(i) return where[i].s, where[i].e end)
  for _, m in ipairs(graph.linker:mentions(nil, words, surface)) do
    local from, to = where[m.first], where[m.first + m.words - 1]
    if not placed[m.phrase] and from.at and to.stop then
      placed[m.phrase], inside[m.phrase] = true, nil
      local before = utf8.len(text, 1, from.s - 1) or from.s - 1
      heads[#heads + 1] = { phrase = m.phrase, at = from.at, length = to.stop - from.at,
        span = { before, before + (utf8.len(text, from.s, to.e - 1) or to.e - from.s) } }
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
        -- (constrained: a schema that pairs types narrows the relation's tails to those its head's type reaches)
        queries[#queries + 1] = { toks = toks, at = h.at, head_length = h.length, relation = opts.relations[name],
          tails = opts.tails and opts.graph:head_tails(opts.tails, name, h.phrase) }
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
      -- a tokenizer trained before its pieces were whole characters can cut one; [UNK] writes no name
      if utf8.len(tail) and tok:spells(c.ids) then
        out[#out + 1] = { head = meta[qi].head, relation = meta[qi].relation, tail = tail, tokens = #c.ids,
          score = c.score, source = meta[qi].source, span = meta[qi].span, decoding = opts.mode or "open" }
      end
    end
  end
  return out
end


-- the entity ids a gold triple's head or tail is (its id when it has one) or an extracted one names
local function ids_of(graph, id, name)
  if id then return { id } end
  return graph:candidates(normalize(name)) or {}
end

-- whether a triple's head (or a fact's) is the passage's subject
local function own(graph, passage, id, name)
  if not passage.subject then return false end
  for _, h in ipairs(ids_of(graph, id, name)) do if h == passage.subject then return true end end
  return false
end

function M.score_passage(graph, relations, passage, triples, implied)
  local found, u = {}, { n = #triples, correct = 0, valid = 0, multi = 0, multi_token = 0, gold = 0, recalled = 0,
    scored = {}, implied = 0, triples = {}, facts = {} }
  for _, t in ipairs(triples) do
    local held = graph:holds(t)
    local implies = held or (implied ~= nil and implied:holds(t))
    if implies then u.implied = u.implied + 1 end
    u.triples[#u.triples + 1] = { relation = t.relation, own = own(graph, passage, t.head_id, t.head), held = held,
      implied = implies }
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
    u.scored[#u.scored + 1] = { score = t.score, held = held, own = u.triples[#u.triples].own }
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
      local is_own = own(graph, passage, t.head_id, t.head)
      if best then
        u.recalled = u.recalled + 1
        u.scored[#u.scored + 1] = { score = best, recall = true, own = is_own }
      end
      u.facts[#u.facts + 1] = { relation = t.relation, own = is_own, recalled = best ~= nil }
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
