-- extract.lua — a knowledge graph from a corpus with a trained GraphMERT (a folder written by
-- experiments/train.lua: run.json, tokenizer.txt, checkpoint.safetensors, seed_graph/; only these
-- are read from it, and the seed graph is the folder's own unless --data or --config names one).
--   graphmert experiments/extract.lua --checkpoint out/wordnet_10min --input passages.txt --out kg.jsonl
--       [--relations all|hypernym,part_meronym] [--top 5] [--min-score S] [--batch 16]
--       [--decoding open|constrained] [--data DIR | --config FILE]
-- Input: plain text (one passage per line) or, for a .jsonl file (or --format jsonl), the JSONL
-- corpus format (a line per record with a "text" field); the format assumed is printed. Heads are the seed graph's entity names and aliases found in each passage (the
-- run's dataset, gm.data.linker: longest match, multi-word, case and accents folded); relations
-- are those the schema allows for heads of their type (or --relations); tails are decoded over
-- all leaf slots of the head's root (gm.eval.decode), open or constrained to the names of the
-- entities of the types the relation reaches. A model
-- trained with `absent` (a relation its head lacks, taught as an empty tail) may answer "none":
-- only the tails it ranks above the empty one are kept, so it does not assert every relation.
-- Output: kg.jsonl (one triple per line: head, relation, tail — by the dataset's preferred names —,
-- score = mean log-probability per decoded slot, count = passages supporting it, sources = their
-- ids (line numbers), decoding, head_id and tail_id = the entities' ids (tail_id absent for a new
-- tail open decoding wrote), seed = whether the seed graph already holds the triple) and kg.tsv
-- beside it, written as one (both old or both new), into a folder checked writable before the
-- first passage. With --out kg.sqlite the graph goes into a SQLite store instead (graphmert.kg.store:
-- entities, relations, triples, each triple's evidence with the head's span, the passages, the
-- run), committed about once a second, so a killed run leaves a valid store and the same command
-- continues it; `graphmert export` turns a store into RDF or kg.jsonl. Ctrl-C writes what was extracted so far to OUT.partial.jsonl and .partial.tsv
-- (never over a complete output), whole even when Ctrl-C comes again.
local gm = require "graphmert"
local cjson = require "cjson"
local ex = gm.experiment
local extract = gm.eval.extract

local args = ex.args.parse(arg, {
  script = "extract.lua", about = "A knowledge graph from text with a trained GraphMERT.",
  { "checkpoint", nil, "a training output folder (run.json, tokenizer.txt, checkpoint.safetensors)" },
  { "input", nil, "passages: plain text, one per line, or JSONL records with a \"text\" field" },
  { "format", "auto", "the input's format: text, jsonl, or auto (jsonl for a .jsonl file, else text)", choices = { "auto", "text", "jsonl" } },
  { "out", "kg.jsonl", "output: kg.jsonl (a .tsv is written beside it), or a kg.sqlite store that grows as it goes" },
  { "relations", "all", "all, or a comma-separated list of relation names" },
  { "top", 5, "tails kept per (head, relation)", type = "integer", min = 1 },
  { "min-score", nil, "drop triples scoring below this (mean log-probability per slot, <= 0)", type = "number", max = 0 },
  { "batch", 16, "sequences per forward", type = "integer", min = 1, max = 4096 },
  { "decoding", "open", "open (new tails) or constrained (the seed graph's entity names)", choices = { "open", "constrained" } },
  { "data", nil, "a dataset folder whose seed graph to use instead of the run's own" },
  { "config", nil, "a config whose dataset's seed graph to use instead of the run's own" },
})
local function fail(msg) ex.args.fail("extract.lua", msg) end
if not args.checkpoint then fail("--checkpoint is required (see --help)") end
if not args.input then fail("--input is required (see --help)") end
if args.data and args.config then fail("give --data or --config, not both") end
local min_score = args["min-score"]

