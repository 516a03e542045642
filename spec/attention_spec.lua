-- The fused attention: against PyTorch float64 references, against the materialised reference
-- path on awkward sizes with every mask combination, by finite differences, and its edge cases.
local gm = require "graphmert"
local fixture = require "spec.fixture"
local T = fixture.tensor

-- ‖a − b‖ / ‖b‖, with an absolute floor for results that are 0 in exact arithmetic
local function rel_err(a, b)
  local diff = ((a - b) ^ 2):sum():item() ^ 0.5
  return diff / (((b) ^ 2):sum():item() ^ 0.5 + 1e-2)
end

describe("attention against PyTorch", function()
  it("sdpa_masked: softmax(q kᵀ/√d + M) v with an additive mask and the allowed-mask form", function()
    local doc = fixture.load("spec/fixtures/refs/sdpa_masked.json")
    for _, form in ipairs { "attn_bias", "attn_mask" } do
      local q, k, v = T(doc.inputs.q):requires_grad(true), T(doc.inputs.k):requires_grad(true),
          T(doc.inputs.v):requires_grad(true)
      local opts = form == "attn_bias" and { attn_bias = T(doc.inputs.additive_mask) }
          or { attn_mask = T(doc.inputs.allowed) }
      local out = gm.attention(q, k, v, opts)
      assert.tensor_near(doc.outputs.out.data, out, 1e-5, 1e-6)
      ;(out * T(doc.cotangents.out)):sum():backward()
      assert.tensor_near(doc.grads.q.data, q:grad(), 1e-4, 1e-5)
      assert.tensor_near(doc.grads.k.data, k:grad(), 1e-4, 1e-5)
      assert.tensor_near(doc.grads.v.data, v:grad(), 1e-4, 1e-5)
    end
  end)

  for _, tag in ipairs { "nomask", "boolmask", "floatmask" } do
    it("nn.MultiheadAttention matches torch_mha_" .. tag .. " (outputs, averaged weights, gradients)", function()
      local doc = fixture.load("spec/fixtures/refs/torch_mha_" .. tag .. ".json")
      local E, H = math.tointeger(doc.meta.shapes.E), math.tointeger(doc.meta.shapes.num_heads)
      local mha = gm.nn.MultiheadAttention { dim = E, heads = H, batch_first = false }
      mha:load_state_dict {
        in_proj_weight = T(doc.params.in_proj_weight), in_proj_bias = T(doc.params.in_proj_bias),
        ["out_proj.weight"] = T(doc.params["out_proj.W"]), ["out_proj.bias"] = T(doc.params["out_proj.b"]),
      }
      local q, k, v = T(doc.inputs.query):requires_grad(true), T(doc.inputs.key):requires_grad(true),
          T(doc.inputs.value):requires_grad(true)
      local opts = { need_weights = true }
      if doc.inputs.attn_mask then
        local m = T(doc.inputs.attn_mask)
        if doc.inputs.attn_mask.dtype == "bool" then opts.attn_mask = 1 - m -- torch: true = blocked
        else opts.attn_bias = m end
      end
      if doc.inputs.key_padding_mask then
        opts.key_mask = 1 - T(doc.inputs.key_padding_mask)
      end
      local out, w = mha(q, k, v, opts)
      assert.tensor_near(doc.outputs.attn_output.data, out, 1e-5, 1e-6)
      assert.tensor_near(doc.outputs.attn_weights_avg.data, w, 1e-5, 1e-6)
      local loss = (out * T(doc.cotangents.attn_output)):sum() + (w * T(doc.cotangents.attn_weights_avg)):sum()
      loss:backward()
      assert.tensor_near(doc.grads.query.data, q:grad(), 1e-4, 1e-5)
      assert.tensor_near(doc.grads.key.data, k:grad(), 1e-4, 1e-5)
      assert.tensor_near(doc.grads.value.data, v:grad(), 1e-4, 1e-5)
      assert.tensor_near(doc.grads.in_proj_weight.data, mha.in_proj_weight:grad(), 1e-4, 1e-5)
      assert.tensor_near(doc.grads.in_proj_bias.data, mha.in_proj_bias:grad(), 1e-4, 1e-5)
      assert.tensor_near(doc.grads["out_proj.W"].data, mha.out_proj.weight:grad(), 1e-4, 1e-5)
      assert.tensor_near(doc.grads["out_proj.b"].data, mha.out_proj.bias:grad(), 1e-4, 1e-5)
    end)
  end

  local decay_doc = fixture.load("spec/fixtures/attention_decay.json")
  for _, c in ipairs(decay_doc.cases) do
    it(c.name .. ": GraphMERT decay, padding and graph masks, gradients down to p", function()
      local q, k, v = T(c.inputs.q):requires_grad(true), T(c.inputs.k):requires_grad(true),
          T(c.inputs.v):requires_grad(true)
      local p = T(c.inputs.p):requires_grad(true)
      local decay = gm.decay_mask(T(c.inputs.sp), { lambda = c.lambda, p = p })
      local out = gm.attention(q, k, v, {
        decay = decay, decay_mode = c.decay_mode, renormalize = c.renormalize,
        key_mask = T(c.inputs.key_mask), attn_mask = T(c.inputs.attn_mask),
      })
      assert.tensor_near(c.output.data, out, 1e-5, 1e-6)
      ;(out * T(c.cotangent)):sum():backward()
      for name, t in pairs { q = q, k = k, v = v, p = p } do
        assert.tensor_near(c.grads[name].data, t:grad(), 1e-4, 1e-5)
      end
    end)
  end
end)

