-- helper.lua — shared assertions for the specs: tensor_near (against nested tables or tensors,
-- with relative and absolute tolerances), shape; and a fixture loader.
local assert = require "luassert"
local say = require "say"
local gm = require "graphmert"

local function flatten(x, out)
  out = out or {}
  if type(x) == "table" then
    for _, v in ipairs(x) do flatten(v, out) end
  else
    out[#out + 1] = x
  end
  return out
end

local function values_of(x)
  if gm.is_tensor(x) then return flatten(x:totable()) end
  return flatten(x)
end

-- |a - e| <= atol + rtol |e| for every element; NaN matches NaN, inf matches inf.
local function tensor_near(state, args)
  local expected, actual = values_of(args[1]), values_of(args[2])
  local rtol, atol = args[3] or 1e-5, args[4] or 1e-6
  if #expected ~= #actual then
    state.failure_message = string.format("expected %d values, got %d", #expected, #actual)
    return false
  end
  for i = 1, #expected do
    local e, a = expected[i], actual[i]
    local ok
    if e ~= e then ok = a ~= a
    elseif e == math.huge or e == -math.huge then ok = a == e
    else ok = math.abs(a - e) <= atol + rtol * math.abs(e) end
    if not ok then
      state.failure_message = string.format(
        "element %d: expected %.9g, got %.9g (rtol %g, atol %g)", i, e, a, rtol, atol)
      return false
    end
  end
  return true
end
say:set("assertion.tensor_near.positive", "tensors differ")
say:set("assertion.tensor_near.negative", "tensors are near")
assert:register("assertion", "tensor_near", tensor_near, "assertion.tensor_near.positive",
  "assertion.tensor_near.negative")

local function shape(state, args)
  local t, want = args[1], args[2]
  local got = t:shape()
  state.failure_message = "expected shape {" .. table.concat(want, ",") .. "}, got {"
      .. table.concat(got, ",") .. "}"
  if #got ~= #want then return false end
  for i = 1, #want do if got[i] ~= want[i] then return false end end
  return true
end
say:set("assertion.shape.positive", "wrong shape")
say:set("assertion.shape.negative", "unexpected shape")
assert:register("assertion", "shape", shape, "assertion.shape.positive", "assertion.shape.negative")

gm.manual_seed(1234)
