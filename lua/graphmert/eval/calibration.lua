-- calibration.lua — whether probabilities mean what they say: of the triples given p ≈ 0.8, do
-- about 80% hold?
--   bins(predictions, n) → n equal-width bins over [0, 1]: {low, high, count, mean (predicted),
--     observed (the share that holds)}; predictions = list of {p, held (boolean)}
--   ece(predictions[, n = 10]) → the expected calibration error: Σ over bins of
--     count/total · |mean − observed|, and the bins
local M = {}

function M.bins(predictions, n)
  local out = {}
  for b = 1, n do out[b] = { low = (b - 1) / n, high = b / n, count = 0, sum = 0, held = 0 } end
  for i, e in ipairs(predictions) do
    local p = e[1]
    if type(p) ~= "number" or p ~= p or p < 0 or p > 1 then
      error(string.format("calibration: prediction %d is %s, not a probability", i, tostring(p)), 3)
    end
    local b = out[math.min(n, math.floor(p * n) + 1)]
    b.count, b.sum = b.count + 1, b.sum + p
    if e[2] then b.held = b.held + 1 end
  end
  for _, b in ipairs(out) do
    b.mean = b.count > 0 and b.sum / b.count or nil
    b.observed = b.count > 0 and b.held / b.count or nil
  end
  return out
end

function M.ece(predictions, n)
  local bins = M.bins(predictions, n or 10)
  local total, e = #predictions, 0
  if total == 0 then return nil, bins end
  for _, b in ipairs(bins) do
    if b.count > 0 then e = e + b.count / total * math.abs(b.mean - b.observed) end
  end
  return e, bins
end

return M
