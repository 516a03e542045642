-- schedule.lua — learning-rate schedules and gradient clipping.
local gm = require "graphmert"

local M = {}

-- HF's cosine_with_min_lr: linear warm-up from 0 to peak over `warmup` steps, then a cosine
-- down to min_lr at `total` steps (and min_lr after). step counts from 1.
function M.cosine(step, opts)
  local peak, min_lr = opts.peak, opts.min_lr or 0
  local warmup, total = opts.warmup or 0, opts.total
  assert(peak and total, "cosine: peak and total are required")
  if step <= warmup then return peak * step / math.max(1, warmup) end
  local progress = math.min(1, (step - warmup) / math.max(1, total - warmup))
  return min_lr + (peak - min_lr) * 0.5 * (1 + math.cos(math.pi * progress))
end

-- Scales every gradient so that their global L2 norm is at most max_norm (torch's
-- clip_grad_norm_). Returns the norm before clipping.
function M.clip_grad_norm(params, max_norm)
  local total = 0
  for _, p in ipairs(params) do
    local g = p:grad()
    if g then total = total + (g * g):sum():item() end
  end
  local norm = math.sqrt(total)
  local coef = max_norm / (norm + 1e-6)
  if coef < 1 then
    gm.no_grad(function()
      for _, p in ipairs(params) do
        local g = p:grad()
        if g then g:mul_(coef) end
      end
    end)
  end
  return norm
end

return M
