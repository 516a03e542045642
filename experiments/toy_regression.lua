-- toy_regression.lua — the README's first command until GraphMERT training lands: a two-layer
-- GELU network learns to classify points of three interleaved spirals (generated data), and
-- prints its falling loss and its accuracy.
--   graphmert experiments/toy_regression.lua [steps=300] [seed=1]
local gm = require "graphmert"
local nn = gm.nn

local steps = tonumber(arg and arg[1]) or 300
local seed = tonumber(arg and arg[2]) or 1
gm.manual_seed(seed)

-- three spirals of 200 points each, with a little noise
local classes, per_class = 3, 200
local points, labels = {}, {}
for c = 0, classes - 1 do
  for i = 0, per_class - 1 do
    local r = i / per_class
    local angle = c * 2 * math.pi / classes + r * 4
    local noise = gm.randn(2) * 0.04
    points[#points + 1] = { r * math.cos(angle) + noise:get(1), r * math.sin(angle) + noise:get(2) }
    labels[#labels + 1] = c + 1
  end
end
local x, y = gm.tensor(points), gm.tensor(labels)

local model = nn.Sequential {
  nn.Linear(2, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, classes),
}
local opt = gm.optim.sgd(model:parameters(), { lr = 0.3, momentum = 0.9 })
print(model)

local start = os.clock()
for step = 1, steps do
  opt:zero_grad()
  local loss = model(x):cross_entropy(y)
  loss:backward()
  opt:step()
  if step == 1 or step % 25 == 0 then
    print(string.format("step %4d  loss %.4f", step, loss:item()))
  end
end

local _, predicted = gm.no_grad(function() return model(x):max(2) end)
local correct = (predicted - y):totable()
local hits = 0
for _, d in ipairs(correct) do if d == 0 then hits = hits + 1 end end
print(string.format("accuracy %.1f%% on %d points, %.2f s CPU", 100 * hits / #labels, #labels,
  os.clock() - start))
