-- DecayMask.lua — GraphMERT's learnable spatial decay f = λ^GELU(√(sp + offset) − p), one
-- mask shared by every layer.
--
-- The default is the official code's convention: p is one learnable value per head, initialised
-- at 1, stored as `sp_param` of shape [heads, 1, 1] (the official parameter's name and shape, so
-- its weights load as they are), and distances are hop counts + 1 (offset = 1). The design
-- notes' variant is DecayMask{per_head = false, init_p = 0, offset = 0}: one shared p at 0 on
-- plain hop counts. lambda = false turns the decay off (all ones); a missing lambda is 0.6, as
-- everywhere (gm.decay_mask, GraphMERT).
--
-- DecayMask{heads = 8, lambda = 0.6, init_p = 1.0, offset = 1, gelu = "erf", per_head = true}
-- forward(sp): sp is a distance tensor [N, N] or a graphmert.Distances; the result is
-- [heads, N, N] (per head) or [N, N].
-- over(sp, offset): the same kernel (this mask's λ, p and GELU) over any distances sp ([N, M]) with
-- another offset: what GraphMERT's graph token uses (its learnt distances, offset 0).
local class = require "graphmert.class"
local gm = require "graphmert"
local Module = require "graphmert.nn.Module"
local check = require "graphmert.check"

local DecayMask = class("graphmert.nn.DecayMask", Module)

function DecayMask:__init(opts)
  Module.__init(self)
  opts = opts or {}
  self.heads = opts.heads or 8
  if opts.lambda == nil then self.lambda = check.DEFAULT_LAMBDA else self.lambda = opts.lambda end
  self.offset = opts.offset or 1
  self.gelu = opts.gelu or "erf"
  self.per_head = opts.per_head ~= false
  local init_p = opts.init_p or 1.0
  check.positive_integer("DecayMask", "heads", self.heads)
  check.lambda("DecayMask: lambda", self.lambda)
  local p = self.per_head and gm.full(init_p, self.heads, 1, 1) or gm.tensor(init_p)
  self:register_parameter("sp_param", p)
end

function DecayMask:over(sp, offset)
  return gm.decay_mask(sp, { lambda = self.lambda, p = self.sp_param, offset = offset, gelu = self.gelu })
end

function DecayMask:forward(sp) return self:over(sp, self.offset) end

function DecayMask:extra_repr()
  return string.format("heads = %d, lambda = %s, offset = %g, gelu = %s%s", self.heads,
    tostring(self.lambda), self.offset, self.gelu, self.per_head and "" or ", shared p")
end

return DecayMask
