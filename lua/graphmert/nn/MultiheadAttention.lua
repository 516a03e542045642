-- MultiheadAttention.lua — torch.nn.MultiheadAttention's layer on the fused attention kernel,
-- with its parameter names (in_proj_weight [3E, E], in_proj_bias [3E], out_proj.weight,
-- out_proj.bias) and initialisation, so weights load either way.
--
-- MultiheadAttention{dim = E, heads = H, bias = true, dropout = 0, batch_first = true}
-- forward(query, key, value, opts): inputs [B, L, E] (batch_first, the default here) or
-- [L, B, E] (batch_first = false, torch's default layout); key and value default to query.
-- opts are gm.attention's (key_mask, attn_mask, key_bias, attn_bias, decay, decay_mode, ...),
-- where masks hold 1 for allowed: the opposite of torch's key_padding_mask. With
-- need_weights = true the weights are returned too, averaged over heads unless
-- average_weights = false.
local class = require "graphmert.class"
local gm = require "graphmert"
local Module = require "graphmert.nn.Module"
local Linear = require "graphmert.nn.Linear"

local MultiheadAttention = class("graphmert.nn.MultiheadAttention", Module)

function MultiheadAttention:__init(opts)
  Module.__init(self)
  local E, H = opts.dim, opts.heads
  assert(math.type(E) == "integer" and E > 0, "MultiheadAttention: dim must be a positive integer")
  assert(math.type(H) == "integer" and H > 0 and E % H == 0,
    "MultiheadAttention: heads must be a positive integer that divides dim")
  self.dim, self.heads, self.head_dim = E, H, E // H
  self.dropout = opts.dropout or 0
  self.batch_first = opts.batch_first ~= false
  -- xavier_uniform_ on in_proj_weight, zero biases, as torch does
  local bound = math.sqrt(6 / (E + 3 * E))
  self:register_parameter("in_proj_weight", gm.rand(3 * E, E) * (2 * bound) - bound)
  if opts.bias ~= false then self:register_parameter("in_proj_bias", gm.zeros(3 * E)) end
  self:add_module("out_proj", Linear { E, E, bias = opts.bias ~= false })
  if self.out_proj.bias then gm.no_grad(function() self.out_proj.bias:zero_() end) end
end

-- [B, L, E] → [B, H, L, hd]
function MultiheadAttention:_split_heads(x)
  local B, L = x:size(1), x:size(2)
  return x:reshape(B, L, self.heads, self.head_dim):permute(1, 3, 2, 4)
end

function MultiheadAttention:_project(x, part)
  local E = self.dim
  local w = self.in_proj_weight:narrow(1, part * E + 1, E)
  local y = x:matmul(w, false, true)
  if self.in_proj_bias then y = y + self.in_proj_bias:narrow(1, part * E + 1, E) end
  return self:_split_heads(y)
end

function MultiheadAttention:forward(query, key, value, opts)
  key, value, opts = key or query, value or key or query, opts or {}
  if not self.batch_first then
    query, key, value = query:transpose(1, 2), key:transpose(1, 2), value:transpose(1, 2)
  end
  local B, L = query:size(1), query:size(2)
  local q, k, v
  if key == query and value == query then -- self-attention: one product for q, k and v
    local qkv = query:matmul(self.in_proj_weight, false, true)
    if self.in_proj_bias then qkv = qkv + self.in_proj_bias end
    qkv = qkv:reshape(B, L, 3, self.heads, self.head_dim):permute(3, 1, 4, 2, 5)
    q = qkv:narrow(1, 1, 1):reshape(B, self.heads, L, self.head_dim)
    k = qkv:narrow(1, 2, 1):reshape(B, self.heads, L, self.head_dim)
    v = qkv:narrow(1, 3, 1):reshape(B, self.heads, L, self.head_dim)
  else
    q, k, v = self:_project(query, 0), self:_project(key, 1), self:_project(value, 2)
  end
  local o = {}
  for name, val in pairs(opts) do o[name] = val end
  o.dropout = self.dropout
  o.training = self.training
  local out, weights = gm.attention(q, k, v, o)
  out = self.out_proj(out:permute(1, 3, 2, 4):reshape(B, L, self.dim))
  if not self.batch_first then out = out:transpose(1, 2) end
  if weights and opts.average_weights ~= false then weights = weights:mean(2) end
  return out, weights
end

-- Self-attention over packed sequences: x [T, E] holds the rows of several sequences one after
-- another (segments: { {first_row, length}, ... }); each attends only within itself, with its
-- own options (opts_list[i], e.g. its own decay). Padding never enters any product.
-- (Intermediates are released as they are done with, as in EncoderLayer:forward_packed.)
function MultiheadAttention:forward_packed(x, segments, opts_list)
  local E, H, hd = self.dim, self.heads, self.head_dim
  local product <close> = x:matmul(self.in_proj_weight, false, true)
  local qkv <close> = self.in_proj_bias and product + self.in_proj_bias or product
  local outs = {}
  for i, seg in ipairs(segments) do
    local n = seg[2]
    local rows <close> = qkv:narrow(1, seg[1], n)
    local split <close> = rows:reshape(1, n, 3, H, hd)
    local part <close> = split:permute(3, 1, 4, 2, 5)
    local function take(j) -- q, k or v [1, H, n, hd]: views of part
      local one <close> = part:narrow(1, j, 1)
      return one:reshape(1, H, n, hd)
    end
    local q <close> = take(1)
    local k <close> = take(2)
    local v <close> = take(3)
    local o = {}
    for name, val in pairs(opts_list[i] or {}) do o[name] = val end
    o.dropout, o.training = self.dropout, self.training
    local heads <close> = gm.attention(q, k, v, o)
    local merged <close> = heads:permute(1, 3, 2, 4)
    outs[i] = merged:reshape(n, E)
  end
  local all <close> = #outs == 1 and outs[1] or gm.cat(outs, 1)
  if #outs > 1 then
    for _, o in ipairs(outs) do o:release() end
  end
  return self.out_proj(all)
end

function MultiheadAttention:extra_repr()
  return string.format("dim = %d, heads = %d, dropout = %g", self.dim, self.heads, self.dropout)
end

return MultiheadAttention
