-- checkpoint.lua — training checkpoints as one safetensors file, written atomically.
--
-- save(path, {model = m, optimizer = opt, step = n, metadata = {...}}): model tensors under
--   their state_dict() names (what PyTorch's load_state_dict expects), the optimizer's state
--   under "optimizer.<parameter>.exp_avg" / ".exp_avg_sq", and in __metadata__ the step, the
--   optimizer's step and learning rate, and gm's random-generator state — so a resumed run
--   continues bit for bit. (In PyTorch, drop the "optimizer." tensors before loading.)
-- load(path, {model = m, optimizer = opt}) → step, metadata: restores all of it.
local gm = require "graphmert"
local safetensors = require "graphmert.safetensors"

local M = {}
local OPT = "optimizer."

local function to_hex(s) return (s:gsub(".", function(c) return string.format("%02x", c:byte()) end)) end
local function from_hex(h) return (h:gsub("..", function(x) return string.char(tonumber(x, 16)) end)) end

function M.save(path, state)
  local tensors, meta = {}, {}
  for name, t in pairs(state.model:state_dict()) do tensors[name] = t end
  if state.optimizer then
    local opt_tensors, opt_meta = state.optimizer:state_dict()
    for name, t in pairs(opt_tensors) do tensors[OPT .. name] = t end
    meta.optimizer_step = tostring(opt_meta.step)
    meta.optimizer_lr = string.format("%.17g", opt_meta.lr)
  end
  for k, v in pairs(state.metadata or {}) do meta[k] = tostring(v) end
  meta.format = "graphmert-checkpoint-1"
  meta.step = tostring(state.step or 0)
  meta.rng = to_hex(gm.get_rng_state())
  return safetensors.save(path, tensors, meta)
end

function M.load(path, state)
  local tensors, meta = safetensors.load(path)
  if meta.format ~= "graphmert-checkpoint-1" then
    error("load: " .. path .. " is not a graphmert checkpoint (format " .. tostring(meta.format) .. ")", 2)
  end
  local model_tensors, opt_tensors = {}, {}
  for name, t in pairs(tensors) do
    if name:sub(1, #OPT) == OPT then opt_tensors[name:sub(#OPT + 1)] = t else model_tensors[name] = t end
  end
  state.model:load_state_dict(model_tensors)
  if state.optimizer then
    state.optimizer:load_state_dict(opt_tensors, { step = tonumber(meta.optimizer_step), lr = tonumber(meta.optimizer_lr) })
  end
  gm.set_rng_state(from_hex(meta.rng))
  return math.tointeger(tonumber(meta.step)), meta
end

return M
