-- targets.lua — the fuzz targets of scripts/fuzz/fuzz_lua.c: each takes one input (a string).
-- Lua errors are expected; the harness only fails on crashes and sanitizer reports.
local gm = require "graphmert"

gm.set_memory_limit(16 * 2 ^ 20) -- huge sizes must become errors, not out-of-memory kills
local scratch = os.tmpname()

local function with_file(data, fn)
  local f = assert(io.open(scratch, "wb"))
  f:write(data)
  f:close()
  return pcall(fn, scratch)
end

local T = {}

function T.safetensors(data)
  local ok, tensors = with_file(data, gm.safetensors.load)
  if ok then
    for _, t in pairs(tensors) do
      if t:numel() > 0 then t:sum():item() end
    end
  end
end

function T.tokenizer(data)
  local ok, tok = with_file(data, gm.data.tokenizer.load)
  if ok then
    local ids = tok:encode("the quick brown fox, unaffordable ünïcode 123")
    tok:decode(ids)
  end
end

function T.wordnet(data)
  for line in data:gmatch("[^\n]+") do gm.data.wordnet.parse_line(line) end
end

local tok = gm.data.tokenizer.train({ "a dog is a domesticated mammal", "the cat sat on the mat" }, { vocab_size = 60 })
function T.jsonl(data)
  local ok, records = with_file(data, gm.data.corpus.read_jsonl)
  if ok then
    gm.data.corpus.build(records, tok, { layout = gm.layout { roots = 8, leaves = 2 }, relations = { hypernym = 1, part = 2 } })
  end
end

-- A dataset folder: the input is entities.tsv, triples.tsv and corpus.jsonl separated by \1 bytes;
-- what loads is linked and indexed as training would.
local dataset_dir = scratch .. ".d"
os.execute("mkdir -p '" .. dataset_dir .. "'")
function T.dataset(data)
  local parts = {}
  for part in (data .. "\1"):gmatch("([^\1]*)\1") do parts[#parts + 1] = part end
  for i, name in ipairs { "entities.tsv", "triples.tsv", "corpus.jsonl" } do
    local f = assert(io.open(dataset_dir .. "/" .. name, "wb"))
    f:write(parts[i] or "")
    f:close()
  end
  local ok, ds = pcall(gm.data.dataset.load, { dir = dataset_dir })
  if ok then
    local graph = gm.data.seed_graph.new(ds)
    for _, p in ipairs(ds.passages) do graph:heads(p.text) end
    ds:summary()
  end
end

-- A model folder for GraphMERT.from_pretrained: the input is config.json, a NUL byte, then the
-- weights: a pytorch_model.bin when they start as a zip does, a sharded index when they start
-- with "{" (model.safetensors.index.json up to the next NUL, its one shard
-- model-00001-of-00001.safetensors after it), else model.safetensors. What loads runs a forward.
local model_dir = scratch .. ".model"
os.execute("mkdir -p '" .. model_dir .. "'")
local model_files = { "config.json", "model.safetensors", "pytorch_model.bin", "model.safetensors.index.json",
  "model-00001-of-00001.safetensors" }
function T.from_pretrained(data)
  local config, weights = data:match("^([^%z]*)%z(.*)$")
  for _, name in ipairs(model_files) do os.remove(model_dir .. "/" .. name) end
  local function put(name, bytes)
    local f = assert(io.open(model_dir .. "/" .. name, "wb"))
    f:write(bytes)
    f:close()
  end
  put("config.json", config or data)
  if weights and weights:sub(1, 1) == "{" then
    local index, shard = weights:match("^([^%z]*)%z?(.*)$")
    put("model.safetensors.index.json", index)
    put("model-00001-of-00001.safetensors", shard)
  elseif weights then
    put(weights:sub(1, 2) == "PK" and "pytorch_model.bin" or "model.safetensors", weights)
  end
  local ok, model = pcall(gm.nn.GraphMERT.from_pretrained, model_dir)
  if ok then
    local n = model.layout.nodes
    model:forward { ids = gm.ones(1, n), valid = gm.ones(1, n), relation = { {} }, head_length = { {} } }
  end
end

-- The API fuzzer: the input is a program. Each call takes a byte for the function (every public
-- function of gm and every tensor method), a byte for the argument count and a byte per argument
-- (an index into a pool of tensors, numbers, strings, tables and odd values). Tensor results
-- join the pool.
local released = gm.ones(2)
released:release()
local function pool_base()
  local nonleaf = gm.randn(2, 3):requires_grad(true) * 2
  return table.pack(
    gm.zeros(0), gm.ones(3), gm.randn(2, 3), gm.randn(3, 2), gm.randn(2, 3, 4), gm.tensor(5), gm.randn(4, 4),
    gm.randn(2, 2):requires_grad(true), nonleaf, released, gm.tensor { 0 / 0, math.huge, -math.huge },
    gm.tensor { 1, 2 }, gm.tensor { 0 }, gm.tensor { 3.5 }, gm.tensor { -1 }, gm.zeros(2, 0, 3), gm.ones(1, 1, 1, 1),
    0, 1, 2, -1, 3, 0.5, 1e9, -1e18, math.huge, -math.huge, 0 / 0, math.maxinteger, math.mininteger, 2 ^ 53,
    "", "x", "cubic", "tanh", "reference", {}, { 1, 2 }, { { 1, 2 }, { 3 } }, { 2, -3 }, { dim = 1 },
    { decay = gm.ones(3, 3) }, { key_mask = gm.ones(1, 3) }, { need_weights = true }, { self_loops = true },
    { { 1, 2 }, { 2, 3 } }, { roots = 2, leaves = 1 }, nil, true, false, function() return gm.ones(1) end)
end
local skip = { write_atomic = true, atomic_writer = true, set_memory_limit = true, set_num_threads = true }
local names = {}
for name, v in pairs(gm) do
  if type(v) == "function" and not skip[name] then names[#names + 1] = { name, v } end
end
for name, v in pairs(getmetatable(gm.ones(1)).methods) do
  if type(v) == "function" then names[#names + 1] = { "method " .. name, v } end
end
table.sort(names, function(a, b) return a[1] < b[1] end)

function T.api(data)
  local pool = pool_base()
  local n_pool = pool.n -- the pool holds a nil, so its size is table.pack's count
  local pos = 1
  local function byte()
    local b = data:byte(pos)
    pos = pos + 1
    return b or 0
  end
  while pos <= #data do
    local fn = names[byte() % #names + 1][2]
    local argc = byte() % 5
    local args = {}
    for i = 1, argc do args[i] = pool[byte() % n_pool + 1] end
    local ok, result = pcall(fn, table.unpack(args, 1, argc))
    if ok and gm.is_tensor(result) and n_pool < 96 then
      n_pool = n_pool + 1
      pool[n_pool] = result
    end
  end
  collectgarbage()
end

return T
