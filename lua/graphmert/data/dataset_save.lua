-- dataset_save.lua — a dataset's seed graph saved as a folder of its own, which
-- graphmert.data.dataset.load_seed_graph reads back.
--   save.seed_graph(ds, dir, graph, known): Dataset:save_seed_graph
--   save.SEED_FILES: the files besides index.bin, in the order load_seed_graph reads them
local gm = require "graphmert"
local cjson = require "cjson"
local seed_graph = require "graphmert.data.seed_graph"

local M = {}

M.SEED_FILES = { "entities.jsonl", "triples.jsonl", "relations.jsonl", "dataset.json" }

-- Writes the seed graph (entities, triples by id, the relation schema, and in dataset.json the
-- dataset's name and linker options) into `dir` as JSONL that load_seed_graph reads back: what a
-- training output keeps, so that extraction reads nothing outside it. Beside them index.bin, the
-- seed graph's index (`graph`, gm.data.seed_graph over this dataset, built when not given), which
-- loads in a fraction of the time it takes to build; with known = {tok, leaves} it holds
-- constrained decoding's known tails for that tokenizer and leaf count (seed_graph:save). The
-- files are written as one (all old or all new), so an index never goes with another graph's JSONL.
function M.seed_graph(ds, dir, graph, known)
  require("graphmert.folder").make(dir, "save_seed_graph")
  local entities, triples, relations = {}, {}, {}
  for i, id in ipairs(ds.entity_order) do
    local e = ds.entities[id]
    local aliases = {} -- a JSON array even when empty (cjson writes {} for an empty table)
    for j, a in ipairs(e.aliases) do aliases[j] = cjson.encode(a) end
    entities[i] = string.format('{"id":%s,"name":%s,"type":%s,"aliases":[%s]%s}\n', cjson.encode(e.id), cjson.encode(e.name),
      cjson.encode(e.type), table.concat(aliases, ","), e.any_case and ',"any_case":true' or "")
  end
  for i, t in ipairs(ds.triples) do triples[i] = cjson.encode { head = t.head, relation = t.relation, tail = t.tail } .. "\n" end
  for _, name in ipairs(ds.relation_names) do -- a line per pair of types it allows
    for _, row in ipairs(ds.schema[name].rows) do
      relations[#relations + 1] = cjson.encode { name = name, head_types = seed_graph.type_list(row.head),
        tail_types = seed_graph.type_list(row.tail), subsumption = ds.subsumption == name or nil } .. "\n"
    end
  end
  local meta = { cjson.encode { name = ds.name, link = ds.link, split_hash = ds.split_hash } }
  graph = graph or seed_graph.new(ds)
  local ok, err = gm.write_atomic { { dir .. "/" .. M.SEED_FILES[1], entities }, { dir .. "/" .. M.SEED_FILES[2], triples },
    { dir .. "/" .. M.SEED_FILES[3], relations }, { dir .. "/" .. M.SEED_FILES[4], meta }, { dir .. "/index.bin", { graph:encode(known) } } }
  if not ok then error("save_seed_graph: " .. err, 2) end
end

return M
