-- Tensors: constructors, shapes, element access, broadcasting, views, printing, random numbers
-- and threads.
local gm = require "graphmert"

describe("constructors", function()
  it("builds from nested tables and reads back", function()
    local t = gm.tensor { { 1, 2, 3 }, { 4, 5, 6 } }
    assert.same({ 2, 3 }, t:shape())
    assert.equal(2, t:dim())
    assert.equal(6, t:numel())
    assert.same({ { 1, 2, 3 }, { 4, 5, 6 } }, t:totable())
    assert.equal(6, t:get(2, 3))
    assert.equal(5, t:get_flat(5))
  end)

  it("makes scalars, zeros, ones, full and ranges", function()
    local s = gm.tensor(3.5)
    assert.same({}, s:shape())
    assert.equal(3.5, s:item())
    assert.same({ 0, 0 }, gm.zeros(2):totable())
    assert.same({ { 1, 1 } }, gm.ones({ 1, 2 }):totable())
    assert.same({ 7, 7 }, gm.full(7, 2):totable())
    assert.same({ 0, 1, 2, 3 }, gm.arange(4):totable())
    assert.same({ 1, 3 }, gm.arange(1, 5, 2):totable())
    assert.same({}, gm.arange(0):totable())
  end)

  it("supports 8 dimensions and empty tensors", function()
    local t = gm.ones(1, 2, 1, 2, 1, 2, 1, 2)
    assert.equal(8, t:dim())
    assert.equal(16, t:sum():item())
    local e = gm.zeros(0, 3)
    assert.equal(0, e:numel())
    assert.same({ 3 }, e:sum(1):shape())
  end)

  it("copies a tensor without its history", function()
    local x = gm.ones(2):requires_grad(true)
    local c = gm.tensor(x * 2)
    assert.is_false(c:requires_grad())
    assert.same({ 2, 2 }, c:totable())
  end)
end)

describe("arithmetic", function()
  local a = gm.tensor { { 1, 2 }, { 3, 4 } }
  it("broadcasts like NumPy", function()
    assert.same({ { 11, 22 }, { 13, 24 } }, (a + gm.tensor { 10, 20 }):totable())
    assert.same({ { 0, 1 }, { 1, 2 } }, (a - gm.tensor { { 1 }, { 2 } }):totable())
    assert.same({ 2, 2, 3 }, (gm.ones(2, 1, 3) * gm.ones(2, 1)):shape())
  end)
  it("takes numbers on either side", function()
    assert.same({ { 2, 3 }, { 4, 5 } }, (a + 1):totable())
    assert.same({ { 0, -1 }, { -2, -3 } }, (1 - a):totable())
    assert.same({ { 3, 6 }, { 9, 12 } }, (3 * a):totable())
    assert.same({ { 0.5, 1 }, { 1.5, 2 } }, (a / 2):totable())
    assert.same({ { 12, 6 }, { 4, 3 } }, (12 / a):totable())
    assert.same({ { 1, 4 }, { 9, 16 } }, (a ^ 2):totable())
    assert.same({ { -1, -2 }, { -3, -4 } }, (-a):totable())
  end)
  it("reduces", function()
    assert.same({ 4, 6 }, a:sum(1):totable())
    assert.same({ { 3 }, { 7 } }, a:sum(2, true):totable())
    assert.equal(10, a:sum():item())
    assert.equal(2.5, a:mean():item())
    local v, i = gm.tensor { { 1, 5, 2 }, { 7, 0, 7 } }:max(2)
    assert.same({ 5, 7 }, v:totable())
    assert.same({ 2, 1 }, i:totable())
    assert.equal(4, a:max():item())
  end)
  it("takes negative dimensions from the end", function()
    assert.same(a:sum(2):totable(), a:sum(-1):totable())
  end)
  it("keeps softmax finite for large logits and gives NaN for an all -inf row", function()
    local s = gm.tensor { { 1000, 1000 }, { -math.huge, -math.huge } }:softmax(2)
    local t = s:totable()
    assert.same({ 0.5, 0.5 }, t[1])
    assert.is_true(t[2][1] ~= t[2][1])
  end)
  it("passes a NaN on as PyTorch does (max, sum, softmax, relu, tanh), never as a number", function()
    local x = gm.tensor { { 1, 0 / 0, 3 }, { -4, 5, 6 } }
    local function nan_pattern(t)
      local out = {}
      for i = 1, t:numel() do out[i] = t:get_flat(i) ~= t:get_flat(i) end
      return out
    end
    assert.same({ true, false }, nan_pattern(x:max(2)))
    assert.same({ true, false }, nan_pattern(x:sum(2)))
    assert.same({ true, true, true, false, false, false }, nan_pattern(x:softmax(2)))
    assert.same({ false, true, false, false, false, false }, nan_pattern(x:relu()))
    assert.same({ false, true, false, false, false, false }, nan_pattern(x:tanh()))
  end)
end)

