-- The spatial decay mask f = λ^GELU(√(sp + offset) − p) and the DecayMask module.
local gm = require "graphmert"

local function column(values)
  local rows = {}
  for i, v in ipairs(values) do
    rows[i] = {}
    for j = 1, #values do rows[i][j] = v end
  end
  return gm.tensor(rows)
end

describe("decay_mask", function()
  it("reproduces the official reference table (λ = 0.6, p = 1, offset 1) to 1e-6", function()
    local hops = { 0, 1, 2, 3, 4, 5, 10, 20, 50, 127, 129 }
    local expected = { 1.0, 0.869545, 0.750386, 0.650652, 0.569449, 0.503617, 0.309980, 0.160452,
      0.043404, 0.005151, 0.004925 }
    local f = gm.decay_mask(column(hops), { lambda = 0.6, p = 1, offset = 1 })
    for i = 1, #hops do assert.near(expected[i], f:get(i, 1), 1e-6) end
  end)

  it("shifts by one row under the paper's convention (offset 0)", function()
    local f = gm.decay_mask(column { 0, 1, 2 }, { lambda = 0.6, p = 1, offset = 0 })
    assert.near(1.084420, f:get(1, 1), 1e-6)
    assert.near(1.0, f:get(2, 1), 1e-6)
    assert.near(0.869545, f:get(3, 1), 1e-6)
  end)

  it("gives [H, N, N] for one p per head and [N, N] for a shared p", function()
    local sp = gm.leafy_chain { roots = 4, leaves = 2 }:distances()
    assert.same({ 12, 12 }, gm.decay_mask(sp, { lambda = 0.6 }):shape())
    assert.same({ 3, 12, 12 }, gm.decay_mask(sp, { lambda = 0.6, p = gm.tensor { 1, 2, 3 } }):shape())
    assert.same({ 2, 12, 12 }, gm.decay_mask(sp, { lambda = 0.6, p = gm.ones(2, 1, 1) }):shape())
    local per_head = gm.decay_mask(sp, { lambda = 0.6, p = gm.tensor { 1, 0.5 } })
    local shared = gm.decay_mask(sp, { lambda = 0.6, p = 0.5 })
    assert.tensor_near(shared, per_head:narrow(1, 2, 1):reshape(12, 12), 1e-7, 0)
  end)

  it("is all ones with lambda = false, λ = 0.6 when none is named, and zero for unreachable pairs", function()
    local sp = gm.tensor { { 0, math.huge }, { 3, 0 } }
    assert.same({ { 1, 1 }, { 1, 1 } }, gm.decay_mask(sp, { lambda = false }):totable())
    assert.same(gm.decay_mask(sp, { lambda = 0.6 }):totable(), gm.decay_mask(sp, {}):totable())
    local f = gm.decay_mask(sp, { lambda = 0.6 }):totable()
    assert.equal(0, f[1][2])
  end)

  it("uses the tanh GELU when asked", function()
    local f = gm.decay_mask(column { 3 }, { lambda = 0.6, gelu = "tanh" }):get(1, 1)
    local x = math.sqrt(4) - 1
    local gelu = 0.5 * x * (1 + math.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ^ 3)))
    assert.near(0.6 ^ gelu, f, 1e-6)
  end)

  it("matches the direct formula for non-integer distances", function()
    local sp = gm.tensor { { 0.5, 2.25 }, { 7.75, 0 } }
    local f = gm.decay_mask(sp, { lambda = 0.8, p = 0.3, offset = 1 }):totable()
    local function ref(s)
      local x = math.sqrt(s + 1) - 0.3
      local erf_arg = x / math.sqrt(2)
      -- Φ through the complementary error function of Lua's math: use a series-free identity
      local t = 1 / (1 + 0.3275911 * math.abs(erf_arg))
      local y = 1 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * math.exp(-erf_arg * erf_arg)
      local erf = erf_arg >= 0 and y or -y
      return 0.8 ^ (0.5 * x * (1 + erf))
    end
    assert.near(ref(2.25), f[1][2], 2e-6)
    assert.near(ref(7.75), f[2][1], 2e-6)
  end)

  it("has the right gradient with respect to p, per head (finite differences)", function()
    local sp = gm.leafy_chain { roots = 5, leaves = 2 }:shortest_paths()
    local p = gm.tensor { 1.0, 0.3, 2.0 }:requires_grad(true)
    local ok, report = gm.gradcheck(function(q) return gm.decay_mask(sp, { lambda = 0.6, p = q }) end, { p },
      { eps = 1e-2, rtol = 2e-3, atol = 1e-3 })
    assert.is_true(ok, table.concat(report.failures, "\n"))
    local shared = gm.tensor(0.7):requires_grad(true)
    local irregular = gm.tensor { { 0, 1.5 }, { 2.5, 0 } }
    ok, report = gm.gradcheck(function(q) return gm.decay_mask(irregular, { lambda = 0.4, p = q, gelu = "tanh" }) end,
      { shared }, { eps = 1e-2, rtol = 2e-3, atol = 1e-3 })
    assert.is_true(ok, table.concat(report.failures, "\n"))
  end)

  it("learns distances too: a row of them, the gradient by finite differences", function()
    local d = gm.tensor { { 0.5, 1.25, 3.0, 0.2 } }:requires_grad(true)
    local p = gm.tensor { 1.0, 0.3 }:reshape(2, 1, 1):requires_grad(true)
    local f = gm.decay_mask(d, { lambda = 0.6, p = p, offset = 0 })
    assert.same({ 2, 1, 4 }, f:shape())
    local x = math.sqrt(1.25) - 0.3
    local gelu = gm.tensor(x):gelu():item()
    assert.near(0.6 ^ gelu, f:get(2, 1, 2), 2e-6)
    local ok, report = gm.gradcheck(function(dd, pp) return gm.decay_mask(dd, { lambda = 0.6, p = pp, offset = 0 }) end,
      { d, p }, { eps = 1e-3, rtol = 5e-3, atol = 1e-3 })
    assert.is_true(ok, table.concat(report.failures, "\n"))
    -- no decay: ones, and no gradient to learn from
    local fresh = gm.tensor { { 0.5, 1.25, 3.0, 0.2 } }:requires_grad(true)
    local ones = gm.decay_mask(fresh, { lambda = false, p = p, offset = 0 })
    ones:sum():backward()
    assert.same({ { 0, 0, 0, 0 } }, fresh:grad():totable())
  end)

  it("refuses bad λ, p and distances", function()
    local sp = gm.zeros(2, 2)
    assert.error_matches(function() gm.decay_mask(sp, { lambda = 1.5 }) end, "lambda must be in %(0, 1%]")
    assert.error_matches(function() gm.decay_mask(sp, { lambda = 0 }) end, "lambda must be in %(0, 1%]")
    assert.error_matches(function() gm.decay_mask(sp, { lambda = 0.6, p = 0 / 0 }) end, "p must be finite")
    assert.error_matches(function() gm.decay_mask(sp, { lambda = 0.6, p = gm.ones(2, 2) }) end, "p must be a scalar, %[H%] or %[H, 1, 1%]")
    assert.error_matches(function() gm.decay_mask(gm.tensor { { -1 } }, { lambda = 0.6 }) end, "distance %-1 at position 1 is not >= 0")
    assert.error_matches(function() gm.decay_mask(gm.zeros(2, 2, 2), { lambda = 0.6 }) end, "distances must be a matrix %(got 2x2x2%)")
    assert.error_matches(function() gm.decay_mask(sp, { lambda = true }) end, "lambda")
    assert.error_matches(function() gm.decay_mask(sp, { lambda = 0.6, offset = -1 }) end, "offset must be finite and >= 0")
    assert.error_matches(function() gm.decay_mask(sp, { lambda = 0.6, gelu = "relu" }) end, "gelu must be")
    assert.error_matches(function() gm.decay_mask(sp, { lambda = 0.6, offset = "x" }) end,
      "bad argument #2 to 'decay_mask' %(offset must be a number%)")
  end)
