-- evaluate.lua — tail prediction on held-out triples, and the most-frequent-tail baseline.
--
-- For a triple (head, relation, tail) of a record: the record's text fills the roots, the tail's
-- leaf slots of the head's first root are [MASK] (as many as the tail has tokens), the relation
-- and head length are set, and the model ranks the vocabulary at the first slot.
-- tail_prediction(model, tok, records, {roots, leaves, relations, max_triples = 500, batch = 16})
--   → {n, hits1, hits10, mrr, exact}  (exact: every tail token is the argmax at its slot)
-- most_frequent_tail(train_records, test_records, tok, {leaves, relations}) → the same metrics
--   for ranking tails' first tokens by their frequency per relation in training.
local gm = require "graphmert"

local M = {}

-- the test cases: one per usable triple (relation known, head in text, tail fits)
local function cases(records, tok, opts)
  local out = {}
  for _, rec in ipairs(records) do
    local toks = tok:encode(rec.text)
    toks = { table.unpack(toks, 1, math.min(#toks, opts.roots - 2)) }
    for _, t in ipairs(rec.triples) do
      if #out >= (opts.max_triples or 500) then return out end
      local rel = opts.relations[t.relation]
      local head, tail = tok:encode(t.head), tok:encode(t.tail)
      if rel and #head > 0 and #tail > 0 and #tail <= opts.leaves then
        for i = 1, #toks - #head + 1 do
          local ok = true
          for j = 1, #head do if toks[i + j - 1] ~= head[j] then ok = false break end end
          if ok then
            out[#out + 1] = { toks = toks, root = i + 1, rel = rel, head_len = #head, tail = tail, relation = t.relation }
            break
          end
        end
      end
    end
  end
  return out
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
  return { n = n, hits1 = h1 / d, hits10 = h10 / d, mrr = rr / d, exact = ex / d }
end

function M.tail_prediction(model, tok, records, opts)
  local R, L = opts.roots, opts.leaves
  local N = R * (1 + L)
  local cs = cases(records, tok, opts)
  local ranks, exact = {}, {}
  local was_training = model.training
  model:eval()
  gm.no_grad(function()
    local bs = opts.batch or 16
    for first = 1, #cs, bs do
      local ids, valid, relation, head_length, positions, group = {}, {}, {}, {}, {}, {}
      for k = first, math.min(#cs, first + bs - 1) do
        local c, b = cs[k], #ids + 1
        ids[b], valid[b], relation[b], head_length[b] = {}, {}, {}, {}
        for n = 1, N do ids[b][n], valid[b][n] = tok.pad_id, 0 end
        ids[b][1], valid[b][1] = tok.cls_id, 1
        for j, id in ipairs(c.toks) do ids[b][j + 1], valid[b][j + 1] = id, 1 end
        ids[b][#c.toks + 2], valid[b][#c.toks + 2] = tok.sep_id, 1
        for r = 1, R do relation[b][r], head_length[b][r] = 0, 0 end
        relation[b][c.root], head_length[b][c.root] = c.rel, c.head_len
        for a = 1, #c.tail do
          local node = R + L * (c.root - 1) + a
          ids[b][node], valid[b][node] = tok.mask_id, 1
          positions[#positions + 1] = (b - 1) * N + node
          group[#group + 1] = { k, a }
        end
      end
      local batch = { ids = gm.tensor(ids), valid = gm.tensor(valid), relation = relation, head_length = head_length }
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
  if was_training then model:train() end
  return score(ranks, exact)
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
    local list = {}
    for id, n in pairs(c) do list[#list + 1] = { id, n } end
    table.sort(list, function(x, y) return x[2] > y[2] or (x[2] == y[2] and x[1] < y[1]) end)
    local rank = {}
    for i, e in ipairs(list) do rank[e[1]] = i end
    ranked[rel] = { rank = rank, size = #list, top = list[1] and list[1][1] }
  end
  local ranks, exact = {}, {}
  for _, c in ipairs(cases(test_records, tok, opts)) do
    local r = ranked[c.relation]
    local rank = r and r.rank[c.tail[1]] or ((r and r.size or 0) + tok:size() // 2) -- unseen: the middle
    ranks[#ranks + 1] = rank
    exact[#exact + 1] = #c.tail == 1 and r ~= nil and r.top == c.tail[1]
  end
  return score(ranks, exact)
end

return M
