-- Every differentiable op against float64 PyTorch references (spec/fixtures/ops.json, made by
-- scripts/refs/gen_op_fixtures.py): outputs and vector-Jacobian products.
local gm = require "graphmert"
local fixture = require "spec.fixture"
local load_fixture, to_tensor = fixture.load, fixture.tensor

-- The same computation in graphmert, by case name (i: inputs, x: index tensors, 1-based).
local ops = {
  add_broadcast = function(i) return i.a + i.b end,
  sub_broadcast = function(i) return i.a - i.b end,
  mul_broadcast = function(i) return i.a * i.b end,
  div = function(i) return i.a / i.b end,
  div_broadcast = function(i) return i.a / i.b end,
  add_scalar = function(i) return i.a + 2.5 end,
  rsub_scalar = function(i) return 2.5 - i.a end,
  mul_scalar = function(i) return i.a * -1.5 end,
  div_scalar = function(i) return i.a / 3 end,
  rdiv_scalar = function(i) return 2 / i.a end,
  pow_scalar = function(i) return i.a ^ 1.5 end,
  square = function(i) return i.a ^ 2 end,
  neg = function(i) return -i.a end,
  exp = function(i) return i.a:exp() end,
  log = function(i) return i.a:log() end,
  sqrt = function(i) return i.a:sqrt() end,
  tanh = function(i) return i.a:tanh() end,
  gelu = function(i) return i.a:gelu() end,
  gelu_tanh = function(i) return i.a:gelu("tanh") end,
  relu = function(i) return i.a:relu() end,
  leaky_relu = function(i) return i.a:leaky_relu(0.1) end,
  sum_dim = function(i) return i.a:sum(2) end,
  sum_all = function(i) return i.a:sum() end,
  mean_dim_keepdim = function(i) return i.a:mean(1, true) end,
  mean_all = function(i) return i.a:mean() end,
  max_dim = function(i) return (i.a:max(2)) end,
  softmax = function(i) return i.a:softmax(2) end,
  softmax_dim0 = function(i) return i.a:softmax(1) end,
  log_softmax = function(i) return i.a:log_softmax(2) end,
  matmul = function(i) return i.a:matmul(i.b) end,
  matmul_batched = function(i) return i.a:matmul(i.b) end,
  matmul_broadcast = function(i) return i.a:matmul(i.b) end,
  matmul_broadcast_a = function(i) return i.a:matmul(i.b) end,
  matmul_trans_b = function(i) return i.a:matmul(i.b, false, true) end,
  matmul_trans_a = function(i) return i.a:matmul(i.b, true, false) end,
  reshape = function(i) return i.a:reshape(3, 4) end,
  transpose = function(i) return i.a:transpose(1, 3) end,
  permute = function(i) return i.a:permute(2, 3, 1) end,
  concat = function(i) return gm.cat({ i.a, i.b }, 2) end,
  narrow = function(i) return i.a:narrow(2, 2, 3) end,
  index_select = function(i, x) return i.a:index_select(1, x.idx) end,
  gather = function(i, x) return i.a:gather(2, x.idx) end,
  layer_norm = function(i) return i.x:layer_norm(i.w, i.b, 1e-5) end,
  layer_norm_plain = function(i) return i.x:layer_norm() end,
  cross_entropy = function(i, x) return i.logits:cross_entropy(x.target) end,
  composite = function(i) return i.x:matmul(i.w):gelu():softmax(2) * i.x end,
}

describe("ops against PyTorch float64 references", function()
  local doc = load_fixture("spec/fixtures/ops.json")
  it("has a graphmert computation for every fixture case", function()
    for _, c in ipairs(doc.cases) do assert.is_function(ops[c.name], c.name) end
  end)
  for _, c in ipairs(doc.cases) do
    it(c.name .. ": output and gradients", function()
      local inputs, index = {}, {}
      for k, enc in pairs(c.inputs) do inputs[k] = to_tensor(enc):requires_grad(true) end
      for k, enc in pairs(c.index) do index[k] = to_tensor(enc) end
      local out = ops[c.name](inputs, index)
      assert.same(c.output.shape, out:shape())
      assert.tensor_near(c.output.data, out, 1e-5, 1e-6)
      local loss = (out * to_tensor(c.cotangent)):sum()
      loss:backward()
      for k, enc in pairs(c.grads) do
        local g = inputs[k]:grad()
        assert.is_not_nil(g, "no gradient for " .. k)
        assert.same(enc.shape, g:shape())
        assert.tensor_near(enc.data, g, 1e-4, 1e-5)
      end
    end)
  end
end)

describe("softmax rows", function()
  it("a contiguous row gives the same bits as the same row read at a stride", function()
    gm.manual_seed(3)
    local x = gm.randn(5, 2003) * 6 -- not a multiple of any vector width
    x:set(-math.huge, 2, 7)
    local columns = x:t() -- row i of x is column i here, read at a stride of 5
    for _, name in ipairs { "softmax", "log_softmax" } do
      local by_rows, by_columns = x[name](x, 2):totable(), columns[name](columns, 1):t():totable()
      for i = 1, 5 do
        for j = 1, 2003 do
          if by_rows[i][j] ~= by_columns[i][j] then
            error(string.format("%s: element (%d, %d) %.9g by rows, %.9g by columns", name, i, j, by_rows[i][j],
              by_columns[i][j]))
          end
        end
      end
    end
  end)
end)
