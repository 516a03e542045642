-- hostile_checkpoints.lua — writes the hostile checkpoint folders spec/hostile_spec.lua loads: the
-- cases of a model folder from the internet that once hung, blew up memory, read outside the
-- folder or loaded wrong data (too big, or too odd, to commit as files).
--   graphmert scripts/test/hostile_checkpoints.lua OUT_DIR
-- Each case is OUT_DIR/<case>/, a model folder (config.json beside its weights) unless its name
-- says otherwise; OUT_DIR/outside/ holds the files the links point at. torch.save archives are
-- written by hand (a stored zip around a protocol-2 pickle), as torch 1.13 lays them out.
local gm = require "graphmert"
local cjson = require "cjson"

local out = arg[1]
if not out then
  io.stderr:write("usage: graphmert scripts/test/hostile_checkpoints.lua OUT_DIR\n")
  os.exit(2)
end

local function sh(fmt, ...)
  local cmd = string.format(fmt, ...)
  if not os.execute(cmd) then error("failed: " .. cmd) end
end
local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
local function write(path, data)
  local f = assert(io.open(path, "wb"))
  f:write(data)
  f:close()
end
local function case(name)
  local dir = out .. "/" .. name
  sh("rm -rf %s && mkdir -p %s", q(dir), q(dir))
  return dir
end

