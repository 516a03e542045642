-- class.lua — a small class helper in the spirit of torch.class:
--   local Linear = class("graphmert.nn.Linear", Module)
--   function Linear:__init(opts) ... end
--   local m = Linear{...}           -- calls __init on a new instance
return function(name, parent)
  local cls = {}
  cls.__index = cls
  cls.__name = name
  cls.parent = parent
  if parent then
    -- metamethods are looked up raw, so copy the parent's into the class
    for _, k in ipairs { "__tostring", "__call", "__len" } do
      if rawget(cls, k) == nil then cls[k] = parent[k] end
    end
  end
  return setmetatable(cls, {
    __index = parent,
    __call = function(c, ...)
      local obj = setmetatable({}, c)
      if obj.__init then obj:__init(...) end
      return obj
    end,
    __tostring = function() return name end,
  })
end
