--[[ sgd.lua — stochastic gradient descent with momentum and weight decay (torch.optim.SGD).

ARGS:
  named_params: module:named_parameters() ({ {name, tensor}, ... }) or a plain list of tensors
  config: lr (required, as torch's), momentum (0), dampening (0), weight_decay (0), nesterov
    (false); another name or a value out of range is an error
RETURN: an optimizer with the protocol every optimizer here follows: :step(), :zero_grad(),
  :get_lr(), :set_lr(lr), :state_dict() → tensors, meta and :load_state_dict(tensors, meta).
  state_dict() gives the momentum buffers as "<param>.momentum_buffer" (PyTorch's name) and the
  step count; a buffer not made yet (no step with a gradient) is absent, as in PyTorch.
]]
local protocol = require "graphmert.optim.protocol"

return function(named_params, config)
  config = protocol.options("sgd", config, { lr = { nil, protocol.at_least(0) },
    momentum = { 0, protocol.at_least(0) }, dampening = { 0, protocol.at_least(0) },
    weight_decay = { 0, protocol.at_least(0) }, nesterov = { false, protocol.boolean } })
  local momentum, dampening, weight_decay, nesterov = config.momentum, config.dampening, config.weight_decay, config.nesterov
  if nesterov and (momentum <= 0 or dampening ~= 0) then error("sgd: nesterov needs a momentum > 0 and dampening 0", 2) end
  -- torch.optim.SGD's rule: decay into the gradient, then momentum (its buffer starts as the
  -- first gradient), then the step
  local function update(opt, p, g)
    if weight_decay ~= 0 then g = g + p.tensor * weight_decay end
    if momentum ~= 0 then
      if not p.momentum_buffer then
        p.momentum_buffer = g:clone()
      else
        p.momentum_buffer:mul_(momentum):add_(g, 1 - dampening)
      end
      g = nesterov and (g + p.momentum_buffer * momentum) or p.momentum_buffer
    end
    p.tensor:add_(g, -opt.lr)
  end

  return protocol.new(named_params, config.lr, "sgd",
    { { name = "momentum_buffer", label = "momentum buffer", optional = true } }, update)
end
