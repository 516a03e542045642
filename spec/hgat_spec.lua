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

describe("hgat with per-occurrence dropout", function()
  -- three occurrences (relation, start): (1, 1) with tails 1-2, (1, 3) with tails 3-4, (2, 4) with
  -- tails 5-6; two heads each, so that a_r has a gradient
  local H, p = 4, 0.5
  local rel, start, count = { 1, 1, 1, 1, 2, 2 }, { 1, 1, 3, 3, 4, 4 }, { 2, 2, 2, 2, 2, 2 }
  local occurrences = { { 1, 2 }, { 3, 4 }, { 5, 6 } }
  gm.manual_seed(3)
  local tails0, heads0 = gm.randn(6, H), gm.randn(5, H)
  local W0, a0, cot = gm.randn(2, H, H), gm.randn(2, 2 * H), gm.randn(6, H)

  -- the op with dropout (seeded: the same masks on every call) → output and input gradients
  local function run(rows)
    local x = { tails = tails0:index_select(1, rows):requires_grad(true), heads = heads0:clone():requires_grad(true),
      W = W0:clone():requires_grad(true), a = a0:clone():requires_grad(true) }
    local r, s, c = {}, {}, {}
    for i, row in ipairs(rows) do r[i], s[i], c[i] = rel[row], start[row], count[row] end
    gm.manual_seed(7)
    local out = gm.hgat(x.tails, x.heads, x.W, x.a, r, s, c, { interleaved = true, dropout = p })
    ;(out * cot:index_select(1, rows)):sum():backward()
    return out, x
  end

  -- an occurrence's masks, read off the zero pattern of W's and a's gradients when it runs alone
  local function masks(o)
    local _, x = run(occurrences[o])
    local r = rel[occurrences[o][1]]
    local function pattern(g) -- 1 where the gradient is not zero
      local t = {}
      for i, v in ipairs(g:reshape(-1):totable()) do t[i] = v ~= 0 and 1 or 0 end
      return gm.tensor(t):reshape(g:shape())
    end
    return pattern(x.W:grad():narrow(1, r, 1)), pattern(x.a:grad():narrow(1, r, 1))
  end

  it("equals H-GAT on each occurrence's own masked copy of W_r and a_r, gradients included", function()
    local out, x = run { 1, 2, 3, 4, 5, 6 }
    local mW, ma = {}, {}
    for o = 1, 3 do mW[o], ma[o] = masks(o) end
    assert.is_true(((mW[1] - mW[2]) ^ 2):sum():item() > 0, "two occurrences of relation 1 share a mask")
    local y = { tails = tails0:clone():requires_grad(true), heads = heads0:clone():requires_grad(true),
      W = W0:clone():requires_grad(true), a = a0:clone():requires_grad(true) }
    local occurrence_rel = { 1, 1, 2 }
    local W = y.W:index_select(1, occurrence_rel) * gm.cat(mW, 1) * (1 / (1 - p))
    local a = y.a:index_select(1, occurrence_rel) * gm.cat(ma, 1) * (1 / (1 - p))
    local expected = gm.hgat(y.tails, y.heads, W, a, { 1, 1, 2, 2, 3, 3 }, start, count, { interleaved = true })
    ;(expected * cot):sum():backward()
    assert.tensor_near(expected, out, 1e-6, 1e-6)
    for name, t in pairs(x) do assert.tensor_near(y[name]:grad(), t:grad(), 1e-5, 1e-6) end
  end)

  it("drops a share p of each occurrence's weights, and none with dropout = 0", function()
    gm.manual_seed(4)
    local K, n = 40, 8
    local W = gm.randn(K, n, n):requires_grad(true)
    local a = gm.randn(K, 2 * n):requires_grad(true)
    local r, s, c = {}, {}, {}
    for k = 1, K do r[k], s[k], c[k] = k, 2 * k - 1, 2 end
    local out = gm.hgat(gm.randn(K, n), gm.randn(2 * K, n), W, a, r, s, c, { interleaved = true, dropout = 0.3 })
    out:sum():backward()
    local zeros = 0
    for _, v in ipairs(W:grad():reshape(-1):totable()) do zeros = zeros + (v == 0 and 1 or 0) end
    assert.near(0.3, zeros / (K * n * n), 0.05)
    local plain = gm.hgat(gm.ones(1, 2), gm.ones(2, 2), gm.ones(1, 2, 2), gm.ones(1, 4), { 1 }, { 1 }, { 2 }, { dropout = 0 })
    assert.tensor_near(gm.hgat(gm.ones(1, 2), gm.ones(2, 2), gm.ones(1, 2, 2), gm.ones(1, 4), { 1 }, { 1 }, { 2 }), plain, 0, 0)
  end)

  it("passes finite-difference checks with its masks fixed by the seed", function()
    gm.manual_seed(12)
    local tails, heads = gm.randn(3, 3):requires_grad(true), gm.randn(4, 3):requires_grad(true)
    local W, a = (gm.randn(2, 3, 3) * 0.5):requires_grad(true), gm.randn(2, 6):requires_grad(true)
    local ok, report = gm.gradcheck(function(t, h, w, aa)
      gm.manual_seed(5)
      return gm.hgat(t, h, w, aa, { 1, 2, 2 }, { 1, 2, 2 }, { 2, 3, 3 }, { interleaved = true, dropout = 0.4 })
    end, { tails, heads, W, a })
    assert.is_true(ok, table.concat(report.failures, "\n"))
  end)

  it("refuses a dropout outside [0, 1)", function()
    assert.error_matches(function()
      gm.hgat(gm.ones(1, 2), gm.ones(2, 2), gm.ones(1, 2, 2), gm.ones(1, 4), { 1 }, { 1 }, { 2 }, { dropout = 1 })
    end, "bad argument #8 to 'hgat' %(hgat dropout must be in %[0, 1%) %(got 1%)%)")
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
