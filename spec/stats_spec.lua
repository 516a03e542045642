-- Bootstrap intervals against values worked out by hand.
local gm = require "graphmert"
local stats = gm.eval.stats

describe("eval.stats", function()
  it("takes the percentiles of the resampled figures, interpolating between ranks", function()
    local calls = 0
    local counter = function() calls = calls + 1; return calls end -- the s-th resample gives s
    local low, high = stats.bootstrap({ 1, 2, 3 }, counter, { samples = 1000 })
    -- ranks 1..1000: 2.5% at 0.025·999 + 1 = 25.975, 97.5% at 0.975·999 + 1 = 975.025
    assert.near(25.975, low, 1e-9)
    assert.near(975.025, high, 1e-9)
  end)

  it("gives Wilson's score interval for a share of independent units (values from its closed form, z = 1.96)", function()
    local function near(want, got) assert.is_true(math.abs(want - got) < 5e-5, want .. " vs " .. got) end
    for _, case in ipairs { { 0, 1, 0, 0.79345 }, { 1, 1, 0.20655, 1 }, { 5, 10, 0.23659, 0.76341 }, { 38, 38, 0.90819, 1 },
      { 7, 300, 0.01135, 0.04737 } } do
      local lo, hi, p = stats.wilson(case[1], case[2])
      near(case[3], lo)
      near(case[4], hi)
      assert.equal(case[1] / case[2], p)
    end
    assert.is_nil(stats.wilson(0, 0))
  end)

  it("gives a ratio statistic and a zero-width interval for identical units", function()
    local units = { { c = 1, n = 2 }, { c = 1, n = 2 }, { c = 1, n = 2 } }
    local precision = stats.ratio(function(u) return u.c end, function(u) return u.n end)
    local low, high, value = stats.bootstrap(units, precision)
    assert.same({ 0.5, 0.5, 0.5 }, { low, high, value })
    assert.equal(0, stats.ratio(function() return 1 end, function() return 0 end)({ {} }))
  end)

  it("pairs two statistics on the same resamples, and repeats itself for one seed", function()
    local units = {}
    for i = 1, 50 do units[i] = { a = i % 3 == 0 and 1 or 0, b = i % 5 == 0 and 1 or 0 } end
    local mean = function(key) return stats.ratio(function(u) return u[key] end, function() return 1 end) end
    local low, high, diff = stats.paired(units, mean("a"), mean("b"), { seed = 7 })
    assert.near(16 / 50 - 10 / 50, diff, 1e-12)
    assert.is_true(low <= diff and diff <= high)
    local low2, high2 = stats.paired(units, mean("a"), mean("b"), { seed = 7 })
    assert.same({ low, high }, { low2, high2 })
    local same_low, same_high = stats.paired(units, mean("a"), mean("a"))
    assert.same({ 0, 0 }, { same_low, same_high })
  end)

  it("takes every resample once when exhaustive: {0, 1} gives means 0, .5, .5, 1", function()
    local mean = stats.ratio(function(u) return u end, function() return 1 end)
    local low, high, value = stats.bootstrap({ 0, 1 }, mean, { exhaustive = true })
    -- sorted 0, .5, .5, 1: 2.5% at 0.025·3 + 1 = 1.075 → 0.0375; 97.5% at 3.925 → 0.9625
    assert.near(0.0375, low, 1e-12)
    assert.near(0.9625, high, 1e-12)
    assert.equal(0.5, value)
    assert.has_error(function() stats.bootstrap({ 1, 2, 3, 4, 5, 6, 7, 8 }, mean, { exhaustive = true }) end,
      "stats: an exhaustive bootstrap of 16777216 resamples is too many (at most 1e6)")
  end)

  local mean = stats.ratio(function(u) return u end, function() return 1 end)

  it("resamples seeds and shared units: two seeds of two triples, worked out by hand", function()
    -- seed 1 scores {0, 1}, seed 2 {1, 1}. Seeds (1,1): the unit draws give 0, .5, .5, 1;
    -- (1,2) and (2,1): (seed 1 + 1)/2 = .5, .75, .75, 1 each; (2,2): 1 four times. Sorted 16:
    -- 0, .5 ×4, .75 ×4, 1 ×7: 2.5% at 0.025·15 + 1 = 1.375 → .1875; 97.5% at 15.625 → 1.
    local low, high, value = stats.over_seeds({ { 0, 1 }, { 1, 1 } }, mean, { exhaustive = true })
    assert.near(0.1875, low, 1e-12)
    assert.equal(1, high)
    assert.equal(0.75, value)
    -- random resamples approach the exact interval
    local rl, rh = stats.over_seeds({ { 0, 1 }, { 1, 1 } }, mean, { samples = 20000 })
    assert.near(0.1875, rl, 0.2)
    assert.equal(1, rh)
  end)

  it("pairs seed s with seed s and triple k with triple k", function()
    -- differences per triple: seed 1 {1, 0}, seed 2 {0, 1}; a resample mixing both seeds takes
    -- the same triples from each, so its mean difference is .5 whatever the triples: 8 of the 16
    -- values are .5; seeds (1,1) give 1, .5, .5, 0 and (2,2) 0, .5, .5, 1
    local a, b = { { 1, 0 }, { 1, 1 } }, { { 0, 0 }, { 1, 0 } }
    local low, high, value = stats.paired_over_seeds(a, b, mean, { exhaustive = true })
    assert.same({ 0, 1, 0.5 }, { low, high, value })
    local same_low, same_high, same = stats.paired_over_seeds(a, a, mean)
    assert.same({ 0, 0, 0 }, { same_low, same_high, same })
    assert.has_error(function() stats.paired_over_seeds(a, { { 1, 0 } }, mean) end,
      "stats.paired_over_seeds: 2 seeds against 1")
    assert.has_error(function() stats.over_seeds({ { 1, 0 }, { 1 } }, mean) end,
      "stats.over_seeds: seed 2 has 1 units, seed 1 has 2 (the same units are expected)")
  end)
end)
