-- XEyTransformerLayer.lua — DiGress's post-LN layer around NodeEdgeBlock (same names):
--   newX, newE, new_y = self_attn(X, E, y, node_mask)
--   X = normX1(X + dropoutX1(newX));  E = normE1(E + dropoutE1(newE));  y = norm_y1(y + dropout(new_y))
--   X = normX2(X + dropout(linX2(dropout(relu(linX1(X))))))   and the same for E (linE*) and y (lin_y*)
-- Padded rows are not re-masked after the LayerNorms (upstream behaviour).
-- XEyTransformerLayer{dx, de, dy, heads, dim_ffX = 2048, dim_ffE = 128, dim_ffy = 2048,
--   dropout = 0.1, layer_norm_eps = 1e-5}; forward(X, E, y, node_mask) → X, E, y
local class = require "graphmert.class"
local Module = require "graphmert.nn.Module"
local Linear = require "graphmert.nn.Linear"
local LayerNorm = require "graphmert.nn.LayerNorm"
local NodeEdgeBlock = require "graphmert.nn.NodeEdgeBlock"

local XEyTransformerLayer = class("graphmert.nn.XEyTransformerLayer", Module)

function XEyTransformerLayer:__init(opts)
  Module.__init(self)
  local dx, de, dy = opts.dx, opts.de, opts.dy
  local ffx, ffe, ffy = opts.dim_ffX or 2048, opts.dim_ffE or 128, opts.dim_ffy or 2048
  local eps = opts.layer_norm_eps or 1e-5
  self.dropout = opts.dropout or 0.1
  self:add_module("self_attn", NodeEdgeBlock(opts))
  for _, spec in ipairs { { "linX1", dx, ffx }, { "linX2", ffx, dx }, { "linE1", de, ffe }, { "linE2", ffe, de },
    { "lin_y1", dy, ffy }, { "lin_y2", ffy, dy } } do
    self:add_module(spec[1], Linear(spec[2], spec[3]))
  end
  for _, spec in ipairs { { "normX1", dx }, { "normX2", dx }, { "normE1", de }, { "normE2", de },
    { "norm_y1", dy }, { "norm_y2", dy } } do
    self:add_module(spec[1], LayerNorm(spec[2], eps))
  end
end

-- t = norm(t + dropout(out)), then t = norm2(t + dropout(lin2(dropout(relu(lin1(t))))))
function XEyTransformerLayer:_residual(t, out, norm1, lin1, lin2, norm2)
  local p, training = self.dropout, self.training
  t = norm1(t + out:dropout(p, training))
  local ff = lin2(lin1(t):relu():dropout(p, training))
  return norm2(t + ff:dropout(p, training))
end

function XEyTransformerLayer:forward(X, E, y, node_mask)
  local newX, newE, new_y = self.self_attn(X, E, y, node_mask)
  X = self:_residual(X, newX, self.normX1, self.linX1, self.linX2, self.normX2)
  E = self:_residual(E, newE, self.normE1, self.linE1, self.linE2, self.normE2)
  y = self:_residual(y, new_y, self.norm_y1, self.lin_y1, self.lin_y2, self.norm_y2)
  return X, E, y
end

return XEyTransformerLayer
