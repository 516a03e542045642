-- ranking.lua — how well a system's own score ranks its triples: the precision–recall curve over
-- score thresholds, and the precision it reaches at a fixed recall, with a bootstrap interval
-- over passages. Each system is ranked by its own score, so systems whose scores mean different
-- things (a log-probability, a rule's precision) are compared where it matters to a user: how
-- many of the triples kept hold, for a given share of the facts found.
--
-- A system's units are its passages, as eval.extract.score_passage gives them: unit.scored =
-- {{score, held = true|false} (an extracted triple), {score, recall = true} (a fact it found,
-- at its triple's score)}, unit.gold = the facts there were to find.
--
--   ranking.curve(units) → the points {threshold, precision, recall} for each distinct score,
--     best first (a point once at least one triple is kept)
--   ranking.precision_at(units, recall) → the best precision over the thresholds that reach the
--     recall (the operating point a user would pick on this data), or nil when none does
--   ranking.precision_at_interval(units, recall, opts) → low, high, value: the same with a 95%
--     percentile bootstrap over passages (gm.eval.stats; opts as its bootstrap's); a resample
--     whose triples never reach the recall counts as precision 0 (no threshold gives it), and
--     all three are nil when the passages themselves do not reach it
--   ranking.recall_at(units, precision) → the largest recall of a threshold whose precision is at
--     least `precision` (0 when none is): how much of the facts a user keeps at that precision
--   ranking.recall_at_interval(units, precision, opts) → low, high, value: the same with a 95%
--     percentile bootstrap over passages
--   ranking.difference_at_interval(a, b, recall, opts) → low, high, value: system a's precision at
--     the recall minus system b's, on the same passages (units k of both), with a paired 95%
--     percentile bootstrap; nil when either does not reach the recall
--   ranking.recall_difference_interval(a, b, precision, opts) → the same for the recall kept at
--     the precision
local stats = require "graphmert.eval.stats"

local M = {}

-- every scored entry with its unit's index, best score first (ties by unit and place: stable)
local function entries(units)
  local all = {}
  for k, u in ipairs(units) do
    for i, e in ipairs(u.scored) do all[#all + 1] = { score = e.score, held = e.held, recall = e.recall, unit = k, i = i } end
  end
  table.sort(all, function(a, b)
    if a.score ~= b.score then return a.score > b.score end
    if a.unit ~= b.unit then return a.unit < b.unit end
    return a.i < b.i
  end)
  return all
end

-- the curve for the units weighted by `weight[k]` (how often unit k is drawn), over the sorted
-- entries; visit(threshold, precision, recall) at each distinct score
local function walk(all, units, weight, visit)
  local gold = 0
  for k, u in ipairs(units) do gold = gold + (weight[k] or 0) * u.gold end
  local n, correct, recalled = 0, 0, 0
  for i, e in ipairs(all) do
    local w = weight[e.unit] or 0
    if e.recall then recalled = recalled + w else n = n + w; if e.held then correct = correct + w end end
    if (i == #all or all[i + 1].score < e.score) and n > 0 then
      visit(e.score, correct / n, gold > 0 and recalled / gold or 0)
    end
  end
end

local function ones(units)
  local w = {}
  for k = 1, #units do w[k] = 1 end
  return w
end

function M.curve(units)
  local points = {}
  walk(entries(units), units, ones(units), function(threshold, precision, recall)
    points[#points + 1] = { threshold = threshold, precision = precision, recall = recall }
  end)
  return points
end

local function best_at(all, units, weight, recall)
  local best
  walk(all, units, weight, function(_, p, r)
    if r >= recall - 1e-12 and (not best or p > best) then best = p end
  end)
  return best
end

local function recall_where(all, units, weight, precision)
  local best = 0
  walk(all, units, weight, function(_, p, r)
    if p >= precision - 1e-12 and r > best then best = r end
  end)
  return best
end

function M.precision_at(units, recall)
  return best_at(entries(units), units, ones(units), recall)
end

function M.recall_at(units, precision)
  return recall_where(entries(units), units, ones(units), precision)
end

-- a figure of the ranking, stat(all, units, weight), with a 95% percentile bootstrap over passages
-- (a resample where stat gives nil counts as 0)
local function with_interval(units, stat, opts)
  local all = entries(units)
  local value = stat(all, units, ones(units))
  if not value then return nil, nil, nil end
  local index = {}
  for k = 1, #units do index[k] = k end
  local low, high = stats.bootstrap(index, function(sample)
    local weight = {}
    for _, k in ipairs(sample) do weight[k] = (weight[k] or 0) + 1 end
    return stat(all, units, weight) or 0
  end, opts)
  return low, high, value
end

function M.precision_at_interval(units, recall, opts)
  return with_interval(units, function(all, u, w) return best_at(all, u, w, recall) end, opts)
end

function M.recall_at_interval(units, precision, opts)
  return with_interval(units, function(all, u, w) return recall_where(all, u, w, precision) end, opts)
end

-- system a's figure minus system b's on the same passages (units k of both), stat as with_interval's,
-- with a paired 95% percentile bootstrap; nil when either has none
local function paired(a, b, stat, opts, who)
  if #a ~= #b then error(string.format("ranking.%s: %d units against %d", who, #a, #b), 3) end
  local all_a, all_b = entries(a), entries(b)
  local va, vb = stat(all_a, a, ones(a)), stat(all_b, b, ones(b))
  if not va or not vb then return nil, nil, nil end
  local index = {}
  for k = 1, #a do index[k] = k end
  local low, high = stats.bootstrap(index, function(sample) -- (the same passages drawn for both)
    local weight = {}
    for _, k in ipairs(sample) do weight[k] = (weight[k] or 0) + 1 end
    return (stat(all_a, a, weight) or 0) - (stat(all_b, b, weight) or 0)
  end, opts)
  return low, high, va - vb
end

function M.difference_at_interval(a, b, recall, opts)
  return paired(a, b, function(all, u, w) return best_at(all, u, w, recall) end, opts, "difference_at_interval")
end

function M.recall_difference_interval(a, b, precision, opts)
  return paired(a, b, function(all, u, w) return recall_where(all, u, w, precision) end, opts, "recall_difference_interval")
end

return M
