-- run_folder.lua — a training run's output folder, written by train.lua and read by the tools
-- that use a trained model (extract, evaluate, page): its description (run.json), model,
-- tokenizer, seed graph and the seed graph's index.
--   write_run(dir, run)   read_run(dir) → run   load_model(dir, run)   load_tokenizer(dir, run)
--   run_seed_graph(dir)   run_graph(dir, store)   run_known_tails(dir, graph, tok, relations, leaves)
--   data_string(data)     same_data(a, b): a config's data and a run's name one dataset
local gm = require "graphmert"
local args = require "graphmert.experiment.args"

local M = {}

-- A training output folder: run.json (what a later tool needs to rebuild the run's model and
-- read its outputs: the config file, the model's options, the relation names in id order, the
-- config's `data` with absolute paths — a record, never followed by the tools below — and the
-- config's settings, which --resume compares),
-- tokenizer.txt, checkpoint.safetensors and seed_graph/ (the dataset's seed graph and its index,
-- Dataset:save_seed_graph). A folder may come from elsewhere, so the tools read only its own
-- regular files (graphmert.folder) and check what it declares before allocating for it.
function M.write_run(dir, run)
  local ok, err = gm.write_atomic(dir .. "/run.json", { require("cjson").encode(run) })
  if not ok then error("write_run: " .. err, 2) end
end

local HINT = " (experiments/train.lua writes it into its output folder)"

function M.read_run(dir)
  local info = gm.stat(dir)
  if not info then error(dir .. ": no such folder (a training run's folder: graphmert train --out writes one)", 0) end
  if info.type ~= "directory" then
    error(dir .. " is a " .. info.type .. ", not a training run's folder (the folder holding run.json, tokenizer.txt "
      .. "and checkpoint.safetensors)", 0)
  end
  if not gm.stat(dir .. "/run.json") then
    error(dir .. " is not a training run's folder: it has no run.json (graphmert train --out writes one)", 0)
  end
  local found, path = pcall(gm.folder.need, dir, "run.json", "read_run")
  if not found then error(path .. HINT, 0) end
  local ok, run = pcall(require("graphmert.json").read, path, "read_run")
  if not ok then error(run .. HINT, 0) end
  if type(run.model) ~= "table" or type(run.relations) ~= "table" then
    error(path .. " is not a run description (model and relations expected)", 0)
  end
  for i, name in ipairs(run.relations) do
    if type(name) ~= "string" then error(string.format("%s: relation %d is not a name", path, i), 0) end
  end
  -- a run written before datasets: its seed graph was WordNet's
  if run.data == nil and type(run.wordnet) == "table" then
    run.data = { source = "wordnet" }
    for k, v in pairs(run.wordnet) do run.data[k] = v end
  end
  if type(run.data) ~= "table" then error(path .. " names no dataset (data expected)", 0) end
  return run
end

-- A config's or run's data as the user reads it: its JSON, slashes unescaped.
function M.data_string(data) return (require("cjson").encode(data):gsub("\\/", "/")) end

-- The data keys that name files or folders: compared by what they name, not as typed.
local DATA_PATHS = { dir = true, corpus = true, triples = true, entities = true, relations = true }

-- Whether a config's data and a run's name the same dataset: equal values, tables by their
-- contents, paths by the file or folder they name (a trailing "/", "./" or a link is the same).
function M.same_data(a, b, key)
  if DATA_PATHS[key] then return args.place(a) == args.place(b) end
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  for k, v in pairs(a) do if not M.same_data(v, b[k], k) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

-- The run's model with its trained weights (eval mode). run.json's model options are checked by
-- GraphMERT and must not declare more than checkpoint.safetensors holds (4 bytes a parameter)
-- before the model is built.
function M.load_model(dir, run)
  run = run or M.read_run(dir)
  local path, bytes = gm.folder.need(dir, "checkpoint.safetensors", "load_model")
  gm.nn.GraphMERT.check_declared(run.model, bytes, 4, dir .. "/run.json", path) -- float32 weights
  local ok, model = pcall(gm.nn.GraphMERT, run.model)
  if not ok then error(string.format("%s/run.json: %s", dir, tostring(model):gsub("^[^:]*:%d+: ", "")), 0) end
  gm.checkpoint.load(path, { model = model })
  return model:eval()
end

-- The run's tokenizer, which must be the model's (as many pieces as its vocabulary).
function M.load_tokenizer(dir, run)
  run = run or M.read_run(dir)
  local tok = gm.data.tokenizer.load(gm.folder.need(dir, "tokenizer.txt", "load_tokenizer"))
  if tok:size() ~= math.tointeger(run.model.vocab) then
    error(string.format("the tokenizer in %s has %d pieces, the model %s: they are not from one run", dir, tok:size(),
      tostring(math.tointeger(run.model.vocab) or run.model.vocab)), 0)
  end
  return tok
end

-- The run's seed graph from its own seed_graph/ folder (a Dataset without passages).
function M.run_seed_graph(dir)
  if not gm.stat(dir .. "/seed_graph") then
    error(dir .. " has no seed_graph/ (train.lua writes it); name the run's dataset with --data DIR or --config FILE", 0)
  end
  return gm.data.dataset.load_seed_graph(dir .. "/seed_graph")
end

-- Writes a run's seed graph index (rank 0), which a run trained before it (or before the index
-- held what is asked now) lacks, so that the next start reads it. Only inside the run folder: a
-- seed_graph/ that links elsewhere (a shared copy) is not written, nor a folder that takes no
-- file. stderr says which, with `what` was built.
local function store_index(dir, graph, known, what)
  if not gm.distributed.is_main() then return end
  local path = dir .. "/seed_graph/index.bin"
  local root, folder = gm.realpath(dir), gm.realpath(dir .. "/seed_graph")
  local ok, err = root and folder and folder:sub(1, #root + 1) == root .. "/", "seed_graph/ links outside the run folder"
  if ok then ok, err = pcall(graph.save, graph, path, known) end
  io.stderr:write(ok and string.format("%s: %s built once and stored in %s\n", dir, what, path)
    or string.format("%s: %s built (at each start: %s could not be written: %s)\n", dir, what, path,
      tostring(err):gsub("^seed_graph:save: ", "")))
end

-- The run's seed graph index (gm.data.seed_graph): seed_graph/index.bin, which train.lua writes
-- with the JSONL, loads in a fraction of a second; for a run without one (trained before it), or
-- with one of an earlier version (whose phrases were folded otherwise), the index is built from
-- its seed_graph/ JSONL (seconds), and with `store` (extraction) stored.
function M.run_graph(dir, store)
  local path = gm.folder.member(dir, "seed_graph/index.bin", "run_graph")
  local why = dir .. "/seed_graph has no index.bin"
  if path then
    local graph = gm.data.seed_graph.load(path)
    if graph.version == gm.data.seed_graph.VERSION then return graph end
    why = string.format("%s is of version %s, this graphmert's is %s", path, graph.version, gm.data.seed_graph.VERSION)
  end
  local graph = gm.data.seed_graph.new(M.run_seed_graph(dir))
  if store then store_index(dir, graph, nil, "the seed graph's index was")
  elseif gm.distributed.is_main() then io.stderr:write(why .. ": the seed graph's index was built\n") end
  return graph
end

-- Constrained decoding's known tails for a run's own seed graph (M.run_graph): read from its
-- index, which train.lua writes with them; for a run whose index lacks them they are built
-- (seconds: every name is tokenized) and stored in it.
function M.run_known_tails(dir, graph, tok, relations, leaves)
  local tails, how = graph:known_tails(tok, relations, leaves)
  if how == "built" then
    store_index(dir, graph, { tok = tok, leaves = leaves }, "constrained decoding's known tails were")
  end
  return tails
end

return M
