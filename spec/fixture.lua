-- fixture.lua — reads the JSON reference vectors under spec/fixtures (made with PyTorch by the
-- generators in scripts/refs) into graphmert tensors.
local gm = require "graphmert"
local cjson = require "cjson"

local fixture = {}

function fixture.load(path)
  local f = assert(io.open(path, "rb"))
  local doc = cjson.decode(f:read("a"))
  f:close()
  return doc
end

local specials = { inf = math.huge, ["-inf"] = -math.huge, nan = 0 / 0 }

-- {shape = {...}, data = {...}} → a tensor; booleans become 1/0, "inf"/"-inf"/"nan" numbers.
function fixture.tensor(enc)
  local t = gm.zeros(enc.shape)
  for i, v in ipairs(enc.data) do
    if type(v) == "boolean" then v = v and 1 or 0 end
    if type(v) == "string" then v = specials[v] end
    t:set_flat(i, v)
  end
  return t
end

-- The reference generator's parameter names as state_dict names: "q.W" → "q.weight", "q.b" →
-- "q.bias", others unchanged; `prefix(name)` (optional) prepends a module path.
function fixture.state_name(name, prefix)
  local n = name:gsub("%.W$", ".weight"):gsub("%.b$", ".bias")
  return (prefix and prefix(n) or "") .. n
end

function fixture.state_dict(params, prefix)
  local state = {}
  for name, enc in pairs(params) do state[fixture.state_name(name, prefix)] = fixture.tensor(enc) end
  return state
end

return fixture