-- passages {id, text}: ids are line numbers. The format is the file's (a .jsonl file holds JSONL
-- corpus records, gm.data.corpus.read_jsonl; any other file one passage per line), or --format's.
local function read_passages(path)
  local info, err = gm.stat(path)
  if not info then fail(err) end
  if info.type == "directory" then fail(path .. " is a directory, not a file of passages") end
  local jsonl = args.format == "jsonl" or (args.format == "auto" and path:match("%.jsonl$") ~= nil)
  io.stderr:write(string.format("reading %s as %s%s\n", path, jsonl and "JSONL records" or "plain text, one passage per line",
    args.format == "auto" and " (--format to choose)" or ""))
  local passages, n = {}, 0
  if not jsonl then
    local f
    f, err = io.open(path, "r")
    if not f then fail(err) end
    for line in f:lines() do
      n = n + 1
      if not utf8.len(line) then fail(string.format("%s:%d: not UTF-8 text", path, n)) end
      if line:match("%S") then passages[#passages + 1] = { id = n, text = line } end
    end
    f:close()
  else
    local ok, records = pcall(gm.data.corpus.read_jsonl, path, { on_error = "stop" })
    if not ok then fail(tostring(records)) end
    for i, rec in ipairs(records) do passages[i] = { id = rec.line, text = rec.text } end
  end
  if #passages == 0 then fail(path .. " has no passages") end
  return passages
end

-- the outputs' folder must take files before any work is done
local storing = args.out:match("%.sqlite$") ~= nil
local tsv_path = args.out:gsub("%.jsonl$", "") .. ".tsv"
local function check_writable(path)
  local info = gm.stat(path)
  if info and info.type ~= "file" then fail(path .. " is a " .. info.type .. "; --out names the output file") end
  local dir = path:match("^(.*)/[^/]*$") or "."
  local probe = string.format("%s/.extract-probe.%d", dir, math.random(1 << 30))
  local ok, err = gm.write_atomic(probe, { "" })
  if not ok then fail("cannot write " .. path .. ": " .. err) end
  os.remove(probe)
end
check_writable(args.out)
if not storing then check_writable(tsv_path) end

local function try(fn, ...) return ex.args.try("extract.lua", fn, ...) end
local run = try(ex.read_run, args.checkpoint)
local tok = try(ex.load_tokenizer, args.checkpoint, run)
local model = try(ex.load_model, args.checkpoint, run)
local passages = read_passages(args.input)

-- the seed graph: the run's own, or the dataset the user names (whose relations must be the run's)
local t0 = gm.clock()
local ds
local graph = try(function()
  ds = (args.data or args.config) and ex.named_dataset(args) or ex.run_seed_graph(args.checkpoint)
  if table.concat(ds.relation_names, ",") ~= table.concat(run.relations, ",") then
    error(string.format("the seed graph's relations (%s) are not the run's (%s)", table.concat(ds.relation_names, ", "),
      table.concat(run.relations, ", ")), 0)
  end
  return gm.data.seed_graph.new(ds)
end)

local relations = {}
for id, name in ipairs(run.relations) do relations[name] = id end
local only
if args.relations ~= "all" then
  only = {}
  for name in args.relations:gmatch("[^,]+") do
    if not relations[name] then fail("unknown relation " .. name .. " (known: " .. table.concat(run.relations, ", ") .. ")") end
    only[name] = true
  end
end

local opts = { graph = graph, relations = relations, only = only, mode = args.decoding, top = args.top,
  batch = args.batch, tail_end = run.tail_end, empty = (run.absent or 0) > 0 }
if args.decoding == "constrained" then opts.tails = graph:known_tails(tok, relations, model.layout.leaves) end

