-- Autograd: every differentiable op against finite differences (at least one row per op of the
-- core's op table, checked below), and the behaviour of the tape (accumulation, no_grad, freed
-- graphs, non-scalar roots).
local gm = require "graphmert"

local function randn(...) return gm.randn(...):requires_grad(true) end
-- values in [0.5, 2]: safe for log, sqrt, division
local function positive(...) return (gm.rand(...) * 1.5 + 0.5):detach():requires_grad(true) end
-- values at least 0.1 away from 0: kinks of relu stay out of the finite-difference window
local function off_zero(...)
  local r = gm.randn(...)
  local t = gm.no_grad(function() return r + (r / (r * r):sqrt()) * 0.1 end)
  return t:detach():requires_grad(true)
end

-- Each row: a name, a function building inputs, the computation, optional tolerances.
local rows = {
  { "add", function() return { randn(3, 4), randn(4) } end, function(a, b) return a + b end },
  { "sub", function() return { randn(2, 3, 4), randn(3, 1) } end, function(a, b) return a - b end },
  { "mul", function() return { randn(3, 1), randn(1, 4) } end, function(a, b) return a * b end },
  { "div", function() return { randn(3, 4), positive(3, 4) } end, function(a, b) return a / b end },
  { "scalar ops", function() return { positive(5) } end,
    function(a) return (2 - a) * 3 + 1 / a - a / 4 end },
  { "add_scalar", function() return { randn(2, 3) } end, function(a) return a + 2.5 end },
  { "mul_scalar", function() return { randn(2, 3) } end, function(a) return a * -1.5 end },
  { "rdiv_scalar", function() return { positive(2, 3) } end, function(a) return 2 / a end },
  { "pow", function() return { positive(2, 3) } end, function(a) return a ^ 1.7 end },
  { "neg", function() return { randn(4) } end, function(a) return -a end },
  { "exp", function() return { randn(3, 3) } end, function(a) return a:exp() end },
  { "log", function() return { positive(3, 3) } end, function(a) return a:log() end },
  { "sqrt", function() return { positive(3, 3) } end, function(a) return a:sqrt() end },
  { "tanh", function() return { randn(3, 3) } end, function(a) return a:tanh() end },
  { "gelu", function() return { randn(4, 5) } end, function(a) return a:gelu() end },
  { "gelu tanh", function() return { randn(4, 5) } end, function(a) return a:gelu("tanh") end },
  { "relu", function() return { off_zero(4, 5) } end, function(a) return a:relu() end },
  { "leaky_relu", function() return { off_zero(4, 5) } end, function(a) return a:leaky_relu(0.2) end },
  { "sum dim", function() return { randn(2, 3, 4) } end, function(a) return a:sum(2) end },
  { "sum all", function() return { randn(3, 4) } end, function(a) return a:sum() end },
  { "mean keepdim", function() return { randn(3, 4) } end, function(a) return a:mean(-1, true) end },
  { "max dim", function() return { randn(3, 5) } end, function(a) return (a:max(2)) end },
  { "max all", function() return { randn(3, 5) } end, function(a) return a:max() end },
  { "softmax", function() return { randn(3, 5) } end, function(a) return a:softmax(2) end },
  { "softmax dim 1", function() return { randn(4, 3) } end, function(a) return a:softmax(1) end },
  { "log_softmax", function() return { randn(3, 5) } end, function(a) return a:log_softmax(2) end },
  { "matmul", function() return { randn(3, 4), randn(4, 5) } end, function(a, b) return a:matmul(b) end },
  { "matmul batched broadcast", function() return { randn(2, 3, 4), randn(4, 5) } end,
    function(a, b) return a:matmul(b) end },
  { "matmul broadcast batch of b", function() return { randn(3, 4), randn(2, 4, 5) } end,
    function(a, b) return a:matmul(b) end },
  { "matmul transposed", function() return { randn(2, 4, 3), randn(5, 4) } end,
    function(a, b) return a:matmul(b, true, true) end },
  { "reshape", function() return { randn(2, 6) } end, function(a) return a:reshape(4, -1) end },
  { "transpose", function() return { randn(2, 3, 4) } end, function(a) return a:transpose(1, 3) end },
  { "permute", function() return { randn(2, 3, 4) } end, function(a) return a:permute(3, 1, 2) end },
  { "cat", function() return { randn(2, 3), randn(2, 2), randn(2, 1) } end,
    function(a, b, c) return gm.cat({ a, b, c }, 2) end },
  { "narrow", function() return { randn(3, 5) } end, function(a) return a:narrow(2, 2, 3) end },
  { "narrow dim 1 (a view)", function() return { randn(5, 3) } end, function(a) return a:narrow(1, 2, 2) end },
  { "index_select", function() return { randn(5, 3) } end,
    function(a) return a:index_select(1, { 5, 1, 3, 1 }) end },
  { "gather", function() return { randn(3, 4) } end,
    function(a) return a:gather(2, { { 1, 4 }, { 2, 2 }, { 3, 1 } }) end },
  { "embedding", function() return { randn(6, 4) } end,
    function(w) return gm.embedding(w, { { 1, 6 }, { 6, 2 } }) end },
  { "layer_norm", function() return { randn(2, 3, 6), randn(6), randn(6) } end,
    function(x, w, b) return x:layer_norm(w, b) end },
  { "cross_entropy", function() return { randn(5, 4) } end,
    function(l) return l:cross_entropy({ 4, 1, -100, 2, 3 }) end },
  { "dropout (fixed mask)", function() return { randn(4, 4) } end,
    function(a) gm.manual_seed(7); return a:dropout(0.3) end },
  { "decay_mask", function() return { gm.tensor { 1.0, 0.3 }:requires_grad(true) } end,
    function(p) return gm.decay_mask(gm.tensor { { 0, 1 }, { 1, 2.5 } }, { lambda = 0.6, p = p:reshape(2, 1, 1) }) end,
    { rtol = 2e-3 } },
  { "attention", function()
      return { randn(1, 2, 3, 2), randn(1, 2, 4, 2), randn(1, 2, 4, 2), (gm.rand(2, 3, 4) + 0.2):requires_grad(true) }
    end,
    function(q, k, v, decay) return gm.attention(q, k, v, { decay = decay, key_mask = { { 1, 1, 1, 0 } } }) end },
  { "hgat", function() return { randn(3, 3), randn(4, 3), (gm.randn(2, 3, 3) * 0.5):requires_grad(true), randn(2, 6) } end,
    function(t, h, w, a) return gm.hgat(t, h, w, a, { 1, 2, 2 }, { 1, 2, 4 }, { 1, 2, 1 }) end },
  { "index_add (repeated rows)", function() return { randn(4, 3), randn(3, 3) } end,
    function(base, src) return gm.index_add(base, { 4, 1, 4 }, src) end },
  { "solve (batched)", function()
      local diagonal = gm.tensor { { 4, 0, 0 }, { 0, 4, 0 }, { 0, 0, 4 } } -- well conditioned
      return { (gm.randn(2, 3, 3) * 0.5 + diagonal):detach():requires_grad(true), randn(2, 3, 2) }
    end,
    function(a, b) return gm.solve(a, b) end },
  { "segment_softmax", function() return { randn(5, 2) } end,
    function(x) return gm.segment_softmax(x, { 2, 1, 2, 3, 2 }, 3) end },
  { "composite", function() return { randn(3, 4), randn(4, 4), randn(4) } end,
    function(x, w, b) return (x:matmul(w) + b):gelu():layer_norm():softmax(2) * x end },
}

