-- masking.lua — GraphMERT's training objective inputs (GRAPHMERT_SPEC §4): span masking of the
-- roots (geometric span lengths, whole words, about 15% of the roots), whole-leaf masking of
-- the injected tails (each tail group with probability 0.15), 80/10/10 replacement, and the
-- span-boundary (SBO) targets of the masked root spans, as the official collator builds them
-- (collating_graphmert.py span_mask_for_sbo).
--
-- mask(batch, opts) → a new batch sharing valid/relation/head_length, with ids replaced and
-- labels = { roots = {positions, targets}, leaves = {positions, targets},
--            sbo = {left, right, offset, targets} }
-- (flat 1-based positions into [B·N], original token ids as targets). One SBO entry per masked
-- root token, in the order of labels.roots: for a span over roots s..e of sequence b and
-- k = 0..e−s, left = flat(b, s − 1), right = flat(b, e + 1), offset = k + 1 (≤ leaves, the
-- official max_targets), target = the original id at s + k. Leaf groups get none.
-- opts: vocab, mask_id, special (a set of ids never masked: [CLS], [SEP], [PAD]), layout (gm.layout),
-- root_rate = 0.15, span_p = 0.2, max_span = layout.leaves (at most leaves: the SBO head has one
-- offset embedding per leaf slot), leaf_rate = 0.15, replace = {0.8, 0.1},
-- word_start (function(id) → true when the token starts a word; default: every token),
-- spans = true (false: the no-span ablation, official mlm_sbo = False — every root token masked
-- independently with root_rate, every leaf token with leaf_rate, no SBO entries), sbo = true
-- (false: no SBO entries, for a model without the SBO head; max_span may then exceed leaves),
-- tail_end = false (true: a masked tail group also takes the empty leaf slots of its root, made
-- valid and labelled end_id, so the model learns where a tail ends; gm.eval.decode's tail_end;
-- a root with a relation and no tail, an absent relation, is such a group of empty slots only).
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

-- Root spans of one sequence: start on a word, end at a word's end, never over special tokens,
-- and keep a root on each side (the SBO boundaries: roots 1..R, as the official spans start
-- after [CLS] and end before the last root). Returns the spans {s, e} in sampling order.
local function root_spans(row, R, o)
  local budget, masked, taken, spans = math.floor(o.root_rate * R), 0, {}, {}
  local starts = {}
  for r = 2, R - 1 do
    if not o.special[row[r]] and o.word_start(row[r]) then starts[#starts + 1] = r end
  end
  local tries = 0
  while masked < budget and #starts > 0 and tries < 10 * R do
    tries = tries + 1
    local u = uniform(2)
    local len = span_length(u[1], o.span_p, o.max_span)
    local s = starts[1 + math.floor(u[2] * #starts)]
    local e = s + len - 1
    while e + 1 <= R - 1 and not o.word_start(row[e + 1]) and not o.special[row[e + 1]] do e = e + 1 end
    local ok = e <= R - 1 and e - s + 1 <= o.max_span
    for r = s, math.min(e, R) do ok = ok and not taken[r] and not o.special[row[r]] end
    if ok then
      for r = s, e do taken[r] = true end
      spans[#spans + 1] = { s, e }
      masked = masked + (e - s + 1)
    end
  end
  return spans
end

-- The leaf nodes of root r that hold a tail token.
local function tail_group(layout, row, valid_row, special, r)
  local group = {}
  for a = 1, layout.leaves do
    local node = layout:leaf(r, a)
    if valid_row[node] ~= 0 and not special[row[node]] then group[#group + 1] = node end
  end
  return group
end

local function options(opts)
  local layout = opts.layout
  local o = {
    special = opts.special or {},
    word_start = opts.word_start or function() return true end,
    root_rate = opts.root_rate or 0.15, span_p = opts.span_p or 0.2,
    max_span = math.tointeger(opts.max_span or layout.leaves) or opts.max_span, leaf_rate = opts.leaf_rate or 0.15,
    spans = opts.spans ~= false, sbo = opts.sbo ~= false, tail_end = opts.tail_end == true, end_id = opts.end_id,
  }
  if o.tail_end and math.type(o.end_id) ~= "integer" then
    error("mask: tail_end needs end_id, the token that labels the slots after a tail (the tokenizer's pad_id)", 3)
  end
  if opts.spans ~= nil and type(opts.spans) ~= "boolean" then
    error("mask: spans must be a boolean, got " .. type(opts.spans), 3)
  end
  if o.spans then
    if math.type(o.max_span) ~= "integer" or o.max_span < 1 or (o.sbo and o.max_span > layout.leaves) then
      error(string.format("mask: max_span must be an integer in [1, leaves = %d] (the span-boundary targets " ..
        "have one offset per leaf slot), got %s%s", layout.leaves, tostring(o.max_span),
        layout.leaves == 0 and "; a layout without leaves needs spans = false" or ""), 3)
    end
  end
  return o
end

function M.mask(batch, opts)
  local layout = opts.layout
  local R = layout.roots
  local o = options(opts)
  local ids, valid = batch.ids:totable(), batch.valid:totable()
  local B = #ids
  local p_mask, p_random = (opts.replace or {})[1] or 0.8, (opts.replace or {})[2] or 0.1
  local labels = { roots = { positions = {}, targets = {} }, leaves = { positions = {}, targets = {} },
                   sbo = { left = {}, right = {}, offset = {}, targets = {} } }
  local chosen = {} -- {b, node, part}
  local valid_changed = false
  local sbo = labels.sbo
  for b = 1, B do
    local row, valid_row = ids[b], valid[b]
    if o.spans then
      for _, span in ipairs(root_spans(row, R, o)) do
        local s, e = span[1], span[2]
        for r = s, e do
          chosen[#chosen + 1] = { b, r, "roots" }
          if o.sbo then
            local i = #sbo.offset + 1
            sbo.left[i], sbo.right[i] = layout:flat(b, s - 1), layout:flat(b, e + 1)
            sbo.offset[i], sbo.targets[i] = r - s + 1, row[r]
          end
        end
      end
      -- leaves: whole tail groups (with tail_end also the empty group of a root that has a
      -- relation and no tail: an absent relation, all of whose slots are its end)
      local draws, rels = uniform(R), batch.relation and batch.relation[b] or {}
      for r = 1, R do
        local group = tail_group(layout, row, valid_row, o.special, r)
        if (#group > 0 or (o.tail_end and (rels[r] or 0) ~= 0)) and draws[r] < o.leaf_rate then
          for _, node in ipairs(group) do chosen[#chosen + 1] = { b, node, "leaves" } end
          if o.tail_end then -- the empty slots after the tail join it, labelled as its end
            for a = 1, layout.leaves do
              local node = layout:leaf(r, a)
              if valid_row[node] == 0 then
                row[node], valid_row[node], valid_changed = o.end_id, 1, true
                chosen[#chosen + 1] = { b, node, "leaves" }
              end
            end
          end
        end
      end
    else
      local draws = uniform(layout.nodes)
      for node = 1, layout.nodes do
        local rate = node <= R and o.root_rate or o.leaf_rate
        if valid_row[node] ~= 0 and not o.special[row[node]] and draws[node] < rate then
          chosen[#chosen + 1] = { b, node, node <= R and "roots" or "leaves" }
        end
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
    ids = gm.tensor(ids), valid = valid_changed and gm.tensor(valid) or batch.valid, relation = batch.relation,
    head_length = batch.head_length, labels = labels,
  }
end

return M
