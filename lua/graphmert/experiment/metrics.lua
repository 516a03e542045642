-- metrics.lua — tail prediction on a prepared dataset's held-out facts (seen text) and held-out
-- entities (unseen text), for a model and for the most frequent tail per relation.
--   known_tails(d)   tail_metrics(d, cfg, model) → {facts, entities}   baseline_metrics(d, cfg)
local gm = require "graphmert"

local M = {}

-- The known tails (constrained decoding's lists: relation id → a gm.data.tail_list of the names
-- of the types it reaches), built once per data: train.lua builds them to store them in the run's
-- index, and the graph keeps them (as tensors) for the evaluations.
function M.known_tails(d)
  d.known_tails = d.known_tails or d.graph:known_tails(d.tok, d.relations, d.layout.leaves)
  return d.known_tails
end

local function tail_opts(d, cfg)
  M.known_tails(d)
  return { layout = d.layout, relations = d.relations, max_triples = cfg.eval_triples, tails = d.known_tails,
    tail_end = cfg.tail_end }
end

-- Tail prediction for the model on held-out facts (seen text) and held-out entities (unseen text).
function M.tail_metrics(d, cfg, model)
  local o = tail_opts(d, cfg)
  return { facts = gm.eval.tail_prediction(model, d.tok, d.heldout_facts, o),
           entities = gm.eval.tail_prediction(model, d.tok, d.heldout, o) }
end

-- The same for the most-frequent-tail-per-relation baseline.
function M.baseline_metrics(d, cfg)
  local o = tail_opts(d, cfg)
  return { facts = gm.eval.most_frequent_tail(d.train, d.heldout_facts, d.tok, o),
           entities = gm.eval.most_frequent_tail(d.train, d.heldout, d.tok, o) }
end

return M
