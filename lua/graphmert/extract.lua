-- extract.lua — distil new triples from text with a trained model, and score them against
-- WordNet (a validity figure in the spirit of the paper's ValidityScore).
--
-- heads(text, lemma_index, tok) → head strings found in the text (WordNet lemmas, longest
--   first, at most one per position)
-- predict(model, tok, text, head, relation_id, {roots, leaves, top = 5}) → up to `top` tails
--   (whole-word tokens ranked at the first leaf slot of the head's root)
-- index(wordnet) → lemma_index: lemma → list of synset keys
-- score(triples, wordnet, lemma_index) → {n, held, valid}: held = the share that WordNet holds
--   (a synset of the head has that relation to a synset of the tail); valid = the share whose
--   tail is a WordNet lemma of the part of speech the relation reaches.
local gm = require "graphmert"

local M = {}

function M.index(wn)
  local idx = {}
  for key, s in pairs(wn.synsets) do
    for _, l in ipairs(s.lemmas) do
      local k = l:lower()
      idx[k] = idx[k] or {}
      idx[k][#idx[k] + 1] = key
    end
  end
  return idx
end

function M.heads(text, lemma_index, max_words)
  local words = gm.tokenizer.pretokenize(text)
  local found, i = {}, 1
  while i <= #words do
    local hit
    for len = math.min(max_words or 3, #words - i + 1), 1, -1 do
      local phrase = table.concat(words, " ", i, i + len - 1)
      if lemma_index[phrase] and phrase:match("%a") then hit = { phrase, len } break end
    end
    if hit then
      found[#found + 1] = hit[1]
      i = i + hit[2]
    else
      i = i + 1
    end
  end
  return found
end

function M.predict(model, tok, text, head, relation_id, opts)
  local R, L = opts.roots, opts.leaves
  local N = R * (1 + L)
  local toks = tok:encode(text)
  toks = { table.unpack(toks, 1, math.min(#toks, R - 2)) }
  local h = tok:encode(head)
  local at
  for i = 1, #toks - #h + 1 do
    local ok = true
    for j = 1, #h do if toks[i + j - 1] ~= h[j] then ok = false break end end
    if ok then at = i + 1 break end
  end
  if not at then return {} end
  local ids, valid, relation, head_length = {}, {}, {}, {}
  for n = 1, N do ids[n], valid[n] = tok.pad_id, 0 end
  ids[1], valid[1] = tok.cls_id, 1
  for j, id in ipairs(toks) do ids[j + 1], valid[j + 1] = id, 1 end
  ids[#toks + 2], valid[#toks + 2] = tok.sep_id, 1
  for r = 1, R do relation[r], head_length[r] = 0, 0 end
  relation[at], head_length[at] = relation_id, #h
  local slot = R + L * (at - 1) + 1
  ids[slot], valid[slot] = tok.mask_id, 1
  local batch = { ids = gm.tensor { ids }, valid = gm.tensor { valid }, relation = { relation }, head_length = { head_length } }
  local row = gm.no_grad(function()
    local was = model.training
    model:eval()
    local logits = model:logits(model(batch), { slot }):totable()[1]
    if was then model:train() end
    return logits
  end)
  local order = {}
  for id = 6, #row do -- skip the special tokens
    if tok:word_start(id) and tok.pieces[id]:match("%a") then order[#order + 1] = id end
  end
  table.sort(order, function(a, b) return row[a] > row[b] end)
  local tails = {}
  for k = 1, math.min(opts.top or 5, #order) do tails[k] = tok.pieces[order[k]] end
  return tails
end

function M.score(triples, wn, lemma_index)
  local held, valid = 0, 0
  for _, t in ipairs(triples) do
    local tail_keys = lemma_index[t.tail:lower()]
    if tail_keys then
      valid = valid + 1
      local targets = {}
      for _, k in ipairs(tail_keys) do targets[k] = true end
      local holds = false
      for _, hk in ipairs(lemma_index[t.head:lower()] or {}) do
        for _, p in ipairs(wn.synsets[hk].pointers) do
          if p.relation == t.relation and targets[p.target] then holds = true end
        end
      end
      if holds then held = held + 1 end
    end
  end
  local n = math.max(#triples, 1)
  return { n = #triples, held = held / n, valid = valid / n }
end

return M
