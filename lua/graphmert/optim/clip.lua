-- clip.lua — gradient clipping, applied between backward and the optimizer step.
local gm = require "graphmert"

-- Scales every gradient so that their global L2 norm is at most max_norm (torch's
-- clip_grad_norm_). Returns the norm before clipping.
return function(params, max_norm)
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
