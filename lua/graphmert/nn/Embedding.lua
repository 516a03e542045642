-- Embedding.lua — a lookup table [num, dim] (torch.nn.Embedding: N(0, 1) init, `weight`).
-- Embedding(num, dim[, std[, padding]]): N(0, std) rows; with padding (a 1-based row, torch's
-- padding_idx) that row starts at zero and the lookup gives it no gradient (other uses of the
-- weight, e.g. a decoder tied to it, still do).
-- forward(ids): ids is a tensor or table of 1-based rows of any shape → [..., dim].
local class = require "graphmert.class"
local gm = require "graphmert"
local Module = require "graphmert.nn.Module"
local check = require "graphmert.check"

local Embedding = class("graphmert.nn.Embedding", Module)

function Embedding:__init(num, dim, std, padding)
  Module.__init(self)
  check.positive_integer("Embedding", "num", num)
  check.positive_integer("Embedding", "dim", dim)
  if padding ~= nil then
    padding = check.integer("Embedding", "padding", padding, 1)
    if padding > num then error(string.format("Embedding: padding row %d is not in [1, %d]", padding, num), 2) end
  end
  self.num, self.dim, self.padding = num, dim, padding
  local w = gm.randn(num, dim) * (std or 1)
  if padding then w:narrow(1, padding, 1):zero_() end
  self:register_parameter("weight", w)
end

function Embedding:forward(ids)
  if not self.padding then return gm.embedding(self.weight, ids) end
  if not gm.is_tensor(ids) then ids = gm.tensor(ids) end
  local keep, any = {}, false
  for i, id in ipairs(ids:reshape(-1):totable()) do
    keep[i] = id == self.padding and 0 or 1
    any = any or id == self.padding
  end
  local rows = gm.embedding(self.weight, ids)
  if not any then return rows end
  -- the padding row's value without its gradient: the live lookup times 0 there, the detached one times 1
  local shape = ids:shape()
  shape[#shape + 1] = 1
  keep = gm.tensor(keep):reshape(shape)
  return rows * keep + gm.embedding(self.weight:detach(), ids) * (1 - keep)
end

function Embedding:extra_repr()
  return string.format("%d, %d%s", self.num, self.dim, self.padding and ", padding " .. self.padding or "")
end

return Embedding
