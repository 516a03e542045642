-- decode.lua — multi-token tails for (passage, head, relation) queries with a trained GraphMERT.
--
-- A query is {toks = passage token ids (already fitted to the roots), at = index in toks of the
-- head's first token, head_length, relation = id}. For each tail length ℓ = 1..leaves the head's
-- root gets the relation and ℓ leaf slots of [MASK] (the other slots empty, as in training,
-- where a tail fills as many slots as it has tokens), so the decoder, not the caller, chooses the
-- length. A candidate's score is its mean log-probability per token (length-normalised, ≤ 0;
-- exp(score) is the geometric-mean token probability), which makes lengths comparable.
--
-- decode(model, tok, queries, opts) → per query a list of candidates {ids, score}, best first;
--   and, constrained, per query {extra = row of its `extra` list → score, none = the empty
--   tail's score (with empty)}
--   opts.mode = "open": iterative mask-predict per length: at each step the most probable
--     (slot, token) among the still-masked slots is fixed, and the model is asked again; the
--     first slot must start a word, no slot may be a special token. With empty, a query whose
--     first slot the model fills best with [PAD] at the first step ("none") is asked no more: its
--     answer is the empty tail, scored by that forward (most queries of a passage are such, so
--     the later steps ask only the rest, in sequences of their own).
--   opts.mode = "constrained": only tails from opts.tails (relation id → a gm.data.tail_list, e.g.
--     the seed graph's entity names of the kind the relation reaches, g:known_tails) are scored,
--     each by the slot distributions of one forward with ℓ masks (summed and ranked in C by a
--     gm.sum_set, which reads only the tails whose first token can still rank); nothing outside
--     that list can come out. A query's own `tails` (a list) replaces its relation's: the types
--     its head's type reaches, where the schema pairs them (g:head_tails). A query's `extra` (a
--     gm.data.tail_list) is scored whole, beside the ranking: the second result.
--   opts.top (5): candidates kept per query; opts.batch (16): sequences per forward;
--   opts.pack (false): queries that share their passage (the same toks table) and slot count are
--     asked in one sequence, each at its own head root, as long as their head spans do not
--     overlap — fewer, fuller sequences; a query alone in its passage is asked exactly as
--     without pack;
--   opts.tail_end (false): the model was trained with tail_end (gm.data.masking): one forward
--     with every leaf slot masked, a tail ends at the first [PAD];
--   opts.empty (false, needs tail_end): the empty tail (every slot [PAD]: "this head has no such
--     relation", which a model trained with absent relations learns) is a candidate too, with
--     ids = {} and empty = true; candidates ranked below it are ones the model does not assert.
local gm = require "graphmert"
local tail_list = require "graphmert.data.tail_list"

local M = {}

local NEG = -math.huge

-- The sequences the jobs run in: one each, or with pack the jobs of queries that share their
-- passage (the same toks table) and slot count, each at its own head root with no head overlapping
-- another — as training shows several heads' triples in one sequence (first fit, in query order).
local function sequences_of(jobs, pack)
  local out, by_passage = {}, {}
  for _, job in ipairs(jobs) do
    local q, into = job.query, nil
    if pack then
      by_passage[q.toks] = by_passage[q.toks] or {}
      for _, s in ipairs(by_passage[q.toks]) do
        local free = #s.jobs[1].slots == #job.slots
        for i = q.at, q.at + math.max(q.head_length, 1) - 1 do free = free and not s.covered[i] end
        if free then into = s break end
      end
    end
    if not into then
      into = { jobs = {}, covered = {} }
      out[#out + 1] = into
      if pack then table.insert(by_passage[q.toks], into) end
    end
    into.jobs[#into.jobs + 1] = job
    for i = q.at, q.at + math.max(q.head_length, 1) - 1 do into.covered[i] = true end
  end
  return out
end

-- The vocabulary's log-probabilities are made for at most ROWS masked slots at a time (a job's
-- slots never split): blocks of at most [ROWS, V], a few sizes the block cache reuses, instead of
-- one [P, V] per batch whose size followed the batch, which left a new cached block for each new
-- size and made a long run's memory grow with the corpus.
local ROWS = 64

-- Runs the model over the sequences in batches, each with its jobs' slots at their roots; take(lp,
-- where) gets [P, V] log-probabilities of slots that hold [MASK], where[i] = {job, slot} naming row
-- i, block by block (every slot of a job in one block).
local function forward_masked(model, tok, sequences, batch, take)
  local layout = model.layout
  for first = 1, #sequences, batch do
    local seqs, blocks = {}, { { positions = {}, where = {} } }
    for k = first, math.min(#sequences, first + batch - 1) do
      local jobs, s = sequences[k].jobs, layout:sequence(tok)
      local before = layout:append(s, jobs[1].query.toks) - 1
      seqs[#seqs + 1] = s
      for _, job in ipairs(jobs) do
        local root = before + job.query.at
        layout:inject(s, root, job.query.relation, job.query.head_length, job.slots)
        local block = blocks[#blocks]
        if #block.positions + #job.slots > ROWS and #block.positions > 0 then
          block = { positions = {}, where = {} }
          blocks[#blocks + 1] = block
        end
        for a, id in ipairs(job.slots) do
          if id == tok.mask_id then
            block.positions[#block.positions + 1] = layout:flat(#seqs, layout:leaf(root, a))
            block.where[#block.where + 1] = { job, a }
          end
        end
      end
    end
    if #blocks[1].positions > 0 then
      model:evaluating(function()
        local batch = layout:batch(seqs)
        local hidden = model(batch)
        batch.ids:release(); batch.valid:release()
        for _, block in ipairs(blocks) do
          if #block.positions > 0 then
            local lp = model:logits(hidden, block.positions):log_softmax(2)
            take(lp, block.where)
            lp:release()
          end
        end
        hidden:release()
      end)
    end
  end
end

-- masks over the vocabulary for open decoding: slot 1 takes a word start (or [PAD], no tail, with
-- empty), the others any non-special piece (or [PAD], the end, with tail_end); both = [first; rest]
local function token_masks(tok, V, opts)
  local special = { [tok.pad_id] = true, [tok.unk_id] = true, [tok.cls_id] = true, [tok.sep_id] = true,
    [tok.mask_id] = true }
  local first, rest = {}, {}
  for id = 1, V do
    local ending = opts.tail_end and id == tok.pad_id
    first[id] = ((not special[id] and tok:word_start(id)) or (ending and opts.empty)) and 0 or NEG
    rest[id] = (not special[id] or ending) and 0 or NEG
  end
  return gm.tensor { first, rest }
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
  local masks = token_masks(tok, model.config.vocab, opts)
  local jobs = new_jobs(model, tok, queries, opts)
  for step = 1, model.layout.leaves do
    local asked = {} -- the jobs with a masked slot left, in sequences of their own
    for _, job in ipairs(jobs) do if job.masked > 0 then asked[#asked + 1] = job end end
    if #asked == 0 then break end
    forward_masked(model, tok, sequences_of(asked, opts.pack), opts.batch or 16, function(lp, where)
      -- the best allowed token of each masked slot, found in C
      local kind = {}
      for i, w in ipairs(where) do w[1].best, kind[i] = {}, w[2] == 1 and 1 or 2 end
      local values, ids = (lp + masks:index_select(1, kind)):max(2)
      values, ids = values:totable(), ids:totable()
      for i, w in ipairs(where) do w[1].best[w[2]] = { values[i], ids[i] } end
      if step == 1 and opts.empty then -- the empty tail's score, should the model answer "none"
        local none = lp:narrow(2, tok.pad_id, 1):totable()
        for i, w in ipairs(where) do w[1].none = (w[1].none or 0) + none[i][1] end
      end
    end)
    for _, job in ipairs(asked) do
      local first = job.best[1]
      if step == 1 and opts.empty and first and first[2] == tok.pad_id then
        -- "none" is the first slot's answer: the empty tail, scored by this forward, asked no more
        for a = 1, #job.slots do job.slots[a] = tok.pad_id end
        job.total, job.masked = job.none, 0
      else
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
  end
  local out = {}
  for qi = 1, #queries do out[qi] = {} end
  for _, job in ipairs(jobs) do
    local ids = tail_of(tok, job.slots, opts.tail_end)
    -- with tail_end a [PAD] may come before a token: only a tail that ends once counts
    local clean = true
    for a = #ids + 1, #job.slots do clean = clean and job.slots[a] == tok.pad_id end
    if job.total > NEG and clean and (#ids > 0 or opts.empty) then
      local list = out[job.index]
      list[#list + 1] = { ids = ids, score = job.total / #job.slots, empty = #ids == 0 or nil }
    end
  end
  return out
end

-- A relation's known tails (a gm.data.tail_list) that fit `slots` masked slots (exactly `slots`
-- tokens, or up to `slots` with tail_end, the rest [PAD]) as a gm.sum_set over 1-based indices
-- into a job's flattened [slots × V] log-probabilities: tail t's index at slot a is (a − 1)·V +
-- its id there. Made once per list, slot count and tail_end, from the list's id tensor (no Lua
-- table per tail); rows[k] is the list's row of the set's tail k (nil: every row, in order).
local gathered = setmetatable({}, { __mode = "k" })
local function tail_index(list, slots, V, tail_end)
  if not tail_list.is(list) then error("decode: opts.tails must map relation ids to gm.data.tail_list lists", 0) end
  gathered[list] = gathered[list] or {}
  local key = tail_end and -slots or slots
  local cached = gathered[list][key]
  if cached and cached.V == V then return cached end
  local rows
  if not (tail_end and slots == list.width) then
    rows = {}
    for i = 1, list.n do
      local length = list.lengths:byte(i)
      if length == slots or (tail_end and length < slots) then rows[#rows + 1] = i end
    end
  end
  local count = rows and #rows or list.n
  cached = { rows = rows, V = V }
  if count > 0 then
    local ids = rows and list.ids:index_select(1, rows) or list.ids
    if slots > list.width then -- a list narrower than the slots: [PAD] after every tail
      ids = gm.cat({ ids, gm.full(list.pad, { count, slots - list.width }) }, 2)
    end
    local offsets = {}
    for a = 1, slots do offsets[a] = (a - 1) * V end
    local index = (ids:narrow(2, 1, slots) + gm.tensor { offsets }):reshape { count * slots }
    cached.set = gm.sum_set(index, slots)
  end
  gathered[list][key] = cached
  return cached
end

-- keeps list the `top` best candidates, best first, as candidates come
local function keep(list, top, candidate)
  if #list == top and candidate.score <= list[top].score then return end
  local i = math.min(#list, top - 1) + 1
  while i > 1 and list[i - 1].score < candidate.score do
    if i <= top then list[i] = list[i - 1] end
    i = i - 1
  end
  list[i] = candidate
end

local function constrained(model, tok, queries, opts)
  local jobs, V, top = new_jobs(model, tok, queries, opts), model.config.vocab, opts.top or 5
  local out, scored = {}, {}
  for qi = 1, #queries do out[qi], scored[qi] = {}, { extra = {} } end
  forward_masked(model, tok, sequences_of(jobs, opts.pack), opts.batch or 16, function(lp, where)
    local rows = {} -- job → its rows of lp, slot by slot
    for i, w in ipairs(where) do
      rows[w[1]] = rows[w[1]] or {}
      rows[w[1]][w[2]] = i
    end
    for job, r in pairs(rows) do
      local slots, list = #job.slots, out[job.index]
      local together = true -- (a job's rows follow one another when all its slots are masked: read in place)
      for a = 2, slots do together = together and r[a] == r[1] + a - 1 end
      local picked = together and lp:narrow(1, r[1], slots) or lp:index_select(1, r)
      local flat = picked:reshape { slots * V }
      local tails = job.query.tails or (opts.tails or {})[job.query.relation]
      local known = tails and tail_index(tails, slots, V, opts.tail_end)
      if known and known.set then
        -- the `top` best tails' summed log-probabilities, found in C without reading every tail
        local best, rank = known.set:top(flat, top)
        local values, which = best:totable(), rank:totable()
        best:release(); rank:release()
        for i, v in ipairs(values) do
          local k = math.tointeger(which[i])
          keep(list, top, { ids = tails:tail(known.rows and known.rows[k] or k), score = v / slots })
        end
      end
      local extra = job.query.extra and tail_index(job.query.extra, slots, V, opts.tail_end)
      if extra and extra.set then -- every tail of the query's own list, each scored
        local count = extra.rows and #extra.rows or job.query.extra.n
        local best, rank = extra.set:top(flat, count)
        local values, which = best:totable(), rank:totable()
        best:release(); rank:release()
        for i, v in ipairs(values) do
          local k = math.tointeger(which[i])
          scored[job.index].extra[extra.rows and extra.rows[k] or k] = v / slots
        end
      end
      if opts.empty then
        local none = 0
        for a = 1, slots do none = none + flat:get_flat((a - 1) * V + tok.pad_id) end
        keep(list, top, { ids = {}, score = none / slots, empty = true })
        local s = scored[job.index]
        if not s.none or none / slots > s.none then s.none = none / slots end
      end
      picked:release(); flat:release()
    end
  end)
  return out, scored
end

function M.decode(model, tok, queries, opts)
  opts = opts or {}
  local mode = opts.mode or "open"
  local run = mode == "open" and open or mode == "constrained" and constrained
  if not run then error("decode: mode must be \"open\" or \"constrained\", got " .. tostring(mode), 2) end
  if opts.empty and not opts.tail_end then
    error("decode: empty needs tail_end (only a model that learned where tails end can say a tail is empty)", 2)
  end
  local out, scored = run(model, tok, queries, opts)
  local top = opts.top or 5
  for qi, list in ipairs(out) do
    table.sort(list, function(x, y) return x.score > y.score end)
    for k = #list, top + 1, -1 do list[k] = nil end
    out[qi] = list
  end
  return out, scored
end

return M
