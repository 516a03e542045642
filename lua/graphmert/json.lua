-- json.lua — a whole JSON file as a Lua table (lua-cjson), with errors that name the caller and
-- the file.
--   json.read(path, who) → table; errors "who: <why it cannot be opened>" (a FIFO or a device
--   is refused unread, a file over 64 MiB is not a config) or "who: path is not a JSON object"
--   json.object(t, keys) → t as one JSON object, its keys in the order of `keys` (nil values left
--   out): output that is the same bytes on every run (lua-cjson writes keys in hash order, which
--   changes from process to process)
--   json.flat(t) → t's values by dotted key ({model = {hidden = 8}} → {["model.hidden"] = 8}; a
--   list or an empty table as its JSON text), which json.differences compares key by key
--   json.differences(before, now) → what differs between two objects, "key A, here B" each
local gm = require "graphmert"
local cjson = require "cjson"

local M = {}

local MAX_BYTES = 64 * 2 ^ 20

function M.read(path, who)
  local info, err = gm.stat(path)
  if info and info.type == "file" and info.size > MAX_BYTES then
    err = string.format("%s: %d bytes, more than a JSON config or index holds (64 MiB)", path, info.size)
  end
  local ok, text = false, err
  if not err then ok, text = pcall(gm.read_file, path) end
  if not ok then error(string.format("%s: %s", who, text), 0) end
  local value
  ok, value = pcall(cjson.decode, text)
  if not ok or type(value) ~= "table" then error(string.format("%s: %s is not a JSON object", who, path), 0) end
  return value
end

-- What differs between two JSON objects (texts, or tables they decode to; one that is not an
-- object counts as empty): "key A, here B" for each key, sorted, a missing value shown as none.
function M.differences(before, now)
  local function decoded(x)
    if type(x) == "string" then
      local ok, t = pcall(cjson.decode, x)
      x = ok and t or nil
    end
    return type(x) == "table" and x or {}
  end
  before, now = decoded(before), decoded(now)
  local keys, seen = {}, {}
  for _, t in ipairs { before, now } do
    for k in pairs(t) do
      if not seen[k] then seen[k], keys[#keys + 1] = true, tostring(k) end
    end
  end
  table.sort(keys)
  local function shown(v)
    if type(v) ~= "number" then return tostring(v == nil and "none" or v) end
    if math.type(v) == "integer" or v ~= v or v == math.huge or v == -math.huge then return tostring(v) end
    for digits = 15, 16 do -- the shortest that reads back as the same number (0.003, not 0.0030000000000000001)
      local text = string.format("%." .. digits .. "g", v)
      if tonumber(text) == v then return text end
    end
    return string.format("%.17g", v)
  end
  local out = {}
  for _, k in ipairs(keys) do
    if before[k] ~= now[k] then out[#out + 1] = string.format("%s %s, here %s", k, shown(before[k]), shown(now[k])) end
  end
  return out
end

function M.flat(t, out, prefix)
  out = out or {}
  for k, v in pairs(t) do
    local key = prefix and (prefix .. "." .. tostring(k)) or tostring(k)
    if type(v) == "table" and next(v) ~= nil and #v == 0 then
      M.flat(v, out, key)
    else
      out[key] = type(v) == "table" and cjson.encode(v) or v
    end
  end
  return out
end

function M.object(t, keys)
  local parts = {}
  for _, key in ipairs(keys) do
    if t[key] ~= nil then parts[#parts + 1] = cjson.encode(key) .. ":" .. cjson.encode(t[key]) end
  end
  return "{" .. table.concat(parts, ",") .. "}"
end

return M
