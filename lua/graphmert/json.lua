-- json.lua — a whole JSON file as a Lua table (lua-cjson), with errors that name the caller and
-- the file.
--   json.read(path, who) → table; errors "who: <why it cannot be opened>" or
--   "who: path is not a JSON object"
local cjson = require "cjson"

local M = {}

function M.read(path, who)
  local f, err = io.open(path, "r")
  if not f then error(string.format("%s: %s", who, err), 0) end
  local text = f:read("a")
  f:close()
  local ok, value = pcall(cjson.decode, text)
  if not ok or type(value) ~= "table" then error(string.format("%s: %s is not a JSON object", who, path), 0) end
  return value
end

return M
