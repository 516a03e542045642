-- DiGress NodeEdgeBlock and XEyTransformerLayer against the float64 references of
-- scripts/refs/gen_refs.py (outputs, and gradients of Σ⟨G, out⟩ to every input and parameter),
-- finite differences, and the edge cases (no real node, all-masked batch, one node).
local gm = require "graphmert"
local fixture = require "spec.fixture"
local T = fixture.tensor

local function block_from(doc, cls, opts)
  local s = doc.meta.shapes or {}
  local o = { dx = math.tointeger(s.dx), de = math.tointeger(s.de), dy = math.tointeger(s.dy),
    heads = math.tointeger(s.n_head), dim_ffX = math.tointeger(s.dim_ffX), dim_ffE = math.tointeger(s.dim_ffE),
    dim_ffy = math.tointeger(s.dim_ffy), dropout = 0.1 }
  for k, v in pairs(opts or {}) do o[k] = v end
  local m = cls(o)
  m:load_state_dict(fixture.state_dict(doc.params, opts and opts.prefix), true)
  m:eval()
  return m
end

-- the layer nests the block's parameters under self_attn, as upstream does
local layer_prefix = function(n)
  return (n:match("^lin") or n:match("^norm")) and "" or "self_attn."
end

local function inputs(doc)
  return T(doc.inputs.X):requires_grad(true), T(doc.inputs.E):requires_grad(true),
      T(doc.inputs.y):requires_grad(true), T(doc.inputs.node_mask)
end

local function check_grads(doc, module, X, E, y, prefix)
  assert.tensor_near(doc.grads.X.data, X:grad(), 1e-4, 1e-5)
  assert.tensor_near(doc.grads.E.data, E:grad(), 1e-4, 1e-5)
  assert.tensor_near(doc.grads.y.data, y:grad(), 1e-4, 1e-5)
  local params = {}
  for _, np in ipairs(module:named_parameters()) do params[np[1]] = np[2] end
  local n = 0
  for name, enc in pairs(doc.grads) do
    if doc.params[name] then
      local p = params[fixture.state_name(name, prefix)]
      assert.is_not_nil(p, name)
      assert.tensor_near(enc.data, p:grad(), 1e-4, 1e-5)
      n = n + 1
    end
  end
  local count = 0
  for _ in pairs(params) do count = count + 1 end
  assert.equals(count, n) -- every parameter checked
end

