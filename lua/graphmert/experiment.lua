-- experiment.lua — the pieces experiments share: WordNet data prepared once (split by synset,
-- tokenizer, relation ids, sequences, masking options), a model from a config, one training
-- step, and the evaluation table.
local gm = require "graphmert"

local M = {}

-- a stable hash of a synset key: the split never changes between runs
local function bucket(key)
  local h = 0
  for c in key:gmatch(".") do h = (h * 31 + c:byte()) % 1000003 end
  return h % 1000
end

-- cfg: wordnet, heldout, vocab_size, model.roots/leaves; tok: an existing tokenizer or nil
function M.prepare(cfg, tok)
  local wn = gm.wordnet.load(cfg.wordnet)
  local records = gm.corpus.from_wordnet(wn)
  local d = { wordnet = wn, train = {}, heldout = {} }
  for _, r in ipairs(records) do
    if bucket(r.synset) < cfg.heldout * 1000 then d.heldout[#d.heldout + 1] = r else d.train[#d.train + 1] = r end
  end
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
  local build = { roots = m.roots, leaves = m.leaves, relations = d.relations }
  d.train_seqs, d.report = gm.corpus.build(d.train, tok, build)
  d.eval_seqs = gm.corpus.build(d.heldout, tok, build)
  d.mask_opts = { vocab = tok:size(), mask_id = tok.mask_id, roots = m.roots, leaves = m.leaves,
    special = { [tok.pad_id] = true, [tok.cls_id] = true, [tok.sep_id] = true },
    word_start = function(id) return tok:word_start(id) end }
  return d
end

function M.summary(d)
  return string.format("wordnet: %d synsets (%d parse errors); %d training sequences, %d held out; %d triples injected; vocabulary %d; %d relations",
    d.wordnet.count, d.wordnet.errors.count, #d.train_seqs, #d.eval_seqs, d.report.injected or 0, d.tok:size(),
    #d.relation_names)
end

function M.model(d, cfg)
  local model_cfg = { vocab = d.tok:size(), relations = #d.relation_names }
  for k, v in pairs(cfg.model) do model_cfg[k] = v end
  return gm.nn.GraphMERT(model_cfg)
end

-- One optimisation step on the step-th batch; returns the loss and the real tokens in the batch.
function M.step(d, cfg, model, opt, step)
  local first = ((step - 1) * cfg.batch) % math.max(1, #d.train_seqs) + 1
  local batch = gm.masking.mask(gm.corpus.batch(d.train_seqs, first, cfg.batch), d.mask_opts)
  opt:set_lr(gm.optim.cosine(step, { peak = cfg.lr, min_lr = cfg.min_lr, warmup = cfg.warmup, total = cfg.steps }))
  opt:zero_grad()
  local loss = model:loss(batch)
  loss:backward()
  gm.optim.clip_grad_norm(model:parameters(), cfg.clip)
  opt:step()
  return loss:item(), batch.valid:sum():item()
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

-- Tail prediction on held-out triples for the model and the most-frequent-tail baseline.
function M.tail_metrics(d, cfg, model)
  local m = cfg.model
  local o = { roots = m.roots, leaves = m.leaves, relations = d.relations, max_triples = cfg.eval_triples or 500 }
  return gm.evaluate.tail_prediction(model, d.tok, d.heldout, o), gm.evaluate.most_frequent_tail(d.train, d.heldout, d.tok, o)
end

M.header = string.format("| %-24s | %7s | %7s | %7s | %7s | %7s |\n|%s|%s|%s|%s|%s|%s|", "model", "MLM acc", "hits@1", "hits@10",
  "MRR", "exact", string.rep("-", 26), string.rep("-", 9), string.rep("-", 9), string.rep("-", 9), string.rep("-", 9), string.rep("-", 9))
function M.row(name, acc, r)
  return string.format("| %-24s | %7s | %7.3f | %7.3f | %7.3f | %7.3f |", name, acc and string.format("%.3f", acc) or "-",
    r.hits1, r.hits10, r.mrr, r.exact)
end

return M
