-- extract.lua — a knowledge graph from a corpus with a trained GraphMERT (a folder written by
-- experiments/train.lua: run.json, tokenizer.txt, checkpoint.safetensors, seed_graph/; only these
-- are read from it, and the seed graph is the folder's own unless --data or --config names one).
--   graphmert extract --checkpoint out/wordnet_10min --input passages.txt --out kg.jsonl
--       [--relations all|hypernym,part_meronym] [--top 5] [--min-score S] [--batch 16]
--       [--decoding open|constrained] [--data DIR | --config FILE] [--resume] [--overwrite] [--unpacked]
--       [--precision highest|medium]
--   mpirun -np K graphmert extract ...     the passages split over K processes, one output
-- Input: plain text (one passage per line; blank lines and lines starting with # skipped) or,
-- for a .jsonl file (or --format jsonl), the JSONL corpus format (a line per record with a
-- "text" field); the format assumed is printed. --input - reads standard input (kept in a
-- temporary file meanwhile; text unless --format jsonl). The file
-- is read twice, a line at a time: once to check it all (a bad line is named before any work),
-- once to extract; a corpus of any size takes the same memory. Heads are the seed graph's entity
-- names and aliases found in each passage (the run's dataset, gm.data.linker: longest match,
-- multi-word, case and accents folded but for a name's capitals); relations are those the schema allows for heads of their
-- type (or --relations); tails are decoded over all leaf slots of the head's root
-- (gm.eval.decode), constrained to the names of the entities of the types the relation reaches
-- (the default), or open: new tails too, and a known entity of a type the schema forbids kept with
-- decoding "open, outside the schema" for a reviewer to see. The heads of a passage are asked together, one relation each per sequence, as training
-- shows them (--unpacked: one query per sequence), and sequences are batched across passages. A
-- model trained with `absent` (a relation its head lacks, taught as an empty tail) may answer
-- "none": only the tails it ranks above the empty one are kept, so it does not assert every relation.
-- Output: kg.jsonl (one triple per line: head, relation, tail — by the dataset's preferred names —,
-- score = mean log-probability per decoded slot (with the run's reranker.json, which `graphmert
-- calibrate` writes: the probability that the triple holds, the model's own in model_score, and
-- decoding "calibrated"), count = passages supporting it, sources = their
-- ids (a JSONL record's "id", else its line number), decoding, head_id and tail_id = the
-- entities' ids (tail_id absent for a new tail open decoding wrote), seed = whether the seed graph already holds the triple) and kg.tsv
-- beside it, written as one (both old or both new), into a folder made if missing and checked writable before the
-- first passage (graphmert.kg.extraction_outputs). While it runs, each chunk of passages'
-- triples is appended to OUT.journal (under mpirun, one journal per process: graphmert.kg.journal
-- says what it holds, how it is locked and when --resume continues it); the outputs are merged
-- from the journals at the end (graphmert.kg.extraction_run). A stopped run (Ctrl-C, kill, crash)
-- continues with --resume from its last whole chunk, and its output equals an uninterrupted run's;
-- Ctrl-C also writes what was extracted so far to OUT.partial.jsonl and .partial.tsv (never over a
-- complete output), whole even when Ctrl-C comes again. With --out kg.sqlite the graph goes into a
-- SQLite store instead (graphmert.kg.store), committed at a chunk's end about once a second, so a
-- killed run leaves a valid store and the same command continues it, skipping the passages it
-- holds; `graphmert export` turns a store into RDF or kg.jsonl.
local gm = require "graphmert"
local ex = gm.experiment
local dist = gm.distributed
local extraction_input = require "graphmert.kg.extraction_input"
local extraction_outputs = require "graphmert.kg.extraction_outputs"
local extraction_run = require "graphmert.kg.extraction_run"
local pipeline_extraction = require "graphmert.kg.pipeline_extraction"
local rule_extraction = require "graphmert.kg.rule_extraction"
local data_options = require "graphmert.experiment.data_options"

local args = ex.args.parse(arg, {
  script = "extract.lua", about = "A knowledge graph from text with a trained GraphMERT.",
  { "checkpoint", nil, "a training output folder (run.json, tokenizer.txt, checkpoint.safetensors)" },
  { "input", nil, "passages: plain text, one per line (lines starting with # are comments), or JSONL records with a \"text\" field; - reads standard input" },
  { "format", "auto", "the input's format: text, jsonl, or auto (jsonl for a .jsonl file, else text)", choices = { "auto", "text", "jsonl" } },
  { "out", "kg.jsonl", "output: kg.jsonl (a .tsv is written beside it), or a kg.sqlite store that grows as it goes" },
  { "relations", "all", "all, or a comma-separated list of relation names" },
  { "top", 5, "tails kept per (head, relation)", type = "integer", min = 1 },
  { "min-score", nil, "drop triples scoring below this: a probability, 0 to 1, with the run's reranker.json (default 0.5 there); a rule's precision, 0 to 1; else a mean log-probability per slot, <= 0 (no default: nothing dropped)", type = "number" },
  { "batch", 16, "sequences per forward", type = "integer", min = 1, max = 4096 },
  { "decoding", "constrained", "constrained (the seed graph's entity names, of the types the schema allows) or open (new tails too; a tail of a type the schema forbids is kept with decoding \"" .. gm.kg.OUTSIDE_SCHEMA .. "\")",
    choices = { "open", "constrained" } },
  { "data", nil, "a dataset folder whose seed graph to use instead of the run's own" },
  { "config", nil, "a config whose dataset's seed graph to use instead of the run's own" },
  { "resume", false, "continue a stopped run from the journal it left (a .sqlite store always continues)", flag = true },
  { "overwrite", false, "replace a finished kg.jsonl and its .tsv (without it, an existing graph is kept)", flag = true },
  { "unpacked", false, "one (head, relation) query per sequence instead of a passage's heads together (slower)", flag = true },
  { "no-page", false, "do not write the KG page beside the output (kg.html for kg.jsonl, kg.sqlite.html for kg.sqlite)", flag = true },
  ex.args.precision_option(),
  { "extractor", "graphmert", "graphmert (the trained model: --checkpoint) or rules (the dataset's string rules, no model: --data or --config)",
    choices = { "graphmert", "rules" } },
  { "patterns", nil, "with --extractor rules: a patterns file instead of the dataset's patterns.tsv" },
  { "model-scores", false, "the model's own scores even when the run has a reranker.json (no probabilities)", flag = true },
})
local function fail(msg) ex.args.fail("extract.lua", msg) end
local by_rules = args.extractor == "rules"
-- (constrained unless open is asked for: a run's reranker ranks the seed graph's entities)
local calibrated = not by_rules and not args["model-scores"] and args.checkpoint
  and gm.stat(pipeline_extraction.path(args.checkpoint)) ~= nil
args.decoding = args.decoding or "constrained"
calibrated = calibrated and args.decoding == "constrained"
if by_rules and args.checkpoint then fail("--extractor rules uses no model: give --data or --config, not --checkpoint") end
if by_rules and not (args.data or args.config) then fail("--extractor rules needs the dataset: give --data or --config") end
if args.patterns and not by_rules then fail("--patterns is for --extractor rules") end
if not by_rules and not args.checkpoint then fail("--checkpoint is required (see --help)") end
if not args.input then fail("--input is required (see --help)") end
local min_score = args["min-score"]
if min_score and not (by_rules or calibrated) and min_score > 0 then
  fail("--min-score must be at most 0 (a mean log-probability: the run has no reranker.json, or --model-scores), got " .. min_score)
end
if min_score and (by_rules or calibrated) and (min_score < 0 or min_score > 1) then
  fail(string.format("--min-score must be from 0 to 1 %s, got %s", by_rules and "with --extractor rules (a rule's precision)" or
    "(a probability: the run's reranker.json makes scores probabilities)", min_score))
end
data_options.check("extract.lua", args)
local precision = ex.args.apply_precision(args)
local session <close> = dist.session()
local rank, size = dist.rank(), dist.size()
local storing = args.out:match("%.sqlite$") ~= nil
local out_info = gm.stat(args.out)
if not storing and not args.out:match("%.jsonl$") and not (out_info and out_info.type == "directory") then
  fail("--out names a kg.jsonl file (a .tsv is written beside it) or a kg.sqlite store, got " .. args.out)
end
if storing and args.overwrite then
  fail("--overwrite replaces a kg.jsonl; a .sqlite store continues the same run and refuses another: remove it to start over")
end
if storing and size > 1 then
  fail("a .sqlite store is written by one process: under mpirun, give --out kg.jsonl (graphmert export reads a store, not the reverse)")
end

if args.input == "-" and size > 1 then
  fail("--input - (standard input) reaches one process: under mpirun, give a file")
end

local input <close> = extraction_input.open(args.input, args.format, rank)
local outputs = extraction_outputs.prepare(args, storing, rank)
local function try(fn, ...) return ex.args.try("extract.lua", fn, ...) end
-- --relations as a set of names (nil: all), each one of `known`
local function chosen_relations(known)
  if args.relations == "all" then return nil end
  local only, is = {}, {}
  for _, name in ipairs(known) do is[name] = true end
  for name in args.relations:gmatch("[^,]+") do
    if not is[name] then
      local near = ex.args.suggest(name, known)
      fail("unknown relation " .. name .. " (" .. (near and "did you mean " .. near .. "?; " or "") .. "known: "
        .. table.concat(known, ", ") .. ")")
    end
    only[name] = true
  end
  return only
end

if by_rules then
  outputs:refuse_finished(args, size)
  local total = input:count(rank)
  local ds = try(data_options.dataset, args)
  local graph = gm.data.seed_graph.new(ds)
  local rules = try(rule_extraction.prepare, args, ds, graph, chosen_relations(graph.relation_names))
  local status = extraction_run.run { cli = args, precision = precision, input = input, outputs = outputs,
    run = { model = {}, relations = graph.relation_names }, graph = graph, dataset = ds, rules = rules, total = total }
  input:close() -- (os.exit closes no variable)
  if status then os.exit(status) end
  return
end
local run = try(ex.read_run, args.checkpoint)
outputs:refuse_finished(args, size)
local total = input:count(rank) -- the whole file checked before any work: a bad line is named now, not hours in

local tok = try(ex.load_tokenizer, args.checkpoint, run)
local model = try(ex.load_model, args.checkpoint, run)

-- the seed graph's index: the run's own (seed_graph/index.bin, or built from its JSONL for a run
-- trained before there was one), or that of the dataset the user names; its relations must be the run's
local ds -- the Dataset, when --data or --config names one (a store's seed graph comes from it)
local graph = try(function()
  local g
  if args.data or args.config then
    ds = data_options.dataset(args)
    g = gm.data.seed_graph.new(ds)
  else
    -- an index built here is stored for the next start (once, with the known tails, when constrained)
    g = ex.run_graph(args.checkpoint, args.decoding ~= "constrained")
  end
  if table.concat(g.relation_names, ",") ~= table.concat(run.relations, ",") then
    error(string.format("the seed graph's relations (%s) are not the run's (%s)", table.concat(g.relation_names, ", "),
      table.concat(run.relations, ", ")), 0)
  end
  return g
end)

local relations = {}
for id, name in ipairs(run.relations) do relations[name] = id end
local only = chosen_relations(run.relations)

local opts = gm.eval.extract.options(run, graph, relations, { only = only, mode = args.decoding, top = args.top,
  batch = args.batch, pack = not args.unpacked })
if args.decoding == "constrained" then -- the run's own are in its index (stored there once if not)
  opts.tails = try(function()
    if ds then return (graph:known_tails(tok, relations, model.layout.leaves)) end
    return ex.run_known_tails(args.checkpoint, graph, tok, relations, model.layout.leaves)
  end)
end

-- the run's reranker (graphmert calibrate): every triple's score the probability that it holds,
-- and those below even odds left out unless --min-score says otherwise
local pipeline = calibrated and try(pipeline_extraction.prepare, args.checkpoint, graph, tok, model, opts) or nil
if pipeline then
  local defaulted = not args["min-score"]
  args["min-score"] = args["min-score"] or pipeline_extraction.MIN_SCORE
  if rank == 0 then
    io.stderr:write(string.format("scores are probabilities that the triples hold (%s): those of probability ≥ %g kept%s\n",
      pipeline_extraction.path(args.checkpoint), args["min-score"], defaulted and " (--min-score 0 keeps all)" or ""))
  end
end
if rank == 0 and not pipeline and not args["model-scores"] then
  io.stderr:write(string.format("note: scores are the model's mean log-probabilities per slot, not probabilities (%s)\n",
    args.decoding == "open" and "the run's reranker scores the seed graph's entities: leave out --decoding open" or
      "no reranker.json in " .. args.checkpoint .. ": graphmert calibrate fits one"))
end

local status = extraction_run.run { cli = args, precision = precision, input = input, outputs = outputs, run = run, tok = tok,
  model = model, graph = graph, dataset = ds, opts = opts, total = total, pipeline = pipeline }
input:close() -- (os.exit closes no variable)
if status then os.exit(status) end
