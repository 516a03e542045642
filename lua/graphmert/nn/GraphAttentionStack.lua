-- GraphAttentionStack.lua — the design notes' graph attention layers: an input projection, then
-- `layers` post-LN blocks of multi-head dot-product attention restricted to graph neighbours by
-- the adjacency mask (GELU feed-forward, residual + LayerNorm), then an output projection.
--
-- GraphAttentionStack{input, hidden, output, heads = 8, layers = 2, ffn = 4·hidden,
--                     dropout = 0, self_loops = true}
-- forward(x [B, N, input], adjacency [N, N] or [B, N, N] (1 = edge), opts) → [B, N, output];
--   opts go to gm.attention (key_mask for padding, decay, ...). With self_loops every node also
--   attends to itself, so no row is empty.
-- attention_weights(x, adjacency, opts) → { [B, N, N] per layer }, averaged over heads (no grad).
local class = require "graphmert.class"
local gm = require "graphmert"
local Module = require "graphmert.nn.Module"
local Linear = require "graphmert.nn.Linear"
local EncoderLayer = require "graphmert.nn.EncoderLayer"

local GraphAttentionStack = class("graphmert.nn.GraphAttentionStack", Module)

function GraphAttentionStack:__init(opts)
  Module.__init(self)
  local hidden = opts.hidden
  self.num_layers = opts.layers or 2
  self.self_loops = opts.self_loops ~= false
  self:add_module("input_proj", Linear(opts.input, hidden))
  self:add_module("layers", Module())
  for i = 1, self.num_layers do
    self.layers:add_module(tostring(i - 1), EncoderLayer {
      dim = hidden, heads = opts.heads or 8, ffn = opts.ffn or 4 * hidden,
      dropout = opts.dropout or 0, attention_dropout = opts.dropout or 0 })
  end
  self:add_module("output_proj", Linear(hidden, opts.output))
end

function GraphAttentionStack:_mask(adjacency)
  if not self.self_loops then return adjacency end
  local n = adjacency:size(adjacency:dim())
  local eye = gm.zeros(n, n)
  gm.no_grad(function() for i = 1, n do eye:set(1, i, i) end end)
  -- 1 where there is an edge or a loop (the adjacency holds 0/1)
  return (adjacency + eye - adjacency * eye)
end

function GraphAttentionStack:_run(x, adjacency, opts, need_weights)
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  o.attn_mask = self:_mask(adjacency)
  o.need_weights = need_weights
  local h = self.input_proj(x)
  local weights = {}
  for i = 1, self.num_layers do
    h, weights[i] = self.layers[tostring(i - 1)](h, o)
  end
  return self.output_proj(h), weights
end

function GraphAttentionStack:forward(x, adjacency, opts)
  return (self:_run(x, adjacency, opts, false))
end

function GraphAttentionStack:attention_weights(x, adjacency, opts)
  return gm.no_grad(function()
    local _, weights = self:_run(x, adjacency, opts, true)
    return weights
  end)
end

return GraphAttentionStack
