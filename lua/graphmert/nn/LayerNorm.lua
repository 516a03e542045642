-- LayerNorm.lua — torch.nn.LayerNorm over the last dimension (`weight`, `bias`, eps 1e-5).
local class = require "graphmert.class"
local gm = require "graphmert"
local Module = require "graphmert.nn.Module"

local LayerNorm = class("graphmert.nn.LayerNorm", Module)

function LayerNorm:__init(dim, eps)
  Module.__init(self)
  self.dim, self.eps = dim, eps or 1e-5
  self:register_parameter("weight", gm.ones(dim))
  self:register_parameter("bias", gm.zeros(dim))
end

function LayerNorm:forward(x) return x:layer_norm(self.weight, self.bias, self.eps) end

function LayerNorm:extra_repr() return tostring(self.dim) end

return LayerNorm