-- 1 where positive, else 0 (random 0/1 masks)
local function positive_to_one(t)
  local out = t:clone()
  for i = 1, out:numel() do out:set_flat(i, out:get_flat(i) > 0 and 1 or 0) end
  return out
end

-- every combination of the optional inputs, by bits
local function make_case(B, H, L, S, d, combo, seed)
  gm.manual_seed(seed)
  local o = {}
  if combo & 1 ~= 0 then -- padding: the last keys of batch 1 (and all of a short batch)
    local km = gm.ones(B, S)
    gm.no_grad(function() for j = math.max(1, S - 2), S do km:set(0, 1, j) end end)
    o.key_mask = km
  end
  if combo & 2 ~= 0 then -- a random graph, with one query row that may attend nothing
    local am = positive_to_one(gm.rand(L, S) - 0.3)
    gm.no_grad(function() for j = 1, S do am:set(0, 1, j) end end)
    o.attn_mask = am
  end
  if combo & 4 ~= 0 then o.decay = (gm.rand(H, L, S) * 1.2):requires_grad(true) end
  if combo & 8 ~= 0 then o.attn_bias = gm.randn(B, L, S) * 0.5 end
  if combo & 16 ~= 0 then o.decay_mode = "weights" end
  if combo & 32 ~= 0 then o.renormalize = true end
  return o
end

