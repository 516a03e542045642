--[[ sgd.lua — stochastic gradient descent with momentum and weight decay (torch.optim.SGD).

ARGS:
  params: a list of tensors (module:parameters())
  config: lr (1e-2), momentum (0), dampening (0), weight_decay (0), nesterov (false)
RETURN: an optimizer with :step() (uses each parameter's grad) and :zero_grad().
]]
local gm = require "graphmert"

return function(params, config)
  config = config or {}
  local lr = config.lr or 1e-2
  local momentum, dampening = config.momentum or 0, config.dampening or 0
  local weight_decay, nesterov = config.weight_decay or 0, config.nesterov or false
  assert(lr > 0, "sgd: lr must be > 0")
  local buffers = {}
  local opt = { params = params, config = config }

  function opt.step()
    gm.no_grad(function()
      for i, p in ipairs(params) do
        local g = p:grad()
        if g then
          if weight_decay ~= 0 then g = g + p * weight_decay end
          if momentum ~= 0 then
            local buf = buffers[i]
            if not buf then
              buf = g:clone()
              buffers[i] = buf
            else
              buf:mul_(momentum):add_(g, 1 - dampening)
            end
            g = nesterov and (g + buf * momentum) or buf
          end
          p:add_(g, -lr)
        end
      end
    end)
  end

  function opt.zero_grad()
    for _, p in ipairs(params) do p:zero_grad() end
  end

  return opt
end
