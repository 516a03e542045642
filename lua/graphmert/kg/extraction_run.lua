-- extraction_run.lua — the work of `graphmert extract` once its inputs are read and checked: the
-- corpus goes through the model chunk by chunk (CHUNK passages; under mpirun rank r of K takes
-- chunks r + 1, r + 1 + K, ...), and each chunk's triples go, as they come, to the process's
-- journal (graphmert.kg.journal) or to the store (graphmert.kg.store), so that a stopped run
-- continues where it stopped and its output is an uninterrupted run's. At the end rank 0 merges
-- the journals in chunk order into kg.jsonl and kg.tsv (graphmert.kg.merge, on disk; the files:
-- graphmert.kg.extraction_outputs), and the KG page is made.
--   extraction_run.run(x) → nil, or the status the process exits with at once. x: cli (the
--     command's options), precision (as applied), input (graphmert.kg.extraction_input), outputs
--     (graphmert.kg.extraction_outputs), run (run.json's values), tok, model, graph (the seed
--     graph's index), dataset (the Dataset --data or --config named, or nil), opts (extract.options'
--     table, with constrained decoding's tails), total (the passages of the input), pipeline
--     (graphmert.kg.pipeline_extraction's, when the run's reranker scores the triples); or, for
--     the rule extractor, rules (graphmert.kg.rule_extraction's) instead of tok, model and opts
--   extraction_run.name_entities(graph, t) → t with the entities' names and ids, flagged when
--     outside the schema
-- Ctrl-C stops it between chunks: the chunks done are kept (a journal's merged into the partial
-- outputs, a store committed), and the status is 130.
local gm = require "graphmert"
local ex = require "graphmert.experiment"
local dist = require "graphmert.distributed"
local extract = require "graphmert.eval.extract"
local merge = require "graphmert.kg.merge"
local journal = require "graphmert.kg.journal"

local M = {}

-- passages per decode: its batches are filled across passages; a chunk is also what a journal
-- line holds and where a stopped run continues (a fixed size, so a resumed or split run asks the
-- same batches as an uninterrupted one and gets the same triples)
M.CHUNK = 32

local function fail(msg) ex.args.fail("extract.lua", msg) end
local function try(fn, ...) return ex.args.try("extract.lua", fn, ...) end

-- A model's triple named by the seed graph's entities: head and tail by their preferred names,
-- with their ids (a new tail open decoding wrote has none), and an open-decoded tail of a type the
-- schema forbids flagged by its decoding (gm.kg.OUTSIDE_SCHEMA).
function M.name_entities(graph, t)
  local head_id, head = graph:entity(t.head, t.relation, "head")
  local tail_id, tail = graph:entity(t.tail, t.relation, "tail", head_id)
  t.head, t.head_id, t.tail, t.tail_id = head or t.head, head_id, tail or t.tail, tail_id
  if tail_id and t.decoding == "open" and not graph:valid(t) then t.decoding = gm.kg.OUTSIDE_SCHEMA end
  return t
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
-- (extractor 2 in a store's settings: heads placed at their first mention as the text writes it;
-- 3: no head inside an English contraction; 4: as the journal's version 4)
local function settings(x, size)
  local cli = x.cli
  local rules = x.rules and (x.rules.patterns and stamp(x.rules.patterns) or "generic") -- (the rule extractor's)
  local of = { journal = journal.VERSION, extractor = rules and "rules" or 4, processes = size,
    reranker = x.pipeline and x.pipeline.digest,
    checkpoint = cli.checkpoint and gm.realpath(cli.checkpoint), rules = rules, input_file = stamp(x.input.path),
    weights = cli.checkpoint and stamp(cli.checkpoint .. "/checkpoint.safetensors"),
    input = x.input.stdin and x.input.name or gm.realpath(cli.input), format = x.input.jsonl and "jsonl" or "text",
    relations = cli.relations, top = cli.top,
    batch = cli.batch, decoding = cli.decoding, unpacked = cli.unpacked, data = cli.data and gm.realpath(cli.data),
    config = cli.config and gm.realpath(ex.commands.config_path(cli.config)), min_score = cli["min-score"],
    precision = x.precision }
  return journal.header(of), gm.json.object(of, { "extractor", "input", "input_file", "weights", "reranker", "rules", "format", "relations", "top",
    "min_score", "batch", "decoding", "unpacked", "data", "config", "precision" })
end

-- --out *.sqlite: the store grows chunk by chunk, a transaction about once a second; a re-run of
-- the same run continues it, skipping the passages it holds
local function open_store(x, extraction)
  local model_keys = {}
  for k in pairs(x.run.model) do model_keys[#model_keys + 1] = k end
  table.sort(model_keys)
  local store = try(gm.kg.store.open, x.cli.out, { create = true })
  try(store.begin_run, store, { checkpoint = x.cli.checkpoint and gm.realpath(x.cli.checkpoint) or "", config = x.run.config or "",
    model = gm.json.object(x.run.model, model_keys), dataset = x.graph.dataset, created = os.date("!%Y-%m-%dT%H:%M:%SZ"),
    extraction = extraction })
  -- the entities and schema once, into a new store (their aliases are in the dataset, not the index)
  if store:count("relations") == 0 then try(store.add_seed_graph, store, x.dataset or ex.run_seed_graph(x.cli.checkpoint)) end
  return store
end

-- a chunk's triples, passage by passage, named as the dataset names them: a head (and a tail
-- naming an entity) by its preferred name and id, the entity the relation's schema allows where
-- an alias names several, so that a mention by alias and one by name are one triple; merged per
-- passage (its best `top` per head and relation, however many of its mentions name the head),
-- so that a passage supports the same triples in a kg.jsonl and in a store (--min-score applies
-- here only for a store, which keeps triples filtered: a journal keeps them all, and its merge
-- filters); t.span is where the passage first names the head. Also the counts of heads not asked
-- (extract.queries' report).
local function extract_chunk(x, chunk, storing)
  local graph, opts = x.graph, x.opts or {}
  local found, by_passage, report = {}, {}, {}
  for _, p in ipairs(chunk) do found[p.id] = {} end
  opts.report = report
  local triples = x.rules and x.rules.propose(chunk) or x.pipeline and x.pipeline.propose(chunk)
    or extract.triples(x.model, x.tok, chunk, opts)
  for _, t in ipairs(triples) do
    if not (x.rules or x.pipeline) then -- (the rules and the pipeline name entities by id already)
      M.name_entities(graph, t)
    end
    table.insert(found[t.source], t)
  end
  opts.report = nil
  for _, p in ipairs(chunk) do
    local span = {} -- each head's earliest mention among its triples'
    for _, t in ipairs(found[p.id]) do
      local key = t.head_id or t.head
      if t.span and (not span[key] or t.span[1] < span[key][1]) then span[key] = t.span end
    end
    by_passage[p.id] = merge.merge(found[p.id], { top = x.cli.top, min_score = storing and x.cli["min-score"] or nil })
    for _, t in ipairs(by_passage[p.id]) do t.span = span[t.head_id or t.head] end
  end
  return by_passage, report
end

local function store_chunk(x, store, chunk, by_passage)
  for _, p in ipairs(chunk) do
    for _, t in ipairs(by_passage[p.id]) do t.seed = x.graph:holds(t) end
    store:add_passage({ id = p.id, source = x.input.name, line = p.line, text = p.text }, by_passage[p.id])
  end
end

-- says on stderr which heads the linker found that the model was not asked about, and why, in
-- the passages `scope` names
local function tell_not_asked(x, c, scope)
  local parts = {}
  if c.truncated > 0 then
    parts[#parts + 1] = string.format("%d in text past the first %d tokens, which the model reads (model.roots)", c.truncated,
      x.model.layout.roots - 2)
  end
  if c.inside > 0 then parts[#parts + 1] = string.format("%d inside a longer word", c.inside) end
  if #parts > 0 then
    io.stderr:write(string.format("heads found but not asked, %s: %s\n", scope, table.concat(parts, "; ")))
  end
end

-- the chunks this process takes, chunk by chunk into the journal or the store, so that an
-- interruption keeps every chunk finished before it; → whether it ran to the end (not
-- interrupted), and the counts {done, skipped (done by an earlier attempt), not_asked}
local function extract_all(x, sink, rank, size, t0)
  local CHUNK, total = M.CHUNK, x.total
  local function mine(k) return (k - 1) % size == rank end
  local committed = gm.clock()
  local mine_total = 0
  for k = 1, (total + CHUNK - 1) // CHUNK do if mine(k) then mine_total = mine_total + math.min(CHUNK, total - (k - 1) * CHUNK) end end
  local counts = { done = 0, skipped = 0, not_asked = { truncated = 0, inside = 0 } } -- (heads found but not asked, this process's)
  local progress = ex.progress.new { stream = io.stderr, total = mine_total, enabled = rank == 0 }
  local ok, err = pcall(function()
    local next_passage, k = x.input:passages(), 0
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
        if sink.store then
          local ids = {}
          for i, p in ipairs(chunk) do ids[i] = p.id end
          local in_store = sink.store:done(ids)
          todo = {}
          for _, p in ipairs(chunk) do if not in_store[tostring(p.id)] then todo[#todo + 1] = p end end
        elseif sink.journal.held[k] then
          todo = {}
        end
        counts.skipped = counts.skipped + #chunk - #todo
        if #todo > 0 then
          local by_passage, report = extract_chunk(x, todo, sink.store ~= nil)
          local not_asked = counts.not_asked
          not_asked.truncated, not_asked.inside = not_asked.truncated + (report.truncated or 0), not_asked.inside + (report.inside or 0)
          gm.without_interrupts(function()
            if sink.store then
              store_chunk(x, sink.store, todo, by_passage)
              if gm.clock() - committed >= 1 then -- a transaction a second: a kill loses at most that
                sink.store:commit()
                committed = gm.clock()
              end
            else
              sink.journal:add(k, todo, by_passage, report)
            end
          end)
        end
        counts.done = counts.done + #chunk
        local elapsed, fresh = gm.clock() - t0, counts.done - counts.skipped
        if fresh > 0 then -- (chunks a resumed run skips say nothing of its speed)
          progress:update(counts.done, string.format("%d/%d passages  %.1f passages/s  ETA %ds", counts.done, mine_total,
            fresh / elapsed, math.floor((mine_total - counts.done) * elapsed / fresh)))
        end
      end
    end
  end)
  if not ok and gm.errors.kind(err) ~= "interrupted" then error(err, 0) end
  progress:finish()
  return ok, counts
end

-- the knowledge graph merged from the journals in chunk order (the order of the input), on disk
-- beside the output, so that the memory does not grow with the graph; written as kg.jsonl and
-- kg.tsv when the run is whole, else as the partial outputs
local function write_graph(x, whole, counts, size, t0)
  local cli, outputs = x.cli, x.outputs
  local merger <close> = merge.merger { top = cli.top, min_score = cli["min-score"], disk = outputs.merge }
  local merged = 0
  local not_asked = { truncated = 0, inside = 0 } -- every chunk's, as the journals hold them
  for rec in journal.each_chunk(cli.out, size) do
    merged = merged + 1
    not_asked.truncated = not_asked.truncated + (math.tointeger(rec.truncated) or 0)
    not_asked.inside = not_asked.inside + (math.tointeger(rec.inside) or 0)
    for _, p in ipairs(rec.passages) do
      for _, t in ipairs(p.triples) do
        t.source, t.decoding = p.id, t.decoding or cli.decoding
        merger:add(t)
      end
    end
  end
  local chunks = (x.total + M.CHUNK - 1) // M.CHUNK
  if whole and merged ~= chunks then
    fail(string.format("the journals hold %d of the %d chunks of %s: --resume continues", merged, chunks, x.input.name))
  end
  local n, multi, out_path, out_tsv = outputs:write(merger, x.graph, whole)
  if whole then -- the run is whole: its journals and an interrupted attempt's partial outputs go
    journal.remove(cli.out, size)
    outputs:remove_partial()
  end
  print(string.format("%s%d passages, %d triples (%d with multi-word tails) in %s and %s, %.1f s%s",
    whole and "" or "interrupted: ", whole and x.total or counts.done, n, multi, out_path, out_tsv, gm.clock() - t0,
    whole and "" or "; --resume continues the run"))
  tell_not_asked(x, not_asked, "in all the passages")
end

function M.run(x)
  local cli, outputs = x.cli, x.outputs
  local rank, size = dist.rank(), dist.size()
  local header, extraction = settings(x, size)
  local sink = {} -- where the chunks' triples go: a journal, or a store
  if outputs.storing then
    sink.store = open_store(x, extraction)
  else
    sink.journal = journal.open(cli.out, { rank = rank, size = size, resume = cli.resume, header = header })
  end
  local t0 = gm.clock()
  local ok, counts = extract_all(x, sink, rank, size, t0)
  if counts.skipped > 0 and rank == 0 then
    io.stderr:write(string.format("continued %s: %d passages were done before\n", sink.store and cli.out or sink.journal.path,
      counts.skipped))
  end

  if sink.store then
    local store = sink.store
    gm.without_interrupts(function()
      store:commit()
      -- (the triples counted as kg.jsonl lists them, the top per head and relation: the store keeps every passage's)
      print(string.format("%s%d passages added to %s: %d triples from %d passages in all (the top %d per head and relation; " ..
        "%d stored), %.1f s", ok and "" or "interrupted: ", counts.done - counts.skipped, cli.out, store:listed(cli.top),
        store:count("passages"), cli.top, store:count("triples"), gm.clock() - t0))
      store:close()
    end)
    tell_not_asked(x, counts.not_asked, "in the passages added now")
    if ok and outputs.page then outputs:write_page(x.graph, x.input, gm.kg.read(cli.out, { top = cli.top })) end
    return ok and 0 or 130
  end
  sink.journal:close()
  if not ok and size > 1 then -- the job ends on every rank (the others would wait for this one at the barrier)
    io.stderr:write(string.format("rank %d interrupted: the job stops; --resume continues from the journals %s.*.journal\n", rank,
      cli.out))
    dist.abort(130)
  end
  dist.barrier() -- every journal complete before rank 0 reads them
  if rank ~= 0 then return end

  gm.without_interrupts(function()
    local written, err = pcall(write_graph, x, ok, counts, size, t0) -- (a full disk in the merge: one line, the journals kept)
    if not written and gm.errors.kind(err) == "usage" then error(err, 0) end
    if not written then fail(tostring(err) .. "; the journals are kept: --resume writes the graph once the problem is solved") end
  end)
  if ok and outputs.page then
    outputs:write_page(x.graph, x.input, try(gm.kg.read, outputs.out, { top = cli.top }))
  end
  if not ok then return 130 end
end

return M
