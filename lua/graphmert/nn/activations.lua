-- activations.lua — parameter-free layers for Sequential: ReLU, Tanh, GELU, Dropout.
local class = require "graphmert.class"
local Module = require "graphmert.nn.Module"

local M = {}

local function simple(name, apply)
  local cls = class("graphmert.nn." .. name, Module)
  function cls:forward(x) return apply(self, x) end
  M[name] = cls
end

simple("ReLU", function(_, x) return x:relu() end)
simple("Tanh", function(_, x) return x:tanh() end)

M.GELU = class("graphmert.nn.GELU", Module)
function M.GELU:__init(approximate)
  Module.__init(self)
  self.approximate = approximate or "none"
end
function M.GELU:forward(x) return x:gelu(self.approximate) end

M.Dropout = class("graphmert.nn.Dropout", Module)
function M.Dropout:__init(p)
  Module.__init(self)
  self.p = p or 0.5
end
function M.Dropout:forward(x) return x:dropout(self.p, self.training) end
function M.Dropout:extra_repr() return "p = " .. self.p end

return M
