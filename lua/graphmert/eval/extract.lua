-- extract.lua — distil new triples from text with a trained model, and score them against
-- WordNet (a validity figure in the spirit of the paper's ValidityScore).
--
-- heads(text, lemma_index, tok) → head strings found in the text (WordNet lemmas, longest
--   first, at most one per position)
-- predict(model, tok, text, head, relation_id, {layout, top = 5}) → up to `top` tails
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
  local words = gm.data.tokenizer.pretokenize(text)
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
  local layout = opts.layout
  local toks = layout:fit(tok:encode(text))
  local h = tok:encode(head)
  local at = layout.find(toks, h)
  if not at then return {} end
  local s = layout:sequence(tok)
  local root = layout:append(s, toks) + at - 1
  layout:inject(s, root, relation_id, #h, { tok.mask_id })
  local row = model:evaluating(function()
    return model:logits(model(layout:batch { s }), { layout:leaf(root, 1) }):totable()[1]
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
