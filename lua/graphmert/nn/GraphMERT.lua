-- GraphMERT.lua — the GraphMERT encoder (GRAPHMERT_SPEC §1, §3, §4) on a leafy chain graph.
--
--   token embeddings (no positions; learned positions with positions = true)
--   → H-GAT on the injected leaves: t' = t + Σ_j α_j W_r h_j, the heads being the root tokens
--     of the triple's head (relation-embedding dropout on W_r and a_r while training)
--   → embedding dropout → post-LN encoder layers, all with one shared decay mask
--     λ^GELU(√(sp + offset) − p_h) (one learnable p per head, `decay.sp_param`)
--   → LM head: Linear → GELU → LayerNorm → decoder tied to the token embedding (+ bias).
--
-- config (a Lua table): vocab, hidden = 512, layers = 12, heads = 8, ffn = 2048, relations (K:
-- relation ids are 1..K, 0 meaning none; W_r is `hgat_weight` [K, H, H], a_r `hgat_attention`
-- [K, 2H] — the official tables without their padding row 0), roots = 128, leaves = 7,
-- leaf_edges = "path", lambda = 0.6 (false: no decay), offset = 1, dropout = 0.1,
-- attention_dropout = 0.1, relation_dropout = 0.3, hgat = true, hgat_interleaved = true (the
-- official layout of a_r), positions = false, init_std = 0.02, compact = true (skip padding).
--
-- A batch: ids [B, N] (1-based token ids, N = roots·(1 + leaves)), valid [B, N] (1 for real
-- tokens, 0 for empty leaf slots), relation[b][r] and head_length[b][r] (Lua tables, per root).
local class = require "graphmert.class"
local gm = require "graphmert"
local Module = require "graphmert.nn.Module"
local check = require "graphmert.nn.check"
local Linear = require "graphmert.nn.Linear"
local LayerNorm = require "graphmert.nn.LayerNorm"
local Embedding = require "graphmert.nn.Embedding"
local EncoderLayer = require "graphmert.nn.EncoderLayer"
local DecayMask = require "graphmert.nn.DecayMask"

local GraphMERT = class("graphmert.nn.GraphMERT", Module)

local defaults = {
  hidden = 512, layers = 12, heads = 8, ffn = 2048, roots = 128, leaves = 7, leaf_edges = "path",
  lambda = 0.6, offset = 1, dropout = 0.1, attention_dropout = 0.1, relation_dropout = 0.3,
  hgat = true, hgat_interleaved = true, positions = false, init_std = 0.02, relations = 1, compact = true,
}
GraphMERT.defaults = defaults

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  return keys
end

function GraphMERT:__init(config)
  Module.__init(self)
  local c = {}
  for k, v in pairs(defaults) do c[k] = v end
  for k, v in pairs(config or {}) do
    if defaults[k] == nil and k ~= "vocab" then
      error(string.format("GraphMERT: unknown option '%s' (known: vocab, %s)", tostring(k), table.concat(sorted_keys(defaults), ", ")), 2)
    end
    c[k] = v
  end
  c.vocab = check.positive_integer("GraphMERT", "vocab", c.vocab)
  self.config = c
  self.layout = gm.layout { roots = c.roots, leaves = c.leaves }
  local H, std = c.hidden, c.init_std
  self.nodes = self.layout.nodes
  self:add_module("embed_tokens", Embedding(c.vocab, H, std))
  if c.positions then self:add_module("embed_positions", Embedding(self.nodes, H, std)) end
  if c.hgat then
    self:register_parameter("hgat_weight", gm.randn(c.relations, H, H) * std)
    self:register_parameter("hgat_attention", gm.randn(c.relations, 2 * H) * std)
  end
  self:add_module("decay", DecayMask {
    heads = c.heads, lambda = c.lambda == false and false or c.lambda, offset = c.offset })
  self:add_module("layers", Module())
  for i = 1, c.layers do
    self.layers:add_module(tostring(i - 1), EncoderLayer {
      dim = H, heads = c.heads, ffn = c.ffn, dropout = c.dropout, attention_dropout = c.attention_dropout })
  end
  self:add_module("lm_head", Module())
  self.lm_head:add_module("dense", Linear(H, H))
  self.lm_head:add_module("layer_norm", LayerNorm(H))
  self.lm_head:register_parameter("bias", gm.zeros(c.vocab))
  gm.no_grad(function() -- N(0, std) linear weights with zero biases, as the official code
    for _, np in ipairs(self:named_parameters()) do
      local name, t = np[1], np[2]
      if name:match("fc%d%.weight$") or name:match("dense%.weight$") then t:copy_(gm.randn(t:shape()) * std) end
      if name:match("fc%d%.bias$") or name:match("dense%.bias$") then t:zero_() end
    end
  end)
  self.graph = gm.leafy_chain { roots = c.roots, leaves = c.leaves, leaf_edges = c.leaf_edges }
end

