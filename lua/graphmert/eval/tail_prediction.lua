-- tail_prediction.lua — tail prediction on held-out triples, and the most-frequent-tail baseline.
--
-- For a triple (head, relation, tail) of a record: the record's text fills the roots, the tail's
-- leaf slots of the head's first root are [MASK] (as many as the tail has tokens), the relation
-- and head length are set, and the model ranks the vocabulary at the first slot.
-- That protocol tells the model the answer's length. With opts.tails (relation id → the known
-- tails of the types it reaches, the seed graph's known_tails) the whole tail is also decoded
-- without it (decode.lua, constrained: the decoder chooses the length) and ranked among the
-- known tails: `tail` = {hits1, hits10, mrr} (MRR over the top 10, 0 below).
-- tail_prediction(model, tok, records, {layout, relations, max_triples = 500, batch = 16, tails,
--   tail_end}) → {n, hits1, hits10, mrr, exact, ranks, tail}  (first-token metrics; exact: every
--   tail token is the argmax at its slot; ranks: each triple's first-token rank, in the order of
--   the records, so that two models' results pair triple by triple; tail.ranks: the whole
--   tail's rank, 11 when not in the top 10)
-- most_frequent_tail(train_records, test_records, tok, {layout, relations, tails}) → the same
--   metrics for ranking first tokens, and whole tails, by their frequency per relation in training.
local decode = require("graphmert.eval.decode").decode

local M = {}

-- the test cases: one per usable triple (relation known, head in text, tail fits)
local function cases(records, tok, opts)
  local layout, out = opts.layout, {}
  for _, rec in ipairs(records) do
    local toks = layout:fit(tok:encode(rec.text))
    for _, t in ipairs(rec.triples) do
      if #out >= (opts.max_triples or 500) then return out end
      local rel = opts.relations[t.relation]
      local head, tail = tok:encode(t.head), tok:encode(t.tail)
      local at = rel and #head > 0 and #tail > 0 and #tail <= layout.leaves and layout.find(toks, head)
      if at then
        out[#out + 1] = { toks = toks, root = at + 1, rel = rel, head_len = #head, tail = tail, relation = t.relation }
      end
    end
  end
  return out
end

-- hits@1, hits@10 and MRR@10 of whole-tail ranks (11 = not in the top 10)
local function score_top10(ranks)
  local d, h1, h10, rr = math.max(#ranks, 1), 0, 0, 0
  for _, r in ipairs(ranks) do
    if r == 1 then h1 = h1 + 1 end
    if r <= 10 then h10, rr = h10 + 1, rr + 1 / r end
  end
  return { hits1 = h1 / d, hits10 = h10 / d, mrr = rr / d, ranks = ranks }
end

local function same(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

-- the whole tails decoded without their length, ranked among the known tails
local function decoded(model, tok, cs, opts)
  local queries = {}
  for k, c in ipairs(cs) do queries[k] = { toks = c.toks, at = c.root - 1, head_length = c.head_len, relation = c.rel } end
  local found = decode(model, tok, queries, { mode = "constrained", tails = opts.tails, top = 10,
    tail_end = opts.tail_end, batch = opts.batch })
  local ranks = {}
  for k, list in ipairs(found) do
    ranks[k] = 11
    for i, cand in ipairs(list) do if same(cand.ids, cs[k].tail) then ranks[k] = i break end end
  end
  return score_top10(ranks)
end

local function score(ranks, exact)
  local n, h1, h10, rr, ex = #ranks, 0, 0, 0, 0
  for i, r in ipairs(ranks) do
    if r == 1 then h1 = h1 + 1 end
    if r <= 10 then h10 = h10 + 1 end
    rr = rr + 1 / r
    if exact[i] then ex = ex + 1 end
  end
  local d = math.max(n, 1)
  return { n = n, hits1 = h1 / d, hits10 = h10 / d, mrr = rr / d, exact = ex / d, ranks = ranks }
end

function M.tail_prediction(model, tok, records, opts)
  local layout = opts.layout
  local cs = cases(records, tok, opts)
  local ranks, exact = {}, {}
  model:evaluating(function()
    local bs = opts.batch or 16
    for first = 1, #cs, bs do
      local seqs, positions, group = {}, {}, {}
      for k = first, math.min(#cs, first + bs - 1) do
        local c, s = cs[k], layout:sequence(tok)
        layout:append(s, c.toks)
        local masks = {}
        for a = 1, #c.tail do
          masks[a] = tok.mask_id
          positions[#positions + 1] = layout:flat(#seqs + 1, layout:leaf(c.root, a))
          group[#group + 1] = { k, a }
        end
        layout:inject(s, c.root, c.rel, c.head_len, masks)
        seqs[#seqs + 1] = s
      end
      local batch = layout:batch(seqs)
      local logits = model:logits(model(batch), positions):totable()
      for p, g in ipairs(group) do
        local k, a = g[1], g[2]
        local row, target = logits[p], cs[k].tail[a]
        local better, best, best_id = 0, -math.huge, nil
        for id, v in ipairs(row) do
          if v > row[target] then better = better + 1 end
          if v > best then best, best_id = v, id end
        end
        if a == 1 then ranks[k], exact[k] = better + 1, true end
        if best_id ~= target then exact[k] = false end
      end
    end
  end)
  local result = score(ranks, exact)
  if opts.tails then result.tail = decoded(model, tok, cs, opts) end
  return result
end

-- the entries of a count table {key → n} as a list of {key, n}, most frequent first (ties by key)
local function by_count(counts)
  local list = {}
  for key, n in pairs(counts) do list[#list + 1] = { key, n } end
  table.sort(list, function(x, y) return x[2] > y[2] or (x[2] == y[2] and x[1] < y[1]) end)
  return list
end

-- relation → its training tails {tail, count}, most frequent first (ties by name), and the
-- relation's triple count
function M.tails_by_frequency(train_records)
  local counts, totals = {}, {}
  for _, rec in ipairs(train_records) do
    for _, t in ipairs(rec.triples) do
      counts[t.relation] = counts[t.relation] or {}
      counts[t.relation][t.tail] = (counts[t.relation][t.tail] or 0) + 1
      totals[t.relation] = (totals[t.relation] or 0) + 1
    end
  end
  local ranked = {}
  for rel, c in pairs(counts) do ranked[rel] = by_count(c) end
  return ranked, totals
end

function M.most_frequent_tail(train_records, test_records, tok, opts)
  local counts = {} -- relation → first tail token → count
  for _, rec in ipairs(train_records) do
    for _, t in ipairs(rec.triples) do
      local tail = tok:encode(t.tail)
      if tail[1] then
        counts[t.relation] = counts[t.relation] or {}
        counts[t.relation][tail[1]] = (counts[t.relation][tail[1]] or 0) + 1
      end
    end
  end
  local ranked = {}
  for rel, c in pairs(counts) do
    local list = by_count(c)
    local rank = {}
    for i, e in ipairs(list) do rank[e[1]] = i end
    ranked[rel] = { rank = rank, size = #list, top = list[1] and list[1][1] }
  end
  local top_tails = {} -- relation → its ten most frequent whole tails, as token ids
  for rel, list in pairs(M.tails_by_frequency(train_records)) do
    top_tails[rel] = {}
    for i = 1, math.min(10, #list) do top_tails[rel][i] = tok:encode(list[i][1]) end
  end
  local ranks, exact, tail_ranks = {}, {}, {}
  for _, c in ipairs(cases(test_records, tok, opts)) do
    local r = ranked[c.relation]
    local rank = r and r.rank[c.tail[1]] or ((r and r.size or 0) + tok:size() // 2) -- unseen: the middle
    ranks[#ranks + 1] = rank
    exact[#exact + 1] = #c.tail == 1 and r ~= nil and r.top == c.tail[1]
    local tr = 11
    for i, ids in ipairs(top_tails[c.relation] or {}) do if same(ids, c.tail) then tr = i break end end
    tail_ranks[#tail_ranks + 1] = tr
  end
  local result = score(ranks, exact)
  if opts.tails then result.tail = score_top10(tail_ranks) end
  return result
end

return M
