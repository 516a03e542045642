-- protocol.lua — what every optimizer shares: its parameter list and the protocol methods that
-- do not depend on the update rule (zero_grad, get_lr, set_lr). An optimizer adds step,
-- state_dict and load_state_dict.
local M = {}

-- module:named_parameters() ({ {name, tensor}, ... }) or a plain list of tensors (named by their
-- position) → an optimizer table { params = { {name, tensor}, ... }, lr, step_count = 0 }
function M.new(named_params, lr, owner)
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
  return opt
end

return M
