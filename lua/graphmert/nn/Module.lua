-- Module.lua — the base of every layer, shaped like torch.nn.Module so weights move between
-- the two by name: parameters and submodules are registered in order, state_dict() names are
-- dotted paths ("encoder.0.weight"), forward is also the call metamethod.
local class = require "graphmert.class"
local gm = require "graphmert"

local Module = class("graphmert.nn.Module")

function Module:__init()
  self._parameters = {} -- ordered names
  self._buffers = {}
  self._modules = {}
  self.training = true
end

-- Registers t as a trainable parameter under name (t is marked requires_grad).
function Module:register_parameter(name, t)
  assert(gm.is_tensor(t), "bad argument #2 to 'register_parameter' (tensor expected)")
  if self[name] == nil then self._parameters[#self._parameters + 1] = name end
  self[name] = t:requires_grad(true)
  return t
end

-- A tensor saved in state_dict() that is not trained (running statistics, masks).
function Module:register_buffer(name, t)
  if self[name] == nil then self._buffers[#self._buffers + 1] = name end
  self[name] = t
  return t
end

function Module:add_module(name, m)
  assert(type(m) == "table" and m.named_parameters, "bad argument #2 to 'add_module' (module expected)")
  name = tostring(name)
  if self[name] == nil then self._modules[#self._modules + 1] = name end
  self[name] = m
  return m
end

-- Calls fn(qualified_name, tensor, owner, local_name) for parameters (and buffers if asked).
local function walk(module, prefix, with_buffers, fn)
  for _, name in ipairs(module._parameters) do fn(prefix .. name, module[name], module, name) end
  if with_buffers then
    for _, name in ipairs(module._buffers) do fn(prefix .. name, module[name], module, name) end
  end
  for _, name in ipairs(module._modules) do walk(module[name], prefix .. name .. ".", with_buffers, fn) end
end

-- { {name, tensor}, ... } in registration order.
function Module:named_parameters()
  local out = {}
  walk(self, "", false, function(name, t) out[#out + 1] = { name, t } end)
  return out
end

function Module:parameters()
  local out = {}
  walk(self, "", false, function(_, t) out[#out + 1] = t end)
  return out
end

function Module:state_dict()
  local out = {}
  walk(self, "", true, function(name, t) out[name] = t end)
  return out
end

-- Copies tensors by name; strict (the default) requires the same names and shapes.
function Module:load_state_dict(state, strict)
  if strict == nil then strict = true end
  if type(state) ~= "table" then error("load_state_dict: a table of tensors by name expected, got " .. type(state), 2) end
  local seen = {}
  local ok, err = pcall(walk, self, "", true, function(name, t) -- (errors name the caller's line, below)
    local src = state[name]
    if src == nil then
      if strict then error("load_state_dict: missing tensor '" .. name .. "'", 0) end
      return
    end
    if not gm.is_tensor(src) then error(string.format("load_state_dict: '%s' is a %s, not a tensor", name, type(src)), 0) end
    seen[name] = true
    if src:shape_string() ~= t:shape_string() then
      error(string.format("load_state_dict: '%s' has size %s, the module expects %s", name,
        src:shape_string(), t:shape_string()), 0)
    end
    gm.no_grad(function() t:copy_(src) end)
  end)
  if not ok then error(err, 2) end
  if strict then
    for name in pairs(state) do
      if not seen[name] then error("load_state_dict: unexpected tensor '" .. name .. "'", 2) end
    end
  end
  return self
end

function Module:zero_grad()
  for _, p in ipairs(self:parameters()) do p:zero_grad() end
end

function Module:train(mode)
  if mode == nil then mode = true end
  self.training = mode
  for _, name in ipairs(self._modules) do self[name]:train(mode) end
  return self
end

function Module:eval() return self:train(false) end

-- Runs fn(...) in eval mode with gradients off (PyTorch's model.eval() + torch.no_grad()) and
-- returns its results; the previous mode comes back afterwards, also when fn raises.
function Module:evaluating(fn, ...)
  local was_training = self.training
  self:eval()
  local results = table.pack(pcall(gm.no_grad, fn, ...))
  self:train(was_training)
  if not results[1] then error(results[2], 0) end
  return table.unpack(results, 2, results.n)
end

function Module:forward()
  error(tostring(getmetatable(self).__name) .. " does not define forward", 2)
end

Module.__call = function(self, ...) return self:forward(...) end

function Module:extra_repr() return "" end

function Module:__tostring()
  local name = getmetatable(self).__name or "Module"
  local extra = self:extra_repr()
  if #self._modules == 0 then return name .. (extra ~= "" and "(" .. extra .. ")" or "") end
  local lines = { name .. " {" }
  for _, child in ipairs(self._modules) do
    local text = tostring(self[child]):gsub("\n", "\n  ")
    lines[#lines + 1] = "  (" .. child .. "): " .. text
  end
  lines[#lines + 1] = "}"
  return table.concat(lines, "\n")
end

return Module