-- The H-GAT index lists of a batch: tails and heads as flat rows of [B·N, H], per tail its
-- relation, its first head (1-based into the heads list) and the head count.
function GraphMERT:_triples(batch, B, valid)
  local c, layout = self.config, self.layout
  local R = layout.roots
  local tails, heads, rel, start, count = {}, {}, {}, {}, {}
  for b = 1, B do
    local rels, lens = batch.relation and batch.relation[b] or {}, batch.head_length and batch.head_length[b] or {}
    for r = 1, R do
      local k, len = rels[r] or 0, lens[r] or 0
      if k > 0 and len > 0 then
        if k > c.relations then error(string.format("relation %d of root %d in sequence %d is not in [1, %d]", k, r, b, c.relations), 3) end
        len = math.min(len, R - r + 1)
        local first = #heads + 1
        for j = 0, len - 1 do heads[#heads + 1] = layout:flat(b, r + j) end
        for a = 1, layout.leaves do
          local node = layout:leaf(r, a)
          if valid[b][node] ~= 0 then
            tails[#tails + 1] = layout:flat(b, node)
            rel[#rel + 1], start[#start + 1], count[#count + 1] = k, first, len
          end
        end
      end
    end
  end
  return tails, heads, rel, start, count
end

-- batch → hidden states [B, N, H] (and the per-layer head-averaged attention weights when
-- need_weights is true). By default padding costs nothing: the real nodes of all sequences are
-- packed into one [T, H] matrix for the token-wise layers, and each sequence attends with the
-- rows and columns of the decay mask at its own nodes; the result is scattered back, with zeros
-- at empty leaf slots. config.compact = false (or need_weights) runs the dense masked version,
-- which gives the same values at the real nodes.
function GraphMERT:forward(batch, need_weights)
  local c, N, H = self.config, self.nodes, self.config.hidden
  local B = batch.ids:size(1)
  if batch.ids:size(2) ~= N then
    error(string.format("GraphMERT: ids have %d nodes, the graph has %d", batch.ids:size(2), N), 2)
  end
  local x = self.embed_tokens(batch.ids):reshape(B * N, H)
  local valid = batch.valid:totable()
  if c.hgat then
    local tails, heads, rel, start, count = self:_triples(batch, B, valid)
    if #tails > 0 then
      local W = self.hgat_weight:dropout(c.relation_dropout, self.training)
      local a = self.hgat_attention:dropout(c.relation_dropout, self.training)
      local delta = gm.hgat(x:index_select(1, tails), x:index_select(1, heads), W, a, rel, start, count,
        { interleaved = c.hgat_interleaved })
      x = gm.index_add(x, tails, delta)
    end
  end
  x = x:reshape(B, N, H)
  if c.positions then x = x + self.embed_positions.weight end
  x = x:dropout(c.dropout, self.training)
  local decay = self.decay(self.graph:distances())
  if c.compact and not need_weights then return self:_forward_packed(x, valid, decay, B) end
  local opts = { decay = decay, key_mask = batch.valid, need_weights = need_weights }
  local weights = {}
  for i = 1, c.layers do
    local w
    x, w = self.layers[tostring(i - 1)](x, opts)
    weights[i] = w
  end
  return x, need_weights and weights or nil
end

function GraphMERT:_forward_packed(x, valid, decay, B)
  local N, H = self.nodes, self.config.hidden
  local rows, segments, opts_list = {}, {}, {}
  for b = 1, B do
    local nodes = {}
    for n = 1, N do
      if valid[b][n] ~= 0 then
        nodes[#nodes + 1] = n
        rows[#rows + 1] = (b - 1) * N + n
      end
    end
    if #nodes > 0 then
      segments[#segments + 1] = { #rows - #nodes + 1, #nodes }
      local d = #nodes == N and decay or decay:index_select(2, nodes):index_select(3, nodes)
      opts_list[#opts_list + 1] = { decay = d }
    end
  end
  if #rows == 0 then return gm.zeros(B, N, H) end
  local packed = x:reshape(B * N, H):index_select(1, rows)
  for i = 1, self.config.layers do
    packed = self.layers[tostring(i - 1)]:forward_packed(packed, segments, opts_list)
  end
  return gm.index_add(gm.zeros(B * N, H), rows, packed):reshape(B, N, H)
end

-- Vocabulary logits at flat 1-based positions of [B·N] (only where there are labels).
function GraphMERT:logits(hidden, positions)
  local H = self.config.hidden
  local rows = hidden:reshape(-1, H):index_select(1, positions)
  local h = self.lm_head.layer_norm(self.lm_head.dense(rows):gelu())
  return h:matmul(self.embed_tokens.weight, false, true) + self.lm_head.bias
end

-- The masked-token loss of a masked batch (graphmert.masking): targets at root and leaf
-- positions. normalization = "joint" (default, the official code: one average over every
-- masked token) or "separate" (L_MLM + mu · L_MNM, each averaged over its own tokens).
function GraphMERT:loss(batch, opts)
  opts = opts or {}
  local hidden = self:forward(batch)
  local function ce(positions, targets)
    if #positions == 0 then return nil end
    return self:logits(hidden, positions):cross_entropy(targets)
  end
  local lb = batch.labels
  if (opts.normalization or "joint") == "joint" then
    local pos, tgt = {}, {}
    for _, part in ipairs { lb.roots, lb.leaves } do
      for i = 1, #part.positions do
        pos[#pos + 1], tgt[#tgt + 1] = part.positions[i], part.targets[i]
      end
    end
    return ce(pos, tgt) or gm.zeros(1):sum()
  end
  local mlm = ce(lb.roots.positions, lb.roots.targets)
  local mnm = ce(lb.leaves.positions, lb.leaves.targets)
  local mu = opts.mu or 1
  if mlm and mnm then return mlm + mnm * mu end
  return mlm or (mnm and mnm * mu) or gm.zeros(1):sum()
end

function GraphMERT:extra_repr()
  local c = self.config
  return string.format("layers = %d, hidden = %d, heads = %d, vocab = %d", c.layers, c.hidden, c.heads, c.vocab)
end

return GraphMERT
