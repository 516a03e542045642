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
  local opt = protocol.new(named_params, config.lr or 1e-2, "sgd",
    { { name = "momentum_buffer", label = "momentum buffer", optional = true } })
  local params = opt.params

  function opt:step()
    self.step_count = self.step_count + 1
    gm.no_grad(function()
      for _, p in ipairs(params) do
        local g = p.tensor:grad()
        if g then
          if weight_decay ~= 0 then g = g + p.tensor * weight_decay end
          if momentum ~= 0 then
            if not p.momentum_buffer then
              p.momentum_buffer = g:clone()
            else
              p.momentum_buffer:mul_(momentum):add_(g, 1 - dampening)
            end
            g = nesterov and (g + p.momentum_buffer * momentum) or p.momentum_buffer
          end
          p.tensor:add_(g, -self.lr)
        end
      end
    end)
  end

  return opt
end
