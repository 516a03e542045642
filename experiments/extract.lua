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
-- "text" field); the format assumed is printed. The file
-- is read twice, a line at a time: once to check it all (a bad line is named before any work),
-- once to extract; a corpus of any size takes the same memory. Heads are the seed graph's entity
-- names and aliases found in each passage (the run's dataset, gm.data.linker: longest match,
-- multi-word, case and accents folded); relations are those the schema allows for heads of their
-- type (or --relations); tails are decoded over all leaf slots of the head's root
-- (gm.eval.decode), open or constrained to the names of the entities of the types the relation
-- reaches. The heads of a passage are asked together, one relation each per sequence, as training
-- shows them (--unpacked: one query per sequence), and sequences are batched across passages. A
-- model trained with `absent` (a relation its head lacks, taught as an empty tail) may answer
-- "none": only the tails it ranks above the empty one are kept, so it does not assert every relation.
-- Output: kg.jsonl (one triple per line: head, relation, tail — by the dataset's preferred names —,
-- score = mean log-probability per decoded slot, count = passages supporting it, sources = their
-- ids (a JSONL record's "id", else its line number), decoding, head_id and tail_id = the
-- entities' ids (tail_id absent for a new tail open decoding wrote), seed = whether the seed graph already holds the triple) and kg.tsv
-- beside it, written as one (both old or both new), into a folder checked writable before the
-- first passage. While it runs, each chunk of passages' triples is appended to OUT.journal (under
-- mpirun, one journal per process); the outputs are merged from the journals at the end, and the
-- journals removed. A stopped run (Ctrl-C, kill, crash) continues with --resume from its last
-- whole chunk, and its output equals an uninterrupted run's; Ctrl-C also writes what was extracted
-- so far to OUT.partial.jsonl and .partial.tsv (never over a complete output), whole even when
-- Ctrl-C comes again. With --out kg.sqlite the graph goes into a SQLite store instead
-- (graphmert.kg.store: entities, relations, triples, each triple's evidence with the head's span,
-- the passages, the run), committed at a chunk's end about once a second, so a killed run leaves
-- a valid store and the same command continues it, skipping the passages it holds; `graphmert
-- export` turns a store into RDF or kg.jsonl.
local gm = require "graphmert"
local cjson = require "cjson"
local ex = gm.experiment
local extract = gm.eval.extract
local dist = gm.distributed

local args = ex.args.parse(arg, {
  script = "extract.lua", about = "A knowledge graph from text with a trained GraphMERT.",
  { "checkpoint", nil, "a training output folder (run.json, tokenizer.txt, checkpoint.safetensors)" },
  { "input", nil, "passages: plain text, one per line (lines starting with # are comments), or JSONL records with a \"text\" field" },
  { "format", "auto", "the input's format: text, jsonl, or auto (jsonl for a .jsonl file, else text)", choices = { "auto", "text", "jsonl" } },
  { "out", "kg.jsonl", "output: kg.jsonl (a .tsv is written beside it), or a kg.sqlite store that grows as it goes" },
  { "relations", "all", "all, or a comma-separated list of relation names" },
  { "top", 5, "tails kept per (head, relation)", type = "integer", min = 1 },
  { "min-score", nil, "drop triples scoring below this (mean log-probability per slot, <= 0)", type = "number", max = 0 },
  { "batch", 16, "sequences per forward", type = "integer", min = 1, max = 4096 },
  { "decoding", "open", "open (new tails) or constrained (the seed graph's entity names)", choices = { "open", "constrained" } },
  { "data", nil, "a dataset folder whose seed graph to use instead of the run's own" },
  { "config", nil, "a config whose dataset's seed graph to use instead of the run's own" },
  { "resume", false, "continue a stopped run from the journal it left (a .sqlite store always continues)", flag = true },
  { "overwrite", false, "replace a finished kg.jsonl and its .tsv (without it, an existing graph is kept)", flag = true },
  { "unpacked", false, "one (head, relation) query per sequence instead of a passage's heads together (slower)", flag = true },
  { "no-page", false, "do not write the KG page (kg.html) beside the output", flag = true },
  ex.args.precision_option(),
})
local function fail(msg) ex.args.fail("extract.lua", msg) end
if not args.checkpoint then fail("--checkpoint is required (see --help)") end
if not args.input then fail("--input is required (see --help)") end
if args.data and args.config then fail("give --data or --config, not both") end
local min_score = args["min-score"]
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

-- passages per decode: its batches are filled across passages; a chunk is also what a journal
-- line holds and where a stopped run continues (a fixed size, so a resumed or split run asks the
-- same batches as an uninterrupted one and gets the same triples)
local CHUNK = 32

-- passages {id, line, text}, a line at a time (id: a JSONL record's "id", else the line number).
-- The format is the file's (a .jsonl file holds JSONL corpus records, gm.data.corpus.each_jsonl;
-- any other file one passage per line), or --format's.
local jsonl = args.format == "jsonl" or (args.format == "auto" and args.input:match("%.jsonl$") ~= nil)
local function each_passage()
  local next_passage, skipped = ex.args.try("extract.lua", gm.data.corpus.each_passage, args.input, jsonl and "jsonl" or "text")
  return function()
    local ok, p = pcall(next_passage)
    if not ok then fail(tostring(p)) end
    return p
  end, skipped
end

do
  local info, err = gm.stat(args.input)
  if not info then fail(err) end
  if info.type == "directory" then fail(args.input .. " is a directory, not a file of passages") end
  if info.type ~= "file" then -- a pipe cannot be read twice
    fail(args.input .. " is a " .. info.type .. ": extract reads its input twice (checked whole, then extracted), so give a file "
      .. "(save the stream to one first)")
  end
end
if rank == 0 then
  io.stderr:write(string.format("reading %s as %s%s\n", args.input, jsonl and "JSONL records" or "plain text, one passage per line",
    args.format == "auto" and " (--format to choose)" or ""))
end
-- the outputs' folder must take files before any work is done
local tsv_path = args.out:gsub("%.jsonl$", "") .. ".tsv"
local page_path = not args["no-page"] and args.out:gsub("%.[^./]*$", "") .. ".html"
ex.args.writable("extract.lua", args.out)
if not storing then
  ex.args.writable("extract.lua", tsv_path)
  local merge_info = gm.stat(args.out .. ".merge") -- the merge's scratch file (a leftover one is replaced)
  if merge_info and merge_info.type ~= "file" then
    fail(args.out .. ".merge is a " .. merge_info.type .. ", where extract keeps its merge: move it away")
  end
end
if page_path then
  ex.args.writable("extract.lua", page_path)
  local other = gm.kg.page.page_of_other(page_path, args.out)
  if other then fail(string.format("%s is the page of %s: give --no-page, or another --out name", page_path, other)) end
end
-- The journals: a header line (the run's settings: --resume continues only the same run), then
-- one line per finished chunk {"chunk": k, "passages": [{id, triples}]}. Under mpirun rank r
-- takes chunks r + 1, r + 1 + K, ... and writes its own journal; rank 0 merges them in chunk order.
local function journal_path(r) return size == 1 and args.out .. ".journal" or string.format("%s.%d.journal", args.out, r) end

do -- nothing written over the corpus, the run's files or the dataset's
  local run, data, stem = args.checkpoint, args.data, args.out:gsub("%.[^./]*$", "")
  local outputs = { args.out, page_path, args.out .. ".journal", args.out .. ".merge" }
  if not storing then
    for _, more in ipairs { tsv_path, stem .. ".partial.jsonl", stem .. ".partial.tsv", args.out .. "." .. rank .. ".journal" } do
      outputs[#outputs + 1] = more
    end
  end
  local inputs = { args.input, run .. "/run.json", run .. "/checkpoint.safetensors", run .. "/tokenizer.txt",
    { folder = run .. "/seed_graph" } }
  if data then
    inputs[#inputs + 1] = { folder = data .. "/corpus" }
    for _, part in ipairs { "corpus", "triples", "entities", "relations" } do
      inputs[#inputs + 1] = data .. "/" .. part .. ".jsonl"
      inputs[#inputs + 1] = data .. "/" .. part .. (part == "corpus" and ".txt" or ".tsv")
    end
  end
  ex.args.apart("extract.lua", outputs, inputs)
end

local function try(fn, ...) return ex.args.try("extract.lua", fn, ...) end
local run = try(ex.read_run, args.checkpoint)
-- a finished graph may be hours of work: it is replaced when --overwrite says so, or by the run
-- whose journal --resume continues (which was started over it; rank 0's decides for every rank)
local function journal_held(r) local info = gm.stat(journal_path(r)) return info and info.size > 0 end

-- A stopped run's journals are named by its process count (kg.jsonl.journal for one process,
-- kg.jsonl.<rank>.journal under mpirun): a run of another count finds them by the first one's
-- header, on every rank before any writes a file, and is refused rather than started over
-- beside them.
if not storing then
  for _, first in ipairs { args.out .. ".journal", args.out .. ".0.journal" } do
    local info = gm.stat(first)
    local f = info and info.size > 0 and io.open(first, "r")
    if f then
      local ok, head = pcall(cjson.decode, f:read("l") or "")
      f:close()
      local count = ok and type(head) == "table" and math.tointeger(head.processes)
      if count and count ~= size then
        fail(string.format("%s is the journal of a stopped run of %d process%s, this one has %d: continue it with as many " ..
          "(%s--resume), or remove %s to start over", first, count, count == 1 and "" or "es", size,
          count == 1 and "graphmert extract ... " or "mpirun -np " .. count .. " graphmert extract ... ",
          count == 1 and first or args.out .. ".<rank>.journal, every rank's"))
      end
    end
  end
end
if not storing and not args.overwrite and not (args.resume and journal_held(0)) then
  if args.resume and gm.stat(args.out) then -- (a run stopped while it made the page, after the graph)
    fail(string.format("%s is complete (its run ended: --resume has nothing to continue); `graphmert page --kg %s --input %s " ..
      "--checkpoint %s` makes its page, --overwrite extracts again", args.out, args.out, args.input, args.checkpoint))
  end
  for _, path in ipairs { args.out, tsv_path } do
    if gm.stat(path) then
      fail(string.format("%s exists: --overwrite replaces it and %s%s, or give another --out", path,
        path == args.out and tsv_path or args.out, page_path and " (and the page)" or ""))
    end
  end
end
local total = 0 -- the whole file checked before any work: a bad line is named now, not hours in
do
  local next_passage, skipped = each_passage()
  for _ in next_passage do total = total + 1 end
  if skipped and skipped.comments > 0 and rank == 0 then
    io.stderr:write(string.format("%s: %s starting with # skipped (comments, as in a dataset's files)\n", args.input,
      gm.data.dataset.plural(skipped.comments, "line")))
  end
end
if total == 0 then fail(args.input .. " has no passages") end
local chunks = (total + CHUNK - 1) // CHUNK

local tok = try(ex.load_tokenizer, args.checkpoint, run)
local model = try(ex.load_model, args.checkpoint, run)

-- the seed graph's index: the run's own (seed_graph/index.bin, or built from its JSONL for a run
-- trained before there was one), or that of the dataset the user names; its relations must be the run's
local ds -- the Dataset, when --data or --config names one (a store's seed graph comes from it)
local graph = try(function()
  local g
  if args.data or args.config then
    ds = ex.named_dataset(args)
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
local only
if args.relations ~= "all" then
  only = {}
  for name in args.relations:gmatch("[^,]+") do
    if not relations[name] then
      local near = ex.args.suggest(name, run.relations)
      fail("unknown relation " .. name .. " (" .. (near and "did you mean " .. near .. "?; " or "") .. "known: "
        .. table.concat(run.relations, ", ") .. ")")
    end
    only[name] = true
  end
end

local opts = extract.options(run, graph, relations, { only = only, mode = args.decoding, top = args.top, batch = args.batch,
  pack = not args.unpacked })
if args.decoding == "constrained" then -- the run's own are in its index (stored there once if not)
  opts.tails = try(function()
    if ds then return (graph:known_tails(tok, relations, model.layout.leaves)) end
    return ex.run_known_tails(args.checkpoint, graph, tok, relations, model.layout.leaves)
  end)
end

-- a file as it is now: a journal or a store continues only the same corpus and weights, not a
-- file rewritten under the same name
-- (by content: a file only touched — an editor's save, a checkout — is the same file)
local function stamp(path)
  local digest, size = gm.file_digest(path)
  if not digest then return nil end
  return string.format("%d bytes, digest %s", size, digest)
end
-- What decides a passage's triples (files by what they name, and as they are): a journal's header
-- holds it with the checkpoint and process count, and a store with --min-score too (it keeps
-- triples filtered by it; a journal keeps them all): neither continues another extraction.
-- (journal 2: a passage's triples merged per passage, and the heads not asked counted; 3: no
-- head inside an English contraction; 4: a JSONL record's passage id is its "id", constrained
-- tails of the types the head's type reaches, acronyms as written)
-- (extractor 2 in a store's settings: heads placed at their first mention as the text writes it;
-- 3: no head inside an English contraction; 4: as journal 4)
local settings_of = { journal = 4, extractor = 4, checkpoint = gm.realpath(args.checkpoint), processes = size,
  input_file = stamp(args.input), weights = stamp(args.checkpoint .. "/checkpoint.safetensors"),
  input = gm.realpath(args.input), format = jsonl and "jsonl" or "text", relations = args.relations, top = args.top,
  batch = args.batch, decoding = args.decoding, unpacked = args.unpacked, data = args.data and gm.realpath(args.data),
  config = args.config and gm.realpath(ex.commands.config_path(args.config)), min_score = min_score, precision = precision }
local settings = gm.json.object(settings_of, { "journal", "input", "input_file", "checkpoint", "weights", "format", "relations",
  "top", "batch", "decoding", "unpacked", "data", "config", "processes", "precision" })
local extraction = gm.json.object(settings_of, { "extractor", "input", "input_file", "weights", "format", "relations", "top",
  "min_score", "batch", "decoding", "unpacked", "data", "config", "precision" })
local function mine(k) return (k - 1) % size == rank end

-- whether a journal line's passages are as extract writes them (a line edited by hand is not)
local function whole_chunk(rec)
  if type(rec.passages) ~= "table" then return false end
  for _, p in ipairs(rec.passages) do
    if type(p) ~= "table" or type(p.triples) ~= "table" then return false end
    for _, t in ipairs(p.triples) do
      if type(t) ~= "table" or type(t.head) ~= "string" or type(t.relation) ~= "string" or type(t.tail) ~= "string"
        or type(t.score) ~= "number" then
        return false
      end
    end
  end
  return true
end

-- the chunks a journal holds (a torn last line — a process killed while writing it — is not one),
-- and whether it ends with a newline
local function journal_chunks(path)
  local f = io.open(path, "r")
  if not f then fail("cannot read " .. path) end
  local header = f:read("l")
  local ok, head = pcall(cjson.decode, header or "")
  if not ok or type(head) ~= "table" or head.journal == nil then
    f:close()
    fail(path .. " is not a journal of graphmert extract (damaged?): remove it to start over")
  end
  if head.journal ~= settings_of.journal then
    f:close()
    fail(path .. " was written by an earlier graphmert, whose journals this one does not continue: remove it to start over")
  end
  if header ~= settings then
    local differ = gm.json.differences(header, settings)
    fail(string.format("%s is the journal of another run (%s): run with its settings, or remove it to start over", path,
      #differ > 0 and table.concat(differ, "; ") or "another format"))
  end
  local held, last = {}, nil
  for line in f:lines() do
    local ok, rec = pcall(cjson.decode, line)
    local k = ok and type(rec) == "table" and math.tointeger(rec.chunk)
    if k then
      if not mine(k) or (last and k ~= last + size) or (not last and k ~= rank + 1) then
        fail(string.format("%s: chunk %d out of order: the journal is damaged; remove it to start over", path, k))
      end
      if not whole_chunk(rec) then
        fail(string.format("%s: chunk %d is not as extract writes it: the journal is damaged; remove it to start over", path, k))
      end
      held[k], last = true, k
    end
  end
  f:seek("end", -1)
  local newline = f:read(1) == "\n"
  f:close()
  return held, newline
end

-- One run at a time writes a journal: each process holds a lock on its own while it runs, so a
-- second run on the same output — a --resume typed while the first still runs — stops before it
-- writes a line (the lock goes with the process, however it ends). (A store is SQLite's to lock.)
local lock
if not storing then
  local path, warning = journal_path(rank), nil
  lock, warning = gm.lock_file(path)
  if lock == nil then fail(warning) end
  if not lock then
    fail(string.format("%s is in use by another graphmert extract, still running: let it end (or stop it), then --resume", path))
  end
  if warning and rank == 0 then io.stderr:write("extract.lua: " .. warning .. "\n") end
end

local held, journal = {}, nil

-- a journal line written whole, or the run stops at once naming the journal (a full disk): the
-- journal keeps the chunks before it, which --resume continues once there is room
local function journal_write(...)
  local ok, err = journal:write(...)
  if ok then ok, err = journal:flush() end
  if not ok then
    fail(string.format("%s: %s: the run stops; the journal keeps the passages before, and --resume continues once the " ..
      "problem is solved", journal_path(rank), tostring(err)))
  end
end

if not storing then
  local path = journal_path(rank)
  if journal_held(rank) then
    if not args.resume then fail(path .. " holds a stopped run's passages: --resume continues it (or remove it to start over)") end
    local newline
    held, newline = journal_chunks(path)
    journal = assert(io.open(path, "a"))
    if not newline then journal_write("\n") end -- a torn line stays a line of its own, never read
  else
    if args.resume and rank == 0 then
      io.stderr:write(string.format("--resume: no journal %s to continue: extracting from the first passage\n", path))
    end
    journal = io.open(path, "w")
    if not journal then fail("cannot write " .. path) end
    journal_write(settings, "\n")
  end
end

-- --out *.sqlite: the store (graphmert.kg.store) grows chunk by chunk, a transaction about once a
-- second; a re-run of the same run continues it, skipping the passages it holds
local store
if storing then
  local model_keys = {}
  for k in pairs(run.model) do model_keys[#model_keys + 1] = k end
  table.sort(model_keys)
  store = try(gm.kg.store.open, args.out, { create = true })
  try(store.begin_run, store, { checkpoint = gm.realpath(args.checkpoint), config = run.config or "",
    model = gm.json.object(run.model, model_keys), dataset = graph.dataset, created = os.date("!%Y-%m-%dT%H:%M:%SZ"),
    extraction = extraction })
  -- the entities and schema once, into a new store (their aliases are in the dataset, not the index)
  if store:count("relations") == 0 then try(store.add_seed_graph, store, ds or ex.run_seed_graph(args.checkpoint)) end
end

-- a chunk's triples, passage by passage, named as the dataset names them: a head (and a tail
-- naming an entity) by its preferred name and id, the entity the relation's schema allows where
-- an alias names several, so that a mention by alias and one by name are one triple; merged per
-- passage (its best `top` per head and relation, however many of its mentions name the head),
-- so that a passage supports the same triples in a kg.jsonl and in a store (--min-score applies
-- here only for a store, which keeps triples filtered: a journal keeps them all, and its merge
-- filters); t.span is where the passage first names the head. Also the counts of heads not asked
-- (extract.queries' report).
local function extract_chunk(chunk)
  local found, by_passage, report = {}, {}, {}
  for _, p in ipairs(chunk) do found[p.id] = {} end
  opts.report = report
  for _, t in ipairs(extract.triples(model, tok, chunk, opts)) do
    local head_id, head = graph:entity(t.head, t.relation, "head")
    local tail_id, tail = graph:entity(t.tail, t.relation, "tail", head_id)
    t.head, t.head_id, t.tail, t.tail_id = head or t.head, head_id, tail or t.tail, tail_id
    table.insert(found[t.source], t)
  end
  opts.report = nil
  for _, p in ipairs(chunk) do
    local span = {} -- each head's earliest mention among its triples'
    for _, t in ipairs(found[p.id]) do
      local key = t.head_id or t.head
      if t.span and (not span[key] or t.span[1] < span[key][1]) then span[key] = t.span end
    end
    by_passage[p.id] = extract.merge(found[p.id], { top = args.top, min_score = store and min_score or nil })
    for _, t in ipairs(by_passage[p.id]) do t.span = span[t.head_id or t.head] end
  end
  return by_passage, report
end

local function journal_line(k, chunk, by_passage, report)
  local passages = {}
  for i, p in ipairs(chunk) do
    local triples = {}
    for j, t in ipairs(by_passage[p.id]) do
      triples[j] = { head = t.head, relation = t.relation, tail = t.tail, tokens = t.tokens, score = t.score,
        head_id = t.head_id, tail_id = t.tail_id }
    end
    passages[i] = { id = p.id, triples = triples }
  end
  return string.format('{"chunk":%d,"passages":%s,"truncated":%d,"inside":%d}\n', k, cjson.encode(passages),
    report.truncated or 0, report.inside or 0)
end

local function store_chunk(chunk, by_passage)
  for _, p in ipairs(chunk) do
    for _, t in ipairs(by_passage[p.id]) do t.seed = graph:holds(t) end
    store:add_passage({ id = p.id, source = args.input, line = p.line, text = p.text }, by_passage[p.id])
  end
end

-- the KG page (graphmert.kg.page) of the triples, with the text of the passages they cite
-- (the input read once more) and the seed graph's names, aliases and facts
-- (made after the graph is written, so that no failure of the page's loses the graph)
-- (its arguments gm.kg.read's values: triples, and from a store its passages, entities, meta, lines)
local function write_page(path, triples, passages, entities, _, lines)
  local written, err = pcall(function()
    if not passages then passages, lines = gm.kg.page.cited(triples, each_passage()) end
    local ok, werr = gm.kg.page.write(path, gm.kg.page.data { triples = triples, graph = graph, passages = passages, lines = lines,
      stored = storing, entities = entities, title = args.out, kg = args.out, corpus = args.input })
    if not ok then error(werr, 0) end
  end)
  if written then
    print("the KG page: " .. path)
    return
  end
  if gm.errors.kind(err) == "interrupted" then error(err, 0) end
  io.stderr:write(string.format("extract.lua: the KG page %s was not written (%s); `graphmert page` makes it from %s\n", path,
    tostring(err), args.out))
end

-- chunk by chunk, so that an interruption keeps every chunk finished before it
local t0, committed = gm.clock(), gm.clock()
local mine_total = 0
for k = 1, chunks do if mine(k) then mine_total = mine_total + math.min(CHUNK, total - (k - 1) * CHUNK) end end
local done, skipped = 0, 0
local not_asked = { truncated = 0, inside = 0 } -- heads found but not asked, this process's

-- says on stderr which heads the linker found that the model was not asked about, and why, in
-- the passages `scope` names
local function tell_not_asked(c, scope)
  local parts = {}
  if c.truncated > 0 then
    parts[#parts + 1] = string.format("%d in text past the first %d tokens, which the model reads (model.roots)", c.truncated,
      model.layout.roots - 2)
  end
  if c.inside > 0 then parts[#parts + 1] = string.format("%d inside a longer word", c.inside) end
  if #parts > 0 then
    io.stderr:write(string.format("heads found but not asked, %s: %s\n", scope, table.concat(parts, "; ")))
  end
end
local progress = ex.progress.new { stream = io.stderr, total = mine_total, enabled = rank == 0 }
local ok, err = pcall(function()
  local next_passage, k = each_passage(), 0
  while true do
    local chunk = {}
    for p in next_passage do
      chunk[#chunk + 1] = p
      if #chunk == CHUNK then break end
    end
    if #chunk == 0 then break end
    k = k + 1
    if mine(k) then
      local todo = chunk
      if store then
        local ids = {}
        for i, p in ipairs(chunk) do ids[i] = p.id end
        local in_store = store:done(ids)
        todo = {}
        for _, p in ipairs(chunk) do if not in_store[tostring(p.id)] then todo[#todo + 1] = p end end
      elseif held[k] then
        todo = {}
      end
      skipped = skipped + #chunk - #todo
      if #todo > 0 then
        local by_passage, report = extract_chunk(todo)
        not_asked.truncated, not_asked.inside = not_asked.truncated + (report.truncated or 0), not_asked.inside + (report.inside or 0)
        gm.without_interrupts(function()
          if store then
            store_chunk(todo, by_passage)
            if gm.clock() - committed >= 1 then -- a transaction a second: a kill loses at most that
              store:commit()
              committed = gm.clock()
            end
          else
            journal_write(journal_line(k, todo, by_passage, report))
          end
        end)
      end
      done = done + #chunk
      local elapsed, fresh = gm.clock() - t0, done - skipped
      if fresh > 0 then -- (chunks a resumed run skips say nothing of its speed)
        progress:update(done, string.format("%d/%d passages  %.1f passages/s  ETA %ds", done, mine_total,
          fresh / elapsed, math.floor((mine_total - done) * elapsed / fresh)))
      end
    end
  end
end)
if not ok and gm.errors.kind(err) ~= "interrupted" then error(err, 0) end
progress:finish()
if skipped > 0 and rank == 0 then
  io.stderr:write(string.format("continued %s: %d passages were done before\n", storing and args.out or journal_path(rank), skipped))
end

if store then
  gm.without_interrupts(function()
    store:commit()
    print(string.format("%s%d passages added to %s: %d triples from %d passages in all, %.1f s", ok and "" or "interrupted: ",
      done - skipped, args.out, store:count("triples"), store:count("passages"), gm.clock() - t0))
    store:close()
  end)
  tell_not_asked(not_asked, "in the passages added now")
  if ok and page_path then write_page(page_path, gm.kg.read(args.out, { top = args.top })) end
  os.exit(ok and 0 or 130)
end
journal:close()
if not ok and size > 1 then -- the job ends on every rank (the others would wait for this one at the barrier)
  io.stderr:write(string.format("rank %d interrupted: the job stops; --resume continues from the journals %s.*.journal\n", rank,
    args.out))
  dist.abort(130)
end
dist.barrier() -- every journal complete before rank 0 reads them
if rank ~= 0 then return end

-- the knowledge graph merged from the journals in chunk order (the order of the input), on disk
-- beside the output (graphmert.kg.merge), so that the memory does not grow with the graph
local total_not_asked = { truncated = 0, inside = 0 } -- every chunk's, as the journals hold them
local function merge_into(merger)
  local readers = {}
  for r = 0, size - 1 do
    local f = assert(io.open(journal_path(r), "r"))
    f:read("l") -- the settings
    readers[r + 1] = f:lines()
  end
  local passages, k = 0, 1
  while true do
    local rec
    for line in readers[(k - 1) % size + 1] do
      local good, r = pcall(cjson.decode, line)
      if good and type(r) == "table" then rec = r break end -- (a torn line of a killed run is not)
    end
    if not rec then break end
    if math.tointeger(rec.chunk) ~= k then
      fail(string.format("%s: chunk %s where %d was expected: the journal is damaged", journal_path((k - 1) % size),
        tostring(math.tointeger(rec.chunk) or rec.chunk), k))
    end
    total_not_asked.truncated = total_not_asked.truncated + (math.tointeger(rec.truncated) or 0)
    total_not_asked.inside = total_not_asked.inside + (math.tointeger(rec.inside) or 0)
    for _, p in ipairs(rec.passages) do
      passages = passages + 1
      for _, t in ipairs(p.triples) do
        t.source, t.decoding = p.id, args.decoding
        merger:add(t)
      end
    end
    k = k + 1
  end
  return k - 1
end

-- an interrupted run never replaces a complete output: its triples go to OUT.partial.jsonl and
-- .partial.tsv, written whole even if Ctrl-C comes again
local partial_path, partial_tsv = args.out:gsub("%.jsonl$", "") .. ".partial.jsonl", tsv_path:gsub("%.tsv$", "") .. ".partial.tsv"
local out_path, out_tsv = args.out, tsv_path
if not ok then out_path, out_tsv = partial_path, partial_tsv end
-- both files streamed from the merge as it ranks the graph, and put in place as one
local function write_outputs()
  local merger <close> = extract.merger { top = args.top, min_score = min_score, disk = args.out .. ".merge" }
  local merged_chunks = merge_into(merger)
  if ok and merged_chunks ~= chunks then
    fail(string.format("the journals hold %d of the %d chunks of %s: --resume continues", merged_chunks, chunks, args.input))
  end
  local writer <close> = try(gm.atomic_writer, { out_path, out_tsv })
  writer:write(2, gm.kg.TSV_HEADER)
  local n, multi = 0, 0
  local streamed, serr = pcall(function()
    for t in merger:each() do
      t.seed = graph:holds(t)
      writer:write(1, gm.kg.jsonl_line(t))
      writer:write(2, gm.kg.tsv_line(t))
      n = n + 1
      if t.tail:find(" ") then multi = multi + 1 end
    end
  end)
  if not streamed then fail(tostring(serr)) end
  local written, werr = writer:commit()
  if not written then fail(werr) end
  if ok then -- the run is whole: its journals and an interrupted attempt's partial outputs go
    for r = 0, size - 1 do os.remove(journal_path(r)) end
    os.remove(partial_path)
    os.remove(partial_tsv)
  end
  print(string.format("%s%d passages, %d triples (%d with multi-word tails) in %s and %s, %.1f s%s",
    ok and "" or "interrupted: ", ok and total or done, n, multi, out_path, out_tsv, gm.clock() - t0,
    ok and "" or "; --resume continues the run"))
  tell_not_asked(total_not_asked, "in all the passages")
end
gm.without_interrupts(function()
  local written, err = pcall(write_outputs) -- (a full disk in the merge: one line, the journals kept)
  if not written and gm.errors.kind(err) == "usage" then error(err, 0) end
  if not written then fail(tostring(err) .. "; the journals are kept: --resume writes the graph once the problem is solved") end
end)
if ok and page_path then write_page(page_path, try(gm.kg.read, out_path, { top = args.top })) end
if not ok then os.exit(130) end