describe("shapes and views", function()
  it("reshapes without copying", function()
    local a = gm.arange(6)
    local b = a:reshape(2, 3)
    gm.no_grad(function() b:set(42, 1, 1) end)
    assert.equal(42, a:get(1))
    assert.same({ 3, 2 }, a:view(-1, 2):shape())
  end)
  it("reshapes and detaches views of views at the right offset", function()
    local a = gm.arange(12):reshape(3, 4)
    local row = a:narrow(1, 2, 1)
    assert.same({ 4, 5, 6, 7 }, row:reshape(4):totable())
    assert.same({ { 8, 9, 10, 11 } }, a:narrow(1, 3, 1):detach():totable())
    assert.same({ { 8, 9 }, { 10, 11 } }, a:narrow(1, 3, 1):reshape(2, 2):totable())
  end)
  it("transposes, permutes, concatenates and narrows", function()
    local a = gm.tensor { { 1, 2, 3 }, { 4, 5, 6 } }
    assert.same({ { 1, 4 }, { 2, 5 }, { 3, 6 } }, a:t():totable())
    assert.same({ 3, 2 }, a:permute(2, 1):shape())
    assert.same({ { 1, 2, 3, 1, 2, 3 }, { 4, 5, 6, 4, 5, 6 } }, gm.cat({ a, a }, 2):totable())
    assert.same({ { 2, 3 }, { 5, 6 } }, a:narrow(2, 2, 2):totable())
    assert.same({ { 4, 5, 6 } }, a:narrow(1, 2, 1):totable())
  end)
  it("permutes any dimensions as element-by-element indexing does", function()
    -- shapes with more rows than a task's block (64) so that the odometer wraps in every
    -- dimension, and permutations that keep or move the last dimension
    local cases = {
      { { 3, 70, 2, 5 }, { 3, 1, 4, 2 } }, { { 3, 70, 2, 5 }, { 2, 4, 1, 3 } },
      { { 2, 33, 3, 2, 4 }, { 3, 1, 4, 2, 5 } }, { { 2, 33, 3, 2, 4 }, { 5, 4, 3, 2, 1 } },
      { { 130 }, { 1 } }, { { 1, 1, 7 }, { 3, 2, 1 } },
    }
    for _, c in ipairs(cases) do
      local shape, perm = c[1], c[2]
      local n = 1
      for _, s in ipairs(shape) do n = n * s end
      local a = gm.arange(n):reshape(table.unpack(shape))
      local flat = a:permute(table.unpack(perm)):reshape(n):totable()
      local out_shape = {}
      for d, p in ipairs(perm) do out_shape[d] = shape[p] end
      for i = 0, n - 1 do -- out index i → its multi-index → a's flat index
        local rest, src, at = i, 0, {}
        for d = #out_shape, 1, -1 do
          at[perm[d]] = rest % out_shape[d]
          rest = rest // out_shape[d]
        end
        for d = 1, #shape do src = src * shape[d] + at[d] end
        assert.equal(src, flat[i + 1])
      end
    end
  end)
  it("selects and gathers with 1-based indices", function()
    local a = gm.tensor { { 1, 2 }, { 3, 4 }, { 5, 6 } }
    assert.same({ { 5, 6 }, { 1, 2 } }, a:index_select(1, { 3, 1 }):totable())
    assert.same({ { 2 }, { 3 }, { 6 } }, a:gather(2, gm.tensor { { 2 }, { 1 }, { 2 } }):totable())
    assert.same({ 2, 2, 2 }, gm.embedding(a, { { 1, 2 }, { 3, 3 } }):shape())
  end)

  it("top_sums: the k best sums of index groups, best first, equal sums in group order", function()
    local src = gm.tensor { 0.5, -1, 2, 0.25, 3, -2 }
    -- groups: {1,2} = -0.5, {3,4} = 2.25, {5,6} = 1, {3,3} = 4, {4,2} = -0.75, {1,4} = 0.75, {4,1} = 0.75
    local index = { 1, 2, 3, 4, 5, 6, 3, 3, 4, 2, 1, 4, 4, 1 }
    local values, groups = src:top_sums(index, 2, 4)
    assert.same({ 4, 2.25, 1, 0.75 }, values:totable())
    assert.same({ 4, 2, 3, 6 }, groups:totable())
    values, groups = src:top_sums(index, 7, 5) -- two groups, fewer than k
    assert.same({ 1, 2 }, groups:totable())
    assert.same({ 4.75, 2.75 }, values:totable())
    -- against sorting all sums, on random data
    gm.manual_seed(7)
    local big = gm.randn(50)
    local idx, sums = {}, {}
    for g = 1, 400 do
      local s = 0
      for j = 1, 3 do
        local at = (g * 7 + j * 13) % 50 + 1
        idx[#idx + 1] = at
        s = s + big:get_flat(at)
      end
      sums[g] = { s, g }
    end
    table.sort(sums, function(x, y) return x[1] > y[1] or (x[1] == y[1] and x[2] < y[2]) end)
    values, groups = big:top_sums(idx, 3, 10)
    for i = 1, 10 do
      assert.near(sums[i][1], values:totable()[i], 1e-5)
      assert.equal(sums[i][2], groups:totable()[i])
    end
  end)
  it("sum_set: a set of candidates prepared once gives top_sums's answer, ties and all", function()
    local src = gm.tensor { 0.5, -1, 2, 0.25, 3, -2 }
    local set = gm.sum_set({ 1, 2, 3, 4, 5, 6, 3, 3, 4, 2, 1, 4, 4, 1 }, 2)
    assert.equal(7, #set)
    local values, groups = set:top(src, 4)
    assert.same({ 4, 2.25, 1, 0.75 }, values:totable())
    assert.same({ 4, 2, 3, 6 }, groups:totable()) -- {1,4} and {4,1} tie: the lower number first
    -- random sets and values with many ties (quarter steps), every width and k
    math.randomseed(5)
    for _ = 1, 200 do
      local V, width, n = math.random(1, 40), math.random(1, 4), math.random(1, 300)
      local x, index = {}, {}
      for i = 1, V * width do x[i] = math.random(-20, 0) / 4 end
      for _ = 1, n do
        for a = 1, width do index[#index + 1] = (a - 1) * V + math.random(1, V) end
      end
      local t, it = gm.tensor(x), gm.tensor(index)
      local s = gm.sum_set(it, width)
      for _, k in ipairs { 1, 3, n + 2 } do
        local v1, g1 = t:top_sums(it, width, k)
        local v2, g2 = s:top(t, k)
        assert.same(v1:totable(), v2:totable())
        assert.same(g1:totable(), g2:totable())
      end
    end
  end)

  it("multiplies matrices like a plain triple loop", function()
    gm.manual_seed(3)
    local a, b = gm.randn(5, 7), gm.randn(7, 4)
    local c = a:matmul(b)
    local at, bt = a:totable(), b:totable()
    for i = 1, 5 do
      for j = 1, 4 do
        local s = 0
        for k = 1, 7 do s = s + at[i][k] * bt[k][j] end
        assert.near(s, c:get(i, j), 1e-5)
      end
    end
    assert.tensor_near(c, a:t():matmul(b, true, false), 1e-6, 1e-6)
    assert.tensor_near(c, a:matmul(b:t(), false, true), 1e-6, 1e-6)
  end)
end)

describe("printing", function()
  it("prints values and a footer with the size", function()
    local s = tostring(gm.tensor { { 1, 2 }, { 3, 4 } })
    assert.matches("1%s+2\n%s+3%s+4\n%[graphmert.Tensor of size 2x2%]$", s)
    assert.matches("requires_grad", tostring(gm.ones(1):requires_grad(true)))
    assert.matches("0.5000", tostring(gm.tensor { 0.5, 1 }))
    assert.matches("e%+", tostring(gm.tensor { 1e-5, 1e5 }))
    assert.matches("%(2,.,.%) = ", tostring(gm.zeros(2, 2, 2)))
    assert.matches("size scalar", tostring(gm.tensor(1)))
  end)
  it("elides the middle of large tensors", function()
    local s = tostring(gm.zeros(100, 100))
    assert.matches("%.%.%.", s)
    assert.is_true(#s < 2000)
  end)
  it("shows nan and inf", function()
    local s = tostring(gm.tensor { 0 / 0, math.huge, 1.5 })
    assert.matches("nan", s)
    assert.matches("inf", s)
  end)
end)

describe("random numbers", function()
  it("gives the same bits for the same seed", function()
    gm.manual_seed(99)
    local a = gm.randn(50):totable()
    local d1 = gm.ones(50):dropout(0.5):totable()
    gm.manual_seed(99)
    assert.same(a, gm.randn(50):totable())
    assert.same(d1, gm.ones(50):dropout(0.5):totable())
  end)
  it("saves and restores the generator state", function()
    local state = gm.get_rng_state()
    local a = gm.rand(10):totable()
    gm.set_rng_state(state)
    assert.same(a, gm.rand(10):totable())
  end)
  it("draws with the right moments", function()
    gm.manual_seed(5)
    local n = gm.randn(100000)
    assert.near(0, n:mean():item(), 0.02)
    assert.near(1, (n * n):mean():item(), 0.02)
    local u = gm.rand(100000)
    assert.near(0.5, u:mean():item(), 0.01)
    assert.is_true(u:max():item() < 1)
  end)
  it("drops out the requested share and rescales the rest", function()
    local y = gm.ones(100000):dropout(0.25)
    local kept = (y:sum():item()) / (1 / 0.75)
    assert.near(75000, kept, 1000)
    assert.same({ 1, 1 }, gm.ones(2):dropout(0.9, false):totable())
  end)
end)

describe("threads", function()
  it("sets one count for BLAS and the core and gives the same results", function()
    gm.manual_seed(8)
    local a, b = gm.randn(300, 200), gm.randn(200, 100)
    local before = gm.get_num_threads()
    gm.set_num_threads(1)
    assert.equal(1, gm.get_num_threads())
    local one = (a:matmul(b):softmax(2) + a:sum()):totable()
    gm.set_num_threads(2)
    local two = (a:matmul(b):softmax(2) + a:sum()):totable()
    gm.set_num_threads(before)
    assert.tensor_near(one, two, 1e-6, 1e-7)
  end)
end)
