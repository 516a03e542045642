-- Linear.lua — y = x Wᵀ + b with W of shape [out, in], as torch.nn.Linear (same names, same
-- uniform(−1/√in, 1/√in) initialisation), so its weights load either way.
local class = require "graphmert.class"
local gm = require "graphmert"
local Module = require "graphmert.nn.Module"
local check = require "graphmert.check"

local Linear = class("graphmert.nn.Linear", Module)

-- Linear{in_features, out_features, bias = true} or Linear(in, out[, bias])
function Linear:__init(opts, out_features, bias)
  Module.__init(self)
  if type(opts) ~= "table" then opts = { opts, out_features, bias = bias } end
  local fin, fout = opts[1] or opts.in_features, opts[2] or opts.out_features
  check.positive_integer("Linear", "in_features", fin)
  check.positive_integer("Linear", "out_features", fout)
  self.in_features, self.out_features = fin, fout
  local bound = 1 / math.sqrt(fin)
  self:register_parameter("weight", gm.rand(fout, fin) * (2 * bound) - bound)
  if opts.bias ~= false then self:register_parameter("bias", gm.rand(fout) * (2 * bound) - bound) end
end

function Linear:forward(x)
  local y = x:matmul(self.weight, false, true) -- the weight is read transposed, not copied
  if self.bias then y = y + self.bias end
  return y
end

function Linear:extra_repr()
  return string.format("%d -> %d%s", self.in_features, self.out_features, self.bias and "" or ", no bias")
end

return Linear
