-- calibrate.lua — make a run's extraction scores probabilities: fit the reranker
-- (graphmert.kg.reranker) of the extraction pipeline (candidates from the model's top K, the
-- passage's mentions, the dataset's rules and the head's subsumers, each scored by the model; the
-- relation prior asks only what may have an answer: graphmert.kg.candidates) on the validation
-- half of the run's held-out entities, check it on the test half, and save it, with the prior and
-- the rules it was fit with, as CHECKPOINT/reranker.json. `graphmert extract` then gives each
-- triple the probability that it holds as its score (the model's own as model_score).
--   graphmert calibrate --checkpoint out/gene_ontology --config experiments/configs/gene_ontology.lua [--data DIR]
-- The run must hold entities out of training (heldout > 0, as every shipped config does); the
-- dataset is the one it was trained on (--config, and --data when training had it; a run sized
-- by `train --data` without a config holds its own, CHECKPOINT/config.lua, read when neither is given).
local gm = require "graphmert"
local ex = gm.experiment
local heldout_extraction = require "graphmert.experiment.heldout_extraction"
local heldout_pipeline = require "graphmert.experiment.heldout_pipeline"
local run_folder = require "graphmert.experiment.run_folder"
local calibration = require "graphmert.eval.calibration"
local ranking = require "graphmert.eval.ranking"
local rules = require "graphmert.kg.rules"
local reranker = require "graphmert.kg.reranker"

local args = ex.args.parse(arg, {
  script = "calibrate.lua", about = "Fit the reranker that makes extraction scores probabilities (CHECKPOINT/reranker.json).",
  { "checkpoint", nil, "a training output folder (run.json, tokenizer.txt, checkpoint.safetensors)" },
  { "config", nil, "the config the run was trained with (run.json records which; default: CHECKPOINT/config.lua when the run has one)" },
  { "data", nil, "the dataset folder, when the run was trained with --data" },
  ex.args.precision_option(),
})
local function fail(msg) ex.args.fail("calibrate.lua", msg) end
local FEW_POSITIVES = 30 -- true candidates below which a fit's probabilities say little
local path = args.checkpoint and args.checkpoint .. "/reranker.json"
local run, cfg, tok, d, relations = heldout_extraction.prepare("calibrate.lua", args, function()
  ex.args.writable("calibrate.lua", path)
end)
local validation, passages, exclude = heldout_extraction.halves("calibrate.lua", args.config, d)
local graph = d.graph
local e = { d = d, tok = tok, graph = graph, relations = relations, passages = passages, validation = validation,
  exclude = exclude, prior = gm.kg.relation_prior.fit(graph, exclude),
  opts = gm.eval.extract.options(run, graph, relations, { mode = "constrained", top = 1, pack = true }) }
local list = heldout_extraction.rule_list("calibrate.lua", d, cfg.data.dir)
local model = ex.args.try("calibrate.lua", run_folder.load_model, args.checkpoint)
local system = { name = "pipeline", pipeline = { model = model, rules = list } }
heldout_pipeline.run(system, e)
if system.unfit then fail("no reranker: " .. system.unfit) end
local r = system.reranker
local stamp = "weights " .. assert(gm.file_digest(args.checkpoint .. "/checkpoint.safetensors"))
local unseen = {} -- (the held-out entities: the reranker's `seen` is false for them in extract too)
for id in pairs(exclude) do unseen[#unseen + 1] = id end
table.sort(unseen)
r:save(path, stamp, { prior = e.prior:to_table(), rules = rules.to_table(list), top = heldout_pipeline.TOP,
  threshold = heldout_pipeline.PRIOR, unseen = unseen })
local ece = calibration.ece(system.predictions)
local kept, held = 0, 0
for _, u in ipairs(system.units) do kept, held = kept + u.n, held + u.correct end
print(string.format("fit on %d candidates of %d validation passages (%d hold); %d rules, the relation prior, the model's top %d",
  r.examples, #validation, r.positives, #list, heldout_pipeline.TOP))
if r.positives < FEW_POSITIVES then
  print(string.format("note: %d true candidates are too few to fit probabilities a user can trust (%d or more are): " ..
    "read these scores as a ranking, or hold more entities out (heldout) to give the reranker more to learn from",
    r.positives, FEW_POSITIVES))
end
print(string.format("on the %d test passages: expected calibration error %.3f over %d candidates; at probability ≥ %.1f, %d triples, " ..
  "%.3f of them hold", #passages, ece or 0, #system.predictions, heldout_pipeline.THRESHOLD, kept, kept > 0 and held / kept or 0))
for _, recall in ipairs { 0.1, 0.2, 0.3 } do
  local p = ranking.precision_at(system.ranked_units, recall)
  print(string.format("  precision at recall %.2f of the test entities' facts: %s", recall, p and string.format("%.3f", p) or "- (not reached)"))
end
print("written: " .. path .. " (graphmert extract uses it: each triple's score is then the probability that it holds)")
