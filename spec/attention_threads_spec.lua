-- attention_threads_spec.lua — the attention backward with few (batch, head) pairs splits the
-- query blocks over the threads: the gradients match the one-thread run, and two runs give the
-- same bits (dK and dV are summed per chunk and added in a fixed order).
local gm = require "graphmert"

local function grads(threads, decay_shape)
  local previous = gm.get_num_threads()
  gm.set_num_threads(threads)
  gm.manual_seed(21)
  local B, H, N, d = 1, 2, 300, 16
  local q = gm.randn(B, H, N, d):requires_grad(true)
  local k = gm.randn(B, H, N, d):requires_grad(true)
  local v = gm.randn(B, H, N, d):requires_grad(true)
  local decay = decay_shape and gm.rand(table.unpack(decay_shape)):requires_grad(true)
  local out = gm.attention(q, k, v, { decay = decay })
  out:backward(gm.randn(B, H, N, d))
  gm.set_num_threads(previous)
  local r = { q:grad():totable(), k:grad():totable(), v:grad():totable() }
  if decay then r[4] = decay:grad():totable() end
  return r
end

describe("attention backward over threads", function()
  for name, shape in pairs { ["no decay"] = false, ["a decay per head"] = { 2, 300, 300 },
    ["a shared decay"] = { 300, 300 } } do
    it("matches one thread and repeats bit for bit, with " .. name, function()
      local one, two, again = grads(1, shape), grads(2, shape), grads(2, shape)
      for i = 1, #one do
        assert.tensor_near(one[i], two[i], 1e-4, 1e-5)
        assert.same(two[i], again[i])
      end
    end)
  end
end)
