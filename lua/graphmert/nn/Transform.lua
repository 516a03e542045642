-- Transform.lua — Linear → GELU (exact) → LayerNorm, the prediction-head stack of BERT-style
-- models (HF's BertPredictionHeadTransform); GraphMERT uses it for its LM transform, its LM
-- head and twice in the span-boundary head. Parameters: dense.{weight,bias}, layer_norm.{weight,bias}.
-- Transform(in_features, out_features)
local class = require "graphmert.class"
local Module = require "graphmert.nn.Module"
local Linear = require "graphmert.nn.Linear"
local LayerNorm = require "graphmert.nn.LayerNorm"

local Transform = class("graphmert.nn.Transform", Module)

function Transform:__init(fin, fout)
  Module.__init(self)
  self:add_module("dense", Linear(fin, fout))
  self:add_module("layer_norm", LayerNorm(fout))
end

function Transform:forward(x) return self.layer_norm(self.dense(x):gelu()) end

return Transform
