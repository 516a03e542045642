-- Embedding.lua — a lookup table [num, dim] (torch.nn.Embedding: N(0, 1) init, `weight`).
-- forward(ids): ids is a tensor or table of 1-based rows of any shape → [..., dim].
local class = require "graphmert.class"
local gm = require "graphmert"
local Module = require "graphmert.nn.Module"
local check = require "graphmert.nn.check"

local Embedding = class("graphmert.nn.Embedding", Module)

function Embedding:__init(num, dim, std)
  Module.__init(self)
  check.positive_integer("Embedding", "num", num)
  check.positive_integer("Embedding", "dim", dim)
  self.num, self.dim = num, dim
  self:register_parameter("weight", gm.randn(num, dim) * (std or 1))
end

function Embedding:forward(ids) return gm.embedding(self.weight, ids) end

function Embedding:extra_repr() return string.format("%d, %d", self.num, self.dim) end

return Embedding