describe("gradients by finite differences", function()
  for _, row in ipairs(rows) do
    local name, make, fn, opts = row[1], row[2], row[3], row[4]
    it(name, function()
      gm.manual_seed(42)
      local ok, report = gm.gradcheck(fn, make(), opts)
      assert.is_true(ok, table.concat(report.failures, "\n"))
    end)
  end
end)

describe("the finite-difference rows", function()
  it("cover every op autograd records", function()
    local covered = {}
    for _, row in ipairs(rows) do
      gm.manual_seed(42)
      covered[row[3](table.unpack(row[2]())):grad_fn()] = true
    end
    local missing = {}
    for _, op in ipairs(gm.autograd_ops()) do
      if not covered[op] then missing[#missing + 1] = op end
    end
    assert.are.same({}, missing)
  end)
end)

describe("the tape", function()
  it("accumulates gradients across backward calls until zeroed", function()
    local x = gm.tensor({ 1, 2, 3 }):requires_grad(true)
    ;(x * x):sum():backward()
    ;(x * x):sum():backward()
    assert.tensor_near({ 4, 8, 12 }, x:grad())
    x:zero_grad()
    assert.is_nil(x:grad())
    ;(x * 3):sum():backward()
    assert.tensor_near({ 3, 3, 3 }, x:grad())
  end)

  it("adds overlapping narrow windows of one tensor into its gradient where they land", function()
    -- x is used whole (x·c: the first, full-size contribution) and through three windows, two of
    -- them overlapping, along either dimension; each window's gradient lands on its rows only
    local x = gm.zeros(5, 4):requires_grad(true)
    local c = gm.tensor { { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10, 11, 12 }, { 13, 14, 15, 16 }, { 17, 18, 19, 20 } }
    local loss = (x * c):sum() + x:narrow(1, 2, 3):sum() * 100 + x:narrow(1, 4, 2):sum() * 1000
        + x:narrow(2, 1, 1):sum() * 0.5
    loss:backward()
    local want = {}
    for i = 1, 5 do
      want[i] = {}
      for j = 1, 4 do
        want[i][j] = (i - 1) * 4 + j + ((i >= 2 and i <= 4) and 100 or 0) + (i >= 4 and 1000 or 0) + (j == 1 and 0.5 or 0)
      end
    end
    assert.are.same(want, x:grad():totable())
  end)

  it("adds index_select's rows into the gradient where they land, without an a-sized copy per use", function()
    -- x is used whole, then through selections along either dimension: two without repeats
    -- (added straight into x's pending gradient) and one with a repeat (a full-size contribution)
    local x = gm.zeros(5, 4):requires_grad(true)
    local c = gm.tensor { { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10, 11, 12 }, { 13, 14, 15, 16 }, { 17, 18, 19, 20 } }
    local loss = (x * c):sum() + x:index_select(1, { 4, 2 }):sum() * 100
        + x:index_select(2, { 3, 1, 3 }):sum() * 1000 + x:index_select(2, { 4 }):sum() * 0.5
    loss:backward()
    local want = {}
    for i = 1, 5 do
      want[i] = {}
      for j = 1, 4 do
        want[i][j] = (i - 1) * 4 + j + ((i == 2 or i == 4) and 100 or 0) + (j == 3 and 2000 or j == 1 and 1000 or 0)
            + (j == 4 and 0.5 or 0)
      end
    end
    assert.are.same(want, x:grad():totable())
    -- eight blocks of a large a, as a packed batch reads the decay mask: the blocks' gradients go
    -- into one a-sized gradient (the first makes it), not one a-sized contribution each
    local a = gm.randn(4, 256, 256):requires_grad(true)
    collectgarbage(); collectgarbage()
    local total
    for s = 1, 8 do
      local rows = {}
      for r = s, 256, 8 do rows[#rows + 1] = r end
      local block = a:index_select(2, rows):index_select(3, rows)
      total = total and total + block:sum() * s or block:sum() * s
    end
    collectgarbage(); collectgarbage()
    gm.reset_peak_memory()
    local live, bytes = gm.memory().live, a:numel() * 4
    total:backward()
    local extra = gm.memory().peak - live
    assert.is_true(extra < 1.5 * bytes, "backward's peak: " .. extra .. " bytes for a of " .. bytes)
    local g = a:grad()
    for s = 1, 8 do -- entry (h, i, j) of block s got s when both i and j are among its rows
      assert.equals(s, g:get(1, s, s)) -- 1-based (h, i, j)
      assert.equals(0, g:get(2, s, s % 8 + 1)) -- i in block s, j in the next one: in no block
    end
  end)

  it("sums a broadcast operand's gradient over the broadcast dimensions, in row order", function()
    -- [2, 3, 600] + [600]: every leading dimension summed (the columns in blocks of 256);
    -- + [3, 1]: a dimension kept between summed ones (the general path)
    gm.manual_seed(5)
    local x = gm.randn(2, 3, 600)
    local bias, mid = gm.zeros(600):requires_grad(true), gm.zeros(3, 1):requires_grad(true)
    local g = gm.randn(2, 3, 600)
    local y = x + bias + mid
    y:backward(g)
    local rows, want_bias, want_mid = g:totable(), {}, { { 0 }, { 0 }, { 0 } }
    for j = 1, 600 do
      local acc = 0.0 -- float32 sums in the same order
      for a = 1, 2 do for b = 1, 3 do acc = string.unpack("f", string.pack("f", acc + rows[a][b][j])) end end
      want_bias[j] = acc
    end
    for b = 1, 3 do
      local acc = 0.0
      for a = 1, 2 do for j = 1, 600 do acc = string.unpack("f", string.pack("f", acc + rows[a][b][j])) end end
      want_mid[b][1] = acc
    end
    assert.same(want_bias, bias:grad():totable())
    assert.same(want_mid, mid:grad():totable())
  end)

  it("sums the gradient of a tensor used twice", function()
    local x = gm.tensor({ 2 }):requires_grad(true)
    local y = x * x + x
    y:sum():backward()
    assert.tensor_near({ 5 }, x:grad())
  end)

  it("records nothing inside no_grad and restores the mode after errors", function()
    local x = gm.ones(2):requires_grad(true)
    local y = gm.no_grad(function() return x * 2 end)
    assert.is_false(y:requires_grad())
    assert.is_true(gm.is_grad_enabled())
    assert.has_error(function() gm.no_grad(function() error("inside") end) end)
    assert.is_true(gm.is_grad_enabled())
    local a, b = gm.no_grad(function(p, q) return p + q, p * q end, 2, 3)
    assert.equal(5, a)
    assert.equal(6, b)
  end)

  it("frees the graph after backward unless asked to keep it", function()
    local x = gm.ones(2):requires_grad(true)
    local y = (x * 2):sum()
    y:backward()
    assert.error_matches(function() y:backward() end, "earlier backward freed")
    local z = (x * 2):sum()
    z:backward(nil, true)
    z:backward()
    assert.tensor_near({ 6, 6 }, x:grad())
  end)

  it("needs a scalar root or an explicit gradient", function()
    local x = gm.ones(2, 2):requires_grad(true)
    local y = x * 3
    assert.error_matches(function() y:backward() end, "backward needs a scalar")
    y:backward(gm.ones(2, 2))
    assert.tensor_near({ { 3, 3 }, { 3, 3 } }, x:grad())
    assert.error_matches(function() (x * 1):backward(gm.ones(3)) end, "gradient of size 3 for a tensor of size 2x2")
  end)

  it("reads an explicit gradient without changing it or keeping it as a gradient", function()
    local x = gm.tensor({ 1, 2 }):requires_grad(true)
    local g = gm.tensor({ 3, 4 })
    local y = x + x -- both uses get the root's gradient: the sum must not land in g
    y:backward(g)
    assert.same({ 3, 4 }, g:totable())
    assert.tensor_near({ 6, 8 }, x:grad())
    local leaf = gm.tensor({ 5, 6 }):requires_grad(true)
    leaf:backward(g) -- a leaf root keeps a gradient of its own, not g
    g:fill_(0)
    assert.same({ 3, 4 }, leaf:grad():totable())
    leaf:backward(leaf) -- and not itself
    assert.same({ 8, 10 }, leaf:grad():totable())
    assert.same({ 5, 6 }, leaf:detach():totable())
  end)

  it("gives every leaf the same gradient when the root's is another leaf's gradient", function()
    for _, x_first in ipairs { true, false } do
      local x, z = gm.tensor({ 1, 2 }):requires_grad(true), gm.tensor({ 3, 4 }):requires_grad(true)
      local first = x * 1
      first:backward(gm.tensor({ 1, 1 }))
      local y = x_first and (x + z * 2) or (z * 2 + x)
      y:backward(x:grad()) -- x's gradient is added into while z's is still to come
      assert.same({ 2, 2 }, x:grad():totable())
      assert.same({ 2, 2 }, z:grad():totable())
      local w = x * 3
      w:backward(x:grad():reshape(2, 1):reshape(2)) -- a view of it
      assert.same({ 8, 8 }, x:grad():totable())
    end
  end)

  it("refuses backward on a tensor that does not require grad", function()
    assert.error_matches(function() gm.ones(1):backward() end, "does not require grad")
  end)

  it("detach cuts the history and shares the values", function()
    local x = gm.ones(2):requires_grad(true)
    local y = (x * 2):detach()
    assert.is_false(y:requires_grad())
    assert.is_true(y:is_leaf())
    assert.tensor_near({ 2, 2 }, y)
  end)

  it("names the op that made a tensor", function()
    local x = gm.ones(2):requires_grad(true)
    assert.is_nil(x:grad_fn())
    assert.equal("matmul", x:reshape(1, 2):matmul(gm.ones(2, 1)):grad_fn())
  end)

  it("refuses in-place changes that would corrupt the graph", function()
    local x = gm.ones(2):requires_grad(true)
    assert.error_matches(function() x:fill_(3) end, "leaf that requires grad")
    gm.no_grad(function() x:fill_(3) end)
    assert.tensor_near({ 3, 3 }, x)
    local y = x * 2
    assert.error_matches(function() gm.no_grad(function() y:add_(1) end) end, "recorded graph")
  end)

  it("refuses a backward whose values were changed in place after the forward read them", function()
    local a, x = gm.tensor({ 1, 2 }):requires_grad(true), gm.tensor { 3, 4 }
    local c = (a * x):sum()
    x:fill_(100) -- a constant the product's backward reads
    assert.error_matches(function() c:backward() end, "backward of mul reads its argument 2, which was changed in place")
    assert.is_nil(a:grad(), "a refused backward left a gradient")
    local w = gm.tensor({ 1, 2 }):requires_grad(true)
    local y = (w * w):sum()
    w:detach():fill_(100) -- a leaf, through a view that shares its values
    assert.error_matches(function() y:backward() end, "backward of mul reads its argument 1")
    local lin = gm.nn.Linear(2, 1)
    local opt = gm.optim.sgd(lin:parameters(), { lr = 0.1 })
    lin(gm.ones(3, 2)):sum():backward() -- (gradients for the step below)
    local loss = (lin(gm.ones(3, 2)) ^ 2):sum()
    opt:step() -- the weights changed between forward and backward
    assert.error_matches(function() loss:backward() end, "backward of matmul reads its argument 2")
    local e = gm.tensor({ 1, 2 }):requires_grad(true)
    local r = e:exp()
    local s = r:sum()
    r:detach():fill_(0)
    assert.error_matches(function() s:backward() end, "backward of exp reads its output, which was changed in place")
    local rows, idx = gm.tensor({ { 1 }, { 2 } }):requires_grad(true), gm.tensor { 1, 2 }
    local picked = rows:index_select(1, idx):sum()
    idx:fill_(1000) -- an index the op keeps (its backward scatters by it)
    assert.error_matches(function() picked:backward() end, "backward of index_select reads the index it was given")
    -- a change to values no backward reads, or after backward, is fine
    local z, q, one = gm.tensor({ 1, 2 }):requires_grad(true), gm.tensor { 3, 4 }, gm.tensor { 1, 1 }
    local t = (z * q):sum() + (z + one):sum()
    one:fill_(7) -- (an addition's backward reads neither value)
    t:backward()
    q:fill_(1)
    assert.tensor_near({ 4, 5 }, z:grad())
  end)

  it("gives x^0 a zero gradient, at 0 too (not 0 times infinity)", function()
    local a = gm.tensor({ 0, 2 }):requires_grad(true)
    local zeroth = (a ^ 0):sum()
    zeroth:backward()
    assert.tensor_near({ 0, 0 }, a:grad())
  end)

  it("handles a deep chain without recursion limits", function()
    local x = gm.ones(1):requires_grad(true)
    local y = x
    for _ = 1, 20000 do y = y + 0 end
    y:sum():backward()
    assert.tensor_near({ 1 }, x:grad())
  end)
end)

describe("gradcheck", function()
  it("reports a gradient that is wrong", function()
    -- detach hides half of the derivative of a²: analytic a, numeric 2a
    local ok, report = gm.gradcheck(function(a) return a * a:detach() end, { (gm.rand(3) + 1):requires_grad(true) })
    assert.is_false(ok)
    assert.is_true(#report.failures > 0)
  end)
end)
