-- config.lua — the one schema of the training configs (experiments/configs/*.lua): every key,
-- its default and what it means. load() rejects a key the schema does not know, naming it, so a
-- typo such as `leaf_rte` cannot run silently with the default. The keys of `model` are
-- GraphMERT's constructor options (gm.nn.GraphMERT.defaults), checked the same way and
-- completed with GraphMERT's defaults, so roots and leaves are read from cfg.model alone.
--   config.load(path) → cfg        config.check(cfg, where) → cfg (defaults filled in)
--   A config may start from another: `extends = "base.lua"` (see read below).
--   config.describe() → the schema as text (one line a key)
local GraphMERT = require "graphmert.nn.GraphMERT"

local check = require "graphmert.check"
local M = {}

local REQUIRED = {} -- a default that marks a key every config must give

-- key → { default, type, what it means }
M.schema = {
  seed = { 1, "number", "random seed: initialisation, masks and the order of batches" },
  data = { REQUIRED, "table", "the dataset: { dir = folder } or { corpus = ..., triples = ..., entities = ..., relations = ... } (gm.data.dataset; paths relative to the config file), or { source = \"wordnet\", pos = parts of speech, limit = synsets per part, dir = WordNet's folder }" },
  heldout = { 0.05, "number", "share of entities kept out of training (the passages about them and every triple they take part in)" },
  heldout_triples = { 0, "number", "share of the remaining facts (both directions) kept out of training" },
  copies = { 1, "number", "a record is repeated once per usable triple, up to this many times" },
  vocab_size = { REQUIRED, "number", "WordPiece vocabulary size of the tokenizer trained on the training text (not with bert_vocab)" },
  bert_vocab = { false, "string", "a BERT vocab.txt (uncased) to tokenise with instead of training a tokenizer" },
  leaf_rate = { 0.15, "number", "share of injected tail groups masked per step (official 0.15)" },
  tail_end = { false, "boolean", "masked tails also cover their root's empty leaf slots, labelled [PAD]: the model learns where a tail ends (for extraction; not in the official code)" },
  mentions = { false, "boolean", "training tails also at the seed graph's other entity mentions of a record's text (a fact of the mentioned entity, one per copy), not only at its head: the places extraction asks about (packing = \"record\")" },
  absent = { 0, "number", "share of injected roots given a relation their entity lacks in the seed graph, with an empty tail (needs tail_end): the model learns to say a relation does not hold, and extraction keeps only tails it ranks above the empty one" },
  max_span = { false, "number", "longest masked root span (false: leaves per root, as the official SBO needs; more only with model.sbo = false)" },
  packing = { "record", "string", "\"record\" (each record whole, truncated to roots − 2) or \"chunk\" (official: records concatenated, cut into roots − 2-token chunks)" },
  masking_spans = { true, "boolean", "root spans with span-boundary targets (official mlm_sbo); false: tokens masked independently (the no-span ablation)" },
  model = { REQUIRED, "table", "gm.nn.GraphMERT options: roots, leaves, hidden, layers, heads, ffn, lambda, ..." },
  loss = { {}, "table", "GraphMERT:loss options: normalization = \"joint\" (official) or \"separate\", mu" },
  steps = { REQUIRED, "number", "optimisation steps per model" },
  batch = { REQUIRED, "number", "sequences per step" },
  lr = { REQUIRED, "number", "peak learning rate (AdamW)" },
  min_lr = { 0, "number", "learning rate at the end of the cosine schedule" },
  warmup = { 0, "number", "steps of linear warm-up" },
  weight_decay = { 0.01, "number", "AdamW's decoupled weight decay" },
  clip = { 1.0, "number", "maximum global gradient norm" },
  eval_every = { 1000, "number", "steps between held-out masked-token evaluations (and at the end)" },
  checkpoint_every = { 1000, "number", "steps between checkpoints (and at the end)" },
  eval_triples = { 500, "number", "held-out triples per tail-prediction table" },
  baseline = { true, "boolean", "also train the model without decay and without H-GAT on the same budget" },
  on_nonfinite = { "stop", "string", "\"stop\" (training stops naming the step) or \"skip\" (the step is skipped)" },
  precision = { "highest", "string", "float32 matmul precision: \"highest\" (float32) or \"medium\" (bf16 products, float32 sums)" },
  attention_keep_scores = { false, "boolean", "attention forward keeps its raw scores for backward (float32, B·H·L·S floats per layer, up to 1 GiB a call): backward ~17% faster, same results, more memory" },
  memory_limit = { false, "number", "cap on tensor memory in bytes (false: none)" },
  grid = { {}, "table", "experiments/ablation.lua's grid: lambdas (false = no decay), hgat (true/false), seeds, reference = {lambda, hgat} (the cell the others are compared with), passages (held-out passages to extract from), probe_sequences (held-out sequences for attention by distance)" },
}

-- the numbers' ranges (their types are the schema's)
local function whole(v) return v == math.floor(v) and v < 2 ^ 53 end
local function whole_from(low, said)
  return { said or "a whole number >= " .. low, function(v) return whole(v) and v >= low end }
end
local function positive() return { "a number > 0", function(v) return v > 0 and v < math.huge end } end
local function nonnegative() return { "a number >= 0", function(v) return v >= 0 and v < math.huge end } end
local function share(said) return { said or "a share in [0, 1)", function(v) return v >= 0 and v < 1 end } end
local RANGES = {
  seed = whole_from(0, "a whole number"),
  heldout = share("a share in [0, 1) (0.05 keeps 5% of the entities out)"),
  heldout_triples = share(),
  copies = whole_from(1),
  vocab_size = whole_from(1),
  leaf_rate = { "a share in [0, 1]", function(v) return v >= 0 and v <= 1 end },
  max_span = whole_from(1, "a whole number >= 1 or false"),
  steps = whole_from(1),
  batch = whole_from(1),
  lr = positive(),
  min_lr = nonnegative(),
  warmup = whole_from(0),
  weight_decay = nonnegative(),
  clip = { "a number > 0", function(v) return v > 0 end },
  eval_every = whole_from(1),
  checkpoint_every = whole_from(1),
  eval_triples = whole_from(0),
  memory_limit = { "a number of bytes > 0 or false", function(v) return v > 0 end },
}

-- a config's mistakes are the user's: a usage error (one line, exit status 2, no traceback)
local function fail(where, msg) require("graphmert.errors").raise("usage", string.format("%s: %s", where, msg)) end

-- "unknown key 'x' (did you mean 'y'?; known: ...)"
local function unknown(what, key, known)
  local near = type(key) == "string" and require("graphmert.experiment.args").suggest(key, known)
  return string.format("unknown %s '%s' (%sknown: %s)", what, tostring(key), near and ("did you mean '" .. near .. "'?; ") or "",
    table.concat(known, ", "))
end

-- the grid's keys and their defaults (config key `grid`); the reference cell is the default λ
-- (the core's GM_DEFAULT_LAMBDA, the official code's), one of the grid's λ
local DEFAULT_LAMBDA = check.DEFAULT_LAMBDA
M.grid_defaults = { lambdas = { false, 0.4, DEFAULT_LAMBDA, 0.8, 0.9 }, hgat = { true, false }, seeds = { 1, 2, 3 },
  reference = { lambda = DEFAULT_LAMBDA, hgat = true }, passages = 150, probe_sequences = 64 }

local function check_grid(grid, where)
  local out = {}
  for key, default in pairs(M.grid_defaults) do out[key] = default end
  for key, v in pairs(grid) do
    if M.grid_defaults[key] == nil then
      fail(where, unknown("grid key", key, { "lambdas", "hgat", "seeds", "reference", "passages", "probe_sequences" }))
    end
    out[key] = v
  end
  local function list(key, ok, what)
    if type(out[key]) ~= "table" or #out[key] == 0 then fail(where, string.format("grid.%s must be a non-empty list", key)) end
    for i, v in ipairs(out[key]) do
      if not ok(v) then fail(where, string.format("grid.%s[%d] must be %s, got %s", key, i, what, tostring(v))) end
    end
  end
  list("lambdas", function(v) return (pcall(check.lambda, "lambda", v)) end, "a number in (0, 1] or false (no decay)")
  list("hgat", function(v) return type(v) == "boolean" end, "true or false")
  list("seeds", function(v) return math.type(v) == "integer" or (type(v) == "number" and v == math.floor(v)) end, "an integer")
  for _, key in ipairs { "passages", "probe_sequences" } do
    if type(out[key]) ~= "number" or out[key] < 0 or out[key] ~= math.floor(out[key]) then
      fail(where, string.format("grid.%s must be a non-negative integer, got %s", key, tostring(out[key])))
    end
  end
  if type(out.reference) ~= "table" then fail(where, "grid.reference must be a table {lambda, hgat}") end
  return out
end

local sorted_keys = check.sorted_keys

-- the keys of `data` for each source
local DATA_KEYS = { files = { dir = "string", corpus = "string", triples = "string", entities = "string",
  relations = "string", on_error = "string" }, wordnet = { pos = "table", limit = "number", dir = "string", on_error = "string" } }

-- a path without "x/../" and "./" steps, so that messages and run.json name files plainly
local function clean_path(path)
  path = path:gsub("/%./", "/"):gsub("^%./", "")
  local n
  repeat path, n = path:gsub("/[^/]+/%.%./", function(step) return step == "/../../" and nil or "/" end, 1)
  until n == 0 or path:find("^/%.%./")
  return path
end

-- `data` checked, its file paths made absolute against `base` (the config file's folder), so a
-- config runs the same from any directory and run.json names files a later tool can open
local function check_data(data, where, base)
  local source = data.source or "files"
  local keys = DATA_KEYS[source]
  if not keys then fail(where, string.format("data.source must be \"files\" or \"wordnet\", got %s", tostring(source))) end
  local out = { source = source ~= "files" and source or nil }
  for _, key in ipairs(sorted_keys(data)) do
    if key ~= "source" then
      if not keys[key] then
        fail(where, unknown("data key", key, sorted_keys(keys)) .. " for the " .. source .. " source")
      end
      if type(data[key]) ~= keys[key] then fail(where, string.format("data.%s must be a %s, got %s", key, keys[key], type(data[key]))) end
      local v = data[key]
      if key ~= "on_error" and keys[key] == "string" then
        if base and v:sub(1, 1) ~= "/" then v = base .. v end
        v = clean_path(v)
      end
      out[key] = v
    end
  end
  if source == "files" and not (out.dir or out.corpus) then
    fail(where, "data needs dir (a dataset folder) or corpus, triples, entities and relations files")
  end
  if out.on_error and out.on_error ~= "skip" and out.on_error ~= "stop" then
    fail(where, "data.on_error must be \"skip\" or \"stop\", got \"" .. out.on_error .. "\"")
  end
  return out
end

-- cfg with every default filled in; an unknown key, a missing required one or a value of the
-- wrong type is an error naming it (`where` names the config, e.g. its file; relative data
-- paths are taken from `base`, a folder ending in /, or the current directory).
function M.check(cfg, where, base)
  for _, key in ipairs(sorted_keys(cfg)) do
    local entry = M.schema[key]
    if not entry then
      fail(where, unknown("key", key, sorted_keys(M.schema)))
    end
    if type(cfg[key]) ~= entry[2] and not (entry[1] == false and cfg[key] == false) then
      fail(where, string.format("'%s' must be a %s, got %s", key, entry[2], type(cfg[key])))
    end
  end
  local out = {}
  for key, entry in pairs(M.schema) do
    local v = cfg[key]
    if v == nil then
      if entry[1] == REQUIRED and not (key == "vocab_size" and cfg.bert_vocab) then
        fail(where, string.format("'%s' is required (%s)", key, entry[3]))
      end
      if entry[1] ~= REQUIRED then v = entry[1] end
    end
    out[key] = v
  end
  -- vocab and relations come from the data, every other GraphMERT option may be set
  local model_keys = {}
  for key in pairs(GraphMERT.defaults) do if key ~= "relations" then model_keys[key] = true end end
  local model = {}
  for key in pairs(model_keys) do model[key] = GraphMERT.defaults[key] end
  for _, key in ipairs(sorted_keys(out.model)) do
    if not model_keys[key] then
      fail(where, unknown("model key", key, sorted_keys(model_keys)))
    end
    model[key] = out.model[key]
  end
  out.model = model
  -- the model's values checked as GraphMERT checks them, before any data is read
  local probe = { vocab = 1, relations = 1 }
  for key, v in pairs(model) do probe[key] = v end
  local ok, err = pcall(GraphMERT.options, probe)
  if not ok then fail(where, "model: " .. tostring(err):gsub("^[%w_./-]+%.lua:%d+: ", ""):gsub("^GraphMERT: ", "")) end
  if model.leaves < 1 or model.leaves > 255 then
    fail(where, "model: leaves must be in 1..255 (a tail's tokens go in a root's leaves), got " .. tostring(model.leaves))
  end
  for _, key in ipairs(sorted_keys(RANGES)) do
    local v, range = out[key], RANGES[key]
    if v and not range[2](v) then fail(where, string.format("'%s' must be %s, got %s", key, range[1], tostring(v))) end
  end
  if out.packing ~= "record" and out.packing ~= "chunk" then
    fail(where, "packing must be \"record\" or \"chunk\", got \"" .. out.packing .. "\"")
  end
  if out.packing == "chunk" and out.copies ~= 1 then
    fail(where, "copies must be 1 with packing = \"chunk\" (records are not repeated in a chunked stream)")
  end
  if out.absent < 0 or out.absent >= 1 then fail(where, "absent must be in [0, 1), got " .. tostring(out.absent)) end
  if out.absent > 0 and not out.tail_end then
    fail(where, "absent needs tail_end = true (an absent relation is a masked tail that ends at once)")
  end
  if (out.mentions or out.absent > 0) and out.packing ~= "record" then
    fail(where, "mentions and absent need packing = \"record\"")
  end
  out.grid = check_grid(out.grid, where)
  out.data = check_data(out.data, where, base)
  if out.on_nonfinite ~= "stop" and out.on_nonfinite ~= "skip" then
    fail(where, "on_nonfinite must be \"stop\" or \"skip\", got \"" .. out.on_nonfinite .. "\"")
  end
  return out
end

-- the source a config's data names: its `source`, "files" when it names files, nil when it names
-- neither (a variant that changes, say, WordNet's limit)
local function source_of(data)
  return data.source or ((data.dir or data.corpus or data.triples or data.entities) and "files") or nil
end

-- A config file's table, with `extends = "other.lua"` (a path relative to the file) resolved:
-- the base's keys, then the file's; a table-valued key present in both (model, data, grid,
-- loss) is merged key by key, so a variant names only what it changes. A relative data path is
-- made relative to the file that names it.
local function read(path, chain)
  chain = chain or {}
  for _, seen in ipairs(chain) do
    if seen == path then fail("config " .. path, "extends itself (through " .. table.concat(chain, " → ") .. ")") end
  end
  chain[#chain + 1] = path
  local chunk, err = loadfile(path, "t", {})
  if not chunk then fail("config", err) end
  local ok, cfg = pcall(chunk)
  if not ok then fail("config " .. path, tostring(cfg)) end
  if type(cfg) ~= "table" then fail("config " .. path, "must return a table, got " .. type(cfg)) end
  local dir = path:match("^(.*/)") or ""
  if type(cfg.data) == "table" then
    for _, key in ipairs { "dir", "corpus", "triples", "entities", "relations" } do
      local v = cfg.data[key]
      if type(v) == "string" and v:sub(1, 1) ~= "/" then cfg.data[key] = dir .. v end
    end
  end
  local base_name = cfg.extends
  if base_name == nil then return cfg end
  if type(base_name) ~= "string" then fail("config " .. path, "'extends' must be a file name, got " .. type(base_name)) end
  local base = read(base_name:sub(1, 1) == "/" and base_name or (path:match("^(.*/)") or "") .. base_name, chain)
  cfg.extends = nil
  for key, v in pairs(cfg) do
    -- a dataset of another source replaces the base's whole (a folder's keys mean nothing to WordNet)
    local other_source = key == "data" and type(v) == "table" and type(base.data) == "table" and
      source_of(v) and source_of(v) ~= (base.data.source or "files")
    if type(v) == "table" and type(base[key]) == "table" and not other_source then
      for k, x in pairs(v) do base[key][k] = x end
    else
      base[key] = v
    end
  end
  return base
