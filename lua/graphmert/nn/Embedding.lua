-- Embedding.lua — a lookup table [num, dim] (torch.nn.Embedding: N(0, 1) init, `weight`).
-- forward(ids): ids is a tensor or table of 1-based rows of any shape → [..., dim].
local class = require "graphmert.class"
local gm = require "graphmert"
local Module = require "graphmert.nn.Module"

local Embedding = class("graphmert.nn.Embedding", Module)

function Embedding:__init(num, dim, std)
  Module.__init(self)
  assert(math.type(num) == "integer" and num > 0, "Embedding: num must be a positive integer")
  assert(math.type(dim) == "integer" and dim > 0, "Embedding: dim must be a positive integer")
  self.num, self.dim = num, dim
  self:register_parameter("weight", gm.randn(num, dim) * (std or 1))
end

function Embedding:forward(ids) return gm.embedding(self.weight, ids) end

function Embedding:extra_repr() return string.format("%d, %d", self.num, self.dim) end

return Embedding
