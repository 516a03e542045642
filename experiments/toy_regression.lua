-- toy_regression.lua — the runtime without GraphMERT, as a first script: a two-layer GELU network
-- learns to classify points of three interleaved spirals (generated data), and prints its
-- falling loss and its accuracy.
--   graphmert experiments/toy_regression.lua [steps=300] [seed=1]
local gm = require "graphmert"
local nn = gm.nn
local fail = gm.experiment.args.fail

local args = arg or {}
if args[1] == "--help" or args[1] == "-h" then
  print("usage: graphmert experiments/toy_regression.lua [steps=300] [seed=1]\n"
    .. "A two-layer GELU network learns three interleaved spirals: its loss and accuracy.")
  return
end
-- the positional argument i, a whole number (default when absent)
local function whole(i, name, default, min)
  if args[i] == nil then return default end
  local n = math.tointeger(tonumber(args[i]))
  if not n or n < min then fail("toy_regression.lua", string.format("%s must be a whole number >= %d, got %s", name, min, args[i])) end
  return n
end
if args[3] ~= nil then fail("toy_regression.lua", "takes at most two arguments, steps and seed (see --help)") end
local steps, seed = whole(1, "steps", 300, 1), whole(2, "seed", 1, 0)
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
