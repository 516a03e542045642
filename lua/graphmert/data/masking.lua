-- masking.lua — GraphMERT's training objective inputs (GRAPHMERT_SPEC §4): span masking of the
-- roots (geometric span lengths, whole words, about 15% of the roots), whole-leaf masking of
-- the injected tails (each tail group with probability 0.15), 80/10/10 replacement.
--
-- mask(batch, opts) → a new batch sharing valid/relation/head_length, with ids replaced and
-- labels = { roots = {positions, targets}, leaves = {positions, targets} } (flat 1-based
-- positions into [B·N], original token ids as targets).
-- opts: vocab, mask_id, special (a set of ids never masked: [CLS], [SEP], [PAD]), layout (gm.layout),
-- root_rate = 0.15, span_p = 0.2, max_span = 7, leaf_rate = 0.15, replace = {0.8, 0.1},
-- word_start (function(id) → true when the token starts a word; default: every token).
-- Random draws come from gm's generator, so gm.manual_seed makes masks reproducible.
local gm = require "graphmert"

local M = {}

local function uniform(n)
  if n == 0 then return {} end
  return gm.rand(n):totable()
end

-- P(ℓ) ∝ p (1 − p)^(ℓ − 1), ℓ in 1..max: the inverse of the truncated distribution at u
local function span_length(u, p, max)
  local total = 1 - (1 - p) ^ max
  local acc = 0
  for l = 1, max do
    acc = acc + p * (1 - p) ^ (l - 1) / total
    if u < acc then return l end
  end
  return max
end

function M.mask(batch, opts)
  local layout = opts.layout
  local R = layout.roots
  local ids, valid = batch.ids:totable(), batch.valid:totable()
  local B = #ids
  local special = opts.special or {}
  local word_start = opts.word_start or function() return true end
  local root_rate, span_p, max_span = opts.root_rate or 0.15, opts.span_p or 0.2, opts.max_span or 7
  local leaf_rate = opts.leaf_rate or 0.15
  local p_mask, p_random = (opts.replace or {})[1] or 0.8, (opts.replace or {})[2] or 0.1
  local labels = { roots = { positions = {}, targets = {} }, leaves = { positions = {}, targets = {} } }
  local chosen = {} -- {b, node, part}
  for b = 1, B do
    local row = ids[b]
    -- roots: spans that start on a word and end at a word's end, never over special tokens
    local budget, masked, taken = math.floor(root_rate * R), 0, {}
    local starts = {}
    for r = 1, R do
      if not special[row[r]] and word_start(row[r]) then starts[#starts + 1] = r end
    end
    local tries = 0
    while masked < budget and #starts > 0 and tries < 10 * R do
      tries = tries + 1
      local u = uniform(2)
      local len = span_length(u[1], span_p, max_span)
      local s = starts[1 + math.floor(u[2] * #starts)]
      local e = s + len - 1
      while e + 1 <= R and not word_start(row[e + 1]) and not special[row[e + 1]] do e = e + 1 end
      local ok = e <= R and e - s + 1 <= max_span
      for r = s, math.min(e, R) do ok = ok and not taken[r] and not special[row[r]] end
      if ok then
        for r = s, e do
          taken[r] = true
          chosen[#chosen + 1] = { b, r, "roots" }
        end
        masked = masked + (e - s + 1)
      end
    end
    -- leaves: whole tail groups
    local draws = uniform(R)
    for r = 1, R do
      local group = {}
      for a = 1, layout.leaves do
        local node = layout:leaf(r, a)
        if valid[b][node] ~= 0 and not special[row[node]] then group[#group + 1] = node end
      end
      if #group > 0 and draws[r] < leaf_rate then
        for _, node in ipairs(group) do chosen[#chosen + 1] = { b, node, "leaves" } end
      end
    end
  end
  -- 80% [MASK], 10% a random token, 10% unchanged
  local u, v = uniform(#chosen), uniform(#chosen)
  for i, c in ipairs(chosen) do
    local b, node, part = c[1], c[2], c[3]
    local original = ids[b][node]
    local lb = labels[part]
    lb.positions[#lb.positions + 1] = layout:flat(b, node)
    lb.targets[#lb.targets + 1] = original
    if u[i] < p_mask then
      ids[b][node] = opts.mask_id
    elseif u[i] < p_mask + p_random then
      ids[b][node] = 1 + math.floor(v[i] * opts.vocab)
    end
  end
  return {
    ids = gm.tensor(ids), valid = batch.valid, relation = batch.relation,
    head_length = batch.head_length, labels = labels,
  }
end

return M
