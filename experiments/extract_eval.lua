-- extract_eval.lua — how good is the extracted knowledge graph? On passages the model never saw
-- (the passages of the held-out entities of the run's split), extract with every relation allowed
-- for each head and score the top tail per (head, relation) against the seed graph, for
-- GraphMERT, the same budget's model without decay and H-GAT (the run's baseline/ folder, when it
-- exists), the most frequent training tail per relation asked the same queries, and the dataset's
-- string rules (its patterns.tsv and the generic rules of its subsumption relation, measured on
-- the training passages: docs/datasets.md), all together and the generic ones alone:
--   precision  share of extracted triples the seed graph holds (95% bootstrap interval over passages)
--   recall     share of the held-out entities' own facts (relation known, head in its passage) found
--   validity   share whose tail is an entity of a type the relation reaches
--   multi      share of the correct triples whose tail has several tokens (the issue's multi-token
--              tails: one whole-word token at the first leaf slot cannot say them), and several words
-- then implied precision (a tail above a true one along the subsumption relation counts) and the
-- precision each system reaches at recall 0.10, 0.20 and 0.30 by its own ranking, the same per
-- relation and by head (the passage's own entity or another it mentions), and precision/recall
-- over score thresholds (pr.csv, pr.png through gnuplot); passages.txt holds
-- the held-out passages, one a line. Throughput is
-- passages per second of extraction at the machine's threads. Tails are decoded without being
-- told their length (gm.eval.decode).
--   graphmert experiments/extract_eval.lua --checkpoint out/wordnet_10min
--       --config experiments/configs/wordnet_10min.lua [--data DIR] [--passages N (default: all)]
--       [--decoding open|constrained] [--answer-all] [--out DIR (default: CHECKPOINT/extraction)]
-- The held-out passages come from the dataset the run was trained on, which the user names with
-- --config (and --data when training had it): run.json records it, but a run folder from
-- elsewhere must not choose which files are read. A config whose data differs from the run's is
-- refused.
-- A model trained with absent relations may answer "none" (gm.eval.decode's empty tail); its
-- triples are then only those it ranks above "none", unless --answer-all.
local gm = require "graphmert"
local ex = gm.experiment
local data_options = require "graphmert.experiment.data_options"
local heldout_extraction = require "graphmert.experiment.heldout_extraction"
local heldout_tables = require "graphmert.experiment.heldout_tables"
local heldout_pipeline = require "graphmert.experiment.heldout_pipeline"
local preparation = require "graphmert.experiment.preparation"
local run_folder = require "graphmert.experiment.run_folder"

local args = ex.args.parse(arg, {
  script = "extract_eval.lua", about = "Extraction from held-out passages, scored against the seed graph.",
  { "checkpoint", nil, "a training output folder (run.json, tokenizer.txt, checkpoint.safetensors)" },
  { "passages", nil, "held-out passages to extract from (default: all of them)", type = "integer", min = 1 },
  { "decoding", "open", "open or constrained", choices = { "open", "constrained" } },
  { "answer-all", false, "ignore a model's empty answer (trained with absent): every (head, relation) gets its best tail", flag = true },
  { "unpacked", false, "one (head, relation) query per sequence instead of a passage's heads together (slower)", flag = true },
  { "out", nil, "output folder (default CHECKPOINT/extraction)" },
  { "config", nil, "the config the run was trained with (run.json records which)" },
  { "data", nil, "the dataset folder, when the run was trained with --data" },
  ex.args.precision_option(),
})
local function fail(msg) ex.args.fail("extract_eval.lua", msg) end
if not args.checkpoint then fail("--checkpoint is required (see --help)") end
ex.args.apply_precision(args)
local run = ex.args.try("extract_eval.lua", run_folder.read_run, args.checkpoint)
local out_dir = args.out or args.checkpoint .. "/extraction"
if not args.config then
  fail(string.format("--config is required: the config the run was trained with (run.json records %s%s)", tostring(run.config),
    run.data.dir and (", with data " .. tostring(run.data.dir)) or ""))
end
ex.args.folder("extract_eval.lua", out_dir, true) -- once the arguments hold: a mistake leaves no folder
local cfg = ex.args.try("extract_eval.lua", data_options.config, args)
if not run_folder.same_data(cfg.data, run.data) then
  fail(string.format("%s names data %s, but the run was trained on %s (pass --data when training had it)", args.config,
    run_folder.data_string(cfg.data), run_folder.data_string(run.data)))
end
local tok = ex.args.try("extract_eval.lua", run_folder.load_tokenizer, args.checkpoint, run)
gm.manual_seed(cfg.seed)
local d = ex.args.try("extract_eval.lua", preparation.prepare, cfg, tok)
local graph = d.graph
if table.concat(graph.relation_names, ",") ~= table.concat(run.relations, ",") then -- every figure would be 0
  fail(string.format("the dataset's relations (%s) are not the run's (%s): is it the dataset the run was trained on?",
    table.concat(graph.relation_names, ", "), table.concat(run.relations, ", ")))
end
local relations = {}
for id, name in ipairs(run.relations) do relations[name] = id end

local validation, passages = preparation.validation_split(preparation.heldout_passages(d, #d.heldout))
if #passages == 0 or #validation == 0 then
  fail(args.config .. " holds " .. (#d.heldout == 0 and "no entity" or "too few entities") .. " out of training " ..
    "(heldout): there is no unseen text to fit the reranker on and evaluate on")
end
if args.passages then -- (the first N of each half)
  for _, list in ipairs { validation, passages } do for k = #list, args.passages + 1, -1 do list[k] = nil end end
end
local exclude = {} -- the held-out entities: the relation prior and the tail counts know nothing of them
for _, r in ipairs(d.heldout) do if r.entity then exclude[r.entity] = true end end

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
-- the held-out passages, one a line, for `graphmert extract --input` on the same text
local texts = {}
for i, p in ipairs(passages) do texts[i] = p.text:gsub("[\r\n]", " ") end
ok, err = gm.write_atomic(out_dir .. "/passages.txt", { table.concat(texts, "\n"), "\n" })
if not ok then error(err, 0) end
print(report)
print(string.format("(written to %s: extraction.md, pr.csv%s, and passages.txt, the held-out passages one a line)", out_dir,
  plotted and ", pr.png" or ""))
