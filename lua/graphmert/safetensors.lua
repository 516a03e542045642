-- safetensors.lua — the safetensors format (what PyTorch users open with the `safetensors`
-- package): 8 bytes of little-endian header length, a JSON header
--   {"name": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ...,
--    "__metadata__": {"key": "string value", ...}}
-- padded with spaces to a multiple of 8, then the raw little-endian data.
--
-- save(path, tensors, metadata): tensors maps names to tensors; writes atomically (temporary
--   file, fsync, rename), so the file on disk is the old one or the new one, never a mix.
-- load(path) → tensors, metadata: validates the header, dtypes (F32; F64, F16, BF16 converted),
--   shapes and offsets, and raises a clear error on any mismatch or truncation; a FIFO or a
--   device is refused unread.
local gm = require "graphmert"
local cjson = require "cjson"

local M = {}

local function json_string(s) return cjson.encode(tostring(s)) end

function M.save(path, tensors, metadata)
  assert(type(path) == "string", "bad argument #1 to 'save' (path expected)")
  assert(type(tensors) == "table", "bad argument #2 to 'save' (table of tensors expected)")
  local names = {}
  for name, t in pairs(tensors) do
    if type(name) ~= "string" or not gm.is_tensor(t) then
      error("bad argument #2 to 'save' (" .. tostring(name) .. " is not a named tensor)", 2)
    end
    names[#names + 1] = name
  end
  table.sort(names)
  local entries, parts, offset = {}, {}, 0
  for _, name in ipairs(names) do
    local t = tensors[name]
    local bytes = t:numel() * 4
    entries[#entries + 1] = string.format('%s:{"dtype":"F32","shape":[%s],"data_offsets":[%d,%d]}',
      json_string(name), table.concat(t:shape(), ","), offset, offset + bytes)
    parts[#parts + 1] = t
    offset = offset + bytes
  end
  if metadata and next(metadata) then
    local kv = {}
    for k, v in pairs(metadata) do kv[#kv + 1] = json_string(k) .. ":" .. json_string(v) end
    table.sort(kv)
    entries[#entries + 1] = '"__metadata__":{' .. table.concat(kv, ",") .. "}"
  end
  local header = "{" .. table.concat(entries, ",") .. "}"
  header = header .. string.rep(" ", (8 - #header % 8) % 8)
  table.insert(parts, 1, header)
  table.insert(parts, 1, string.pack("<I8", #header))
  local ok, err = gm.write_atomic(path, parts)
  if not ok then error("save: " .. err, 2) end
  return true
end

local MAX_HEADER = 100 * 1024 * 1024
local BYTES = { F32 = 4, F64 = 8, F16 = 2, BF16 = 2 }

-- The file is never read whole: its header is read, checked, and each tensor read from its
-- range straight into the tensor (gm.tensor_from_file), so the peak is the tensors themselves.
-- Every tensor's bytes lie in the file and no two overlap, so what a load allocates is bounded
-- by the file: twice its size at most, when every tensor is 16-bit. Messages never quote the
-- file's bytes.
function M.load(path)
  if type(path) ~= "string" then error("bad argument #1 to 'load' (path expected)", 2) end
  local function fail(msg) error(string.format("load: %s: %s", path, msg), 3) end
  local ok, head = pcall(gm.read_file, path, 0, 0) -- refuses a FIFO or a device before reading
  if not ok then error("load: " .. tostring(head), 2) end
  local size = gm.stat(path).size
  if size < 8 then fail("truncated: no header length") end
  local n = string.unpack("<I8", gm.read_file(path, 0, 8))
  -- unsigned: a length of 2^63 or more is negative here
  if n < 0 or n > MAX_HEADER or n > size - 8 then
    fail(string.format("the header length (its first 8 bytes) does not fit a file of %d bytes: not a safetensors file?", size))
  end
  local decoded, header = pcall(cjson.decode, gm.read_file(path, 8, n))
  if not decoded or type(header) ~= "table" then fail("the header is not a JSON object") end
  local base, data_size = 8 + n, size - 8 - n
  local tensors, metadata, spans = {}, {}, {}
  for name, e in pairs(header) do
    if type(name) ~= "string" then fail("the header is not a JSON object") end
    if name == "__metadata__" then
      if type(e) ~= "table" then fail("__metadata__ is not an object") end
      for k, v in pairs(e) do
        if type(v) ~= "string" then fail("metadata " .. tostring(k) .. " is not a string") end
        metadata[k] = v
      end
    else
      if type(e) ~= "table" then fail(name .. ": not an object") end
      local width = BYTES[e.dtype]
      if not width then fail(string.format("%s: dtype %s is not supported (F32, F64, F16, BF16)", name, tostring(e.dtype))) end
      if type(e.shape) ~= "table" then fail(name .. ": no shape") end
      -- sizes as integers; their product checked against the data before it could overflow
      local numel, shape = 1, {}
      for i, d in ipairs(e.shape) do
        local size_i = math.tointeger(d)
        if not size_i or size_i < 0 then fail(name .. ": shape is not a list of sizes") end
        shape[i] = size_i
      end
      for _, d in ipairs(shape) do
        if d == 0 then numel = 0 break end
        if numel > data_size // d then
          fail(string.format("%s: shape [%s] needs more than the file's %d data bytes", name, table.concat(shape, ","), data_size))
        end
        numel = numel * d
      end
      local o = e.data_offsets
      if type(o) ~= "table" or #o ~= 2 then fail(name .. ": no data_offsets") end
      local b, en = math.tointeger(o[1]), math.tointeger(o[2])
      if not b or not en or b < 0 or en < b or en > data_size then
        fail(string.format("%s: data_offsets [%s, %s] outside the %d data bytes (truncated file?)",
          name, tostring(b or o[1]), tostring(en or o[2]), data_size))
      end
      if en - b ~= numel * width then
        fail(string.format("%s: %d bytes for shape [%s] of %s", name, en - b, table.concat(shape, ","), e.dtype))
      end
      if en > b then spans[#spans + 1] = { b, en, name } end
      tensors[name] = { base + b, en - b, shape, e.dtype }
    end
  end
  table.sort(spans, function(x, y) return x[1] < y[1] end)
  for i = 2, #spans do
    if spans[i][1] < spans[i - 1][2] then fail(spans[i - 1][3] .. " and " .. spans[i][3] .. " overlap") end
  end
  for name, r in pairs(tensors) do tensors[name] = gm.tensor_from_file(path, r[1], r[2], r[3], r[4]) end
  return tensors, metadata
end

return M
