-- AdamW against torch.optim.AdamW, the cosine schedule, gradient clipping and accumulation.
local gm = require "graphmert"
local fixture = require "spec.fixture"
local T = fixture.tensor

describe("optim.adamw", function()
  it("follows torch.optim.AdamW step by step (weight decay on the matrix, none on the bias)", function()
    local doc = fixture.load("spec/fixtures/adamw.json")
    local w, b = T(doc.weight):requires_grad(true), T(doc.bias):requires_grad(true)
    local opt = gm.optim.adamw({ { "0.weight", w }, { "0.bias", b } },
      { lr = doc.lr, betas = doc.betas, eps = doc.eps, weight_decay = doc.weight_decay })
    for i, g in ipairs(doc.grads) do
      opt:zero_grad()
      ;(w * T(g.weight)):sum():backward()
      ;(b * T(g.bias)):sum():backward()
      opt:step()
      assert.tensor_near(doc.steps[i].weight.data, w, 1e-5, 1e-6)
      assert.tensor_near(doc.steps[i].bias.data, b, 1e-5, 1e-6)
    end
  end)

  it("exempts biases and norms from weight decay by default", function()
    local lin = gm.nn.Linear(2, 2)
    local opt = gm.optim.adamw(lin:named_parameters(), { weight_decay = 0.5 })
    assert.equal(0.5, opt.params[1].weight_decay)
    assert.equal(0, opt.params[2].weight_decay)
  end)

  it("saves and restores its state", function()
    local p = gm.ones(3):requires_grad(true)
    local opt = gm.optim.adamw({ { "p", p } }, { lr = 0.1 })
    ;(p * p):sum():backward()
    opt:step()
    local tensors, meta = opt:state_dict()
    local q = gm.ones(3):requires_grad(true)
    local opt2 = gm.optim.adamw({ { "p", q } }, { lr = 0.1 })
    opt2:load_state_dict(tensors, meta)
    gm.no_grad(function() q:copy_(p) end)
    for _, pair in ipairs { { p, opt }, { q, opt2 } } do
      pair[1]:zero_grad()
      ;(pair[1] * pair[1]):sum():backward()
      pair[2]:step()
    end
    assert.tensor_near(p, q, 0, 0)
    assert.error_matches(function() opt2:load_state_dict({}, meta) end, "no state for parameter 'p'")
  end)

  it("refuses a gradient of the wrong size", function()
    assert.error_matches(function()
      gm.adamw_step(gm.ones(3), gm.ones(4), gm.zeros(3), gm.zeros(3), { step = 1 })
    end, "adamw: gradient or state of size 4 for a parameter of size 3")
    assert.error_matches(function()
      gm.adamw_step(gm.ones(3), gm.ones(3), gm.zeros(3), gm.zeros(3), { step = 0 })
    end, "step must be an integer >= 1")
  end)
end)

describe("schedules and clipping", function()
  it("warms up linearly, then follows a cosine down to the minimum", function()
    local o = { peak = 4e-4, min_lr = 1e-5, warmup = 10, total = 110 }
    assert.near(4e-5, gm.optim.cosine(1, o), 1e-12)
    assert.near(4e-4, gm.optim.cosine(10, o), 1e-12)
    assert.near((4e-4 + 1e-5) / 2, gm.optim.cosine(60, o), 1e-12)
    assert.near(1e-5, gm.optim.cosine(110, o), 1e-12)
    assert.near(1e-5, gm.optim.cosine(500, o), 1e-12)
  end)

  it("clips by the global norm of all gradients", function()
    local a, b = gm.zeros(2):requires_grad(true), gm.zeros(1):requires_grad(true)
    ;(a * gm.tensor { 3, 0 }):sum():backward()
    ;(b * 4):sum():backward()
    local norm = gm.optim.clip_grad_norm({ a, b }, 1)
    assert.near(5, norm, 1e-6)
    assert.tensor_near({ 0.6, 0 }, a:grad(), 1e-5, 1e-6)
    assert.tensor_near({ 0.8 }, b:grad(), 1e-5, 1e-6)
    assert.near(1, gm.optim.clip_grad_norm({ a, b }, 10), 1e-5) -- under the bound: unchanged
    assert.tensor_near({ 0.8 }, b:grad(), 1e-5, 1e-6)
  end)

  it("accumulates gradients over micro-batches like one big batch", function()
    gm.manual_seed(4)
    local x, w = gm.randn(8, 3), gm.randn(3, 1):requires_grad(true)
    ;(x:matmul(w) ^ 2):mean():backward()
    local full = w:grad():clone()
    w:zero_grad()
    for i = 0, 1 do ((x:narrow(1, 4 * i + 1, 4):matmul(w) ^ 2):mean() / 2):backward() end
    assert.tensor_near(full, w:grad(), 1e-5, 1e-6)
  end)
end)

