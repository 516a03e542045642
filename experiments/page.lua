-- page.lua — the KG page of an extracted knowledge graph: one self-contained HTML file (no server,
-- no network: open it from disk) to search entities, see an entity's neighbourhood, read each
-- triple's evidence, filter, and review triples (graphmert.kg.page says what it shows). `graphmert
-- extract` writes one beside kg.jsonl; this makes one from any kg.jsonl and its corpus, or from a
-- kg.sqlite store (which holds its passages).
--   graphmert page --kg out/tiny/kg.jsonl --input experiments/data/tiny/corpus.txt --checkpoint out/tiny
--   graphmert page --kg kg.sqlite [--config tiny] [--out kg.sqlite.html] [--top 5]
-- The seed graph (entity names, types and aliases to search by; the facts drawn beside the
-- extracted triples) is the run's (--checkpoint; for a store, the run it records), a dataset's
-- (--data, --config), or none.
local gm = require "graphmert"
local ex = gm.experiment
local data_options = require "graphmert.experiment.data_options"
local run_folder = require "graphmert.experiment.run_folder"

local args = ex.args.parse(arg, {
  script = "page.lua", about = "The KG page: an extracted knowledge graph as one HTML file to browse, check and review.",
  { "kg", nil, "a kg.jsonl file (extract's output) or a kg.sqlite store" },
  { "input", nil, "the corpus the kg.jsonl was extracted from (its sources are this file's line numbers)" },
  { "format", "auto", "the input's format: text, jsonl, or auto (jsonl for a .jsonl file, else text)", choices = { "auto", "text", "jsonl" } },
  { "checkpoint", nil, "the training run whose seed graph to show (its seed_graph/)" },
  { "data", nil, "a dataset folder whose seed graph to show" },
  { "config", nil, "a config whose dataset's seed graph to show" },
  { "out", nil, "the page to write (default: beside the kg file, kg.html for kg.jsonl, kg.sqlite.html for kg.sqlite)" },
  { "top", 5, "triples kept per (head, relation) from a store", type = "integer", min = 1 },
  { "title", nil, "the page's title (default: the kg file's path)" },
})
local function fail(msg) ex.args.fail("page.lua", msg) end
local function try(fn, ...) return ex.args.try("page.lua", fn, ...) end
if not args.kg then fail("--kg is required (see --help)") end
local sources = 0
for _, name in ipairs { "checkpoint", "data", "config" } do if args[name] then sources = sources + 1 end end
if sources > 1 then fail("give one of --checkpoint, --data and --config") end
local storing = args.kg:match("%.sqlite$") ~= nil
if storing and args.input then fail("a kg.sqlite store holds its passages: --input is for a kg.jsonl") end
do
  local info = gm.stat(args.kg)
  if not info or info.type ~= "file" then fail(args.kg .. ": not a file") end
end
local out = args.out or gm.kg.page.path(args.kg)
ex.args.apart("page.lua", { out }, { args.kg, args.input })
ex.args.writable("page.lua", out)

local triples, passages, entities, meta, lines = try(gm.kg.read, args.kg, { top = args.top })
if not storing and args.input then
  local next_passage = try(gm.data.corpus.each_passage, args.input, args.format)
  passages, lines = try(gm.kg.page.cited, triples, function() return try(next_passage) end)
elseif not storing then
  io.stderr:write("page: no --input: the page lists each triple's sources (passage ids) but not their text\n")
end

-- a page without the passages or the seed graph does not replace one by its default name
-- (extract's, which has both) unless --out says so
local function keep_existing(lacking)
  if not args.out and gm.stat(out) then
    fail(string.format("%s exists, and this page would lack %s: --out %s replaces it, or name another", out, lacking, out))
  end
end
if not storing and not args.input then keep_existing("the passages' text (--input)") end
do
  local other = not args.out and gm.kg.page.page_of_other(out, args.kg)
  if other then fail(string.format("%s is the page of %s: --out %s replaces it, or name another", out, other, out)) end
end

local graph = try(data_options.seed_graph, args)
if not graph and storing and meta.checkpoint and gm.stat(meta.checkpoint) then
  graph = try(run_folder.run_graph, meta.checkpoint) -- the store's run
elseif not graph then
  keep_existing("the seed graph (--checkpoint, --data or --config)")
  io.stderr:write("page: no --checkpoint, --data or --config: no seed-graph facts to draw beside the triples\n")
end

local data = try(gm.kg.page.data, { triples = triples, graph = graph, passages = passages, lines = lines, stored = storing, entities = entities,
  title = args.title or args.kg, kg = args.kg, corpus = args.input or (meta and meta.corpus) or "" })
local ok, err = try(gm.kg.page.write, out, data)
if not ok then fail(err) end
print(string.format("%s: %d triples, %d entities, %d seed-graph facts, %d passages", out, #data.triples, #data.entities,
  #data.facts, data.passage_count))
