-- NodeEdgeBlock.lua — DiGress's node–edge attention block (cvignac/DiGress,
-- src/models/transformer_model.py), same parameter names and order of operations:
--   Q = q(X)·m, K = k(X)·m, V = v(X)·m                 heads: channel c = h·df + f
--   Y[i,j,h,f] = Q[i,h,f] K[j,h,f] / √df               one score per feature, no dot product
--   Y ← Y ⊙ (E1 + 1) + E2   with E1 = e_mul(E)·mᵢmⱼ, E2 = e_add(E)·mᵢmⱼ        (edge FiLM)
--   newE = e_out(y_e_add(y) + (y_e_mul(y) + 1) ⊙ Y) · mᵢmⱼ                     (pre-softmax Y)
--   attn = softmax over keys j of Y (per feature; masked keys excluded)
--   newX = x_out(y_x_add(y) + (y_x_mul(y) + 1) ⊙ Σⱼ attn V) · m                (global FiLM)
--   new_y = y_out(y_y(y) + x_y([mean, min, max, std]ᵢ X) + e_y([mean, min, max, std]ᵢⱼ E))
-- (pooling over every node and pair, padding included, unbiased std; y_out = Linear, ReLU,
-- Linear as y_out1 / y_out2.)
-- One deliberate difference: a graph with no real node gives newX = 0 (upstream: NaN, then an
-- assertion); its keys are treated as allowed, and V = 0 there, so nothing else changes.
-- NodeEdgeBlock{dx, de, dy, heads}; forward(X [bs,n,dx], E [bs,n,n,de], y [bs,dy],
-- node_mask [bs,n] of 0/1) → newX, newE, new_y
local class = require "graphmert.class"
local gm = require "graphmert"
local Module = require "graphmert.nn.Module"
local Linear = require "graphmert.nn.Linear"
local check = require "graphmert.check"

local NodeEdgeBlock = class("graphmert.nn.NodeEdgeBlock", Module)

function NodeEdgeBlock:__init(opts)
  Module.__init(self)
  local dx, de, dy, heads = opts.dx, opts.de, opts.dy, opts.heads
  for _, k in ipairs { "dx", "de", "dy", "heads" } do check.positive_integer("NodeEdgeBlock", k, opts[k]) end
  if dx % heads ~= 0 then error(string.format("NodeEdgeBlock: heads (%d) must divide dx (%d)", heads, dx), 2) end
  self.dx, self.de, self.dy, self.heads, self.df = dx, de, dy, heads, dx // heads
  for _, spec in ipairs {
    { "q", dx, dx }, { "k", dx, dx }, { "v", dx, dx }, { "e_add", de, dx }, { "e_mul", de, dx },
    { "y_e_mul", dy, dx }, { "y_e_add", dy, dx }, { "y_x_mul", dy, dx }, { "y_x_add", dy, dx },
    { "y_y", dy, dy }, { "x_y", 4 * dx, dy }, { "e_y", 4 * de, dy }, { "x_out", dx, dx },
    { "e_out", dx, de }, { "y_out1", dy, dy }, { "y_out2", dy, dy } } do
    self:add_module(spec[1], Linear(spec[2], spec[3]))
  end
end

-- [mean, min, max, std] over dimension 2 of t [bs, count, d] → [bs, 4d] (std unbiased)
local function pool(t)
  local mean = t:mean(2, true)
  local min = -((-t):max(2))
  local max = t:max(2)
  local centred = t - mean
  local std = ((centred * centred):sum(2) / (t:size(2) - 1)):sqrt()
  return gm.cat({ mean:reshape(t:size(1), t:size(3)), min, max, std }, 2)
end

-- 0 for real keys and −inf for padding, [bs, 1, n, 1, 1]; every key of an empty graph allowed
local function key_bias(mask)
  local rows = mask:totable()
  local out = {}
  for b, row in ipairs(rows) do
    local any = false
    for _, v in ipairs(row) do any = any or v ~= 0 end
    out[b] = {}
    for j, v in ipairs(row) do out[b][j] = (v ~= 0 or not any) and 0 or -math.huge end
  end
  return gm.tensor(out):reshape(#rows, 1, #rows[1], 1, 1)
end

function NodeEdgeBlock:forward(X, E, y, node_mask)
  local fn = "NodeEdgeBlock:forward"
  check.shape(fn, 1, "X", X, { false, false, self.dx })
  local bs, n = X:size(1), X:size(2)
  check.shape(fn, 2, "E", E, { bs, n, n, self.de })
  check.shape(fn, 3, "y", y, { bs, self.dy })
  local m = check.mask(fn, 4, "node_mask", node_mask, { bs, n })
  local H, df, dx = self.heads, self.df, self.dx
  local x_mask = m:reshape(bs, n, 1)
  local pair_mask = m:reshape(bs, n, 1, 1) * m:reshape(bs, 1, n, 1)

  local Q = (self.q(X) * x_mask):reshape(bs, n, 1, H, df)
  local K = (self.k(X) * x_mask):reshape(bs, 1, n, H, df)
  local E1 = (self.e_mul(E) * pair_mask):reshape(bs, n, n, H, df)
  local E2 = (self.e_add(E) * pair_mask):reshape(bs, n, n, H, df)
  local Y = (Q * K) * (1 / math.sqrt(df)) * (E1 + 1) + E2

  local flat = Y:reshape(bs, n, n, dx)
  local newE = self.y_e_add(y):reshape(bs, 1, 1, dx) + (self.y_e_mul(y) + 1):reshape(bs, 1, 1, dx) * flat
  newE = self.e_out(newE) * pair_mask

  local attn = (Y + key_bias(m)):softmax(3)
  local V = (self.v(X) * x_mask):reshape(bs, 1, n, H, df)
  local wV = (attn * V):sum(3):reshape(bs, n, dx)
  local newX = self.y_x_add(y):reshape(bs, 1, dx) + (self.y_x_mul(y) + 1):reshape(bs, 1, dx) * wV
  newX = self.x_out(newX) * x_mask

  local pooled = self.y_y(y) + self.x_y(pool(X)) + self.e_y(pool(E:reshape(bs, n * n, self.de)))
  local new_y = self.y_out2(self.y_out1(pooled):relu())
  return newX, newE, new_y, { scores = Y, attn = attn }
end

function NodeEdgeBlock:extra_repr()
  return string.format("dx=%d, de=%d, dy=%d, heads=%d", self.dx, self.de, self.dy, self.heads)
end

return NodeEdgeBlock
