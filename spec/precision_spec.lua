-- precision_spec.lua — gm.set_float32_matmul_precision (PyTorch's names). "highest" and "high"
-- multiply in float32; "medium" rounds the inputs of every matrix product to bfloat16 and
-- accumulates in float32 where the CPU has avx512_bf16, and is float32 elsewhere.
--
-- Tolerance stated here: bfloat16 keeps 8 significant bits, so each input is off by at most
-- 2^-9 relative and a product by about 2^-8; over a sum of k terms of random sign the error
-- grows like sqrt(k) while the result does too. "medium" results are therefore compared with
-- float32 at 2% of the largest magnitude of the float32 result (a few times that estimate),
-- and the bf16 kernel itself, exactly, against float64 sums of bf16-rounded inputs at 1e-5.
local gm = require "graphmert"

local bf16 = gm.config().bf16_available

local function with_precision(p, fn)
  local previous = gm.get_float32_matmul_precision()
  gm.set_float32_matmul_precision(p)
  local ok, a, b, c = pcall(fn)
  gm.set_float32_matmul_precision(previous)
  assert(ok, a)
  return a, b, c
end

-- max |x - y| / max |y| over the elements of two tensors of the same shape
local function relative_gap(x, y)
  local d = x - y
  return math.sqrt((d * d):max():item() / math.max((y * y):max():item(), 1e-30))
end

-- round a float32 value to the nearest bfloat16 (ties to even), as the kernel does
local function to_bf16(x)
  local bits = string.unpack("<I4", string.pack("<f", x))
  bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
  return (string.unpack("<f", string.pack("<I4", bits & 0xFFFFFFFF)))
end

-- op(a) @ op(b) in float64 from bf16-rounded inputs, as a nested table
local function bf16_reference(a, b, ta, tb)
  local A, B = a:totable(), b:totable()
  local m, k = ta and #A[1] or #A, ta and #A or #A[1]
  local n = tb and #B or #B[1]
  local out = {}
  for i = 1, m do
    out[i] = {}
    for j = 1, n do
      local s = 0.0
      for l = 1, k do
        local x = ta and A[l][i] or A[i][l]
        local y = tb and B[j][l] or B[l][j]
        s = s + to_bf16(x) * to_bf16(y)
      end
      out[i][j] = s
    end
  end
  return out
end

describe("float32 matmul precision", function()
  it("is 'highest' by default, takes PyTorch's three names and refuses others", function()
    assert.equals("highest", gm.get_float32_matmul_precision())
    for _, p in ipairs { "high", "medium", "highest" } do
      gm.set_float32_matmul_precision(p)
      assert.equals(p, gm.get_float32_matmul_precision())
      assert.equals(p, gm.config().float32_matmul_precision)
    end
    assert.error_matches(function() gm.set_float32_matmul_precision("low") end,
      "bad argument #1 to 'set_float32_matmul_precision' %(invalid option 'low'%)")
    assert.error_matches(function() gm.set_float32_matmul_precision() end, "set_float32_matmul_precision")
  end)

  it("says in gm.config what 'medium' computes with on this CPU", function()
    with_precision("medium", function()
      assert.equals(bf16 and "bfloat16 inputs, float32 accumulation" or "float32 (no avx512_bf16 on this CPU)",
        gm.config().matmul_compute)
    end)
    assert.equals("float32", gm.config().matmul_compute)
    -- graphmert's own bf16 kernel: AMX tiles where the CPU has them (the OS may refuse them)
    local features, amx = gm.config().cpu_features, false
    for _, f in ipairs(features) do amx = amx or f == "amx_bf16" end
    local kernel = gm.config().bf16_kernel
    if not bf16 then assert.equals("none (no avx512_bf16 on this CPU)", kernel)
    elseif not amx or os.getenv("GRAPHMERT_BF16_KERNEL") == "avx512" then assert.equals("AVX-512 BF16", kernel)
    else assert.truthy(kernel == "AMX tiles" or kernel == "AVX-512 BF16", kernel) end
    -- oneDNN is optional (scripts/setup.sh installs it): used when the loader finds it
    local installed = os.execute("ldconfig -p | grep -q 'libdnnl\\.so\\.2 '")
    assert.matches(installed and "^oneDNN %d+%.%d+%.%d+ %(libdnnl%.so%.2%)$" or "^not loaded %(.*libdnnl%.so%.2",
      gm.config().bf16_large_products)
  end)

  it("'high' is float32 on CPU, bit for bit the same as 'highest'", function()
    gm.manual_seed(1)
    local a, b = gm.randn(70, 90), gm.randn(90, 50)
    local x = with_precision("highest", function() return a:matmul(b) end)
    local y = with_precision("high", function() return a:matmul(b) end)
    assert.same(x:totable(), y:totable())
  end)

  it("'medium' multiplies bf16-rounded inputs with float32 sums, for every transpose and edge size", function()
    gm.manual_seed(2)
    for _, c in ipairs { { 37, 53, 41, false, false }, { 13, 1, 33, true, false }, { 25, 64, 7, false, true },
      { 12, 32, 32, true, true }, { 1, 129, 3, false, false } } do
      local m, k, n, ta, tb = c[1], c[2], c[3], c[4], c[5]
      local a = ta and gm.randn(k, m) or gm.randn(m, k)
      local b = tb and gm.randn(n, k) or gm.randn(k, n)
      local got = with_precision("medium", function() return a:matmul(b, ta, tb) end)
      if bf16 then
        assert.tensor_near(bf16_reference(a, b, ta, tb), got, 1e-5, 1e-5 * math.sqrt(k))
      else
        assert.same(with_precision("highest", function() return a:matmul(b, ta, tb) end):totable(), got:totable())
      end
    end
  end)

  it("'medium' on AMX tiles equals the AVX-512 BF16 kernel to float32 rounding: products and attention", function()
    -- the same seeded work in this process and in a child told GRAPHMERT_BF16_KERNEL=avx512
    local work = [[
      local gm = require "graphmert"
      gm.manual_seed(12)
      local out = { gm.config().bf16_kernel }
      local function put(t) for _, x in ipairs(t:reshape(t:numel()):totable()) do out[#out + 1] = string.format("%.9g", x) end end
      for _, c in ipairs { { 33, 65, 129, false, false }, { 17, 40, 31, true, false }, { 64, 256, 64, false, true },
        { 100, 7, 300, true, true } } do
        local m, k, n, ta, tb = c[1], c[2], c[3], c[4], c[5]
        local a = ta and gm.randn(k, m) or gm.randn(m, k)
        local b = tb and gm.randn(n, k) or gm.randn(k, n)
        put(a:matmul(b, ta, tb))
      end
      local q, k, v = gm.randn(1, 2, 150, 32):requires_grad(true), gm.randn(1, 2, 150, 32):requires_grad(true),
        gm.randn(1, 2, 150, 32):requires_grad(true)
      local o = gm.attention(q, k, v, { decay = gm.rand(150, 150) })
      o:backward(gm.randn(1, 2, 150, 32))
      for _, t in ipairs { o, q:grad(), k:grad(), v:grad() } do put(t) end
      return out
    ]]
    local here = with_precision("medium", load(work))
    if here[1] ~= "AMX tiles" then return end -- one kernel on this CPU: nothing to compare
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write("require('graphmert').set_float32_matmul_precision('medium')\n" ..
      "io.write(table.concat((function() " .. work .. " end)(), ' '))")
    f:close()
    local p = io.popen("GRAPHMERT_BF16_KERNEL=avx512 ./build/bin/graphmert " .. path .. " 2>&1")
    local words = {}
    for w in p:read("a"):gmatch("%S+") do words[#words + 1] = w end
    p:close()
    os.remove(path)
    assert.equals("AVX-512", words[1], table.concat(words, " ", 1, math.min(#words, 20)))
    assert.equals(#here + 1, #words) -- "AVX-512 BF16" is two words
    for i = 2, #here do
      local x, y = tonumber(here[i]), tonumber(words[i + 1])
      assert(math.abs(x - y) <= 1e-4 * math.max(1, math.abs(y)), string.format("value %d: AMX %s, AVX-512 %s", i, here[i], words[i + 1]))
    end
  end)

  it("'medium' large products (oneDNN when installed) round as the small ones do, for every transpose", function()
    -- 512 x 256 x 256 is at the size from which gm_bf16.c hands products to oneDNN; its 64-row
    -- pieces stay on graphmert's own kernel. Both multiply the same bf16-rounded inputs, so they
    -- differ only by float32 summation order (1e-5 of the result's scale).
    gm.manual_seed(7)
    -- k ~= n, so that a swap of the two shows; every tensor under 1 MiB, so that live bytes are
    -- the tensors' own (larger blocks count in size classes)
    local m, k, n = 256, 256, 320
    local a, b = gm.randn(m, k), gm.randn(k, n)
    with_precision("medium", function()
      local pieces = {}
      for i = 0, m - 1, 64 do pieces[#pieces + 1] = a:narrow(1, i + 1, 64):matmul(b) end
      local small = gm.cat(pieces, 1)
      local at, bt = a:transpose(1, 2), b:transpose(1, 2)
      for _, c in ipairs { { a, b, false, false }, { at, b, true, false }, { a, bt, false, true }, { at, bt, true, true } } do
        local large = c[1]:matmul(c[2], c[3], c[4])
        local gap = relative_gap(large, small)
        assert.is_true(gap < 1e-5, string.format("transposes %s %s: gap %g", c[3], c[4], gap))
      end
    end)
  end)

  it("'medium' with gradients off keeps a parameter's rounding for the next product, never a stale one", function()
    -- 512 x 256 x 320 goes to oneDNN where it is installed (else to graphmert's kernel, which
    -- rounds as it packs: the same bits either way). The weight's rounding is kept by its
    -- storage and version: the product after an in-place change equals one with a new tensor
    -- of the new values, and one after it with a copy of the old values the first.
    gm.manual_seed(8)
    local x, w = gm.randn(512, 256), gm.randn(320, 256):requires_grad(true)
    local old, new = w:clone():requires_grad(false), gm.randn(320, 256)
    local function same(p, q, what)
      local d = p - q
      local gap = (d * d):max():item()
      assert.are.equal(0, gap, what .. string.format(": %g apart (squared)", gap))
    end
    with_precision("medium", function()
      gm.no_grad(function()
        local first = x:matmul(w, false, true)
        same(x:matmul(w, false, true), first, "the same weight again")
        w:copy_(new)
        local changed = x:matmul(w, false, true)
        same(changed, x:matmul(new, false, true), "after copy_")
        assert.is_true(relative_gap(changed, first) > 0.1, "the change shows")
        w:copy_(old)
        same(x:matmul(w, false, true), first, "back to the old values")
        w:mul_(2)
        same(x:matmul(w, false, true), x:matmul(old * 2, false, true), "after mul_")
        -- a weight freed and another made (often at the same address): the new one's values
        for seed = 1, 3 do
          gm.manual_seed(20 + seed)
          local fresh = gm.randn(320, 256):requires_grad(true)
          same(x:matmul(fresh, false, true), x:matmul(fresh:clone(), false, true), "a new weight " .. seed)
          fresh:release()
        end
      end)
    end)
  end)

  it("'medium' inference holds one rounding per weight and version, and gm.release_memory_cache frees them", function()
    -- observable only where the products go to oneDNN (the kept roundings are for its operands)
    local onednn = bf16 and tostring(gm.config().bf16_large_products):match("oneDNN") ~= nil
    if not onednn then
      pending("no avx512_bf16 or no oneDNN here: 'medium' keeps no rounding")
      return
    end
    gm.manual_seed(9)
    local x, w = gm.randn(512, 256), gm.randn(320, 256):requires_grad(true)
    local rounding = 320 * 256 * 2
    with_precision("medium", function()
      gm.no_grad(function()
        gm.release_memory_cache()
        collectgarbage(); collectgarbage()
        local function grown_by(fn)
          local before = gm.memory().live
          fn()
          collectgarbage(); collectgarbage()
          return gm.memory().live - before
        end
        local function product() x:matmul(w, false, true):release() end
        assert.equal(rounding, grown_by(product), "the first product keeps the weight's rounding")
        assert.equal(0, grown_by(product), "the second finds it")
        w:mul_(0.5)
        assert.equal(rounding, grown_by(product), "a new version, a new rounding")
        assert.equal(-2 * rounding, grown_by(gm.release_memory_cache), "released")
        assert.equal(0, grown_by(function() -- a training step's products (and its backward's) keep nothing
          gm.set_grad_enabled(true)
          local ok, err = pcall(function() x:matmul(w, false, true):sum():backward() end)
          gm.set_grad_enabled(false)
          assert(ok, err)
          w:zero_grad()
        end))
      end)
    end)
  end)

  it("'medium' matmul gradients round G once for both products and equal the products taken apart", function()
    -- both gradients are oneDNN-sized here, and backward hands them one bf16 copy of G; a stale
    -- or misshapen copy would show as a difference from the same products computed on their own
    gm.manual_seed(11)
    -- k ~= n, so that a swap of the two shows; every tensor under 1 MiB, so that live bytes are
    -- the tensors' own (larger blocks count in size classes)
    local m, k, n = 256, 256, 320
    with_precision("medium", function()
      for _, t in ipairs { { false, false }, { true, false }, { false, true }, { true, true } } do
        local ta, tb = t[1], t[2]
        local a = (ta and gm.randn(k, m) or gm.randn(m, k)):requires_grad(true)
        local b = (tb and gm.randn(n, k) or gm.randn(k, n)):requires_grad(true)
        local g = gm.randn(m, n)
        for round = 1, 2 do -- the second time with new values in the same G: no copy outlives its backward
          if round == 2 then g:mul_(-0.5):add_(gm.randn(m, n)) end
          a:zero_grad(); b:zero_grad()
          a:matmul(b, ta, tb):backward(g)
          local da = ta and b:matmul(g, tb, true) or g:matmul(b, false, not tb)
          local db = tb and g:matmul(a, true, ta) or a:matmul(g, not ta, false)
          assert.equals(0, relative_gap(a:grad(), da), string.format("dA, transposes %s %s", ta, tb))
          assert.equals(0, relative_gap(b:grad(), db), string.format("dB, transposes %s %s", ta, tb))
        end
      end
      -- a batch against one weight: its gradient is one product over the folded rows
      local a, w, g = gm.randn(2, m, k):requires_grad(true), gm.randn(k, n):requires_grad(true), gm.randn(2, m, n)
      a:matmul(w):backward(g)
      assert.equals(0, relative_gap(a:grad(), g:matmul(w, false, true)))
      assert.equals(0, relative_gap(w:grad(), a:reshape(2 * m, k):matmul(g:reshape(2 * m, n), true, false)))
    end)
  end)

  it("'medium' keeps A's bf16 rounding for B's gradient in place of A: same bits, A's values freed", function()
    -- an intermediate A of a oneDNN-sized product: backward multiplies the forward's rounding of
    -- it instead of rounding A again, so B's gradient must equal the product from a leaf copy of
    -- A bit for bit, and A's float32 values (only that product reads them) go at once
    -- 512 rows of A (one matrix, or a batch of two) against k = 256, n = 320: oneDNN-sized, k ~= n
    -- so that a swap of the two shows, and every tensor under 1 MiB, so that live bytes are the
    -- tensors' own (larger blocks count in size classes)
    local rows, k, n = 512, 256, 320
    local onednn = bf16 and tostring(gm.config().bf16_large_products):match("oneDNN") ~= nil
    with_precision("medium", function()
      for _, case in ipairs { { { rows }, false }, { { rows }, true }, { { 2, rows // 2 }, false }, { { 2, rows // 2 }, true } } do
        local lead, tb = case[1], case[2]
        gm.manual_seed(13)
        local shape_x, shape_g = { table.unpack(lead) }, { table.unpack(lead) }
        shape_x[#shape_x + 1], shape_g[#shape_g + 1] = k, n
        local x = gm.randn(table.unpack(shape_x)):requires_grad(true)
        local w = (tb and gm.randn(n, k) or gm.randn(k, n)):requires_grad(true)
        local g = gm.randn(table.unpack(shape_g))
        collectgarbage(); collectgarbage() -- earlier garbage, so that live counts this case only
        local live = gm.memory().live
        local y = (x * 1):matmul(w, false, tb) -- A = x * 1 is only held by the product
        collectgarbage(); collectgarbage() -- and A's Lua box, until it is collected
        local grown = gm.memory().live - live
        if onednn then -- y, A's rounding (2 bytes an element), a few headers; A's 4 bytes would pass the bound
          assert.is_true(grown < rows * n * 4 + rows * k * 3, "A's values were kept: " .. grown .. " bytes")
        end
        y:backward(g)
        y = nil
        collectgarbage(); collectgarbage()
        if onednn then -- backward freed the rounding with its node: only x's and w's gradients stay
          local left = gm.memory().live - live
          assert.is_true(left <= rows * k * 4 + k * n * 4 + 4096, "left after backward: " .. left .. " bytes")
        end
        local x2, g2 = x:reshape(rows, k), g:reshape(rows, n)
        local dw = tb and g2:matmul(x2, true, false) or x2:matmul(g2, true, false)
        local what = string.format("batch %s, transposed B %s", #lead > 1, tb)
        assert.equals(0, relative_gap(w:grad(), dw), "dB, " .. what)
        assert.equals(0, relative_gap(x:grad(), g:matmul(w, false, not tb)), "dA, " .. what)
      end
    end)
  end)

  it("'medium' matmul (large, batched, threaded) agrees with float32 to bf16 tolerance", function()
    gm.manual_seed(3)
    local a, b = gm.randn(3, 300, 257), gm.randn(257, 190)
    local x = with_precision("highest", function() return a:matmul(b) end)
    local y = with_precision("medium", function() return a:matmul(b) end)
    local gap = relative_gap(y, x)
    assert.is_true(gap < 0.02, "gap " .. gap)
    if bf16 then assert.is_true(gap > 0, "medium gave float32's exact result") end
  end)

  it("'medium' attention forward and backward agree with float32 to bf16 tolerance", function()
    gm.manual_seed(4)
    local B, H, N, d = 2, 2, 150, 32
    local q, k, v = gm.randn(B, H, N, d), gm.randn(B, H, N, d), gm.randn(B, H, N, d)
    local decay = gm.rand(N, N)
    local function run()
      local qq, kk, vv = q:detach():requires_grad(true), k:detach():requires_grad(true), v:detach():requires_grad(true)
      local out = gm.attention(qq, kk, vv, { decay = decay })
      out:backward(gm.ones(B, H, N, d))
      return out, { qq:grad(), kk:grad(), vv:grad() }
    end
    local o32, g32 = with_precision("highest", run)
    local o16, g16 = with_precision("medium", run)
    assert.is_true(relative_gap(o16, o32) < 0.02, "out " .. relative_gap(o16, o32))
    for i = 1, 3 do assert.is_true(relative_gap(g16[i], g32[i]) < 0.02, "grad " .. i .. " " .. relative_gap(g16[i], g32[i])) end
  end)

  it("'medium' encoder layer agrees with float32 to bf16 tolerance, gradients included", function()
    gm.manual_seed(5)
    local layer = gm.nn.EncoderLayer { dim = 64, heads = 4, ffn = 128, dropout = 0, attention_dropout = 0 }
    local x = gm.randn(2, 40, 64)
    local function run()
      layer:zero_grad()
      local y = layer(x, { decay = gm.rand(40, 40) })
      ;(y * y):sum():backward()
      return y, layer.fc1.weight:grad():clone()
    end
    gm.manual_seed(6)
    local y32, g32 = with_precision("highest", run)
    gm.manual_seed(6)
    local y16, g16 = with_precision("medium", run)
    assert.is_true(relative_gap(y16, y32) < 0.02, "out " .. relative_gap(y16, y32))
    assert.is_true(relative_gap(g16, g32) < 0.05, "fc1 grad " .. relative_gap(g16, g32))
  end)

  it("a tiny GraphMERT trained 200 steps in 'medium' ends within 2% of float32's loss", function()
    local R, Lv, V = 8, 2, 40
    local N = R * (1 + Lv)
    local function batch_for(step)
      gm.manual_seed(100 + step)
      local r = gm.rand(4, N):totable()
      local ids, valid = {}, {}
      for b = 1, 4 do
        ids[b], valid[b] = {}, {}
        for n = 1, N do
          local filled = n <= R or ((n - R - 1) // Lv) % 2 == 0
          ids[b][n] = filled and (5 + math.floor(r[b][n] * (V - 5))) or 1
          valid[b][n] = filled and 1 or 0
        end
      end
      local batch = { ids = gm.tensor(ids), valid = gm.tensor(valid),
        relation = { { 2, 0, 1, 0, 0, 0, 3, 0 }, { 0, 1, 0, 0, 2, 0, 0, 0 }, { 1, 1, 0, 0, 0, 0, 0, 2 }, { 0, 0, 0, 3, 0, 0, 1, 0 } },
        head_length = { { 2, 0, 1, 0, 0, 0, 2, 0 }, { 0, 1, 0, 0, 2, 0, 0, 0 }, { 1, 2, 0, 0, 0, 0, 0, 1 }, { 0, 0, 0, 2, 0, 0, 1, 0 } } }
      return gm.data.masking.mask(batch, { vocab = V, mask_id = 4, special = { [1] = true },
        layout = gm.layout { roots = R, leaves = Lv }, leaf_rate = 0.5 })
    end
    local function train()
      gm.manual_seed(9)
      local model = gm.nn.GraphMERT { vocab = V, hidden = 64, layers = 2, heads = 4, ffn = 128, roots = R,
        leaves = Lv, relations = 3, dropout = 0, attention_dropout = 0, relation_dropout = 0 }
      local opt = gm.optim.adamw(model:named_parameters(), { lr = 3e-3, weight_decay = 0 })
      for step = 1, 200 do
        local batch = batch_for(step % 50) -- 50 fixed batches, four passes
        opt:zero_grad()
        model:loss(batch):backward()
        opt:step()
      end
      -- the trained model's loss on all 50 batches, in float32 for both runs: the last steps'
      -- own losses swing by a few percent from batch to batch at this size
      return with_precision("highest", function()
        local loss = 0
        for i = 0, 49 do loss = loss + model:loss(batch_for(i)):item() / 50 end
        return loss
      end)
    end
    local f32 = with_precision("highest", train)
    local b16 = with_precision("medium", train)
    assert.is_true(math.abs(b16 - f32) <= 0.02 * f32, string.format("medium %.4f vs float32 %.4f", b16, f32))
  end)
end)
