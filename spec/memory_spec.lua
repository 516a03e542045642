-- Memory: C allocations are counted, reported to Lua's GC, and released deterministically.
local gm = require "graphmert"

local function settle()
  collectgarbage()
  collectgarbage()
  return gm.memory().live
end

local MiB = 1024 * 1024

-- The cached bytes in large blocks: `cached` also counts the small blocks kept for reuse (tensor
-- headers and storages: a few KiB here, never a whole MiB).
local function large_cached()
  return gm.memory().cached // MiB * MiB
end

describe("memory", function()
  it("returns to its baseline after 10,000 tensors", function()
    local base = settle()
    for i = 1, 10000 do
      local t = gm.randn(16, 16) * i
      local _ = t:sum()
    end
    assert.equal(base, settle())
  end)

  it("stays flat in a loop of large tensors without explicit collection", function()
    settle()
    gm.reset_peak_memory()
    local base = gm.memory().live
    for _ = 1, 300 do
      local t = gm.zeros(1024, 1024) -- 4 MiB each, 1.2 GiB in all
      local _ = t + 1
    end
    local peak = gm.memory().peak - base
    assert.is_true(peak < 256 * 1024 * 1024, "peak grew by " .. peak .. " bytes")
  end)

  it("stays flat through training-style loops with backward", function()
    local w = gm.randn(64, 64):requires_grad(true)
    local base = settle()
    for _ = 1, 500 do
      local x = gm.randn(32, 64)
      local loss = x:matmul(w):tanh():sum()
      loss:backward()
      w:zero_grad()
    end
    assert.equal(base, settle())
  end)

  it("releases at once, twice harmlessly, and on <close>", function()
    local base = settle()
    local t = gm.zeros(1000)
    assert.is_true(gm.memory().live > base)
    t:release()
    assert.equal(base, gm.memory().live)
    t:release()
    assert.is_true(t:is_released())
    do
      local c <close> = gm.zeros(1000)
      assert.is_true(gm.memory().live > base)
    end
    assert.equal(base, gm.memory().live)
  end)

  it("raises on a released tensor", function()
    local t = gm.zeros(3)
    t:release()
    assert.error_matches(function() return t + 1 end, "attempt to use a released tensor")
    assert.error_matches(function() return t:sum() end, "attempt to use a released tensor")
    assert.matches("released", tostring(t))
  end)

  it("keeps sources alive for backward after their boxes are released", function()
    local x = gm.ones(3):requires_grad(true)
    local h = x * 2
    local y = (h * h):sum()
    h:release()
    collectgarbage()
    y:backward()
    assert.tensor_near({ 8, 8, 8 }, x:grad())
  end)

  it("refuses allocations above the memory limit", function()
    local base = settle()
    gm.set_memory_limit(base + 1024 * 1024)
    local ok, err = pcall(gm.zeros, 1024, 1024)
    gm.set_memory_limit(0)
    assert.is_false(ok)
    assert.matches("memory limit reached", err)
    assert.equal(base, settle())
  end)

  it("reports live and peak bytes", function()
    local m = gm.memory()
    assert.is_number(m.live)
    assert.is_true(m.peak >= m.live)
  end)

  it("keeps freed large blocks for reuse, within its cap, outside the live count", function()
    gm.release_memory_cache()
    local base = settle()
    local t = gm.zeros(1024, 1024)
    t:release()
    assert.equal(base, gm.memory().live)
    assert.equal(4 * MiB, large_cached())
    local again = gm.zeros(1024, 1024) -- the same size class: taken from the cache
    assert.equal(0, large_cached())
    again:release()
    gm.set_memory_cache_limit(0)
    assert.equal(0, gm.memory().cached)
    gm.zeros(1024, 1024):release()
    assert.equal(0, gm.memory().cached)
    gm.set_memory_cache_limit(1024 * 1024 * 1024)
  end)

  it("hands a cached block up to half again as large to a request with none of its own size", function()
    local base = settle() -- settled first: a collected large tensor is cached
    gm.release_memory_cache()
    gm.zeros(1024, 1024):release() -- 4 MiB cached
    local half = gm.zeros(1024, 512) -- 2 MiB: the 4 MiB block is too large for it
    assert.equal(4 * MiB, large_cached())
    half:release()
    gm.release_memory_cache()
    gm.zeros(1024, 1024):release()
    gm.set_memory_limit(base + 3.5 * MiB) -- 3 MiB fit under it, the 4 MiB block does not
    local ok, limited = pcall(gm.zeros, 1024, 768)
    gm.set_memory_limit(0)
    assert(ok, limited)
    assert.equal(4 * MiB, large_cached())
    limited:release()
    gm.release_memory_cache()
    gm.zeros(1024, 1024):release()
    local three = gm.zeros(1024, 768) -- 3 MiB: takes the 4 MiB block, counted whole while live
    assert.equal(0, large_cached())
    local held = gm.memory().live - base -- the block and the tensor's own few hundred bytes
    assert.is_true(held >= 4 * MiB and held < 4 * MiB + 4096)
    assert.same({ 0, 0 }, three:narrow(1, 1024, 1):narrow(2, 767, 2):reshape(2):totable())
    three:release()
    assert.equal(base, settle())
    assert.equal(4 * MiB, large_cached()) -- back under its own class
    gm.release_memory_cache()
  end)

  it("keeps freed small blocks for reuse by size class, within the same cap, outside the live count", function()
    gm.release_memory_cache()
    local base = settle()
    assert.equal(0, gm.memory().cached)
    gm.zeros(1000):release() -- its 4000 bytes and its header go to their classes' lists
    assert.equal(base, gm.memory().live)
    local kept = gm.memory().cached
    assert.is_true(kept >= 4000 and kept < 8192, "cached " .. kept .. " bytes")
    local again = gm.zeros(990) -- 3960 bytes: the same class (3584 < bytes <= 4096), taken from its list
    assert.is_true(gm.memory().cached <= kept - 4096, "cached " .. gm.memory().cached .. " bytes")
    local from_cache = gm.memory().live - base
    again:release()
    gm.set_memory_cache_limit(0) -- the cap covers them too
    assert.equal(0, gm.memory().cached)
    local fresh = gm.zeros(990)
    assert.equal(from_cache, gm.memory().live - base) -- live counts the bytes asked for, not the class
    fresh:release()
    assert.equal(0, gm.memory().cached)
    gm.set_memory_cache_limit(1024 * 1024 * 1024)
    assert.equal(base, settle())
  end)
end)

describe("GRAPHMERT_MEMORY_LIMIT", function()
  it("caps tensor memory from the start: a huge tensor is an error, not an out-of-memory kill", function()
    local p = io.popen("GRAPHMERT_MEMORY_LIMIT=64 ./build/bin/graphmert -e " ..
      "\"local gm = require 'graphmert'; print(gm.memory().limit); " ..
      "print(pcall(gm.zeros, 8192, 8192)); print(gm.zeros(1024, 1024):numel())\" 2>&1")
    local out = p:read("a")
    p:close()
    assert.matches("^67108864\n", out)
    assert.matches("false\t.*memory limit reached", out)
    assert.matches("1048576\n$", out)
  end)
end)
