-- stats.lua — confidence intervals for evaluation figures: by the percentile bootstrap, and
-- Wilson's score interval for a share of independent yes/no units.
--
-- bootstrap(units, statistic, {samples = 1000, seed = 1, level = 0.95, exhaustive}) → low, high, value:
--   units is a list (passages, triples, seeds ...); statistic(sample) gives the figure for a
--   list of units; the interval is the percentile interval of the figure over `samples`
--   resamples of the units with replacement. A fixed LCG (not gm's generator) draws the resamples,
--   so evaluating never changes training and the same call gives the same interval. With
--   exhaustive = true every one of the n^n ordered resamples is taken once instead (the exact
--   bootstrap distribution, for small tables: at most a million resamples).
-- covering(values, share) → the smallest of the values that at least `share` of them do not
--   exceed (the nearest-rank quantile: the leaf slots that hold 98% of the tails), nil for none.
-- paired(units, a, b, opts) → low, high, value for the difference a(sample) − b(sample) on the
--   same resamples: the interval of a paired comparison (better/worse only when it excludes 0).
-- ratio(units, num, den) → a statistic Σ num(u) / Σ den(u) over a sample (0 when Σ den = 0),
--   e.g. precision over passages with num = correct triples and den = extracted triples.
-- over_seeds(tables, statistic, opts) → low, high, value for a figure measured on the same units
--   (e.g. held-out triples) by models trained with several seeds: tables[s] is seed s's list of
--   units, value the mean over seeds of statistic(tables[s]). A resample draws the seeds with
--   replacement and, once for all of them, the units (the units are the same triples in every
--   seed's table), so the interval covers both the training seed's and the test set's spread.
-- wilson(yes, n) → low, high, value: the 95% score interval of the share yes / n of n independent
--   units (a graph's triples judged held or not). Where a bootstrap over 1 or 2 units gives an
--   interval of width 0 ("1 of 1 accepted: 1.000 [1.000, 1.000]"), Wilson's says how little they
--   show (1 of 1: [0.207, 1]); for n = 0 it is nil.
-- paired_over_seeds(a_tables, b_tables, statistic, opts) → the same for the difference
--   statistic(a) − statistic(b), seed s of a paired with seed s of b and unit k with unit k.
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

-- Calls visit(draws) once per resample: draws[g] lists the indices drawn for group g (sizes[g]
-- of them, each in 1..sizes[g]), either `samples` random draws or, exhaustively, every
-- combination (an odometer over all the groups' indices).
local function each_resample(sizes, opts, visit)
  local draws = {}
  for g, n in ipairs(sizes) do
    draws[g] = {}
    for i = 1, n do draws[g][i] = 1 end
  end
  if not opts.exhaustive then
    local draw = lcg(opts.seed or 1)
    for _ = 1, opts.samples or 1000 do
      for g, n in ipairs(sizes) do for i = 1, n do draws[g][i] = draw(n) end end
      visit(draws)
    end
    return
  end
  local count = 1
  for _, n in ipairs(sizes) do count = count * n ^ n end
  if count > 1e6 then
    error(string.format("stats: an exhaustive bootstrap of %.0f resamples is too many (at most 1e6)", count), 3)
  end
  while true do
    visit(draws)
    local g, i = #sizes, sizes[#sizes]
    while true do -- advance the odometer: the last index of the last group turns fastest
      if i == 0 then
        g = g - 1
        if g == 0 then return end
        i = sizes[g]
      elseif draws[g][i] < sizes[g] then
        draws[g][i] = draws[g][i] + 1
        break
      else
        draws[g][i] = 1
        i = i - 1
      end
    end
  end
end

local function interval(values, opts, value)
  table.sort(values)
  local level = opts.level or 0.95
  return percentile(values, (1 - level) / 2), percentile(values, 1 - (1 - level) / 2), value
end

local function resampled(units, fn, opts)
  opts = opts or {}
  if #units == 0 then return 0 / 0, 0 / 0, 0 / 0 end
  local values = {}
  each_resample({ #units }, opts, function(draws)
    local sample = {}
    for i, k in ipairs(draws[1]) do sample[i] = units[k] end
    values[#values + 1] = fn(sample)
  end)
  return interval(values, opts, fn(units))
end

function M.bootstrap(units, statistic, opts) return resampled(units, statistic, opts) end

function M.covering(values, share)
  local sorted = table.move(values, 1, #values, 1, {})
  table.sort(sorted)
  return sorted[math.max(1, math.ceil(share * #sorted))]
end

local Z95 = 1.959963984540054 -- the standard normal's 97.5% quantile

function M.wilson(yes, n)
  if n == 0 then return nil end
  local p, z2 = yes / n, Z95 * Z95
  local centre, half = (p + z2 / (2 * n)) / (1 + z2 / n), Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
  return math.max(0, centre - half), math.min(1, centre + half), p
end

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

local function mean_over(tables, seeds, units, statistic)
  local total = 0
  for _, s in ipairs(seeds) do
    local t = tables[s]
    local sample = {}
    for i, k in ipairs(units) do sample[i] = t[k] end
    total = total + statistic(sample)
  end
  return total / #seeds
end

function M.over_seeds(tables, statistic, opts)
  opts = opts or {}
  local n = tables[1] and #tables[1] or 0
  if n == 0 then return 0 / 0, 0 / 0, 0 / 0 end
  for s, t in ipairs(tables) do
    if #t ~= n then
      error(string.format("stats.over_seeds: seed %d has %d units, seed 1 has %d (the same units are expected)", s, #t, n), 2)
    end
  end
  local all_seeds, all_units = {}, {}
  for s = 1, #tables do all_seeds[s] = s end
  for k = 1, n do all_units[k] = k end
  local values = {}
  each_resample({ #tables, n }, opts, function(draws)
    values[#values + 1] = mean_over(tables, draws[1], draws[2], statistic)
  end)
  return interval(values, opts, mean_over(tables, all_seeds, all_units, statistic))
end

function M.paired_over_seeds(a_tables, b_tables, statistic, opts)
  if #a_tables ~= #b_tables then
    error(string.format("stats.paired_over_seeds: %d seeds against %d", #a_tables, #b_tables), 2)
  end
  local zipped = {}
  for s = 1, #a_tables do
    local a, b = a_tables[s], b_tables[s]
    if #a ~= #b then
      error(string.format("stats.paired_over_seeds: seed %d has %d units against %d", s, #a, #b), 2)
    end
    zipped[s] = {}
    for k = 1, #a do zipped[s][k] = { a[k], b[k] } end
  end
  local function side(i)
    return function(sample)
      local part = {}
      for k, pair in ipairs(sample) do part[k] = pair[i] end
      return statistic(part)
    end
  end
  local a, b = side(1), side(2)
  return M.over_seeds(zipped, function(sample) return a(sample) - b(sample) end, opts)
end

return M
