-- EncoderLayer.lua — one post-LN transformer layer (GraphMERT's, after Graphormer):
--   x = LN(x + Dropout(SelfAttention(x, decay, masks)));  x = LN(x + Dropout(FFN(x)))
-- with FFN = Linear → GELU → Dropout → Linear. The attention is the fused kernel; the decay
-- mask (shared by every layer) and the masks come in through opts.
-- EncoderLayer{dim, heads, ffn, dropout = 0.1, attention_dropout = 0.1}
local class = require "graphmert.class"
local Module = require "graphmert.nn.Module"
local Linear = require "graphmert.nn.Linear"
local LayerNorm = require "graphmert.nn.LayerNorm"
local MultiheadAttention = require "graphmert.nn.MultiheadAttention"

local EncoderLayer = class("graphmert.nn.EncoderLayer", Module)

function EncoderLayer:__init(opts)
  Module.__init(self)
  self.dropout = opts.dropout or 0.1
  self:add_module("self_attn", MultiheadAttention {
    dim = opts.dim, heads = opts.heads, dropout = opts.attention_dropout or self.dropout })
  self:add_module("self_attn_layer_norm", LayerNorm(opts.dim))
  self:add_module("fc1", Linear(opts.dim, opts.ffn))
  self:add_module("fc2", Linear(opts.ffn, opts.dim))
  self:add_module("final_layer_norm", LayerNorm(opts.dim))
end

-- x [B, N, dim]; opts as gm.attention's (decay, key_mask, ...), need_weights for inspection
function EncoderLayer:forward(x, opts)
  local a, weights = self.self_attn(x, x, x, opts)
  x = self.self_attn_layer_norm(x + a:dropout(self.dropout, self.training))
  local h = self.fc1(x):gelu():dropout(self.dropout, self.training)
  x = self.final_layer_norm(x + self.fc2(h):dropout(self.dropout, self.training))
  return x, weights
end

-- The same layer on packed rows x [T, dim] (see MultiheadAttention:forward_packed): every
-- token-wise step runs on real tokens only. Its intermediates are released as the layer ends
-- (<close>; a recorded graph keeps what its backward reads): at inference they would otherwise
-- wait for the collector, and each full collection they brought on walked the whole Lua heap.
function EncoderLayer:forward_packed(x, segments, opts_list)
  local a <close> = self.self_attn:forward_packed(x, segments, opts_list)
  local attended <close> = x + a:dropout(self.dropout, self.training)
  local y <close> = self.self_attn_layer_norm(attended)
  local up <close> = self.fc1(y)
  local h <close> = up:gelu():dropout(self.dropout, self.training)
  local down <close> = self.fc2(h)
  local out <close> = y + down:dropout(self.dropout, self.training)
  return self.final_layer_norm(out)
end

return EncoderLayer
