-- attention_bits.lua — the fused attention's outputs and gradients, for cases that take each of
-- its paths (per-head and shared decay, weights mode with and without renormalising, masks and
-- biases, dropout, scores kept for backward, few (batch, head) pairs so that backward splits the
-- query blocks), written to one safetensors file. Run it with two builds and compare the files
-- byte for byte: a change to the kernels that is meant to keep the float32 results must leave
-- them identical (`cmp`), which a loss or a tolerance cannot show.
--   graphmert scripts/bench/attention_bits.lua OUT.safetensors [threads=2] [precision=highest]
local gm = require "graphmert"
local safetensors = require "graphmert.safetensors"

local path = arg[1] or error("usage: graphmert scripts/bench/attention_bits.lua OUT.safetensors [threads] [precision]")
gm.set_num_threads(math.tointeger(tonumber(arg[2]) or 2))
gm.set_float32_matmul_precision(arg[3] or "highest")

local tensors = {}

-- one case: q, k, v [B, H, L, d] from the seed; extra(H, L) gives the options and the tensors
-- whose gradients are written too
local function case(name, B, H, L, d, extra, keep)
  gm.manual_seed(#name * 7919 + L)
  local q = gm.randn(B, H, L, d):requires_grad(true)
  local k = gm.randn(B, H, L, d):requires_grad(true)
  local v = gm.randn(B, H, L, d):requires_grad(true)
  local opts, leaves = extra(B, H, L)
  gm.set_attention_keep_scores(keep or false)
  local out = gm.attention(q, k, v, opts)
  gm.set_attention_keep_scores(false)
  out:backward(gm.randn(B, H, L, d))
  tensors[name .. ".out"] = out
  tensors[name .. ".dq"], tensors[name .. ".dk"], tensors[name .. ".dv"] = q:grad(), k:grad(), v:grad()
  for what, t in pairs(leaves or {}) do tensors[name .. ".d" .. what] = t:grad() end
end

local function decay(shape_fn)
  return function(_, H, L)
    local f = gm.rand(table.unpack(shape_fn(H, L))):requires_grad(true)
    return { decay = f, decay_mode = "scores" }, { decay = f }
  end
end

case("per_head_decay", 4, 2, 1000, 64, decay(function(H, L) return { H, L, L } end))
case("per_head_decay_kept", 4, 2, 1000, 64, decay(function(H, L) return { H, L, L } end), true)
case("shared_decay", 2, 3, 700, 32, decay(function(_, L) return { L, L } end))
case("many_heads", 2, 8, 300, 64, decay(function(H, L) return { H, L, L } end))
case("weights", 1, 2, 900, 64, function(_, H, L)
  local f = gm.rand(H, L, L):requires_grad(true)
  return { decay = f, decay_mode = "weights" }, { decay = f }
end)
case("weights_renormalized", 1, 2, 900, 64, function(_, H, L)
  local f = gm.rand(H, L, L):requires_grad(true)
  return { decay = f, decay_mode = "weights", renormalize = true }, { decay = f }
end)
-- a 0/1 matrix, ones with probability `allowed`, from a fixed sequence
local function mask(rows, cols, allowed)
  local x, t = 12345, {}
  for r = 1, rows do
    t[r] = {}
    for c = 1, cols do
      x = (1103515245 * x + 12345) % 2147483648
      t[r][c] = x / 2147483648 < allowed and 1 or 0
    end
  end
  return gm.tensor(t)
end
case("masks_dropout", 2, 4, 530, 64, function(B, H, L)
  local key_mask, attn_mask = mask(B, L, 0.8), mask(L, L, 0.5)
  local key_bias = gm.randn(B, L):requires_grad(true)
  local f = gm.rand(H, L, L):requires_grad(true)
  return { decay = f, decay_mode = "scores", key_mask = key_mask, attn_mask = attn_mask, key_bias = key_bias,
           dropout = 0.1, training = true }, { decay = f, key_bias = key_bias }
end)

safetensors.save(path, tensors)
local count = 0
for _ in pairs(tensors) do count = count + 1 end
print(string.format("%d tensors written to %s", count, path))
