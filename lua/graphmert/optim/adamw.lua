--[[ adamw.lua — AdamW (decoupled weight decay, torch.optim.AdamW), one fused C step a tensor.

ARGS:
  named_params: module:named_parameters() ({ {name, tensor}, ... }) or a plain list of tensors
  config: lr (1e-3), betas ({0.9, 0.999}), eps (1e-8), weight_decay (0.01),
          no_decay (function(name, tensor) → true to exempt; default: biases, LayerNorm weights
          and every other tensor of fewer than 2 dimensions, as HF Trainer does)
RETURN: an optimizer with the protocol of graphmert.optim: :step(), :zero_grad(), :get_lr(),
  :set_lr(lr), :state_dict() → tensors, meta and :load_state_dict(tensors, meta).
  state_dict() gives tensors named "<param>.exp_avg" / "<param>.exp_avg_sq" and the step count.
]]
local gm = require "graphmert"

local function default_no_decay(name, t)
  return t:dim() < 2 or name:match("bias$") ~= nil or name:lower():match("norm") ~= nil
end

return function(named_params, config)
  config = config or {}
  local betas = config.betas or { 0.9, 0.999 }
  local settings = { lr = config.lr or 1e-3, beta1 = betas[1], beta2 = betas[2], eps = config.eps or 1e-8 }
  local weight_decay = config.weight_decay or 0.01
  local no_decay = config.no_decay or default_no_decay
  assert(settings.lr > 0, "adamw: lr must be > 0")
  local params = {}
  for i, entry in ipairs(named_params) do
    local name, t = entry, entry
    if type(entry) == "table" then name, t = entry[1], entry[2] else name = tostring(i) end
    params[#params + 1] = {
      name = name, tensor = t, exp_avg = gm.zeros(t:shape()), exp_avg_sq = gm.zeros(t:shape()),
      weight_decay = no_decay(name, t) and 0 or weight_decay,
    }
  end
  local opt = { step_count = 0, params = params }

  function opt:step()
    self.step_count = self.step_count + 1
    local step = {}
    for k, v in pairs(settings) do step[k] = v end
    step.step = self.step_count
    gm.no_grad(function()
      for _, p in ipairs(params) do
        local g = p.tensor:grad()
        if g then
          step.weight_decay = p.weight_decay
          gm.adamw_step(p.tensor, g, p.exp_avg, p.exp_avg_sq, step)
        end
      end
    end)
  end

  function opt:zero_grad()
    for _, p in ipairs(params) do p.tensor:zero_grad() end
  end

  function opt:set_lr(lr) settings.lr = lr end
  function opt:get_lr() return settings.lr end

  function opt:state_dict()
    local tensors = {}
    for _, p in ipairs(params) do
      tensors[p.name .. ".exp_avg"] = p.exp_avg
      tensors[p.name .. ".exp_avg_sq"] = p.exp_avg_sq
    end
    return tensors, { step = self.step_count, lr = settings.lr }
  end

  function opt:load_state_dict(tensors, meta)
    gm.no_grad(function()
      for _, p in ipairs(params) do
        local m, v = tensors[p.name .. ".exp_avg"], tensors[p.name .. ".exp_avg_sq"]
        if not m or not v then error("adamw: no state for parameter '" .. p.name .. "'", 3) end
        p.exp_avg:copy_(m)
        p.exp_avg_sq:copy_(v)
      end
    end)
    self.step_count = math.tointeger(meta.step) or 0
    if meta.lr then settings.lr = meta.lr end
  end

  return opt
end