describe("the optimizer protocol", function()
  for _, case in ipairs { { "sgd", { lr = 1e-3, momentum = 0.9 }, 3000 }, { "adamw", { lr = 0.02, weight_decay = 0 }, 4000 } } do
    it(case[1] .. " minimises the Rosenbrock function", function()
      local p = gm.tensor { -1.5, 2 }:requires_grad(true)
      local opt = gm.optim[case[1]]({ { "p", p } }, case[2])
      local f
      for _ = 1, case[3] do
        opt:zero_grad()
        local x, y = p:narrow(1, 1, 1), p:narrow(1, 2, 1)
        f = ((1 - x) ^ 2 + (y - x * x) ^ 2 * 100):sum()
        f:backward()
        opt:step()
      end
      assert.is_true(f:item() < 1e-3, "f = " .. f:item())
    end)
  end

  -- three steps, a state_dict round trip into a fresh optimizer, three more steps: the same
  -- weights as six uninterrupted steps
  local function resumes_exactly(make)
    local function grads(p, k) return (p * gm.tensor { 1, -2, 3 } * k + p * p):sum() end
    local a = gm.tensor { 0.5, -1, 2 }:requires_grad(true)
    local opt_a = make({ { "w", a } })
    for k = 1, 6 do opt_a:zero_grad(); grads(a, k):backward(); opt_a:step() end
    local b = gm.tensor { 0.5, -1, 2 }:requires_grad(true)
    local opt_b = make({ { "w", b } })
    for k = 1, 3 do opt_b:zero_grad(); grads(b, k):backward(); opt_b:step() end
    local tensors, meta = opt_b:state_dict()
    local c = b:clone():requires_grad(true)
    local opt_c = make({ { "w", c } })
    opt_c:load_state_dict(tensors, meta)
    for k = 4, 6 do opt_c:zero_grad(); grads(c, k):backward(); opt_c:step() end
    assert.tensor_near(a, c, 0, 0)
    return opt_c
  end

  it("sgd with momentum resumes from its state_dict exactly", function()
    local opt = resumes_exactly(function(p) return gm.optim.sgd(p, { lr = 0.05, momentum = 0.9, nesterov = true }) end)
    local tensors, meta = opt:state_dict()
    assert.is_true(gm.is_tensor(tensors["w.momentum_buffer"]))
    assert.equal(6, meta.step)
  end)

  it("adamw resumes from its state_dict exactly", function()
    resumes_exactly(function(p) return gm.optim.adamw(p, { lr = 0.05 }) end)
  end)

  it("every optimizer has get_lr and set_lr", function()
    for _, make in ipairs { gm.optim.sgd, gm.optim.adamw } do
      local opt = make({ gm.zeros(2):requires_grad(true) }, { lr = 0.1 })
      assert.equal(0.1, opt:get_lr())
      opt:set_lr(0.02)
      assert.equal(0.02, opt:get_lr())
    end
  end)

  it("refuses settings and parameters it cannot take, naming them", function()
    local w = gm.zeros(2):requires_grad(true)
    local lin = gm.nn.Linear(2, 1)
    for _, case in ipairs {
      { function() gm.optim.sgd({ w }, { lr = 0.1, momentun = 0.9 }) end,
        "sgd: unknown setting 'momentun' %(known: dampening, lr, momentum, nesterov, weight_decay%)" },
      { function() gm.optim.sgd({ w }, {}) end, "sgd: lr is required" },
      { function() gm.optim.sgd({ w }, { lr = -1 }) end, "sgd: lr must be a number >= 0, got %-1" },
      { function() gm.optim.sgd({ w }, { lr = 0.1, nesterov = true }) end, "nesterov needs a momentum > 0" },
      { function() gm.optim.sgd({ w }, 0.1) end, "sgd: the settings must be a table, got number" },
      { function() gm.optim.adamw({ w }, { betas = { 1.5, 0.9 } }) end, "adamw: betas must be two numbers in %[0, 1%), got {1.5, 0.9}" },
      { function() gm.optim.adamw({ w }, { eps = -1 }) end, "adamw: eps must be a number >= 0, got %-1" },
      { function() gm.optim.adamw(lin, { lr = 0.1 }) end, "give module:named_parameters%(%) or a list of tensors, got a module" },
      { function() gm.optim.sgd(5, { lr = 0.1 }) end, "sgd: give module:named_parameters%(%) or a list of tensors, got number" },
      { function() gm.optim.adamw({}, {}) end, "adamw: an empty parameter list" },
      { function() gm.optim.adamw({ { "x", w * 2 } }, {}) end, "parameter 'x' is the result of an op, not a leaf" },
      { function() gm.optim.adamw({ "w" }, {}) end, "adamw: parameter 1 is not a tensor %(string%)" },
    } do
      assert.error_matches(case[1], case[2])
    end
    -- the error points at the caller's line, not the library's
    local ok, err = pcall(function() gm.optim.sgd({ w }, { lr = 0.1, momentun = 0.9 }) end)
    assert.is_false(ok)
    assert.matches("optim_spec.lua:%d+: sgd: unknown setting", err)
  end)

  it("sgd refuses a momentum buffer of the wrong size, naming the parameter", function()
    local opt = gm.optim.sgd({ { "w", gm.zeros(3):requires_grad(true) } }, { lr = 0.1, momentum = 0.9 })
    assert.error_matches(function() opt:load_state_dict({ ["w.momentum_buffer"] = gm.zeros(2) }, { step = 1 }) end,
      "momentum buffer of 'w' has 2, the parameter 3")
  end)
end)
