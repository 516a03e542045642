-- protocol.lua — what every optimizer shares: its parameter list and the protocol methods that
-- do not depend on the update rule (zero_grad, get_lr, set_lr, state_dict, load_state_dict). An
-- optimizer adds step, and names the buffers it keeps per parameter.
--   protocol.new(named_params, lr, owner, state) → { params = { {name, tensor}, ... }, lr,
--     step_count = 0 } with the methods. state lists the per-parameter buffers, each
--     {name = "exp_avg", label = name, optional = false}: p[name] holds it; state_dict()
--     names it "<param>.<name>" (PyTorch's names); load_state_dict(tensors, meta) checks each is
--     there (unless optional: a buffer not made yet, as SGD's momentum before a step) and has the
--     parameter's size, then takes copies.
local M = {}

-- module:named_parameters() ({ {name, tensor}, ... }) or a plain list of tensors (named by their
-- position)
function M.new(named_params, lr, owner, state)
  assert(type(lr) == "number" and lr > 0, owner .. ": lr must be > 0")
  local params = {}
  for i, entry in ipairs(named_params) do
    if type(entry) == "table" then params[i] = { name = entry[1], tensor = entry[2] }
    else params[i] = { name = tostring(i), tensor = entry } end
  end
  local opt = { params = params, lr = lr, step_count = 0 }
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