end)

describe("nn.DecayMask", function()
  it("owns one p per head as sp_param [H, 1, 1], initialised at init_p", function()
    local m = gm.nn.DecayMask { heads = 4, lambda = 0.6, init_p = 1.0 }
    local sd = m:state_dict()
    assert.same({ "sp_param" }, (function() local k = {} for name in pairs(sd) do k[#k + 1] = name end return k end)())
    assert.same({ 4, 1, 1 }, sd.sp_param:shape())
    assert.equal(1, #m:parameters())
    local sp = gm.leafy_chain { roots = 8, leaves = 3 }:distances()
    local f = m(sp)
    assert.same({ 4, 32, 32 }, f:shape())
    assert.near(0.869545, f:get(2, 1, 2), 1e-6)
  end)

  it("learns p: the gradient reaches sp_param", function()
    local m = gm.nn.DecayMask { heads = 2, lambda = 0.6 }
    local sp = gm.leafy_chain { roots = 6, leaves = 2 }:distances()
    m(sp):sum():backward()
    local g = m.sp_param:grad()
    assert.same({ 2, 1, 1 }, g:shape())
    assert.is_true(g:get(1, 1, 1) > 0) -- a larger p raises every mask value
  end)

  it("supports the design notes' variant: one shared p at 0 on plain hop counts", function()
    local m = gm.nn.DecayMask { per_head = false, init_p = 0, offset = 0, lambda = 0.6 }
    local f = m(gm.leafy_chain { roots = 3, leaves = 1 }:distances())
    assert.same({ 6, 6 }, f:shape())
    assert.same({}, m.sp_param:shape())
  end)

  it("turns the decay off with lambda = false", function()
    local m = gm.nn.DecayMask { heads = 2, lambda = false }
    local f = m(gm.leafy_chain { roots = 2, leaves = 1 }:distances())
    assert.equal(f:numel(), f:sum():item())
  end)
end)
