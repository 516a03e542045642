-- graphmert.experiment — the pieces experiments share: WordNet data prepared once (split by
-- synset and by triple, tokenizer, relation ids, layout, sequences, masking options), a model
-- from a config, the trainer (experiment/trainer.lua), the config schema (experiment/config.lua),
-- the scripts' argument parser (experiment/args.lua) and the evaluation tables.
local gm = require "graphmert"
local trainer = require "graphmert.experiment.trainer"
local injection = require "graphmert.experiment.injection"

local M = {
  config = require "graphmert.experiment.config",
  args = require "graphmert.experiment.args",
  trainer = trainer.trainer,
  masked_accuracy = trainer.masked_accuracy,
}

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

-- cfg: a checked config (wordnet, heldout, heldout_triples, vocab_size or bert_vocab, copies,
-- packing, leaf_rate, masking_spans, model.roots/leaves); tok: an existing tokenizer or nil;
-- opts: {keep_wordnet}
function M.prepare(cfg, tok, opts)
  local data = gm.data
  local wn = data.wordnet.load(cfg.wordnet)
  local records = data.corpus.from_wordnet(wn)
  local d = split(records, cfg)
  -- only the counts stay: the synsets would be a large Lua heap for every collection to walk;
  -- opts.keep_wordnet keeps them as d.wn for a caller that scores triples against WordNet
  d.wordnet = { count = wn.count, errors = wn.errors }
  if opts and opts.keep_wordnet then d.wn = wn end
  d.graph = gm.eval.extract.seed_graph(wn) -- lemmas and the kinds each relation joins
  if not tok and cfg.bert_vocab then
    tok = data.tokenizer.from_vocab(cfg.bert_vocab)
  elseif not tok then
    local texts = {}
    for _, r in ipairs(d.train) do texts[#texts + 1] = r.text end
    tok = data.tokenizer.train(texts, { vocab_size = cfg.vocab_size })
  end
  d.tok = tok
  local names = {}
  for _, r in ipairs(records) do for _, t in ipairs(r.triples) do names[t.relation] = true end end
  d.relation_names = {}
  for n in pairs(names) do d.relation_names[#d.relation_names + 1] = n end
  table.sort(d.relation_names)
  d.relations = {}
  for id, n in ipairs(d.relation_names) do d.relations[n] = id end
  d.layout = gm.layout { roots = cfg.model.roots, leaves = cfg.model.leaves }
  if cfg.mentions or (cfg.absent or 0) > 0 then
    injection.plan(d.train, wn, d.graph, d.relation_names, cfg)
  end
  d.train_seqs, d.report = data.corpus.build(d.train, tok,
    { layout = d.layout, relations = d.relations, copies = cfg.copies, packing = cfg.packing })
  shuffle(d.train_seqs, cfg.seed)
  d.eval_seqs = data.corpus.build(d.heldout, tok, { layout = d.layout, relations = d.relations, packing = cfg.packing })
  d.mask_opts = { vocab = tok:size(), mask_id = tok.mask_id, layout = d.layout,
    -- the official collator labels none of the five special tokens (collating_graphmert.py:478)
    special = { [tok.pad_id] = true, [tok.unk_id] = true, [tok.cls_id] = true, [tok.sep_id] = true, [tok.mask_id] = true },
    leaf_rate = cfg.leaf_rate, spans = cfg.masking_spans, sbo = cfg.model.sbo, max_span = cfg.max_span or nil,
    tail_end = cfg.tail_end, end_id = tok.pad_id,
    word_start = function(id) return tok:word_start(id) end }
  return d
end

function M.summary(d)
  local facts = 0
  for _, r in ipairs(d.heldout_facts) do facts = facts + #r.triples end
  return string.format("wordnet: %d synsets (%d parse errors), %d held out, %d held-out facts; %d training sequences, %d held out; %d triples injected; %d records truncated (%d tokens cut); vocabulary %d; %d relations",
    d.wordnet.count, d.wordnet.errors.count, #d.heldout, facts, #d.train_seqs, #d.eval_seqs, d.report.injected or 0,
    d.report.truncated_records, d.report.truncated_tokens, d.tok:size(), #d.relation_names)
end

-- The first n held-out synsets' glosses as extraction passages {id, text, gold = their triples}:
-- text the model never saw in training, scored against the synsets' own facts.
function M.heldout_passages(d, n)
  local passages = {}
  for i = 1, math.min(n, #d.heldout) do
    passages[i] = { id = i, text = d.heldout[i].text, gold = d.heldout[i].triples }
  end
  return passages
end

-- d for a training seed: the same split, sequences and masking options, the training batches in
-- that seed's order (a permutation of d's own order, so it does not depend on earlier calls).
function M.reorder(d, seed)
  local out = setmetatable({}, { __index = d })
  out.train_seqs = table.move(d.train_seqs, 1, #d.train_seqs, 1, {})
  shuffle(out.train_seqs, seed)
  return out
end

-- Runs gnuplot on `commands` (a list of lines); true when it ran, false when it is missing or
-- failed (the caller says there is no picture).
function M.plot(commands)
  local gp = io.popen("gnuplot 2>&1", "w")
  return gp ~= nil and gp:write(table.concat(commands, "\n"), "\n") ~= nil and gp:close() == true
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

-- The process-wide settings a config holds: the tensor memory cap, the matmul precision and
-- whether attention keeps its scores for backward.
function M.apply_settings(cfg)
  if cfg.memory_limit then gm.set_memory_limit(cfg.memory_limit) end
  gm.set_float32_matmul_precision(cfg.precision)
  gm.set_attention_keep_scores(cfg.attention_keep_scores)
end

-- run.json in a training output folder: what a later tool needs to rebuild the run's model and
-- read its outputs (the config file, the model's options, the relation names in id order, the
-- WordNet options of the seed graph). Written atomically.
function M.write_run(dir, run)
  local ok, err = gm.write_atomic(dir .. "/run.json", { require("cjson").encode(run) })
  if not ok then error("write_run: " .. err, 2) end
end

function M.read_run(dir)
  local path = dir .. "/run.json"
  local ok, run = pcall(require("graphmert.json").read, path, "read_run")
  if not ok then error(run .. " (experiments/train.lua writes run.json into its output folder)", 0) end
  if type(run.model) ~= "table" or type(run.relations) ~= "table" then
    error(path .. " is not a run description (model and relations expected)", 0)
  end
  return run
end

function M.model(d, cfg)
  local model_cfg = { vocab = d.tok:size(), relations = #d.relation_names }
  for k, v in pairs(cfg.model) do model_cfg[k] = v end
  -- the official init's padding row is the tokenizer's [PAD]
  if model_cfg.init == "official" and (model_cfg.pad_id or "auto") == "auto" then model_cfg.pad_id = d.tok.pad_id end
  return gm.nn.GraphMERT(model_cfg)
end

-- the known tails (lemmas of the kinds each relation reaches) are made once, at the first
-- evaluation, so that training does not carry them
-- The known tails (constrained decoding's list: relation id → the lemmas of the kinds it reaches),
-- made once per data.
function M.known_tails(d)
  d.known_tails = d.known_tails or gm.eval.extract.known_tails(d.graph, d.tok, d.relations, d.layout.leaves)
  return d.known_tails
end

local function tail_opts(d, cfg)
  M.known_tails(d)
  return { layout = d.layout, relations = d.relations, max_triples = cfg.eval_triples, tails = d.known_tails,
    tail_end = cfg.tail_end }
end

-- Tail prediction for the model on held-out facts (seen text) and held-out synsets (unseen text).
function M.tail_metrics(d, cfg, model)
  local o = tail_opts(d, cfg)
  return { facts = gm.eval.tail_prediction(model, d.tok, d.heldout_facts, o),
           synsets = gm.eval.tail_prediction(model, d.tok, d.heldout, o) }
end

-- The same for the most-frequent-tail-per-relation baseline.
function M.baseline_metrics(d, cfg)
  local o = tail_opts(d, cfg)
  return { facts = gm.eval.most_frequent_tail(d.train, d.heldout_facts, d.tok, o),
           synsets = gm.eval.most_frequent_tail(d.train, d.heldout, d.tok, o) }
end

local function rule(widths)
  local parts = {}
  for i, w in ipairs(widths) do parts[i] = string.rep("-", w + 2) end
  return "|" .. table.concat(parts, "|") .. "|"
end

-- The evaluation table: one row per {name, acc (masked-token accuracy or nil), tails (from
-- tail_metrics)}, tail prediction on held-out facts and on held-out synsets side by side: the
-- whole tail decoded without its length and ranked among the known tails (hits@1, hits@10,
-- MRR@10), then the first-token hits@1 with the length given (the earlier protocol).
function M.table(rows)
  local lines = {
    "| model                    | MLM acc | facts: tail@1 | tail@10 | MRR@10 | first@1 | synsets: tail@1 | tail@10 | MRR@10 | first@1 |",
    rule { 24, 7, 13, 7, 6, 7, 15, 7, 6, 7 } }
  for _, r in ipairs(rows) do
    local f, s = r.tails.facts, r.tails.synsets
    lines[#lines + 1] = string.format("| %-24s | %7s | %13.3f | %7.3f | %6.3f | %7.3f | %15.3f | %7.3f | %6.3f | %7.3f |",
      r.name, r.acc and string.format("%.3f", r.acc) or "-", f.tail.hits1, f.tail.hits10, f.tail.mrr, f.hits1,
      s.tail.hits1, s.tail.hits10, s.tail.mrr, s.hits1)
  end
  local f, s = rows[1].tails.facts, rows[1].tails.synsets
  lines[#lines + 1] = string.format("(%d held-out facts on seen text, %d triples of held-out synsets on unseen text; " ..
    "tail@k: the whole tail among the decoder's top k of the known tails, its length not given; first@1: the " ..
    "first token's hits@1 with the length given)", f.n, s.n)
  return table.concat(lines, "\n")
end

return M
