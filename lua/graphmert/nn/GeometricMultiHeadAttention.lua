-- GeometricMultiHeadAttention.lua — GeometricMachineLearning.jl's MultiHeadAttention on
-- column sequences Z [B, M, T], parameters PQ, PK, PV [heads, M, M/heads] (no biases, no output
-- projection):
--   Q = PQ_hᵀ Z, K = PK_hᵀ Z, V = PV_hᵀ Z;  S = QᵀK / √M (√M, not √(M/heads));
--   P = softmax(S) over rows, each column summing to 1 (NNlib's dims = 1);  O_h = V P
--   out = [O_1; ...; O_H] (+ Z when add_connection, the default)
-- Compared with row-major attention, output position b is queried by PK and the positions it
-- attends to are keyed by PQ: the upstream names, kept as they are.
-- GeometricMultiHeadAttention{dim, heads, add_connection = true}; forward(Z [B, M, T] or [M, T])
local class = require "graphmert.class"
local gm = require "graphmert"
local Module = require "graphmert.nn.Module"
local check = require "graphmert.check"

local GeometricMultiHeadAttention = class("graphmert.nn.GeometricMultiHeadAttention", Module)

function GeometricMultiHeadAttention:__init(opts)
  Module.__init(self)
  local dim, heads = opts.dim, opts.heads
  if math.type(dim) ~= "integer" or math.type(heads) ~= "integer" or dim < 1 or heads < 1 or dim % heads ~= 0 then
    error("GeometricMultiHeadAttention: heads must be a positive integer dividing dim", 2)
  end
  self.dim, self.heads, self.add_connection = dim, heads, opts.add_connection ~= false
  local dh = dim // heads
  for _, name in ipairs { "PQ", "PK", "PV" } do
    self:register_parameter(name, gm.randn(heads, dim, dh) * (1 / math.sqrt(dim)))
  end
end

function GeometricMultiHeadAttention:forward(Z)
  local unbatched = gm.is_tensor(Z) and Z:dim() == 2
  if unbatched then Z = Z:reshape(1, Z:size(1), Z:size(2)) end
  check.shape("GeometricMultiHeadAttention:forward", 1, "Z", Z, { false, self.dim, false })
  local B, M, T, H = Z:size(1), self.dim, Z:size(3), self.heads
  local Z4 = Z:reshape(B, 1, M, T)
  local function project(P) return P:reshape(1, H, M, M // H):matmul(Z4, true, false) end -- [B, H, Dh, T]
  local Q, K, V = project(self.PQ), project(self.PK), project(self.PV)
  local P = (Q:matmul(K, true, false) * (1 / math.sqrt(M))):softmax(3) -- columns sum to 1
  local out = V:matmul(P):reshape(B, M, T)
  if self.add_connection then out = Z + out end
  if unbatched then out = out:reshape(M, T) end
  return out
end

function GeometricMultiHeadAttention:extra_repr()
  return string.format("dim=%d, heads=%d, add_connection=%s", self.dim, self.heads, tostring(self.add_connection))
end

return GeometricMultiHeadAttention
