-- pipeline_extraction.lua — `graphmert extract` with the run's reranker (CHECKPOINT/reranker.json,
-- which `graphmert calibrate` fits): each passage's candidates from every source, scored by the
-- model (graphmert.kg.candidates, with the relation prior and the rules the reranker was fit
-- with), and each triple's score the reranker's probability that it holds; model_score keeps the
-- model's mean log-probability per slot (absent for a tail longer than the leaf slots, which the
-- model cannot score). Its triples' decoding is "calibrated" (gm.kg.CALIBRATED).
--   pipeline_extraction.path(checkpoint) → where the run's reranker is; MIN_SCORE: extract's
--     default --min-score with one
--   pipeline_extraction.prepare(checkpoint, graph, tok, model, opts) → {propose(chunk) → the
--     chunk's triples, digest (the reranker file's, for a journal's header)}; an error when the
--     reranker is not this run's (fit for other weights) or does not read
local gm = require "graphmert"
local candidates = require "graphmert.kg.candidates"
local relation_prior = require "graphmert.kg.relation_prior"
local reranker = require "graphmert.kg.reranker"
local rules = require "graphmert.kg.rules"

local M = {}

M.MIN_SCORE = 0.5 -- extract's --min-score by default: triples more likely to hold than not

function M.path(checkpoint) return checkpoint .. "/reranker.json" end

function M.prepare(checkpoint, graph, tok, model, opts)
  local path = M.path(checkpoint)
  local weights = gm.file_digest(checkpoint .. "/checkpoint.safetensors")
  local r = reranker.load(path, "weights " .. tostring(weights))
  local p = r.pipeline
  if type(p) ~= "table" or type(p.prior) ~= "table" then error(path .. ": holds no relation prior (calibrate wrote it?)", 0) end
  if not r.with_model then error(path .. ": a reranker without the model's features is not a run's", 0) end
  local top = type(p.top) == "number" and math.tointeger(p.top)
  if not top or top < 1 then error(path .. ": pipeline.top must be a whole number ≥ 1", 0) end
  if type(p.threshold) ~= "number" or p.threshold < 0 or p.threshold > 1 then
    error(path .. ": pipeline.threshold must be a number from 0 to 1", 0)
  end
  for _, relation in ipairs(graph.relation_names) do
    if not p.prior.relations or not p.prior.relations[relation] then
      error(string.format("%s: its relation prior does not know the seed graph's relation %s (calibrate again)", path, relation), 0)
    end
  end
  local unseen = {}
  for _, id in ipairs(type(p.unseen) == "table" and p.unseen or {}) do unseen[tostring(id)] = true end
  local ctx = candidates.context { graph = graph, tok = tok, layout = model.layout, relations = opts.relations, unseen = unseen,
    exclude = unseen, -- (as the fit read the seed graph: without the held-out entities' facts)
    prior = relation_prior.from_table(p.prior, graph, path), rules = rules.from_table(p.rules or {}, graph, path),
    model = model, opts = opts, top = top, threshold = p.threshold }
  local digest = gm.file_digest(path)
  return { digest = digest, propose = function(chunk)
    local out = {}
    for _, list in ipairs(candidates.of(ctx, chunk)) do
      for _, c in ipairs(list) do out[#out + 1] = r:triple(graph, c) end
    end
    return out
  end }
end

return M
