-- GELU's erf is graphmert's own branch-free float32 polynomial (gm_internal.h: vectorised loops
-- instead of a libm call per element); here it meets float64 math.erf on a dense grid, across
-- its seam at |x|/√2 = 1 and its clamp at 4 (scripts/refs/gen_gelu.py made the fixture).
local gm = require "graphmert"
local fixture = require "spec.fixture"

describe("gelu", function()
  local ref = fixture.load("spec/fixtures/refs/gelu_dense.json")

  it("is within float32 rounding of float64 GELU and its derivative over [-12, 12]", function()
    local x = gm.tensor(ref.x):requires_grad(true)
    local y = x:gelu()
    y:backward(gm.ones(#ref.x))
    local values, grads = y:totable(), x:grad():totable()
    local worst_value, worst_grad = 0, 0
    for i = 1, #ref.x do
      -- absolute error against the scale of the value: 1 + |x| covers both tails
      worst_value = math.max(worst_value, math.abs(values[i] - ref.gelu[i]) / (1 + math.abs(ref.x[i])))
      worst_grad = math.max(worst_grad, math.abs(grads[i] - ref.grad[i]))
    end
    -- float32 spacing near 1 is 1.2e-7: a few of them at most
    assert.is_true(worst_value < 3e-7, "gelu off by " .. worst_value)
    assert.is_true(worst_grad < 3e-7, "gelu' off by " .. worst_grad)
  end)

  it("keeps its limits: 0 at 0, x far right, 0 far left, NaN in NaN out", function()
    local y = gm.tensor({ 0, 1e4, -1e4, 0 / 0 }):gelu():totable()
    assert.same({ 0, 1e4, 0 }, { y[1], y[2], -y[3] + 0 })
    assert.is_true(y[4] ~= y[4])
  end)
end)