end

-- overrides: keys replacing the file's before the check (a script's --data: {data = {dir = ...}},
-- relative to the current directory)
function M.load(path, overrides)
  path = require("graphmert.experiment.commands").config_path(path) -- "tiny": a shipped config
  local cfg = read(path)
  local own_data = not (overrides and overrides.data)
  for k, v in pairs(overrides or {}) do cfg[k] = v end
  cfg = M.check(cfg, "config " .. path, M.cwd())
  -- the dataset's folder, named where the mistake is: a relative one is the config file's
  local dir = own_data and cfg.data.source == nil and cfg.data.dir
  local info = dir and require("graphmert").stat(dir)
  if dir and not (info and info.type == "directory") then
    fail("config " .. path, string.format("data.dir is %s, which is not a folder (a relative data.dir is taken from the " ..
      "config file's folder; --data DIR gives one from here)", dir))
  end
  return cfg
end

-- the current directory ending in /, to make paths absolute (run.json is read from elsewhere)
function M.cwd()
  local p = io.popen("pwd")
  local dir = p and p:read("l")
  if p then p:close() end
  return dir and (dir:gsub("/$", "") .. "/") or ""
end

function M.describe()
  local lines = {}
  for _, key in ipairs(sorted_keys(M.schema)) do
    local entry = M.schema[key]
    local default = entry[1] == REQUIRED and "required" or "default " .. (type(entry[1]) == "table" and "{}" or tostring(entry[1]))
    lines[#lines + 1] = string.format("  %-16s %s (%s)", key, entry[3], default)
  end
  return table.concat(lines, "\n")
end

return M
