-- nn modules and the SGD optimizer.
local gm = require "graphmert"
local nn = gm.nn

describe("nn.Linear", function()
  it("computes x Wᵀ + b with PyTorch's parameter names and shapes", function()
    local lin = nn.Linear(3, 2)
    local sd = lin:state_dict()
    assert.same({ 2, 3 }, sd.weight:shape())
    assert.same({ 2 }, sd.bias:shape())
    local x = gm.randn(4, 3)
    local expected = x:matmul(lin.weight:t()) + lin.bias
    assert.tensor_near(expected, lin(x), 1e-6, 1e-6)
    assert.same({ 5, 4, 2 }, lin(gm.randn(5, 4, 3)):shape())
  end)

  it("passes finite-difference checks for input and parameters", function()
    local lin = nn.Linear { 4, 3 }
    local x = gm.randn(2, 4):requires_grad(true)
    local ok, report = gm.gradcheck(function(a, w, b) return lin(a) end, { x, lin.weight, lin.bias })
    assert.is_true(ok, table.concat(report.failures, "\n"))
  end)

  it("can drop the bias", function()
    local lin = nn.Linear(3, 2, false)
    assert.is_nil(lin.bias)
    assert.equal(1, #lin:parameters())
  end)
end)

describe("nn.Module", function()
  it("names nested parameters with dotted paths, as torch does", function()
    local model = nn.Sequential { nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 1) }
    local names = {}
    for _, np in ipairs(model:named_parameters()) do names[#names + 1] = np[1] end
    assert.same({ "0.weight", "0.bias", "2.weight", "2.bias" }, names)
    assert.equal(4, #model:parameters())
  end)

  it("loads a state dict by name and checks names and shapes", function()
    local a = nn.Sequential { nn.Linear(2, 3) }
    local b = nn.Sequential { nn.Linear(2, 3) }
    b:load_state_dict(a:state_dict())
    assert.tensor_near(a[ "0" ].weight, b["0"].weight, 0, 0)
    assert.error_matches(function() b:load_state_dict({}) end, "missing tensor '0.weight'")
    local wrong = { ["0.weight"] = gm.zeros(3, 3), ["0.bias"] = gm.zeros(3) }
    assert.error_matches(function() b:load_state_dict(wrong) end, "'0.weight' has size 3x3, the module expects 3x2")
    local extra = a:state_dict()
    extra.stray = gm.zeros(1)
    assert.error_matches(function() b:load_state_dict(extra) end, "unexpected tensor 'stray'")
    assert.error_matches(function() b:load_state_dict({ ["0.weight"] = 5 }) end, "'0.weight' is a number, not a tensor")
    assert.error_matches(function() b:load_state_dict(5) end, "a table of tensors by name expected, got number")
  end)

  it("switches dropout off in eval mode", function()
    local model = nn.Sequential { nn.Dropout(0.5) }
    model:eval()
    assert.same({ 1, 1, 1 }, model(gm.ones(3)):totable())
    model:train()
    assert.is_true(model.training)
  end)

  it("names the failing layer of a Sequential", function()
    local model = nn.Sequential { nn.Linear(2, 3), nn.Linear(4, 1) }
    assert.error_matches(function() model(gm.ones(1, 2)) end, "in module 2 of graphmert.nn.Sequential")
  end)

  it("prints as a tree", function()
    local s = tostring(nn.Sequential { nn.Linear(2, 3), nn.Tanh() })
    assert.matches("%(0%): graphmert.nn.Linear%(2 %-> 3%)", s)
    assert.matches("%(1%): graphmert.nn.Tanh", s)
  end)
end)

describe("optim.sgd", function()
  it("fits a linear regression", function()
    gm.manual_seed(3)
    local x = gm.randn(64, 3)
    local y = x:matmul(gm.tensor { { 1 }, { -2 }, { 0.5 } }) + 0.25
    local lin = nn.Linear(3, 1)
    local opt = gm.optim.sgd(lin:parameters(), { lr = 0.1 })
    local loss
    for _ = 1, 300 do
      opt:zero_grad()
      loss = ((lin(x) - y) ^ 2):mean()
      loss:backward()
      opt:step()
    end
    assert.is_true(loss:item() < 1e-6)
    assert.tensor_near({ { 1, -2, 0.5 } }, lin.weight, 0, 1e-3)
    assert.tensor_near({ 0.25 }, lin.bias, 0, 1e-3)
  end)
end)
