-- gradcheck.lua — finite-difference check of gradients, for specs and for users.
--
--   local ok, report = gm.gradcheck(fn, {x, w}, {eps = 1e-2, rtol = 1e-2, atol = 1e-3})
--
-- fn(x, w, ...) returns a tensor y. For a fixed random cotangent G, the analytic gradient of
-- f = Σ G ⊙ y (from backward) is compared with the 4-point central difference
--   (8 f(x+ε/2) − 8 f(x−ε/2) − f(x+ε) + f(x−ε)) / (6ε),
-- which cancels the ε² error term, so float32 forward passes give usable estimates. f is summed
-- in Lua doubles. Only inputs that require grad are checked; at most opts.max_elements elements
-- of each, spread evenly.
--
-- opts: eps (1e-2), rtol (1e-2), atol (1e-3), max_elements (64).
-- Returns ok, report: report.max_error, and report.failures (a list of strings) when not ok.
local gm = require "graphmert"

local function flat_values(t, out)
  out = out or {}
  local function walk(x)
    if type(x) == "table" then
      for _, v in ipairs(x) do walk(v) end
    else
      out[#out + 1] = x
    end
  end
  walk(t:totable())
  return out
end

return function(fn, inputs, opts)
  opts = opts or {}
  local eps = opts.eps or 1e-2
  local rtol, atol = opts.rtol or 1e-2, opts.atol or 1e-3
  local max_elements = opts.max_elements or 64
  assert(type(fn) == "function", "bad argument #1 to 'gradcheck' (function expected)")
  assert(type(inputs) == "table", "bad argument #2 to 'gradcheck' (table of tensors expected)")

  local out = fn(table.unpack(inputs))
  local cotangent = gm.randn(out:shape())
  local g = flat_values(cotangent)
  local function objective()
    local y = gm.no_grad(fn, table.unpack(inputs))
    local vals, f = flat_values(y), 0
    for i = 1, #vals do f = f + vals[i] * g[i] end
    return f
  end

  for _, x in ipairs(inputs) do
    if gm.is_tensor(x) and x:requires_grad() then x:zero_grad() end
  end
  out = fn(table.unpack(inputs))
  ;(out * cotangent):sum():backward()

  local report = { max_error = 0, failures = {} }
  for k, x in ipairs(inputs) do
    if gm.is_tensor(x) and x:requires_grad() then
      local grad = x:grad()
      local analytic = grad and flat_values(grad) or {}
      local n = x:numel()
      local step = math.max(1, n // max_elements)
      for i = 1, n, step do
        local orig = x:get_flat(i)
        local function at(delta)
          gm.no_grad(function() x:set_flat(i, orig + delta) end)
          return objective()
        end
        local numeric = (8 * at(eps / 2) - 8 * at(-eps / 2) - at(eps) + at(-eps)) / (6 * eps)
        gm.no_grad(function() x:set_flat(i, orig) end)
        local a = analytic[i] or 0
        local err = math.abs(a - numeric)
        if err > report.max_error then report.max_error = err end
        if err > atol + rtol * math.abs(numeric) then
          report.failures[#report.failures + 1] = string.format(
            "input %d element %d: analytic %.6g, numeric %.6g", k, i, a, numeric)
        end
      end
    end
  end
  return #report.failures == 0, report
end
