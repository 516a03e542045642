-- GATConv.lua — graph attention with torch_geometric's GATConv semantics, over an edge list:
--   h = x Θᵀ (no bias) viewed [N, heads, C];  α_src[j] = ⟨h_j, att_src⟩, α_dst[i] = ⟨h_i, att_dst⟩
--   e_ij = LeakyReLU_0.2(α_src[j] + α_dst[i]);  α_ij = softmax of e over the edges into i
--   out_i = Σ_j α_ij h_j, heads concatenated [N, heads·C] or averaged [N, C], + bias
-- Edges run source → target (edge_index[1] = sources j, edge_index[2] = targets i, 1-based).
-- With add_self_loops (default) existing self loops are dropped and one loop per node appended,
-- in that order, as PyG does. Attention dropout applies to α in training.
-- GATConv{in_channels, out_channels, heads = 1, concat = true, negative_slope = 0.2,
--   dropout = 0, add_self_loops = true, bias = true}
-- forward(x [N, in], edge_index ({sources, targets} or a [2, E] tensor)) → out, {edge_index, alpha}
-- State names as PyG: lin.weight [heads·C, in], att_src / att_dst [1, heads, C], bias.
local class = require "graphmert.class"
local gm = require "graphmert"
local Module = require "graphmert.nn.Module"
local Linear = require "graphmert.nn.Linear"
local check = require "graphmert.check"

local GATConv = class("graphmert.nn.GATConv", Module)

function GATConv:__init(opts)
  Module.__init(self)
  local fin, C, H = opts.in_channels, opts.out_channels, opts.heads or 1
  check.positive_integer("GATConv", "in_channels", fin)
  check.positive_integer("GATConv", "out_channels", C)
  check.positive_integer("GATConv", "heads", H)
  self.in_channels, self.out_channels, self.heads = fin, C, H
  self.concat = opts.concat ~= false
  self.negative_slope, self.dropout = opts.negative_slope or 0.2, opts.dropout or 0
  self.add_self_loops = opts.add_self_loops ~= false
  self:add_module("lin", Linear(fin, H * C, false))
  local glorot = math.sqrt(6 / (H + C)) -- PyG's glorot on [1, H, C]
  self:register_parameter("att_src", gm.rand(1, H, C) * (2 * glorot) - glorot)
  self:register_parameter("att_dst", gm.rand(1, H, C) * (2 * glorot) - glorot)
  if opts.bias ~= false then self:register_parameter("bias", gm.zeros(self.concat and H * C or C)) end
end

-- {sources, targets} as Lua lists (1-based), checked against N, with self loops handled
local function edges(fn, edge_index, N, add_self_loops)
  if gm.is_tensor(edge_index) then
    check.shape(fn, 2, "edge_index", edge_index, { 2, false })
    edge_index = edge_index:totable()
  end
  if type(edge_index) ~= "table" or type(edge_index[1]) ~= "table" or type(edge_index[2]) ~= "table"
      or #edge_index[1] ~= #edge_index[2] then
    check.fail(fn, 2, "edge_index must be {sources, targets} of equal length or a 2xE tensor")
  end
  local src, dst = {}, {}
  for e = 1, #edge_index[1] do
    local j, i = edge_index[1][e], edge_index[2][e]
    for _, v in ipairs { j, i } do
      if math.type(v) ~= "integer" and not (type(v) == "number" and v == math.floor(v)) or v < 1 or v > N then
        check.fail(fn, 2, string.format("edge %d has node %s outside [1, %d]", e, tostring(v), N))
      end
    end
    if not (add_self_loops and i == j) then src[#src + 1], dst[#dst + 1] = math.tointeger(j), math.tointeger(i) end
  end
  if add_self_loops then
    for n = 1, N do src[#src + 1], dst[#dst + 1] = n, n end
  end
  return src, dst
end

function GATConv:forward(x, edge_index)
  local fn = "GATConv:forward"
  check.shape(fn, 1, "x", x, { false, self.in_channels })
  local N, H, C = x:size(1), self.heads, self.out_channels
  local src, dst = edges(fn, edge_index, N, self.add_self_loops)
  local h = self.lin(x):reshape(N, H, C)
  local a_src = (h * self.att_src):sum(3)
  local a_dst = (h * self.att_dst):sum(3)
  local src_t, dst_t = gm.tensor(src), gm.tensor(dst)
  local e = (a_src:index_select(1, src_t) + a_dst:index_select(1, dst_t)):leaky_relu(self.negative_slope)
  local alpha = gm.segment_softmax(e, dst_t, N)
  local dropped = alpha:dropout(self.dropout, self.training)
  local messages = h:index_select(1, src_t) * dropped:reshape(#src, H, 1)
  local out = gm.index_add(gm.zeros(N, H, C), dst_t, messages)
  out = self.concat and out:reshape(N, H * C) or out:mean(2)
  if self.bias then out = out + self.bias end
  return out, { edge_index = { src, dst }, alpha = alpha }
end

function GATConv:extra_repr()
  return string.format("%d -> %d, heads=%d, concat=%s", self.in_channels, self.out_channels, self.heads, tostring(self.concat))
end

return GATConv
