-- stats.lua — confidence intervals for evaluation figures, by the percentile bootstrap.
--
-- bootstrap(units, statistic, {samples = 1000, seed = 1, level = 0.95}) → low, high, value:
--   units is a list (passages, triples, seeds ...); statistic(sample) gives the figure for a
--   list of units; the interval is the percentile interval of the figure over `samples`
--   resamples of the units with replacement. A fixed LCG (not gm's generator) draws the resamples,
--   so evaluating never changes training and the same call gives the same interval.
-- paired(units, a, b, opts) → low, high, value for the difference a(sample) − b(sample) on the
--   same resamples: the interval of a paired comparison (better/worse only when it excludes 0).
-- ratio(units, num, den) → a statistic Σ num(u) / Σ den(u) over a sample (0 when Σ den = 0),
--   e.g. precision over passages with num = correct triples and den = extracted triples.
local M = {}

local function lcg(seed)
  local state = seed % 2147483647
  if state <= 0 then state = state + 2147483646 end
  return function(n) -- uniform integer in 1..n
    state = state * 48271 % 2147483647
    return state % n + 1
  end
end

local function percentile(sorted, q)
  local pos = q * (#sorted - 1) + 1
  local lo = math.floor(pos)
  local frac = pos - lo
  if lo >= #sorted then return sorted[#sorted] end
  return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo])
end

local function resampled(units, fn, opts)
  opts = opts or {}
  local samples, level = opts.samples or 1000, opts.level or 0.95
  if #units == 0 then return 0 / 0, 0 / 0, 0 / 0 end
  local draw, values = lcg(opts.seed or 1), {}
  for s = 1, samples do
    local sample = {}
    for i = 1, #units do sample[i] = units[draw(#units)] end
    values[s] = fn(sample)
  end
  table.sort(values)
  return percentile(values, (1 - level) / 2), percentile(values, 1 - (1 - level) / 2), fn(units)
end

function M.bootstrap(units, statistic, opts) return resampled(units, statistic, opts) end

function M.paired(units, a, b, opts)
  return resampled(units, function(sample) return a(sample) - b(sample) end, opts)
end

function M.ratio(num, den)
  return function(sample)
    local n, d = 0, 0
    for _, u in ipairs(sample) do n, d = n + num(u), d + den(u) end
    return d > 0 and n / d or 0
  end
end

return M
