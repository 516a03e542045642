-- logistic.lua — logistic regression fit by Newton's method (iteratively reweighted least
-- squares) with an L2 penalty, on the project's tensors. For a few dozen dense features and up to
-- about 10⁶ rows Newton converges in a handful of steps and needs no learning rate; features are
-- standardised first, so that one penalty weighs them alike and the system stays well scaled.
--
--   fit(rows, labels[, opts]) → a model: rows = a list of n feature lists of d numbers (or an [n, d]
--     tensor), labels = n values 0 or 1 (or booleans); opts.l2 (1): the penalty on the
--     standardised weights (not the bias); opts.iterations (50), opts.tolerance (1e-6, the largest
--     change of a weight that ends the fit). Errors name the argument that is wrong.
--   model.weights, model.bias: in the features' own units (p = σ(bias + Σ wᵢ xᵢ));
--     model.mean, model.scale: the standardisation; model.iterations
--   probability(model, rows) → a list of n probabilities (rows as fit takes them)
--   to_table(model) / from_table(t) → the model as plain numbers (for JSON) and back, checked
local gm = require "graphmert"

local M = {}

local function as_tensor(rows, fn)
  if gm.is_tensor and gm.is_tensor(rows) then return rows end
  if type(rows) ~= "table" or #rows == 0 then error(fn .. ": rows must be a non-empty list of feature lists", 3) end
  local d = type(rows[1]) == "table" and #rows[1] or 0
  if d == 0 then error(fn .. ": row 1 is not a non-empty list of numbers", 3) end
  for i, r in ipairs(rows) do
    if type(r) ~= "table" or #r ~= d then error(string.format("%s: row %d has %s features, not %d", fn, i,
      type(r) == "table" and #r or type(r), d), 3) end
    for j = 1, d do
      local v = r[j]
      if type(v) ~= "number" or v ~= v or v == math.huge or v == -math.huge then
        error(string.format("%s: row %d, feature %d is %s, not a finite number", fn, i, j, tostring(v)), 3)
      end
    end
  end
  return gm.tensor(rows)
end

local function sigmoid(z) return 1 / (1 + math.exp(-z)) end

function M.fit(rows, labels, opts)
  opts = opts or {}
  local X = as_tensor(rows, "logistic.fit")
  local shape = X:shape()
  local n, d = shape[1], shape[2]
  if type(labels) ~= "table" or #labels ~= n then
    error(string.format("logistic.fit: labels must be a list of %d values (one a row), got %s", n,
      type(labels) == "table" and #labels or type(labels)), 2)
  end
  local y = {}
  for i, v in ipairs(labels) do
    if v == true or v == 1 then y[i] = { 1 } elseif v == false or v == 0 then y[i] = { 0 } else
      error(string.format("logistic.fit: label %d is %s, not 0 or 1", i, tostring(v)), 2)
    end
  end
  local l2 = opts.l2 or 1
  if type(l2) ~= "number" or l2 < 0 then error("logistic.fit: opts.l2 must be a number ≥ 0", 2) end
  -- standardise: mean 0 and scale 1 for every column (a constant column keeps scale 1)
  local mean = X:mean(1):totable()
  local centered = X - gm.tensor { mean }
  local var = (centered * centered):mean(1):totable()
  local scale = {}
  for j = 1, d do scale[j] = var[j] > 1e-12 and math.sqrt(var[j]) or 1 end
  local Z = gm.cat({ gm.full(1, { n, 1 }), centered / gm.tensor { scale } }, 2) -- [n, d + 1], the bias first
  local Y = gm.tensor(y)
  local ridge = {}
  for j = 1, d + 1 do
    ridge[j] = {}
    for k = 1, d + 1 do ridge[j][k] = (j == k and j > 1) and l2 or 0 end
  end
  local R = gm.tensor(ridge)
  local w = gm.zeros { d + 1, 1 }
  local iterations = opts.iterations or 50
  local step_count = 0
  for step = 1, iterations do
    step_count = step
    local p = (Z:matmul(w)):sigmoid()
    local weight = p * (1 - p) + 1e-9
    local gradient = Z:t():matmul(p - Y) + R:matmul(w)
    local hessian = Z:t():matmul(Z * weight) + R
    local delta = gm.solve(hessian, gradient)
    w = w - delta
    local largest = 0
    for _, v in ipairs(delta:reshape { d + 1 }:totable()) do largest = math.max(largest, math.abs(v)) end
    if largest < (opts.tolerance or 1e-6) then break end
  end
  local ws = w:reshape { d + 1 }:totable()
  local model = { bias = ws[1], weights = {}, mean = mean, scale = scale, iterations = step_count }
  for j = 1, d do
    model.weights[j] = ws[j + 1] / scale[j]
    model.bias = model.bias - ws[j + 1] * mean[j] / scale[j]
  end
  return model
end

function M.probability(model, rows)
  local out = {}
  for i, r in ipairs(rows) do
    local z = model.bias
    for j, w in ipairs(model.weights) do z = z + w * r[j] end
    out[i] = sigmoid(z)
  end
  return out
end

function M.to_table(model)
  return { bias = model.bias, weights = model.weights }
end

function M.from_table(t, where)
  where = where or "logistic model"
  if type(t) ~= "table" or type(t.bias) ~= "number" or type(t.weights) ~= "table" then
    error(where .. ": must hold a number `bias` and a list `weights`", 2)
  end
  for j, w in ipairs(t.weights) do
    if type(w) ~= "number" then error(string.format("%s: weight %d is not a number", where, j), 2) end
  end
  return { bias = t.bias, weights = t.weights }
end

return M
