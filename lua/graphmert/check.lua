-- check.lua — argument checks for the whole library and application (layers, optimizers, the
-- layout, the config schema): errors in Lua's own style, naming the function, the argument and
-- the shapes (bad argument #2 to 'NodeEdgeBlock:forward' (E must be 2x4x4x3, got 2x4x4x5)). A
-- false entry in `expected` accepts any size in that dimension.
local gm = require "graphmert"

local M = {}

local function shape_string(sizes)
  local parts = {}
  for i, v in ipairs(sizes) do parts[i] = v and tostring(v) or "*" end
  return table.concat(parts, "x")
end

function M.fail(fn, argn, msg) error(string.format("bad argument #%d to '%s' (%s)", argn, fn, msg), 3) end

-- t must be a tensor with #expected dimensions matching expected
function M.shape(fn, argn, name, t, expected)
  if not gm.is_tensor(t) then M.fail(fn, argn, name .. " must be a graphmert.Tensor, got " .. type(t)) end
  local ok = t:dim() == #expected
  for d = 1, #expected do ok = ok and (not expected[d] or t:size(d) == expected[d]) end
  if not ok then M.fail(fn, argn, string.format("%s must be %s, got %s", name, shape_string(expected), t:shape_string())) end
  return t
end

-- a constructor option that must be an integer ≥ min ("Owner: name must be an integer >= 0"); an
-- integral float (JSON's 40.0) counts. Returns it as an integer.
function M.integer(owner, name, v, min)
  local n = type(v) == "number" and math.tointeger(v)
  if not n or n < min then
    error(string.format("%s: %s must be %s", owner, name, min == 1 and "a positive integer" or "an integer >= " .. min), 0)
  end
  return n
end

-- GraphMERT's decay base: a number in (0, 1], or false for no decay (the one way to say it; λ = 1
-- decays nothing too, as arithmetic). `where` names the owner ("GraphMERT: lambda", "grid.lambdas[2]").
-- Returns v, or raises "<where> must be a number in (0, 1] or false, got <v>".
M.DEFAULT_LAMBDA = gm.DEFAULT_LAMBDA -- the core's (GM_DEFAULT_LAMBDA), which gm.decay_mask defaults to
function M.lambda(where, v)
  if v == false or (type(v) == "number" and v > 0 and v <= 1) then return v end
  error(string.format("%s must be a number in (0, 1] or false (no decay), got %s", where, tostring(v)), 0)
end

-- the keys of a table as sorted strings (for messages that list the known options)
function M.sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  return keys
end

function M.positive_integer(owner, name, v) return M.integer(owner, name, v, 1) end

-- a mask given as a tensor or nested table of 0/1 → a float tensor
function M.mask(fn, argn, name, m, expected)
  if type(m) == "table" and not gm.is_tensor(m) then m = gm.tensor(m) end
  return M.shape(fn, argn, name, m, expected)
end

return M
