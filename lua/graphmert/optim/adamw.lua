--[[ adamw.lua — AdamW (decoupled weight decay, torch.optim.AdamW), one fused C step a tensor.

ARGS:
  named_params: module:named_parameters() ({ {name, tensor}, ... }) or a plain list of tensors
  config: lr (1e-3), betas ({0.9, 0.999}), eps (1e-8), weight_decay (0.01),
          no_decay (function(name, tensor) → true to exempt; default: biases, LayerNorm weights
          and every other tensor of fewer than 2 dimensions, as HF Trainer does); another name or
          a value out of range is an error
RETURN: an optimizer with the protocol of graphmert.optim: :step(), :zero_grad(), :get_lr(),
  :set_lr(lr), :state_dict() → tensors, meta and :load_state_dict(tensors, meta).
  state_dict() gives tensors named "<param>.exp_avg" / "<param>.exp_avg_sq" and the step count.
]]
local gm = require "graphmert"
local protocol = require "graphmert.optim.protocol"

local function default_no_decay(name, t)
  return t:dim() < 2 or name:match("bias$") ~= nil or name:lower():match("norm") ~= nil
end

local function betas_problem(v)
  if type(v) ~= "table" or #v ~= 2 then return "must be two numbers in [0, 1)" end
  for _, b in ipairs(v) do
    if math.type(b) == nil or not (b >= 0 and b < 1) then return "must be two numbers in [0, 1)" end
  end
end

return function(named_params, config)
  config = protocol.options("adamw", config, { lr = { 1e-3, protocol.at_least(0) },
    betas = { { 0.9, 0.999 }, betas_problem }, eps = { 1e-8, protocol.at_least(0) },
    weight_decay = { 0.01, protocol.at_least(0) },
    no_decay = { default_no_decay, function(v) if type(v) ~= "function" then return "must be a function(name, tensor)" end end } })
  local betas, weight_decay, no_decay = config.betas, config.weight_decay, config.no_decay
  local step = { beta1 = betas[1], beta2 = betas[2], eps = config.eps }
  local function update(opt, p, g)
    step.step, step.lr, step.weight_decay = opt.step_count, opt.lr, p.weight_decay
    gm.adamw_step(p.tensor, g, p.exp_avg, p.exp_avg_sq, step)
  end

  local opt = protocol.new(named_params, config.lr, "adamw",
    { { name = "exp_avg" }, { name = "exp_avg_sq" } }, update)
  for _, p in ipairs(opt.params) do
    p.exp_avg, p.exp_avg_sq = gm.zeros(p.tensor:shape()), gm.zeros(p.tensor:shape())
    p.weight_decay = no_decay(p.name, p.tensor) and 0 or weight_decay
  end
  return opt
end
