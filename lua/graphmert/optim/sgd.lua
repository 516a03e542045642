--[[ sgd.lua — stochastic gradient descent with momentum and weight decay (torch.optim.SGD).

ARGS:
  named_params: module:named_parameters() ({ {name, tensor}, ... }) or a plain list of tensors
  config: lr (1e-2), momentum (0), dampening (0), weight_decay (0), nesterov (false)
RETURN: an optimizer with the protocol every optimizer here follows: :step(), :zero_grad(),
  :get_lr(), :set_lr(lr), :state_dict() → tensors, meta and :load_state_dict(tensors, meta).
  state_dict() gives the momentum buffers as "<param>.momentum_buffer" (PyTorch's name) and the
  step count; a buffer not made yet (no step with a gradient) is absent, as in PyTorch.
]]
local gm = require "graphmert"
local protocol = require "graphmert.optim.protocol"

return function(named_params, config)
  config = config or {}
  local momentum, dampening = config.momentum or 0, config.dampening or 0
  local weight_decay, nesterov = config.weight_decay or 0, config.nesterov or false
  local opt = protocol.new(named_params, config.lr or 1e-2, "sgd")
  local params = opt.params

  function opt:step()
    self.step_count = self.step_count + 1
    gm.no_grad(function()
      for _, p in ipairs(params) do
        local g = p.tensor:grad()
        if g then
          if weight_decay ~= 0 then g = g + p.tensor * weight_decay end
          if momentum ~= 0 then
            if not p.buffer then
              p.buffer = g:clone()
            else
              p.buffer:mul_(momentum):add_(g, 1 - dampening)
            end
            g = nesterov and (g + p.buffer * momentum) or p.buffer
          end
          p.tensor:add_(g, -self.lr)
        end
      end
    end)
  end

  function opt:state_dict()
    local tensors = {}
    for _, p in ipairs(params) do
      if p.buffer then tensors[p.name .. ".momentum_buffer"] = p.buffer end
    end
    return tensors, { step = self.step_count, lr = self.lr }
  end

  function opt:load_state_dict(tensors, meta)
    for _, p in ipairs(params) do
      local b = tensors[p.name .. ".momentum_buffer"]
      if b and b:numel() ~= p.tensor:numel() then
        error(string.format("sgd: momentum buffer of '%s' has %s, the parameter %s", p.name, b:shape_string(),
          p.tensor:shape_string()), 3)
      end
      p.buffer = b and b:clone() or nil
    end
    self.step_count = math.tointeger(meta.step) or 0
    if meta.lr then self.lr = meta.lr end
  end

  return opt
end
