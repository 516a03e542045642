-- fixture.lua — reads the JSON reference vectors under spec/fixtures (made with PyTorch by the
-- generators in scripts/refs and ../shared/refs) into graphmert tensors.
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

return fixture
