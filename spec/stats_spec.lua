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
end)
