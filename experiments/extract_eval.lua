-- extract_eval.lua — how good is the extracted knowledge graph? On passages the model never saw
-- (the passages of the held-out entities of the run's split; half of those entities, the
-- validation half, fit the pipelines' rerankers, and every system is measured on the other, the
-- test half), extract with every relation allowed for each head and score the top tail per
-- (head, relation) against the seed graph, for GraphMERT, the same budget's model without decay
-- and H-GAT (the run's baseline/ folder, when it exists), the most frequent training tail per
-- relation asked the same queries, the dataset's string rules (its patterns.tsv and the built-in
-- rules, measured on the training passages: docs/datasets.md), all together and each kind of
-- built-in rule alone, and the pipeline whose scores are probabilities
-- (graphmert.experiment.heldout_pipeline: candidates from every source, the relation prior, a
-- reranker), with the model and without it (its triples of probability ≥ 0.5 in the main table,
-- all of them ranked in the next):
--   precision  share of extracted triples the seed graph holds (95% bootstrap interval over passages)
--   recall     share of the held-out entities' own facts (relation known, head in its passage) found
--   validity   share whose tail is an entity of a type the relation reaches
--   multi      share of the correct triples whose tail has several tokens (the issue's multi-token
--              tails: one whole-word token at the first leaf slot cannot say them), and several words
-- then implied precision (a tail above a true one along the subsumption relation counts) and the
-- precision each system reaches at recall 0.10, 0.20 and 0.30 by its own ranking (also counting
-- only the passages' own entities as heads), the pipelines' calibration (expected calibration
-- error, reliability.png), the same per relation and by head (the passage's own entity or another
-- it mentions), and precision/recall over score thresholds (pr.csv, pr.png through gnuplot);
-- passages.txt holds the test passages, one a line. Throughput is passages per second of
-- extraction at the machine's threads. Tails are decoded without being told their length
-- (gm.eval.decode).
--   graphmert experiments/extract_eval.lua --checkpoint out/wordnet_10min
--       --config experiments/configs/wordnet_10min.lua [--data DIR] [--passages N (default: all)]
--       [--decoding constrained|open] [--answer-all] [--out DIR (default: CHECKPOINT/extraction)]
-- The held-out passages come from the dataset the run was trained on, which the user names with
-- --config (and --data when training had it): run.json records it, but a run folder from
-- elsewhere must not choose which files are read. A config whose data differs from the run's is
-- refused.
-- A model trained with absent relations may answer "none" (gm.eval.decode's empty tail); its
-- triples are then only those it ranks above "none", unless --answer-all.
local gm = require "graphmert"
local ex = gm.experiment
local heldout_extraction = require "graphmert.experiment.heldout_extraction"
local heldout_tables = require "graphmert.experiment.heldout_tables"
local heldout_pipeline = require "graphmert.experiment.heldout_pipeline"

local args = ex.args.parse(arg, {
  script = "extract_eval.lua", about = "Extraction from held-out passages, scored against the seed graph.",
  { "checkpoint", nil, "a training output folder (run.json, tokenizer.txt, checkpoint.safetensors)" },
  { "passages", nil, "held-out passages to extract from (default: all of them)", type = "integer", min = 1 },
  { "decoding", "constrained", "open or constrained (the pipelines always rank the seed graph's entities)", choices = { "open", "constrained" } },
  { "answer-all", false, "ignore a model's empty answer (trained with absent): every (head, relation) gets its best tail", flag = true },
  { "unpacked", false, "one (head, relation) query per sequence instead of a passage's heads together (slower)", flag = true },
  { "out", nil, "output folder (default CHECKPOINT/extraction)" },
  { "config", nil, "the config the run was trained with (run.json records which; default: CHECKPOINT/config.lua when the run has one)" },
  { "data", nil, "the dataset folder, when the run was trained with --data" },
  ex.args.precision_option(),
})
local out_dir = args.out or (args.checkpoint and args.checkpoint .. "/extraction")
local run, cfg, tok, d, relations = heldout_extraction.prepare("extract_eval.lua", args, function()
  ex.args.folder("extract_eval.lua", out_dir, true) -- once the arguments hold: a mistake leaves no folder
end)
local graph = d.graph

local validation, passages, exclude = heldout_extraction.halves("extract_eval.lua", args.config, d)
if args.passages then -- (the first N of each half)
  for _, list in ipairs { validation, passages } do for k = #list, args.passages + 1, -1 do list[k] = nil end end
end

local e = { d = d, tok = tok, graph = graph, relations = relations, passages = passages, decoding = args.decoding,
  validation = validation, exclude = exclude, prior = gm.kg.relation_prior.fit(graph, exclude),
  checkpoint = args.checkpoint, opts = gm.eval.extract.options(run, graph, relations, { mode = args.decoding, top = 1,
    pack = not args.unpacked, answer_all = args["answer-all"] }),
  implied = graph.subsumption and gm.eval.implied.new(graph, graph.subsumption) }
local systems = heldout_extraction.systems("extract_eval.lua", args.checkpoint, d, cfg.data.dir)
heldout_extraction.run(systems, e)
local lines = heldout_extraction.table(systems, e)
for _, more in ipairs { heldout_tables.ranking(systems, e.implied), heldout_pipeline.calibration(systems, out_dir),
    heldout_tables.by_relation(systems, e.implied) } do
  lines[#lines + 1] = ""
  table.move(more, 1, #more, #lines + 1, lines)
end
local plotted = heldout_extraction.pr_curve(systems, out_dir)
lines[#lines + 1] = ""
lines[#lines + 1] = plotted and "![precision and recall over score thresholds](pr.png)" or "(gnuplot not available: no pr.png)"
local report = table.concat(lines, "\n")
local ok, err = gm.write_atomic(out_dir .. "/extraction.md", { report, "\n" })
if not ok then error(err, 0) end
-- the test passages, one a line, for `graphmert extract --input` on the same text
local texts = {}
for i, p in ipairs(passages) do texts[i] = p.text:gsub("[\r\n]", " ") end
ok, err = gm.write_atomic(out_dir .. "/passages.txt", { table.concat(texts, "\n"), "\n" })
if not ok then error(err, 0) end
print(report)
print(string.format("(written to %s: extraction.md, pr.csv%s, and passages.txt, the test passages one a line)", out_dir,
  plotted and ", pr.png, reliability.png" or ""))