describe("nn.NodeEdgeBlock", function()
  local doc = fixture.load("spec/fixtures/refs/digress_node_edge_block.json")

  it("matches DiGress: newX, newE, new_y, the scores and the attention", function()
    local block = block_from(doc, gm.nn.NodeEdgeBlock)
    local X, E, y, mask = inputs(doc)
    local newX, newE, new_y, extra = block(X, E, y, mask)
    assert.tensor_near(doc.outputs.newX.data, newX, 1e-4, 1e-6)
    assert.tensor_near(doc.outputs.newE.data, newE, 1e-4, 1e-6)
    assert.tensor_near(doc.outputs.new_y.data, new_y, 1e-4, 1e-6)
    assert.tensor_near(doc.outputs.Y_scores.data, extra.scores, 1e-4, 1e-6)
    assert.tensor_near(doc.outputs.attn.data, extra.attn, 1e-4, 1e-6)
  end)

  it("matches DiGress gradients to X, E, y and every parameter", function()
    local block = block_from(doc, gm.nn.NodeEdgeBlock)
    local X, E, y, mask = inputs(doc)
    local newX, newE, new_y = block(X, E, y, mask)
    local loss = (newX * T(doc.cotangents.newX)):sum() + (newE * T(doc.cotangents.newE)):sum()
        + (new_y * T(doc.cotangents.new_y)):sum()
    loss:backward()
    check_grads(doc, block, X, E, y)
  end)

  it("passes finite differences with padding", function()
    gm.manual_seed(7)
    local block = gm.nn.NodeEdgeBlock { dx = 4, de = 2, dy = 3, heads = 2 }
    local mask = gm.tensor { { 1, 1, 0 }, { 1, 1, 1 } }
    local X, E = gm.randn(2, 3, 4), gm.randn(2, 3, 3, 2) -- padding stays non-zero: no ties in min/max
    local y = gm.randn(2, 3)
    local ok, report = gm.gradcheck(function(x, e, g)
      local a, b, c = block(x, e, g, mask)
      return a:sum() * 0.7 + (b * b):sum() * 0.3 + (c * c):sum()
    end, { X:requires_grad(true), E:requires_grad(true), y:requires_grad(true) }, { eps = 1e-2, atol = 2e-2, rtol = 2e-2 })
    assert.is_true(ok, table.concat(report.failures, "\n"))
  end)

  it("gives finite zeros for a graph with no real node, and the reference elsewhere", function()
    local edge = fixture.load("spec/fixtures/refs/digress_edge_cases.json")
    local block = block_from(edge, gm.nn.NodeEdgeBlock, { dx = 4, de = 3, dy = 3, heads = 2 })
    local X, E, y, mask = inputs(edge)
    local newX, newE, new_y = block(X, E, y, mask)
    local ref = edge.outputs.newX.data
    local got = newX:totable()
    for i = 1, 2 do for c = 1, 4 do assert.near(ref[(i - 1) * 4 + c], got[1][i][c], 1e-4) end end
    assert.same({ { 0, 0, 0, 0 }, { 0, 0, 0, 0 } }, got[2]) -- upstream: NaN
    assert.tensor_near(edge.outputs.newE.data, newE, 1e-4, 1e-6)
    assert.tensor_near(edge.outputs.new_y.data, new_y, 1e-4, 1e-6)
    -- the attention path stays finite (the std pooling of an all-zero graph has a NaN
    -- gradient, as in torch: d√v/dv at v = 0)
    newX:sum():backward()
    for _, t in ipairs { X, y } do
      for _, v in ipairs(t:grad():reshape(t:numel()):totable()) do assert.is_true(v == v) end
    end
  end)

  it("keeps a batch with no real node at all finite (upstream skips the softmax: the same zeros)", function()
    local block = gm.nn.NodeEdgeBlock { dx = 4, de = 2, dy = 2, heads = 2 }
    local newX = block(gm.zeros(2, 3, 4), gm.zeros(2, 3, 3, 2), gm.randn(2, 2), gm.zeros(2, 3))
    assert.same(0, (newX * newX):sum():item())
  end)

  it("rejects wrong shapes with the argument and the sizes", function()
    local block = gm.nn.NodeEdgeBlock { dx = 4, de = 3, dy = 3, heads = 2 }
    local X, E, y, mask = gm.zeros(2, 4, 4), gm.zeros(2, 4, 4, 3), gm.zeros(2, 3), gm.ones(2, 4)
    local cases = {
      { function() block(gm.zeros(2, 4, 5), E, y, mask) end, "bad argument #1 to 'NodeEdgeBlock:forward' %(X must be %*x%*x4, got 2x4x5%)" },
      { function() block(X, gm.zeros(2, 4, 4, 5), y, mask) end, "bad argument #2 .* %(E must be 2x4x4x3, got 2x4x4x5%)" },
      { function() block(X, E, gm.zeros(3, 3), mask) end, "bad argument #3 .* %(y must be 2x3, got 3x3%)" },
      { function() block(X, E, y, gm.ones(2, 5)) end, "bad argument #4 .* %(node_mask must be 2x4, got 2x5%)" },
      { function() block(X, E, y, "x") end, "node_mask must be a graphmert.Tensor" },
      { function() gm.nn.NodeEdgeBlock { dx = 5, de = 3, dy = 3, heads = 2 } end, "heads %(2%) must divide dx %(5%)" },
    }
    for _, c in ipairs(cases) do assert.error_matches(c[1], c[2]) end
  end)
end)

describe("nn.XEyTransformerLayer", function()
  local doc = fixture.load("spec/fixtures/refs/digress_xey_layer.json")

  it("matches DiGress (eval, post-LN, padded rows not re-masked): outputs and every gradient", function()
    local layer = block_from(doc, gm.nn.XEyTransformerLayer, { prefix = layer_prefix })
    local X, E, y, mask = inputs(doc)
    local oX, oE, oy = layer(X, E, y, mask)
    assert.tensor_near(doc.outputs.X.data, oX, 1e-4, 1e-5)
    assert.tensor_near(doc.outputs.E.data, oE, 1e-4, 1e-5)
    assert.tensor_near(doc.outputs.y.data, oy, 1e-4, 1e-5)
    local loss = (oX * T(doc.cotangents.X)):sum() + (oE * T(doc.cotangents.E)):sum() + (oy * T(doc.cotangents.y)):sum()
    loss:backward()
    check_grads(doc, layer, X, E, y, layer_prefix)
  end)

  it("applies dropout only in training mode", function()
    gm.manual_seed(3)
    local layer = gm.nn.XEyTransformerLayer { dx = 4, de = 2, dy = 2, heads = 2, dim_ffX = 8, dim_ffE = 4, dim_ffy = 4, dropout = 0.5 }
    local X, E, y, m = gm.randn(1, 3, 4), gm.randn(1, 3, 3, 2), gm.randn(1, 2), gm.ones(1, 3)
    layer:eval()
    local a = layer(X, E, y, m)
    local b = layer(X, E, y, m)
    assert.tensor_near(a, b, 0, 0)
    layer:train()
    local c = layer(X, E, y, m)
    assert.is_true(((c - a) ^ 2):sum():item() > 1e-6)
  end)
end)
