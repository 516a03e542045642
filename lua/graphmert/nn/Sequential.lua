-- Sequential.lua — applies its modules in order; an error inside one names its position
-- (nn's rethrowErrors).
local class = require "graphmert.class"
local Module = require "graphmert.nn.Module"

local Sequential = class("graphmert.nn.Sequential", Module)

function Sequential:__init(modules)
  Module.__init(self)
  for _, m in ipairs(modules or {}) do self:add(m) end
end

-- Children are named 0, 1, 2, ... as in torch.nn.Sequential's state_dict.
function Sequential:add(m)
  self:add_module(tostring(#self._modules), m)
  return self
end

function Sequential:forward(x)
  for i, name in ipairs(self._modules) do
    local ok, y = pcall(self[name].forward, self[name], x)
    if not ok then error(string.format("%s (in module %d of graphmert.nn.Sequential)", y, i), 0) end
    x = y
  end
  return x
end

return Sequential
