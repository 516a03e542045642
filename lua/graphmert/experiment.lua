-- experiment.lua — the pieces experiments share: WordNet data prepared once (split by synset
-- and by triple, tokenizer, relation ids, sequences, masking options), a model from a config,
-- one training step, and the evaluation tables.
local gm = require "graphmert"

local M = {}

-- a stable hash of a string into 0..999: the split never changes between runs
local function bucket(key)
  local h = 0
  for c in key:gmatch(".") do h = (h * 31 + c:byte()) % 1000003 end
  return h % 1000
end

-- A triple and its inverse (A hypernym B, B hyponym A) share one key, so both sides of a
-- held-out fact stay out of training.
local function pair_key(t)
  local a, b = t.head, t.tail
  if a > b then a, b = b, a end
  return a .. "\0" .. b
end

-- A fixed permutation of the training sequences (a seeded LCG, independent of gm's generator),
-- so batches mix glossary neighbours and copies of one record.
local function shuffle(list, seed)
  local state = seed % 2147483647 + 1
  for i = #list, 2, -1 do
    state = state * 48271 % 2147483647
    local j = state % i + 1
    list[i], list[j] = list[j], list[i]
  end
end

-- The split: `heldout` of the synsets (their texts and triples) and `heldout_triples` of the
-- remaining facts (by unordered head/tail pair) never reach training. Training records keep
-- their text but lose held-out triples and triples pointing into held-out synsets; held-out
-- facts are evaluated on their seen text (d.heldout_facts), held-out synsets on unseen text
-- (d.heldout).
local function split(records, cfg)
  local d = { train = {}, heldout = {}, heldout_facts = {} }
  local held_synset = {}
  for _, r in ipairs(records) do
    if r.synset and bucket(r.synset) < cfg.heldout * 1000 then
      held_synset[r.synset] = true
      d.heldout[#d.heldout + 1] = r
    end
  end
  local fact_share = (cfg.heldout_triples or 0) * 1000
  for _, r in ipairs(records) do
    if not held_synset[r.synset or false] then
      local kept, held = {}, {}
      for _, t in ipairs(r.triples) do
        if bucket(pair_key(t)) < fact_share then held[#held + 1] = t
        elseif not held_synset[t.target or false] then kept[#kept + 1] = t end
      end
      d.train[#d.train + 1] = { text = r.text, triples = kept, synset = r.synset }
      if #held > 0 then d.heldout_facts[#d.heldout_facts + 1] = { text = r.text, triples = held, synset = r.synset } end
    end
  end
  return d
end

-- cfg: wordnet, heldout, heldout_triples, vocab_size, copies, model.roots/leaves;
-- tok: an existing tokenizer or nil
function M.prepare(cfg, tok)
  local wn = gm.wordnet.load(cfg.wordnet)
  local records = gm.corpus.from_wordnet(wn)
  local d = split(records, cfg)
  -- only the counts stay: the synsets would be a large Lua heap for every collection to walk
  d.wordnet = { count = wn.count, errors = wn.errors }
  if not tok then
    local texts = {}
    for _, r in ipairs(d.train) do texts[#texts + 1] = r.text end
    tok = gm.tokenizer.train(texts, { vocab_size = cfg.vocab_size })
  end
  d.tok = tok
  local names = {}
  for _, r in ipairs(records) do for _, t in ipairs(r.triples) do names[t.relation] = true end end
  d.relation_names = {}
  for n in pairs(names) do d.relation_names[#d.relation_names + 1] = n end
  table.sort(d.relation_names)
  d.relations = {}
  for id, n in ipairs(d.relation_names) do d.relations[n] = id end
  local m = cfg.model
  d.train_seqs, d.report = gm.corpus.build(d.train, tok,
    { roots = m.roots, leaves = m.leaves, relations = d.relations, copies = cfg.copies })
  shuffle(d.train_seqs, cfg.seed)
  d.eval_seqs = gm.corpus.build(d.heldout, tok, { roots = m.roots, leaves = m.leaves, relations = d.relations })
  d.mask_opts = { vocab = tok:size(), mask_id = tok.mask_id, roots = m.roots, leaves = m.leaves,
    special = { [tok.pad_id] = true, [tok.cls_id] = true, [tok.sep_id] = true },
    leaf_rate = cfg.leaf_rate, word_start = function(id) return tok:word_start(id) end }
  return d
end

function M.summary(d)
  local facts = 0
  for _, r in ipairs(d.heldout_facts) do facts = facts + #r.triples end
  return string.format("wordnet: %d synsets (%d parse errors), %d held out, %d held-out facts; %d training sequences, %d held out; %d triples injected; vocabulary %d; %d relations",
    d.wordnet.count, d.wordnet.errors.count, #d.heldout, facts, #d.train_seqs, #d.eval_seqs, d.report.injected or 0,
    d.tok:size(), #d.relation_names)
end

-- A copy of cfg whose model table has `overrides` applied (an ablation or baseline variant).
function M.variant(cfg, overrides)
  local c, m = {}, {}
  for k, v in pairs(cfg) do c[k] = v end
  for k, v in pairs(cfg.model) do m[k] = v end
  for k, v in pairs(overrides or {}) do m[k] = v end
  c.model = m
  return c
end

function M.model(d, cfg)
  local model_cfg = { vocab = d.tok:size(), relations = #d.relation_names }
  for k, v in pairs(cfg.model) do model_cfg[k] = v end
  return gm.nn.GraphMERT(model_cfg)
end

local function finite(x) return x == x and x ~= math.huge and x ~= -math.huge end

-- One optimisation step on the step-th batch; returns the loss, the real tokens in the batch and
-- whether the step was skipped. A NaN or infinite loss or gradient norm raises an error naming
-- the step before the optimizer touches the weights (so the last checkpoint stays the last good
-- state), or with cfg.on_nonfinite = "skip" leaves the weights alone and goes on.
function M.step(d, cfg, model, opt, step)
  local first = ((step - 1) * cfg.batch) % math.max(1, #d.train_seqs) + 1
  local batch = gm.masking.mask(gm.corpus.batch(d.train_seqs, first, cfg.batch), d.mask_opts)
  opt:set_lr(gm.optim.cosine(step, { peak = cfg.lr, min_lr = cfg.min_lr, warmup = cfg.warmup, total = cfg.steps }))
  opt:zero_grad()
  local loss = model:loss(batch, cfg.loss)
  local value, tokens = loss:item(), batch.valid:sum():item()
  local bad
  if not finite(value) then
    bad = string.format("loss %s", tostring(value))
  else
    loss:backward()
    local norm = gm.optim.clip_grad_norm(model:parameters(), cfg.clip)
    if not finite(norm) then bad = string.format("gradient norm %s", tostring(norm)) end
  end
  if bad then
    opt:zero_grad()
    if cfg.on_nonfinite == "skip" then return value, tokens, true end
    error(string.format("non-finite %s at step %d: training stopped, the last checkpoint is the last good state " ..
      "(on_nonfinite = \"skip\" in the config skips such steps instead)", bad, step), 0)
  end
  opt:step()
  return value, tokens, false
end

-- Masked-token accuracy on the held-out sequences, with fixed masks (the generator's state is
-- put back afterwards, so evaluating does not change training).
function M.masked_accuracy(d, cfg, model)
  model:eval()
  local state = gm.get_rng_state()
  gm.manual_seed(12345)
  local hits, total = 0, 0
  gm.no_grad(function()
    for first = 1, #d.eval_seqs, cfg.batch do
      local b = gm.masking.mask(gm.corpus.batch(d.eval_seqs, first, cfg.batch), d.mask_opts)
      local hidden = model(b)
      for _, part in ipairs { b.labels.roots, b.labels.leaves } do
        if #part.positions > 0 then
          local _, pred = model:logits(hidden, part.positions):max(2)
          for k, p in ipairs(pred:totable()) do
            total = total + 1
            if p == part.targets[k] then hits = hits + 1 end
          end
        end
      end
    end
  end)
  gm.set_rng_state(state)
  model:train()
  return total > 0 and hits / total or 0, total
end

local function tail_opts(d, cfg)
  local m = cfg.model
  return { roots = m.roots, leaves = m.leaves, relations = d.relations, max_triples = cfg.eval_triples or 500 }
end

-- Tail prediction for the model on held-out facts (seen text) and held-out synsets (unseen text).
function M.tail_metrics(d, cfg, model)
  local o = tail_opts(d, cfg)
  return { facts = gm.evaluate.tail_prediction(model, d.tok, d.heldout_facts, o),
           synsets = gm.evaluate.tail_prediction(model, d.tok, d.heldout, o) }
end

-- The same for the most-frequent-tail-per-relation baseline.
function M.baseline_metrics(d, cfg)
  local o = tail_opts(d, cfg)
  return { facts = gm.evaluate.most_frequent_tail(d.train, d.heldout_facts, d.tok, o),
           synsets = gm.evaluate.most_frequent_tail(d.train, d.heldout, d.tok, o) }
end

local function rule(widths)
  local parts = {}
  for i, w in ipairs(widths) do parts[i] = string.rep("-", w + 2) end
  return "|" .. table.concat(parts, "|") .. "|"
end

-- The evaluation table: one row per {name, acc (masked-token accuracy or nil), tails (from
-- tail_metrics)}, tail prediction on held-out facts and on held-out synsets side by side.
function M.table(rows)
  local lines = {
    "| model                    | MLM acc | facts: hits@1 | hits@10 |   MRR | exact | synsets: hits@1 | hits@10 |   MRR | exact |",
    rule { 24, 7, 13, 7, 5, 5, 15, 7, 5, 5 } }
  for _, r in ipairs(rows) do
    local f, s = r.tails.facts, r.tails.synsets
    lines[#lines + 1] = string.format("| %-24s | %7s | %13.3f | %7.3f | %5.3f | %5.3f | %15.3f | %7.3f | %5.3f | %5.3f |",
      r.name, r.acc and string.format("%.3f", r.acc) or "-", f.hits1, f.hits10, f.mrr, f.exact,
      s.hits1, s.hits10, s.mrr, s.exact)
  end
  local f, s = rows[1].tails.facts, rows[1].tails.synsets
  lines[#lines + 1] = string.format("(%d held-out facts on seen text, %d triples of held-out synsets on unseen text)", f.n, s.n)
  return table.concat(lines, "\n")
end

return M
