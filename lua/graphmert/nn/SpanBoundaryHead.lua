-- SpanBoundaryHead.lua — SpanBERT's span-boundary objective as the official GraphMERT code has
-- it (GraphMertPairDecoderHead): the token at offset k of a masked root span is predicted from
-- the hidden states at the span's two boundary tokens (span start − 1, span end + 1) and a
-- learned embedding of k: [h_left ‖ h_right ‖ pos_k] → Transform(3H → H) → Transform(H → H) →
-- decoder (H → vocab, its own weight and bias, not tied).
-- SpanBoundaryHead{hidden, vocab, max_targets (= leaves per root, the official tie), std}
-- forward(left [n, H], right [n, H], offsets (1-based, 1..max_targets)) → logits [n, vocab]
local class = require "graphmert.class"
local gm = require "graphmert"
local Module = require "graphmert.nn.Module"
local Linear = require "graphmert.nn.Linear"
local Embedding = require "graphmert.nn.Embedding"
local Transform = require "graphmert.nn.Transform"

local SpanBoundaryHead = class("graphmert.nn.SpanBoundaryHead", Module)

function SpanBoundaryHead:__init(opts)
  Module.__init(self)
  local H = opts.hidden
  self.max_targets = opts.max_targets
  self:add_module("position_embeddings", Embedding(opts.max_targets, H, opts.std))
  self:add_module("transform_1", Transform(3 * H, H))
  self:add_module("transform_2", Transform(H, H))
  self:add_module("decoder", Linear(H, opts.vocab))
end

function SpanBoundaryHead:forward(left, right, offsets)
  for i, k in ipairs(offsets) do
    if math.type(k) ~= "integer" or k < 1 or k > self.max_targets then
      error(string.format("bad argument #3 to 'SpanBoundaryHead:forward' (offset %d is %s, not in [1, %d])", i,
        tostring(k), self.max_targets), 2)
    end
  end
  local pos = self.position_embeddings.weight:index_select(1, offsets)
  return self.decoder(self.transform_2(self.transform_1(gm.cat({ left, right, pos }, 2))))
end

return SpanBoundaryHead
