-- protocol.lua — what every optimizer shares: its parameter list and the protocol methods that
-- do not depend on the update rule (step's loop, zero_grad, get_lr, set_lr, state_dict,
-- load_state_dict). An optimizer gives its update rule, and names the buffers it keeps per
-- parameter.
--   protocol.new(named_params, lr, owner, state, update) → { params = { {name, tensor}, ... },
--     lr, step_count = 0 } with the methods. step() counts the step and, without recording
--     gradients, calls update(opt, p, grad) for every parameter p that has a gradient (one
--     without is left alone, as in torch). state lists the per-parameter buffers, each
--     {name = "exp_avg", label = name, optional = false}: p[name] holds it; state_dict()
--     names it "<param>.<name>" (PyTorch's names); load_state_dict(tensors, meta) checks each is
--     there (unless optional: a buffer not made yet, as SGD's momentum before a step) and has the
--     parameter's size, then takes copies.
--   protocol.options(owner, config, settings) → config checked and completed: settings maps each
--     name to {default, check}, check(v) → an error message or nil; an unknown name (a typo:
--     "momentun") or a value check refuses is an error naming the setting.
local gm = require "graphmert"
local sorted_keys = require("graphmert.check").sorted_keys

local M = {}

-- a setting's value as a message shows it ({0.9, 0.999} for a list)
local function shown(v)
  if type(v) ~= "table" then return tostring(v) end
  local parts = {}
  for i, x in ipairs(v) do parts[i] = tostring(x) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

function M.options(owner, config, settings)
  if config ~= nil and type(config) ~= "table" then
    error(string.format("%s: the settings must be a table, got %s", owner, type(config)), 3)
  end
  local out = {}
  for name, v in pairs(config or {}) do
    if not settings[name] then
      error(string.format("%s: unknown setting '%s' (known: %s)", owner, tostring(name),
        table.concat(sorted_keys(settings), ", ")), 3)
    end
    local problem = settings[name][2](v)
    if problem then error(string.format("%s: %s %s, got %s", owner, name, problem, shown(v)), 3) end
    out[name] = v
  end
  for name, s in pairs(settings) do
    if out[name] == nil then
      if s[1] == nil then error(string.format("%s: %s is required", owner, name), 3) end
      out[name] = s[1]
    end
  end
  return out
end

-- the checks settings use
function M.at_least(min)
  return function(v)
    if math.type(v) == nil or not (v >= min) then return string.format("must be a number >= %s", min) end
  end
end
function M.boolean(v) if type(v) ~= "boolean" then return "must be true or false" end end

-- module:named_parameters() ({ {name, tensor}, ... }) or a plain list of tensors (named by their
-- position): leaves, at least one
function M.new(named_params, lr, owner, state, update)
  if type(named_params) ~= "table" or getmetatable(named_params) ~= nil then
    error(string.format("%s: give module:named_parameters() or a list of tensors, got %s", owner,
      type(named_params) == "table" and "a module or other object" or type(named_params)), 3)
  end
  local params = {}
  for i, entry in ipairs(named_params) do
    if type(entry) == "table" then params[i] = { name = entry[1], tensor = entry[2] }
    else params[i] = { name = tostring(i), tensor = entry } end
    local t = params[i].tensor
    if not gm.is_tensor(t) then
      error(string.format("%s: parameter %d is not a tensor (%s)", owner, i, type(t)), 3)
    end
    if not t:is_leaf() then -- (one that requires no gradient is kept, and left alone, as torch does)
      error(string.format("%s: parameter '%s' is the result of an op, not a leaf: it cannot be optimized", owner, params[i].name), 3)
    end
  end
  if #params == 0 then error(owner .. ": an empty parameter list", 3) end
  local opt = { params = params, lr = lr, step_count = 0 }
  function opt:step()
    self.step_count = self.step_count + 1
    gm.no_grad(function()
      for _, p in ipairs(self.params) do
        local g = p.tensor:grad()
        if g then update(self, p, g) end
      end
    end)
  end
  function opt:zero_grad()
    for _, p in ipairs(self.params) do p.tensor:zero_grad() end
  end
  function opt:set_lr(v) self.lr = v end
  function opt:get_lr() return self.lr end

  function opt:state_dict()
    local tensors = {}
    for _, p in ipairs(self.params) do
      for _, b in ipairs(state) do
        if p[b.name] then tensors[p.name .. "." .. b.name] = p[b.name] end
      end
    end
    return tensors, { step = self.step_count, lr = self.lr }
  end

  function opt:load_state_dict(tensors, meta)
    for _, p in ipairs(self.params) do
      for _, b in ipairs(state) do
        local t = tensors[p.name .. "." .. b.name]
        if not t and not b.optional then error(string.format("%s: no state for parameter '%s' (%s)", owner, p.name, b.name), 2) end
        if t and t:numel() ~= p.tensor:numel() then
          error(string.format("%s: %s of '%s' has %s, the parameter %s", owner, b.label or b.name, p.name, t:shape_string(),
            p.tensor:shape_string()), 2)
        end
      end
    end
    for _, p in ipairs(self.params) do
      for _, b in ipairs(state) do
        local t = tensors[p.name .. "." .. b.name]
        p[b.name] = t and t:clone():reshape(p.tensor:shape()) or nil
      end
    end
    self.step_count = math.tointeger(meta.step) or 0
    if meta.lr then self.lr = meta.lr end
  end
  return opt
end

return M
