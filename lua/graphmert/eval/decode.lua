-- decode.lua — multi-token tails for (passage, head, relation) queries with a trained GraphMERT.
--
-- A query is {toks = passage token ids (already fitted to the roots), at = index in toks of the
-- head's first token, head_length, relation = id}. For each tail length ℓ = 1..leaves the head's
-- root gets the relation and ℓ leaf slots of [MASK] (the other slots empty, as in training,
-- where a tail fills as many slots as it has tokens), so the decoder, not the caller, chooses the
-- length. A candidate's score is its mean log-probability per token (length-normalised, ≤ 0;
-- exp(score) is the geometric-mean token probability), which makes lengths comparable.
--
-- decode(model, tok, queries, opts) → per query a list of candidates {ids, score}, best first
--   opts.mode = "open": iterative mask-predict per length: at each step the most probable
--     (slot, token) among the still-masked slots is fixed, and the model is asked again; the
--     first slot must start a word, no slot may be a special token.
--   opts.mode = "constrained": only tails from opts.tails (relation id → list of id lists, e.g. the
--     seed graph's entity names of the kind the relation reaches) are scored, each by the slot
--     distributions of one forward with ℓ masks; nothing outside that list can come out.
--   opts.top (5): candidates kept per query; opts.batch (16): sequences per forward;
--   opts.tail_end (false): see above.
local gm = require "graphmert"

local M = {}

local NEG = -math.huge

-- The log-probabilities of every masked slot of every job, in batches. Without `masks`:
-- job.log_probs[a] is a Lua list over the vocabulary for each slot a that holds [MASK]. With
-- masks = {first = [V], rest = [V]} (0 for an allowed token, −inf for a forbidden one, for slot 1
-- and the others): job.best[a] = {log-probability, id} of the best allowed token, found in C.
local function fill_log_probs(model, tok, jobs, batch, masks)
  local layout = model.layout
  for first = 1, #jobs, batch do
    local seqs, positions, where = {}, {}, {}
    for j = first, math.min(#jobs, first + batch - 1) do
      local job, s = jobs[j], layout:sequence(tok)
      local root = layout:append(s, job.query.toks) + job.query.at - 1
      layout:inject(s, root, job.query.relation, job.query.head_length, job.slots)
      seqs[#seqs + 1] = s
      job.log_probs, job.best = {}, {}
      for a, id in ipairs(job.slots) do
        if id == tok.mask_id then
          positions[#positions + 1] = layout:flat(#seqs, layout:leaf(root, a))
          where[#where + 1] = { job, a }
        end
      end
    end
    if #positions > 0 then
      model:evaluating(function()
        local lp = model:logits(model(layout:batch(seqs)), positions):log_softmax(2)
        if not masks then
          for i, row in ipairs(lp:totable()) do where[i][1].log_probs[where[i][2]] = row end
          return
        end
        local kind = {}
        for i, w in ipairs(where) do kind[i] = w[2] == 1 and 1 or 2 end
        local values, ids = (lp + masks.both:index_select(1, kind)):max(2)
        values, ids = values:totable(), ids:totable()
        for i, w in ipairs(where) do w[1].best[w[2]] = { values[i], ids[i] } end
      end)
    end
  end
end

-- masks over the vocabulary for open decoding: slot 1 takes a word start, the others any
-- non-special piece (or [PAD], the end, with tail_end); both = [first; rest]
local function token_masks(tok, V, tail_end)
  local special = { [tok.pad_id] = true, [tok.unk_id] = true, [tok.cls_id] = true, [tok.sep_id] = true,
    [tok.mask_id] = true }
  local first, rest = {}, {}
  for id = 1, V do
    first[id] = (not special[id] and tok:word_start(id)) and 0 or NEG
    rest[id] = (not special[id] or (tail_end and id == tok.pad_id)) and 0 or NEG
  end
  return { both = gm.tensor { first, rest } }
end

-- one job per query and slot count: all leaves with tail_end, each length 1..leaves without
local function new_jobs(model, tok, queries, opts)
  local jobs, L = {}, model.layout.leaves
  for qi, q in ipairs(queries) do
    for len = opts.tail_end and L or 1, L do
      local slots = {}
      for a = 1, len do slots[a] = tok.mask_id end
      jobs[#jobs + 1] = { query = q, index = qi, slots = slots, total = 0, masked = len }
    end
  end
  return jobs
end

-- the tail a job's slots spell: with tail_end, the tokens before the first [PAD]
local function tail_of(tok, slots, tail_end)
  if not tail_end then return slots end
  local ids = {}
  for _, id in ipairs(slots) do
    if id == tok.pad_id then break end
    ids[#ids + 1] = id
  end
  return ids
end

local function open(model, tok, queries, opts)
  local masks = token_masks(tok, model.config.vocab, opts.tail_end)
  local jobs = new_jobs(model, tok, queries, opts)
  for _ = 1, model.layout.leaves do
    local active = {}
    for _, job in ipairs(jobs) do if job.masked > 0 then active[#active + 1] = job end end
    if #active == 0 then break end
    fill_log_probs(model, tok, active, opts.batch or 16, masks)
    for _, job in ipairs(active) do
      local best, slot, token = NEG, nil, nil
      for a, b in pairs(job.best) do
        if b[1] > best then best, slot, token = b[1], a, b[2] end
      end
      if not slot then -- no allowed token anywhere: the job gives no candidate
        job.masked, job.total = 0, NEG
      else
        job.slots[slot], job.total, job.masked = token, job.total + best, job.masked - 1
      end
    end
  end
  local out = {}
  for qi = 1, #queries do out[qi] = {} end
  for _, job in ipairs(jobs) do
    local ids = tail_of(tok, job.slots, opts.tail_end)
    -- with tail_end a [PAD] may come before a token: only a tail that ends once counts
    local clean = true
    for a = #ids + 1, #job.slots do clean = clean and job.slots[a] == tok.pad_id end
    if job.total > NEG and #ids > 0 and clean then
      local list = out[job.index]
      list[#list + 1] = { ids = ids, score = job.total / #job.slots }
    end
  end
  return out
end

-- a relation's known tails grouped by token count, made once per list
local grouped = setmetatable({}, { __mode = "k" })
local function by_length(list)
  if not grouped[list] then
    local g = {}
    for _, ids in ipairs(list) do
      g[#ids] = g[#ids] or {}
      table.insert(g[#ids], ids)
    end
    grouped[list] = g
  end
  return grouped[list]
end

-- keeps list the `top` best candidates, best first, as candidates come
local function keep(list, top, ids, score)
  if #list == top and score <= list[top].score then return end
  local i = math.min(#list, top - 1) + 1
  while i > 1 and list[i - 1].score < score do
    if i <= top then list[i] = list[i - 1] end
    i = i - 1
  end
  list[i] = { ids = ids, score = score }
end

local function constrained(model, tok, queries, opts)
  local jobs = new_jobs(model, tok, queries, opts)
  fill_log_probs(model, tok, jobs, opts.batch or 16)
  local out, top = {}, opts.top or 5
  for qi = 1, #queries do out[qi] = {} end
  for _, job in ipairs(jobs) do
    local slots, lp, list = #job.slots, job.log_probs, out[job.index]
    local groups = by_length((opts.tails or {})[job.query.relation] or {})
    for len = opts.tail_end and 1 or slots, slots do
      for _, ids in ipairs(groups[len] or {}) do
        local sum = 0
        for a = 1, slots do sum = sum + lp[a][ids[a] or tok.pad_id] end
        keep(list, top, ids, sum / slots)
      end
    end
  end
  return out
end

function M.decode(model, tok, queries, opts)
  opts = opts or {}
  local mode = opts.mode or "open"
  local run = mode == "open" and open or mode == "constrained" and constrained
  if not run then error("decode: mode must be \"open\" or \"constrained\", got " .. tostring(mode), 2) end
  local out = run(model, tok, queries, opts)
  local top = opts.top or 5
  for qi, list in ipairs(out) do
    table.sort(list, function(x, y) return x.score > y.score end)
    for k = #list, top + 1, -1 do list[k] = nil end
    out[qi] = list
  end
  return out
end

return M
