-- H-GAT relation fusion and index_add: against PyTorch references and finite differences.
local gm = require "graphmert"
local fixture = require "spec.fixture"
local T = fixture.tensor

describe("hgat", function()
  local doc = fixture.load("spec/fixtures/hgat.json")
  for _, c in ipairs(doc.cases) do
    it((c.interleaved and "interleaved (official)" or "concatenated (paper)") .. " a_r: output and gradients", function()
      local x = {}
      for name, e in pairs(c.inputs) do x[name] = T(e):requires_grad(true) end
      local out = gm.hgat(x.tails, x.heads, x.W, x.a, c.rel, c.start, c.count, { interleaved = c.interleaved })
      assert.tensor_near(c.output.data, out, 1e-5, 1e-6)
      ;(out * T(c.cotangent)):sum():backward()
      for name, t in pairs(x) do assert.tensor_near(c.grads[name].data, t:grad(), 1e-4, 1e-5) end
    end)
  end

  it("passes finite-difference checks", function()
    gm.manual_seed(12)
    local tails, heads = gm.randn(3, 3):requires_grad(true), gm.randn(4, 3):requires_grad(true)
    local W, a = (gm.randn(2, 3, 3) * 0.5):requires_grad(true), gm.randn(2, 6):requires_grad(true)
    local ok, report = gm.gradcheck(function(t, h, w, aa)
      return gm.hgat(t, h, w, aa, { 1, 2, 2 }, { 1, 2, 4 }, { 1, 2, 1 }, { interleaved = true })
    end, { tails, heads, W, a })
    assert.is_true(ok, table.concat(report.failures, "\n"))
  end)

  it("refuses relations and head ranges out of range", function()
    local t, h, W, a = gm.ones(1, 2), gm.ones(2, 2), gm.ones(2, 2, 2), gm.ones(2, 4)
    assert.error_matches(function() gm.hgat(t, h, W, a, { 3 }, { 1 }, { 1 }) end,
      "bad argument #5 to 'hgat' %(relation 3 of tail 1 is not a row of W %[1, 2%]%)")
    assert.error_matches(function() gm.hgat(t, h, W, a, { 1 }, { 2 }, { 2 }) end, "heads 2..3 of tail 1 are not rows of heads %[1, 2%]")
    assert.error_matches(function() gm.hgat(t, h, gm.ones(2, 3, 3), a, { 1 }, { 1 }, { 1 }) end, "hgat needs W %[K, H, H%]")
  end)
end)

describe("index_add", function()
  it("adds rows at 1-based indices, repeated indices summing, with gradients", function()
    local base = gm.zeros(3, 2):requires_grad(true)
    local src = gm.tensor { { 1, 2 }, { 3, 4 }, { 5, 6 } }:requires_grad(true)
    local out = gm.index_add(base, { 3, 1, 3 }, src)
    assert.same({ { 3, 4 }, { 0, 0 }, { 6, 8 } }, out:totable())
    ;(out * gm.tensor { { 1, 10 }, { 100, 1000 }, { 2, 20 } }):sum():backward()
    assert.same({ { 1, 10 }, { 100, 1000 }, { 2, 20 } }, base:grad():totable())
    assert.same({ { 2, 20 }, { 1, 10 }, { 2, 20 } }, src:grad():totable())
    assert.error_matches(function() gm.index_add(base, { 4 }, gm.ones(1, 2)) end, "index 4 at position 1 is out of range")
  end)
end)