-- A zip archive of stored entries (no compression, CRC left 0: the reader does not check it).
local function zip(entries)
  local parts, central, offset = {}, {}, 0
  for _, e in ipairs(entries) do
    local name, data = e[1], e[2]
    local lh = string.pack("<I4I2I2I2I2I2I4I4I4I2I2", 0x04034b50, 20, 0, 0, 0, 0, 0, #data, #data, #name, 0) .. name
    parts[#parts + 1] = lh .. data
    central[#central + 1] = string.pack("<I4I2I2I2I2I2I2I4I4I4I2I2I2I2I2I4I4", 0x02014b50, 20, 20, 0, 0, 0, 0, 0,
      #data, #data, #name, 0, 0, 0, 0, 0, offset) .. name
    offset = offset + #lh + #data
  end
  local dir = table.concat(central)
  return table.concat(parts) .. dir .. string.pack("<I4I2I2I2I2I4I4I2", 0x06054b50, 0, 0, #entries, #entries, #dir, offset, 0)
end

-- protocol-2 pickle pieces
local function str(s) return "X" .. string.pack("<I4", #s) .. s end
local function int(v) return "\138\8" .. string.pack("<i8", v) end -- LONG1, 8 bytes
local function tuple(items) return "(" .. table.concat(items) .. "t" end
local function global(module, name) return "c" .. module .. "\n" .. name .. "\n" end
-- a value written once and fetched from the pickle's memo after (as torch's pickler does; at
-- most 255 of them)
local memo = {}
local function memoized(value)
  if memo[value] then return "h" .. string.char(memo[value]) end
  memo[#memo + 1] = value
  memo[value] = #memo
  return value .. "q" .. string.char(#memo)
end

-- a view of storage "0" (a FloatStorage of `numel` elements): _rebuild_tensor_v2(storage,
-- offset, size, stride, False, OrderedDict())
local function view(numel, size, stride)
  local sizes, strides = {}, {}
  for i, v in ipairs(size) do sizes[i] = int(v) end
  for i, v in ipairs(stride) do strides[i] = int(v) end
  local storage = memoized(tuple { str "storage", global("torch", "FloatStorage"), str "0", str "cpu", int(numel) } .. "Q")
  return memoized(global("torch._utils", "_rebuild_tensor_v2")) .. tuple { storage, memoized(int(0)), memoized(tuple(sizes)),
    tuple(strides), "\137", memoized(global("collections", "OrderedDict") .. ")R") } .. "R"
end

-- torch.save of {name = view} over one float32 storage holding `floats`
local function torch_file(path, views, floats)
  local items = { "\128\2}(" }
  for _, v in ipairs(views) do items[#items + 1] = str(v[1]) .. v[2] end
  items[#items + 1] = "u."
  local data = {}
  for i, x in ipairs(floats) do data[i] = string.pack("<f", x) end
  write(path, zip { { "archive/data.pkl", table.concat(items) }, { "archive/data/0", table.concat(data) } })
  memo = {} -- the next file's pickle starts a memo of its own
end

-- a safetensors file from a header table (or string) and data bytes
local function safetensors_file(path, header, data, length)
  header = type(header) == "string" and header or cjson.encode(header)
  write(path, string.pack("<I8", length or #header) .. header .. (data or ""))
end

-- a small official folder: config.json and model.safetensors as save_pretrained writes them
gm.manual_seed(1)
local tiny = gm.nn.GraphMERT { vocab = 12, hidden = 8, layers = 1, heads = 2, ffn = 16, roots = 4, leaves = 2, relations = 2 }
local function official(name)
  local dir = case(name)
  tiny:save_pretrained(dir)
  return dir
end
local function edit_config(dir, fn)
  local cfg = cjson.decode(assert(io.open(dir .. "/config.json")):read("a"))
  fn(cfg)
  write(dir .. "/config.json", cjson.encode(cfg))
end

sh("mkdir -p %s", q(out))
local made = {}
local function done(name) made[#made + 1] = name end

-- 1. tied-view detection steered into one probe chain: 40k size-1 views whose strides differ
-- only above bit 32
do
  local views = {}
  for i = 1, 40000 do views[i] = { "w" .. i, view(1, { 1 }, { (i << 33) | 1 }) } end
  torch_file(case("probe_chain") .. "/pytorch_model.bin", views, { 1.5 })
  done "probe_chain"
end

-- 2. stride-0 views of one float: [1e9] and [2^15, 2^15, 4]
torch_file(case("stride0_1e9") .. "/pytorch_model.bin", { { "w", view(1, { 1000000000 }, { 0 }) } }, { 1 })
done "stride0_1e9"
torch_file(case("stride0_16g") .. "/pytorch_model.bin", { { "w", view(1, { 1 << 15, 1 << 15, 4 }, { 0, 0, 0 }) } }, { 1 })
done "stride0_16g"

-- 3. configs that would build a huge model, or carry wrong types
do
  local dir = case("config_only")
  write(dir .. "/config.json", cjson.encode { vocab_size = 16384, hidden_size = 16384, intermediate_size = 16384,
    num_hidden_layers = 2, num_attention_heads = 16, root_nodes = 128, max_nodes = 1024, num_relationships = 4,
    _exp_mask_base = 0.6 })
  done "config_only"
  for name, fn in pairs {
    heads_1e9 = function(c) c.num_attention_heads = 1e9 end,
    declares_more = function(c) c.hidden_size, c.intermediate_size, c.vocab_size = 4096, 16384, 30000 end,
    -- sizes whose product wraps around in integers (2^61 layers of 4·2² weights is 2^65)
    layers_wrap = function(c) c.num_hidden_layers, c.hidden_size, c.num_attention_heads = 1 << 61, 2, 1 end,
    ffn_wrap = function(c) c.intermediate_size = 1 << 60 end, -- (2·H·ffn per layer: 2^64 with H = 8 wraps to 0)
    dropout_string = function(c) c.dropout = "x" end,
    dropout_5 = function(c) c.dropout = 5 end,
    sbo_string = function(c) c.mlm_sbo = "no" end,
  } do
    edit_config(official(name), fn)
    done(name)
  end
end

-- 4. special files: a link to /dev/zero, FIFOs, a link to a file outside the folder, and a Hugging
-- Face cache whose links stay inside its repository (this one loads)
do
  local outside = case("outside")
  tiny:save_pretrained(outside)
  local dir = official("dev_zero")
  sh("ln -sf /dev/zero %s", q(dir .. "/model.safetensors"))
  done "dev_zero"
  for _, file in ipairs { "config.json", "model.safetensors", "pytorch_model.bin" } do
    local name = "fifo_" .. file:gsub("%.", "_")
    dir = official(name)
    if file ~= "pytorch_model.bin" then os.remove(dir .. "/" .. file) else os.remove(dir .. "/model.safetensors") end
    sh("mkfifo %s", q(dir .. "/" .. file))
    done(name)
  end
  dir = official("link_outside")
  os.remove(dir .. "/model.safetensors")
  sh("ln -s %s %s", q(gm.realpath(outside) .. "/model.safetensors"), q(dir .. "/model.safetensors"))
  done "link_outside"
  dir = official("bin_not_zip") -- a small file of another format is named as such, not as too small
  os.remove(dir .. "/model.safetensors")
  write(dir .. "/pytorch_model.bin", "not a checkpoint")
  done "bin_not_zip"
  for _, file in ipairs { "config.json", "model.safetensors" } do -- a link to itself: a loop, not a missing file
    local name = "loop_" .. file:gsub("%.", "_")
    dir = official(name)
    os.remove(dir .. "/" .. file)
    sh("ln -s %s %s", file, q(dir .. "/" .. file))
    done(name)
  end
  local repo = case("hf_cache") .. "/models--org--tiny"
  sh("mkdir -p %s/blobs %s/snapshots/0123abc", q(repo), q(repo))
  tiny:save_pretrained(repo .. "/blobs/tmp")
  for file, blob in pairs { ["config.json"] = "c0ffee", ["model.safetensors"] = "beef01" } do
    sh("mv %s %s", q(repo .. "/blobs/tmp/" .. file), q(repo .. "/blobs/" .. blob))
    sh("ln -s ../../blobs/%s %s", blob, q(repo .. "/snapshots/0123abc/" .. file))
  end
  sh("rmdir %s", q(repo .. "/blobs/tmp"))
  done "hf_cache/models--org--tiny/snapshots/0123abc"
end

-- 5. safetensors that once loaded wrong data or failed inside Lua: a header length of 2^64 - 9
-- (negative as a signed number) and a shape of 1e30 (the files alone: no config.json)
do
  local data = string.rep("\0", 16)
  safetensors_file(case("negative_length") .. "/model.safetensors",
    { x = { dtype = "F32", shape = { 2 }, data_offsets = { 0, 8 } } }, data, -9)
  done "negative_length"
  safetensors_file(case("shape_1e30") .. "/model.safetensors",
    '{"x":{"dtype":"F32","shape":[1e30],"data_offsets":[0,8]}}', data)
  done "shape_1e30"
end

-- 7. sharded indexes whose shard names leave the folder or name nothing
for name, shard in pairs { shard_dotdot = "..", shard_dot = ".", shard_empty = "" } do
  local dir = official(name)
  os.rename(dir .. "/model.safetensors", dir .. "/model-00001-of-00001.safetensors")
  write(dir .. "/model.safetensors.index.json", cjson.encode { weight_map = { ["lm_head.bias"] = shard } })
  done(name)
end

table.sort(made)
print(table.concat(made, "\n"))