-- --out *.sqlite: the store (graphmert.kg.store) grows passage by passage, a transaction per
-- batch; a re-run of the same run continues it, skipping the passages it holds
local store
if storing then
  local model_keys, model_json = {}, {}
  for k in pairs(run.model) do model_keys[#model_keys + 1] = k end
  table.sort(model_keys)
  for _, k in ipairs(model_keys) do model_json[#model_json + 1] = cjson.encode(k) .. ":" .. cjson.encode(run.model[k]) end
  store = try(gm.kg.store.open, args.out, { create = true })
  try(store.begin_run, store, { checkpoint = gm.realpath(args.checkpoint), config = run.config or "",
    model = "{" .. table.concat(model_json, ",") .. "}", dataset = ds.name, created = os.date("!%Y-%m-%dT%H:%M:%SZ") })
  try(store.add_seed_graph, store, ds)
  local held, left = store:done(), {}
  for _, p in ipairs(passages) do if not held[tostring(p.id)] then left[#left + 1] = p end end
  if #left < #passages then
    io.stderr:write(string.format("continuing %s: %d of %d passages already in it\n", args.out, #passages - #left, #passages))
  end
  passages = left
end

-- the head mention's character span in the text (0-based, end exclusive), when it is there verbatim
local function head_span(text, phrase)
  local s, e = text:lower():find(phrase, 1, true)
  return s and { s - 1, e } or nil
end

-- one passage at a time, so that an interruption keeps everything finished before it
local found, done, committed = {}, 0, gm.clock()
local progress = ex.progress.new { stream = io.stderr, total = #passages }
local ok, err = pcall(function()
  for _, p in ipairs(passages) do
    local mention, mine = {}, {}
    for _, t in ipairs(extract.triples(model, tok, { p }, opts)) do
      -- named as the dataset names them: a head (and a tail naming an entity) by its preferred
      -- name and id, so that a mention by alias and one by name are one triple
      local head_id, head = graph:entity(t.head)
      local tail_id, tail = graph:entity(t.tail)
      if head_id then mention[head_id] = t.head end
      t.head, t.head_id, t.tail, t.tail_id = head or t.head, head_id, tail or t.tail, tail_id
      mine[#mine + 1] = t
    end
    if store then
      local kept = extract.merge(mine, { top = args.top, min_score = min_score })
      for _, t in ipairs(kept) do
        t.seed, t.span = graph:holds(t), head_span(p.text, mention[t.head_id] or t.head:lower())
      end
      gm.without_interrupts(function()
        store:add_passage({ id = p.id, source = args.input, line = p.id, text = p.text }, kept)
        if gm.clock() - committed >= 1 then -- a transaction a second: a kill loses at most that
          store:commit()
          committed = gm.clock()
        end
      end)
    else
      for _, t in ipairs(mine) do found[#found + 1] = t end
    end
    done = done + 1
    local elapsed = gm.clock() - t0
    progress:update(done, string.format("%d/%d passages  %.1f passages/s  ETA %ds", done, #passages, done / elapsed,
      math.floor((#passages - done) * elapsed / done)))
  end
end)
if not ok and gm.errors.kind(err) ~= "interrupted" then error(err, 0) end

progress:finish()
if store then
  gm.without_interrupts(function()
    store:commit()
    print(string.format("%s%d passages added to %s: %d triples from %d passages in all, %.1f s", ok and "" or "interrupted: ",
      done, args.out, store:count("triples"), store:count("passages"), gm.clock() - t0))
    store:close()
  end)
  os.exit(ok and 0 or 130)
end
-- an interrupted run never replaces a complete output: its triples go to OUT.partial.jsonl and
-- .partial.tsv, written whole even if Ctrl-C comes again
local out_path, out_tsv = args.out, tsv_path
if not ok then out_path, out_tsv = args.out:gsub("%.jsonl$", "") .. ".partial.jsonl", tsv_path:gsub("%.tsv$", "") .. ".partial.tsv" end
local function write_outputs()
  local kg = extract.merge(found, { top = args.top, min_score = min_score })
  local jsonl, tsv = {}, { "head\trelation\ttail\tscore\tcount\tdecoding\thead_id\ttail_id\tseed\n" }
  for _, t in ipairs(kg) do
    local seed = graph:holds(t)
    jsonl[#jsonl + 1] = cjson.encode { head = t.head, relation = t.relation, tail = t.tail, score = t.score,
      count = t.count, sources = t.sources, decoding = t.decoding, head_id = t.head_id, tail_id = t.tail_id, seed = seed } .. "\n"
    tsv[#tsv + 1] = string.format("%s\t%s\t%s\t%.6f\t%d\t%s\t%s\t%s\t%s\n", t.head, t.relation, t.tail, t.score, t.count,
      t.decoding, t.head_id or "", t.tail_id or "", seed)
  end
  local written, werr = gm.write_atomic { { out_path, jsonl }, { out_tsv, tsv } }
  if not written then fail(werr) end
  local multi = 0
  for _, t in ipairs(kg) do if t.tail:find(" ") then multi = multi + 1 end end
  print(string.format("%s%d passages, %d triples (%d with multi-word tails) in %s and %s, %.1f s",
    ok and "" or "interrupted: ", done, #kg, multi, out_path, out_tsv, gm.clock() - t0))
end
gm.without_interrupts(write_outputs)
if not ok then os.exit(130) end
