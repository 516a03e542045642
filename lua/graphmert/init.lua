-- graphmert — graph-aware transformer attention on a float32 C core with autograd.
--   local gm = require "graphmert"
-- Returns a table and sets no globals. Submodules load on first use: the library (nn, optim,
-- layout, safetensors, checkpoint, folder, json, gradcheck, errors, class) and the GraphMERT
-- application that uses it (data, eval, experiment, kg).
local core = require "graphmert.core"

local gm = {}
for k, v in pairs(core) do gm[k] = v end
require("graphmert.tensor")(core)

-- functional forms of the Lua-side methods: gm.t(x), gm.sigmoid(x)
for _, name in ipairs { "t", "sigmoid" } do gm[name] = core.methods[name] end

gm.attention = require("graphmert.attention")(gm, core.attention)

gm.Tensor = nil -- the metatable stays internal; gm.is_tensor tells tensors apart
gm.methods = nil
gm.distributed = nil -- core.distributed is wrapped by graphmert.distributed (loaded on first use)
local tensor_meta = core.Tensor
function gm.is_tensor(x) return getmetatable(x) == tensor_meta end

-- embedding(weight [V, D], ids [...] with 1-based rows) → [..., D]
function gm.embedding(weight, ids)
  if not gm.is_tensor(ids) then ids = gm.tensor(ids) end
  local shape = ids:shape()
  local ok, rows = pcall(weight.index_select, weight, 1, ids:reshape(-1))
  if not ok then -- said of what the user gave: token ids, not index_select's argument
    local why = tostring(rows):match("%((index .*)%)$")
    error(why and ("embedding: token " .. why:gsub("^index", "id") .. " (the rows of the table)") or rows, 0)
  end
  shape[#shape + 1] = weight:size(2)
  return rows:reshape(shape)
end

local submodules = { nn = true, optim = true, layout = true, safetensors = true, checkpoint = true,
  gradcheck = true, errors = true, class = true, distributed = true, json = true, folder = true,
  data = true, eval = true, experiment = true, kg = true }
return setmetatable(gm, {
  __index = function(t, k)
    if submodules[k] then
      local m = require("graphmert." .. k)
      rawset(t, k, m)
      return m
    end
  end,
})