describe("fused attention = reference path", function()
  local sizes = {
    { 1, 1, 1, 1, 1 }, { 2, 2, 7, 7, 3 }, { 1, 2, 7, 9, 64 }, { 1, 1, 129, 129, 80 },
    { 2, 1, 129, 65, 3 }, { 1, 1, 1025, 1025, 64 },
  }
  for si, sz in ipairs(sizes) do
    local B, H, L, S, d = table.unpack(sz)
    -- every combination (renormalize only together with decay_mode = "weights")
    local combos = {}
    for c = 0, 63 do
      if c & 32 == 0 or c & 16 ~= 0 then combos[#combos + 1] = c end
    end
    it(string.format("B=%d H=%d L=%d S=%d d=%d: outputs and gradients, %d mask combinations", B, H, L, S, d, #combos), function()
      for _, combo in ipairs(combos) do
        local o = make_case(B, H, L, S, d, combo, 100 * si + combo)
        local q, k, v = gm.randn(B, H, L, d):requires_grad(true), gm.randn(B, H, S, d):requires_grad(true),
            gm.randn(B, H, S, d):requires_grad(true)
        local cot = gm.randn(B, H, L, d)
        local results = {}
        for _, impl in ipairs { "fused", "reference" } do
          o.impl = impl
          for _, t in ipairs { q, k, v, o.decay } do t:zero_grad() end
          local out = gm.attention(q, k, v, o)
          ;(out * cot):sum():backward()
          results[impl] = { out, q:grad(), k:grad(), v:grad(), o.decay and o.decay:grad() }
        end
        for i = 1, 5 do
          local a, b = results.fused[i], results.reference[i]
          if b then
            local err = rel_err(a, b)
            assert.is_true(err < (i == 1 and 1e-5 or 1e-4),
              string.format("combo %d, result %d: relative error %.3g", combo, i, err))
          end
        end
      end
    end)
  end
end)

describe("fused attention", function()
  it("passes finite-difference checks for q, k, v and the decay", function()
    gm.manual_seed(3)
    for _, mode in ipairs { "scores", "weights" } do
      local q, k, v = gm.randn(1, 2, 3, 2):requires_grad(true), gm.randn(1, 2, 4, 2):requires_grad(true),
          gm.randn(1, 2, 4, 2):requires_grad(true)
      local decay = (gm.rand(2, 3, 4) + 0.2):requires_grad(true)
      local ok, report = gm.gradcheck(function(a, b, c, f)
        return gm.attention(a, b, c, { decay = f, decay_mode = mode, renormalize = mode == "weights",
          key_mask = { { 1, 1, 1, 0 } } })
      end, { q, k, v, decay })
      assert.is_true(ok, mode .. ": " .. table.concat(report.failures, "\n"))
    end
  end)

  it("sums a decay's gradient over several calls as each call's own gradient adds up", function()
    -- packed sequences: one call per sequence (a batch of one) on one per-head decay, whose
    -- gradient the kernel adds into the pending sum; against the calls' gradients taken apart
    gm.manual_seed(11)
    for _, mode in ipairs { "scores", "weights" } do
      local qs, gs = {}, {}
      for i = 1, 3 do qs[i], gs[i] = gm.randn(1, 2, 70, 8), gm.randn(1, 2, 70, 8) end
      local decay = (gm.rand(2, 70, 70) + 0.2):requires_grad(true)
      local function call(i) return gm.attention(qs[i], qs[i % 3 + 1], qs[(i + 1) % 3 + 1], { decay = decay, decay_mode = mode }) end
      local total
      for i = 1, 3 do
        local term = (call(i) * gs[i]):sum()
        total = total and total + term or term
      end
      total:backward()
      local together = decay:grad():clone()
      local apart = gm.zeros(2, 70, 70)
      for i = 1, 3 do
        decay:zero_grad()
        ;(call(i) * gs[i]):sum():backward()
        apart = apart + decay:grad()
      end
      assert.tensor_near(apart, together, 1e-6, 1e-7) -- float32 sums in possibly another order
    end
  end)

  it("gives 0 output and 0 gradients for a row with no allowed key", function()
    local q, k, v = gm.randn(1, 1, 2, 3):requires_grad(true), gm.randn(1, 1, 2, 3):requires_grad(true),
        gm.randn(1, 1, 2, 3):requires_grad(true)
    local out = gm.attention(q, k, v, { attn_mask = { { 0, 0 }, { 1, 1 } } })
    assert.same({ 0, 0, 0 }, out:narrow(3, 1, 1):reshape(3):totable())
    out:sum():backward()
    assert.same({ 0, 0, 0 }, q:grad():narrow(3, 1, 1):reshape(3):totable())
    local all = gm.attention(q, k, v, { key_mask = { { 0, 0 } } })
    assert.equal(0, (all * all):sum():item())
  end)

  it("lets a NaN reach the output and the gradients as the reference path does (not a masked row)", function()
    -- a NaN in query 2 makes all its scores NaN, over three key tiles (S = 300)
    local q, k, v = gm.randn(1, 1, 3, 4), gm.randn(1, 1, 300, 4), gm.randn(1, 1, 300, 4)
    q:set(0 / 0, 1, 1, 2, 1)
    local nan_rows = {}
    for _, impl in ipairs { "fused", "reference" } do
      q:requires_grad(true):zero_grad()
      local out = gm.attention(q, k, v, { impl = impl })
      out:sum():backward()
      local function nans(t, row)
        local n, cols = 0, t:size(4)
        for c = 1, cols do
          local x = t:get(1, 1, row, c)
          if x ~= x then n = n + 1 end
        end
        return n
      end
      local rows = {}
      for i = 1, 3 do rows[i] = { nans(out, i), nans(q:grad(), i) } end
      nan_rows[impl] = rows
      q:requires_grad(false)
    end
    assert.same({ { 0, 0 }, { 4, 4 }, { 0, 0 } }, nan_rows.reference)
    assert.same(nan_rows.reference, nan_rows.fused)
  end)

  it("returns the weights on request, rows summing to 1", function()
    local q, k, v = gm.randn(2, 3, 5, 4), gm.randn(2, 3, 6, 4), gm.randn(2, 3, 6, 4)
    local out, w = gm.attention(q, k, v, { need_weights = true, key_mask = { { 1, 1, 1, 1, 1, 1 }, { 1, 1, 0, 0, 1, 1 } } })
    assert.same({ 2, 3, 5, 6 }, w:shape())
    assert.tensor_near(gm.ones(2, 3, 5), w:sum(4), 1e-5, 1e-6)
    assert.equal(0, w:narrow(1, 2, 1):narrow(4, 3, 2):sum():item())
    assert.tensor_near(w:matmul(v), out, 1e-5, 1e-6)
  end)

  it("drops out weights reproducibly and scales the rest by 1/(1-p)", function()
    local q, k, v = gm.randn(1, 2, 64, 8), gm.randn(1, 2, 64, 8), gm.randn(1, 2, 64, 8)
    gm.manual_seed(5)
    local out1, w1 = gm.attention(q, k, v, { dropout = 0.25, need_weights = true })
    gm.manual_seed(5)
    local out2 = gm.attention(q, k, v, { dropout = 0.25 })
    assert.tensor_near(out1, out2, 0, 0)
    local _, w0 = gm.attention(q, k, v, { need_weights = true })
    local ratio, dropped = (w1 / w0):totable(), 0
    local n = 0
    for _, plane in ipairs(ratio[1]) do
      for _, row in ipairs(plane) do
        for _, r in ipairs(row) do
          n = n + 1
          if r == 0 then dropped = dropped + 1 else assert.near(1 / 0.75, r, 1e-4) end
        end
      end
    end
    assert.near(0.25, dropped / n, 0.02)
    assert.tensor_near(w1:matmul(v), out1, 1e-5, 1e-6)
    local eval = gm.attention(q, k, v, { dropout = 0.25, training = false })
    assert.tensor_near(gm.attention(q, k, v), eval, 0, 0)
  end)

  it("has the right gradients under dropout (fixed seed)", function()
    local q, k, v = gm.randn(1, 1, 4, 3):requires_grad(true), gm.randn(1, 1, 5, 3):requires_grad(true),
        gm.randn(1, 1, 5, 3):requires_grad(true)
    local ok, report = gm.gradcheck(function(a, b, c)
      gm.manual_seed(9)
      return gm.attention(a, b, c, { dropout = 0.3 })
    end, { q, k, v })
    assert.is_true(ok, table.concat(report.failures, "\n"))
  end)

  it("refuses bad shapes and options with clear errors", function()
    local q = gm.ones(1, 2, 3, 4)
    assert.error_matches(function() gm.attention(q, gm.ones(1, 2, 3, 5), q) end,
      "bad argument #2 to 'attention' %(attention needs q %[B,H,L,d%], k %[B,H,S,d%], v %[B,H,S,dv%] %(got q 1x2x3x4, k 1x2x3x5, v 1x2x3x4%)%)")
    assert.error_matches(function() gm.attention(gm.ones(2, 3, 4), q, q) end, "bad argument #1 to 'attention'")
    assert.error_matches(function() gm.attention(q, q, q, { key_mask = gm.ones(1, 4) }) end,
      "key_mask of size 1x4 does not fit B=1 H=2 L=3 S=3")
    assert.error_matches(function() gm.attention(q, q, q, { decay = gm.ones(3, 3, 3) }) end, "decay of size 3x3x3")
    assert.error_matches(function() gm.attention(q, q, q, { dropout = 1 }) end, "dropout must be in %[0, 1%)")
    assert.error_matches(function() gm.attention(q, q, q, { decay_mode = "both" }) end, "decay_mode must be")
    assert.error_matches(function() gm.attention(q, q, q, { impl = "magic" }) end, "impl must be")
    assert.error_matches(function() gm.attention(q, q, q, { scale = -1 }) end, "scale must be > 0")
  end)
end)

-- With gm.set_attention_keep_scores(true), forward keeps the raw scores Q Kᵀ for backward when
-- they fit (float32 tile kernel, AVX-512); without room for them (here: a memory limit during
-- forward), or by default, backward computes them again. Either way the gradients are the same
-- bits.
describe("attention's kept scores", function()
  local function run(opts, limited, keep)
    local previous, threads = gm.get_attention_keep_scores(), gm.get_num_threads()
    gm.set_attention_keep_scores(keep)
    gm.set_num_threads(2) -- the forward's scratch (90 KB a thread) must fit in the limit below
    gm.manual_seed(31)
    local B, H, N, d = 2, 2, 300, 16
    local q, k, v = gm.randn(B, H, N, d):requires_grad(true), gm.randn(B, H, N, d):requires_grad(true),
        gm.randn(B, H, N, d):requires_grad(true)
    local decay = gm.rand(H, N, N):requires_grad(true)
    local mask = {}
    for i = 1, B * N do mask[i] = (i > N + 250) and 0 or 1 end -- the second sequence's last 50 keys
    local key_mask = gm.tensor(mask):reshape(B, N)
    local o = { decay = decay, decay_mode = opts.mode, key_mask = key_mask, dropout = opts.dropout,
      training = true }
    collectgarbage()
    local base = gm.memory().live
    if limited then gm.set_memory_limit(base + 1024 * 1024) end -- the scores would take 1.4 MiB
    local ok, out = pcall(gm.attention, q, k, v, o)
    gm.set_memory_limit(0)
    gm.set_attention_keep_scores(previous)
    gm.set_num_threads(threads)
    assert(ok, out)
    local held = gm.memory().live - base
    out:backward(gm.randn(B, H, N, d))
    return { q:grad():totable(), k:grad():totable(), v:grad():totable(), decay:grad():totable() }, held
  end

  local avx512 = false
  for _, f in ipairs(gm.config().cpu_features) do avx512 = avx512 or f == "avx512f" end

  for _, opts in ipairs { { mode = "scores", dropout = 0 }, { mode = "weights", dropout = 0.1 } } do
    it("give backward the same bits as computing them again, " .. opts.mode .. " mode", function()
      local kept, held = run(opts, false, true)
      local again, held_limited = run(opts, true, true)
      local default, held_default = run(opts, false, false)
      for i = 1, #kept do
        assert.same(kept[i], again[i])
        assert.same(kept[i], default[i])
      end
      local scores = 2 * 2 * 300 * 304 * 4
      if avx512 and gm.get_float32_matmul_precision() == "highest" then
        assert.is_true(held - held_limited >= scores, "kept " .. held - held_limited .. " bytes")
      end
      assert.is_true(held_default < held_limited + scores / 2, "not kept by default")
    end)
  end
end)

describe("gm.set_attention_keep_scores", function()
  it("is off by default, reported by gm.config(), and takes only a boolean", function()
    assert.is_false(gm.get_attention_keep_scores())
    assert.is_false(gm.config().attention_keep_scores)
    gm.set_attention_keep_scores(true)
    local on = gm.config().attention_keep_scores
    gm.set_attention_keep_scores(false)
    assert.is_true(on)
    assert.error_matches(function() gm.set_attention_keep_scores(1) end, "set_attention_keep_scores.*boolean expected")
  end)
end)
