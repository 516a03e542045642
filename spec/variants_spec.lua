-- Volume-preserving (Cayley) attention, GeometricMachineLearning's multi-head attention and
-- GATConv against the float64 references of scripts/refs/gen_refs.py, finite differences,
-- the Cayley invariants, and edge cases (T = 1, nodes without incoming edges).
local gm = require "graphmert"
local fixture = require "spec.fixture"
local T = fixture.tensor

-- determinant by Gaussian elimination with partial pivoting, in Lua doubles
local function det(m)
  local a, n, d = {}, #m, 1
  for i = 1, n do a[i] = { table.unpack(m[i]) } end
  for c = 1, n do
    local p = c
    for r = c + 1, n do if math.abs(a[r][c]) > math.abs(a[p][c]) then p = r end end
    if a[p][c] == 0 then return 0 end
    if p ~= c then a[p], a[c], d = a[c], a[p], -d end
    d = d * a[c][c]
    for r = c + 1, n do
      local f = a[r][c] / a[c][c]
      for k = c, n do a[r][k] = a[r][k] - f * a[c][k] end
    end
  end
  return d
end

local function identity(n)
  local rows = {}
  for i = 1, n do
    rows[i] = {}
    for j = 1, n do rows[i][j] = i == j and 1 or 0 end
  end
  return rows
end

describe("nn.VolumePreservingAttention", function()
  for _, case in ipairs { "skew_T4", "skew_T7", "arbitrary_T4", "arbitrary_T7" } do
    it("matches gml_vpa_" .. case .. ": out, C, Λ and the gradients to Z and the parameter", function()
      local doc = fixture.load("spec/fixtures/refs/gml_vpa_" .. case .. ".json")
      local skew = case:match("^skew") ~= nil
      local Z = T(doc.inputs.Z):requires_grad(true)
      local vpa = gm.nn.VolumePreservingAttention { dim = Z:size(2), skew_sym = skew }
      vpa:load_state_dict(fixture.state_dict(doc.params), true)
      local out, extra = vpa(Z)
      assert.tensor_near(doc.outputs.out.data, out, 1e-4, 1e-5)
      assert.tensor_near(doc.outputs.C.data, extra.C, 1e-4, 1e-5)
      assert.tensor_near(doc.outputs.Lambda.data, extra.Lambda, 1e-4, 1e-5)
      if skew then assert.tensor_near(doc.outputs.A.data, extra.A, 1e-6, 1e-7) end
      ;(out * T(doc.cotangents.out)):sum():backward()
      assert.tensor_near(doc.grads.Z.data, Z:grad(), 1e-4, 1e-5)
      local name = skew and "S" or "A"
      assert.tensor_near(doc.grads[name].data, vpa[name]:grad(), 1e-4, 1e-5)
    end)
  end

  for _, skew in ipairs { true, false } do
    it("gives an orthogonal Λ with det 1 and preserves det of a square Z (skew_sym = " .. tostring(skew) .. ")", function()
      gm.manual_seed(11)
      local vpa = gm.nn.VolumePreservingAttention { dim = 6, skew_sym = skew }
      local Z = gm.randn(3, 6, 6)
      local out, extra = vpa(Z)
      local L = extra.Lambda
      assert.tensor_near({ identity(6), identity(6), identity(6) }, L:matmul(L, true, false), 0, 2e-5)
      local Ls, Zs, Os = L:totable(), Z:totable(), out:totable()
      for b = 1, 3 do
        assert.near(1, det(Ls[b]), 2e-5)
        assert.near(det(Zs[b]), det(Os[b]), 1e-3 * math.abs(det(Zs[b])) + 1e-4)
      end
      local C = extra.C
      assert.tensor_near(C, -C:transpose(2, 3), 0, 1e-5) -- C is skew
    end)
  end

  it("builds upstream's SkewSymMatrix(1:6, 4)", function()
    local vpa = gm.nn.VolumePreservingAttention { dim = 4, skew_sym = true }
    vpa:load_state_dict({ S = gm.tensor { 1, 2, 3, 4, 5, 6 } }, false)
    assert.tensor_near({ { 0, -1, -2, -4 }, { 1, 0, -3, -5 }, { 2, 3, 0, -6 }, { 4, 5, 6, 0 } }, vpa:skew_matrix(), 0, 0)
  end)

  it("passes finite differences through the solve, batched and unbatched, and handles T = 1", function()
    gm.manual_seed(5)
    for _, skew in ipairs { true, false } do
      local vpa = gm.nn.VolumePreservingAttention { dim = 3, skew_sym = skew }
      local p = skew and vpa.S or vpa.A
      local ok, report = gm.gradcheck(function(z, _) return (vpa(z)) end, { gm.randn(2, 3, 5):requires_grad(true), p })
      assert.is_true(ok, table.concat(report.failures, "\n"))
      ok, report = gm.gradcheck(function(z) return (vpa(z)) end, { gm.randn(3, 4):requires_grad(true) })
      assert.is_true(ok, table.concat(report.failures, "\n"))
      local z1 = gm.randn(2, 3, 1)
      local out, extra = vpa(z1)
      assert.tensor_near(z1, out, 0, 1e-6) -- one element: C = 0, Λ = 1
      assert.tensor_near({ { { 1 } }, { { 1 } } }, extra.Lambda, 0, 0)
    end
  end)

  it("rejects a Z of the wrong size", function()
    local vpa = gm.nn.VolumePreservingAttention { dim = 3 }
    assert.error_matches(function() return vpa(gm.zeros(2, 4, 5)) end,
      "bad argument #1 to 'VolumePreservingAttention:forward' %(Z must be %*x3x%*, got 2x4x5%)")
  end)
end)

