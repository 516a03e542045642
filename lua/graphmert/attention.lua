-- attention.lua — gm.attention(q, k, v, opts): multi-head attention with padding, graph and
-- decay masks. q is [B, H, L, d]; k and v are [B, H, S, d] and [B, H, S, dv]; the result is
-- [B, H, L, dv] (and the final weights [B, H, L, S] with need_weights = true).
--
-- opts:
--   key_mask   [B, S]                         1 (or true) where a key may be attended, 0 where not
--   attn_mask  [L, S], [B, L, S], [B, H, L, S] the same per query (graph adjacency, causal, ...)
--   key_bias, attn_bias                        the same shapes, added to the scores (-inf forbids)
--   decay      [L, S] or [H, L, S]             GraphMERT's decay mask (gm.decay_mask)
--   decay_mode "scores" (default: multiplies the scaled scores before the softmax, the official
--              form) or "weights" (multiplies the softmax weights, the design notes' A ⊙ f)
--   renormalize  with decay_mode = "weights": divide each row by its new sum
--   scale      default 1/sqrt(d);  dropout p on the weights, only while training ~= false
--   need_weights  also return the weights; with gradients enabled and an input that requires
--              grad they come from the reference path, so that they are differentiable
--   impl       "fused" (default: the tiled kernel, no [L, S] buffer per head) or "reference"
--              (materialised scores through ordinary autograd ops; for tests; no dropout)
-- Masks may be Lua tables of booleans or numbers. A query row with no allowed key gives 0
-- output and 0 gradients (torch 1.13 gives NaN there).
return function(gm, attention)
  local function to_tensor(x, name)
    if x == nil or x == false or gm.is_tensor(x) then return x or nil end
    if type(x) ~= "table" then
      error("bad argument #4 to 'attention' (" .. name .. " must be a tensor or a table)", 3)
    end
    local function convert(t)
      local out = {}
      for i, e in ipairs(t) do
        if type(e) == "table" then out[i] = convert(e)
        elseif type(e) == "boolean" then out[i] = e and 1 or 0
        else out[i] = e end
      end
      return out
    end
    return gm.tensor(convert(x))
  end

  -- a key-level [B, S] mask seen as [B, 1, 1, S]; a query-level one as [.., L, S] with heads
  local function expand_key(t, B, S) return t:reshape(B, 1, 1, S) end
  local function expand_attn(t, B, L, S)
    if t:dim() == 3 then return t:reshape(B, 1, L, S) end
    return t
  end

  local function reference(q, k, v, o)
    local B, H, L, d = table.unpack(q:shape())
    local S = k:size(3)
    if (o.dropout or 0) > 0 and o.training ~= false then
      error("bad argument #4 to 'attention' (the reference path has no dropout)", 3)
    end
    local scale = o.scale or 1 / math.sqrt(d)
    local weights_mode = o.decay_mode == "weights"
    local s = q:matmul(k, false, true) * scale
    if o.decay and not weights_mode then s = s * o.decay end
    local allowed, bias = gm.ones(B, H, L, S), gm.zeros(B, H, L, S)
    gm.no_grad(function()
      if o.key_mask then allowed = allowed * expand_key(o.key_mask, B, S) end
      if o.attn_mask then allowed = allowed * expand_attn(o.attn_mask, B, L, S) end
      if o.key_bias then bias = bias + expand_key(o.key_bias, B, S) end
      if o.attn_bias then bias = bias + expand_attn(o.attn_bias, B, L, S) end
      for i = 1, bias:numel() do -- a -inf bias forbids, like a 0 in a mask
        if bias:get_flat(i) == -math.huge then
          bias:set_flat(i, 0)
          allowed:set_flat(i, 0)
        end
      end
    end)
    -- forbidden scores sink by 1e30, so exp() gives exactly 0 in any row with an allowed key
    s = s + bias + (allowed - 1) * 1e30
    local row_any = allowed:max(4, true)
    local a = s:softmax(4) * row_any
    if o.decay and weights_mode then
      a = a * o.decay
      if o.renormalize then a = a / (a:sum(4, true) + (1 - row_any)) end
    end
    local out = a:matmul(v)
    if o.need_weights then return out, a end
    return out
  end

  local mask_fields = { "key_mask", "key_bias", "attn_mask", "attn_bias", "decay" }

  return function(q, k, v, opts)
    opts = opts or {}
    if type(opts) ~= "table" then error("bad argument #4 to 'attention' (table expected)", 2) end
    local o = {}
    for key, value in pairs(opts) do o[key] = value end
    for _, name in ipairs(mask_fields) do o[name] = to_tensor(o[name], name) end
    -- weights that gradients must flow through are materialised: take the reference path
    local weights_need_grad = o.need_weights and gm.is_grad_enabled()
        and (q:requires_grad() or k:requires_grad() or v:requires_grad()
          or (o.decay ~= nil and o.decay:requires_grad()))
    if o.impl == nil and weights_need_grad then o.impl = "reference" end
    if o.impl == nil or o.impl == "fused" then return attention(q, k, v, o) end
    if o.impl == "reference" then return reference(q, k, v, o) end
    error("bad argument #4 to 'attention' (impl must be \"fused\" or \"reference\")", 2)
  end
end
