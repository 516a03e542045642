-- VolumePreservingAttention.lua — GeometricMachineLearning.jl's VolumePreservingAttention: the
-- sequence Z [B, dim, T] (columns are the elements) is mixed by an orthogonal T×T matrix
--   C = Zᵀ A Z (skew-symmetric),  Λ = Cay(C) = (I − C)(I + C)⁻¹,  out = Z Λ
-- so out⁽ᵗ⁾ = Σₛ Λ[s,t] z⁽ˢ⁾, ΛᵀΛ = I and det Λ = 1: the map preserves volume.
-- skew_sym = true: the parameter S [dim(dim−1)/2] holds A's strictly-lower triangle row by row
--   (A21, A31, A32, A41, ...), A = Lo − Loᵀ, and C is used as is.
-- skew_sym = false (default, upstream's "arbitrary"): A [dim, dim] is free; B = strictly-lower
--   part of ZᵀAZ (Bᵢⱼ = zᵢᵀ A zⱼ for i > j) scaled by 1/√dim, and C = B − Bᵀ.
-- The Cayley transform is one batched LU solve (I + C) Λ = (I − C) (the factors commute), so
-- gradients go through the solve. The parameters are shared by the batch.
-- VolumePreservingAttention{dim, skew_sym = false}; forward(Z [B, dim, T] or [dim, T]) → out, {C, Lambda, A}
local class = require "graphmert.class"
local gm = require "graphmert"
local Module = require "graphmert.nn.Module"
local check = require "graphmert.check"

local VolumePreservingAttention = class("graphmert.nn.VolumePreservingAttention", Module)

function VolumePreservingAttention:__init(opts)
  Module.__init(self)
  local dim = opts.dim
  check.positive_integer("VolumePreservingAttention", "dim", dim)
  self.dim, self.skew_sym = dim, opts.skew_sym == true
  local bound = 1 / math.sqrt(dim)
  if self.skew_sym then
    self:register_parameter("S", gm.rand(dim * (dim - 1) // 2) * (2 * bound) - bound)
    -- A = index_select of [0, S, −S]: 1 on the diagonal, 1 + k for A[i,j] = S_k, 1 + m + k for −S_k
    local m, idx = dim * (dim - 1) // 2, {}
    for i = 0, dim - 1 do
      for j = 0, dim - 1 do
        local k = i > j and i * (i - 1) // 2 + j or j * (j - 1) // 2 + i
        idx[#idx + 1] = i == j and 1 or (i > j and 2 + k or 2 + m + k)
      end
    end
    self._skew_index = gm.tensor(idx)
  else
    self:register_parameter("A", gm.rand(dim, dim) * (2 * bound) - bound)
  end
end

-- The skew-symmetric A [dim, dim] of the skew_sym variant.
function VolumePreservingAttention:skew_matrix()
  local S = self.S
  return gm.cat({ gm.zeros(1), S, -S }, 1):index_select(1, self._skew_index):reshape(self.dim, self.dim)
end

-- a T×T constant tensor with entries value(i, j)
local function matrix(T, value)
  local rows = {}
  for i = 1, T do
    rows[i] = {}
    for j = 1, T do rows[i][j] = value(i, j) end
  end
  return gm.tensor(rows)
end
local function identity(i, j) return i == j and 1 or 0 end
local function below_diagonal(i, j) return i > j and 1 or 0 end

function VolumePreservingAttention:forward(Z)
  local fn = "VolumePreservingAttention:forward"
  local unbatched = gm.is_tensor(Z) and Z:dim() == 2
  if unbatched then Z = Z:reshape(1, Z:size(1), Z:size(2)) end
  check.shape(fn, 1, "Z", Z, { false, self.dim, false })
  local T = Z:size(3)
  local A = self.skew_sym and self:skew_matrix() or self.A
  local G = Z:matmul(A:matmul(Z), true, false) -- zᵢᵀ A zⱼ, [B, T, T]
  local C
  if self.skew_sym then
    C = G
  else
    local B = G * matrix(T, below_diagonal) * (1 / math.sqrt(self.dim))
    C = B - B:transpose(2, 3)
  end
  local I = matrix(T, identity)
  local Lambda = gm.solve(I + C, I - C)
  local out = Z:matmul(Lambda)
  if unbatched then out = out:reshape(self.dim, T) end
  return out, { C = C, Lambda = Lambda, A = A }
end

function VolumePreservingAttention:extra_repr()
  return string.format("dim=%d, skew_sym=%s", self.dim, tostring(self.skew_sym))
end

return VolumePreservingAttention