describe("nn.GeometricMultiHeadAttention", function()
  local doc = fixture.load("spec/fixtures/refs/gml_multihead_attention.json")
  for _, add in ipairs { false, true } do
    local key = add and "out_add" or "out_no_add"
    it("matches gml_multihead_attention " .. key .. " and its gradients", function()
      local Z = T(doc.inputs.Z):requires_grad(true)
      local mha = gm.nn.GeometricMultiHeadAttention { dim = Z:size(2), heads = math.tointeger(doc.meta.shapes.n_heads), add_connection = add }
      mha:load_state_dict(fixture.state_dict(doc.params), true)
      local out = mha(Z)
      assert.tensor_near(doc.outputs[key].data, out, 1e-5, 1e-6)
      if add then
        -- the reference's gradients are for Σ⟨G, out_no_add⟩ + Σ⟨G', out_add⟩
        local plain = gm.nn.GeometricMultiHeadAttention { dim = Z:size(2), heads = 2, add_connection = false }
        plain:load_state_dict(mha:state_dict())
        local loss = (out * T(doc.cotangents.out_add)):sum() + (plain(Z) * T(doc.cotangents.out_no_add)):sum()
        loss:backward()
        assert.tensor_near(doc.grads.Z.data, Z:grad(), 1e-4, 1e-5)
        for _, n in ipairs { "PQ", "PK", "PV" } do
          assert.tensor_near(doc.grads[n].data, mha[n]:grad() + plain[n]:grad(), 1e-4, 1e-5)
        end
      end
    end)
  end

  it("normalises over the attended positions (each column sums to 1) and handles T = 1", function()
    gm.manual_seed(2)
    local mha = gm.nn.GeometricMultiHeadAttention { dim = 4, heads = 2, add_connection = false }
    local z = gm.randn(1, 4, 1)
    -- one position: P = 1, out = V = PVᵀ z per head
    local expected = mha.PV:matmul(z:reshape(1, 4, 1), true, false):reshape(1, 4, 1)
    assert.tensor_near(expected, mha(z), 1e-5, 1e-6)
    local ok, report = gm.gradcheck(function(x) return mha(x) end, { gm.randn(2, 4, 3):requires_grad(true) })
    assert.is_true(ok, table.concat(report.failures, "\n"))
  end)
end)

describe("nn.GATConv", function()
  for _, case in ipairs { "concat", "mean" } do
    it("matches gat_conv_" .. case .. ": output, per-edge attention, gradients", function()
      local doc = fixture.load("spec/fixtures/refs/gat_conv_" .. case .. ".json")
      local s = doc.meta.shapes
      local x = T(doc.inputs.x):requires_grad(true)
      local gat = gm.nn.GATConv { in_channels = math.tointeger(s["in"]), out_channels = math.tointeger(s.out_channels),
        heads = math.tointeger(s.heads), concat = s.concat }
      gat:load_state_dict(fixture.state_dict(doc.params), true)
      local ei = T(doc.inputs.edge_index) + 1 -- 0-based in the reference
      local out, extra = gat(x, ei)
      assert.tensor_near(doc.outputs.out.data, out, 1e-5, 1e-6)
      assert.tensor_near(doc.outputs.alpha.data, extra.alpha, 1e-5, 1e-6)
      local used = (T(doc.outputs.edge_index_used) + 1):totable()
      assert.same(used, extra.edge_index)
      local loss = (out * T(doc.cotangents.out)):sum() + (extra.alpha * T(doc.cotangents.alpha)):sum()
      loss:backward()
      assert.tensor_near(doc.grads.x.data, x:grad(), 1e-4, 1e-5)
      for _, n in ipairs { "lin.W", "att_src", "att_dst", "bias" } do
        local p = n == "lin.W" and gat.lin.weight or gat[n]
        assert.tensor_near(doc.grads[n].data, p:grad(), 1e-4, 1e-5)
      end
    end)
  end

  it("passes finite differences; a node without incoming edges gets only the bias", function()
    gm.manual_seed(9)
    local gat = gm.nn.GATConv { in_channels = 3, out_channels = 2, heads = 2, add_self_loops = false }
    gat:load_state_dict({ bias = gm.tensor { 0.1, 0.2, 0.3, 0.4 } }, false)
    local edges = { { 1, 2, 3, 1 }, { 2, 3, 1, 3 } } -- node 4 receives nothing
    local x = gm.randn(4, 3)
    local out = gat(x, edges)
    assert.tensor_near({ 0.1, 0.2, 0.3, 0.4 }, out:narrow(1, 4, 1), 0, 1e-7)
    local ok, report = gm.gradcheck(function(v, w) return (gat(v, edges)) end, { x:requires_grad(true), gat.att_src })
    assert.is_true(ok, table.concat(report.failures, "\n"))
  end)

  it("rejects bad edges and inputs", function()
    local gat = gm.nn.GATConv { in_channels = 3, out_channels = 2 }
    for _, c in ipairs {
      { function() gat(gm.zeros(4, 3), { { 1, 5 }, { 2, 1 } }) end, "bad argument #2 to 'GATConv:forward' %(edge 2 has node 5 outside %[1, 4%]%)" },
      { function() gat(gm.zeros(4, 3), { { 1 }, {} }) end, "edge_index must be" },
      { function() gat(gm.zeros(4, 2), { { 1 }, { 2 } }) end, "bad argument #1 .* %(x must be %*x3, got 4x2%)" },
    } do
      assert.error_matches(c[1], c[2])
    end
  end)
end)
