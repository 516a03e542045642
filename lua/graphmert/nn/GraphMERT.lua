-- GraphMERT.lua — the GraphMERT encoder (GRAPHMERT_SPEC §1, §3, §4) on a leafy chain graph.
--
--   token embeddings (no positions; learned positions with positions = true)
--   → H-GAT on the injected leaves: t' = t + Σ_j α_j W_r h_j, the heads being the root tokens
--     of the triple's head (relation-embedding dropout on W_r and a_r while training)
--   → embedding dropout → post-LN encoder layers, all with one shared decay mask
--     λ^GELU(√(sp + offset) − p_h) (one learnable p per head, `decay.sp_param`)
--   → (head = "official") the LM transform LN(GELU(Linear)) of GraphMertModel, then the LM head:
--     Linear → GELU → LayerNorm → decoder tied to the token embedding (+ bias); head = "single"
--     has the LM head only
--   → (sbo = true) the span-boundary head on the transformed states (SpanBoundaryHead.lua)
-- With graph_token = true a learned vector is prepended at position 0: it attends to every real
-- token and none attends to it; its decay row and column use softplus(graph_token_distance,
-- threshold 1) as the distance (0 to itself). Its final state is the sequence representation.
--
-- config (a Lua table): vocab, hidden = 512, layers = 12, heads = 8, ffn = 2048, relations (K:
-- relation ids are 1..K, 0 meaning none; W_r is `hgat_weight` [K, H, H], a_r `hgat_attention`
-- [K, 2H] — the official tables without their padding row 0), roots = 128, leaves = 7,
-- leaf_edges = "path", lambda = 0.6 (false: no decay), offset = 1, dropout = 0.1,
-- attention_dropout = 0.1, relation_dropout = 0.3, hgat = true, hgat_interleaved = true (the
-- official layout of a_r), positions = false, init_std = 0.02, compact = true (skip padding),
-- head = "official" | "single", sbo = true, graph_token = true (the official model's three),
-- and three official details that are off by default (the README's conventions table):
-- init = "torch" | "official" (official: out_proj xavier_uniform instead of torch.nn.Linear's
-- uniform(±1/√H), q/k/v each xavier_uniform with gain 1/√2 — the same distribution as torch's
-- in_proj — and pad_id "auto" meaning 1), pad_id = "auto" | false | a token id (torch's
-- padding_idx: that embedding row starts at zero and the lookup gives it no gradient; the tied
-- decoder still does; "auto": 1 with init = "official", false otherwise),
-- relation_dropout_mask = "table" | "triple" (one relation-dropout mask per table and forward,
-- or, as the official code, an independent one for each triple occurrence, drawn inside gm.hgat).
-- GraphMERT.check_declared(config, bytes, width, config_name, weights_name): an error unless
-- `bytes` of weights at `width` bytes a parameter can hold the model the config declares (its
-- larger tensors, counted without building it): how a loader refuses a hostile config first.
-- GraphMERT.from_pretrained(dir) / model:save_pretrained(dir): official checkpoint folders
-- (config.json + model.safetensors with the official names, nn/pretrained.lua).
--
-- A batch: ids [B, N] (1-based token ids, N = roots·(1 + leaves)), valid [B, N] (1 for real
-- tokens, 0 for empty leaf slots), relation[b][r] and head_length[b][r] (Lua tables, per root).
local class = require "graphmert.class"
local gm = require "graphmert"
local Module = require "graphmert.nn.Module"
local check = require "graphmert.check"
local Embedding = require "graphmert.nn.Embedding"
local EncoderLayer = require "graphmert.nn.EncoderLayer"
local DecayMask = require "graphmert.nn.DecayMask"
local Transform = require "graphmert.nn.Transform"
local SpanBoundaryHead = require "graphmert.nn.SpanBoundaryHead"

local GraphMERT = class("graphmert.nn.GraphMERT", Module)

local defaults = {
  hidden = 512, layers = 12, heads = 8, ffn = 2048, roots = 128, leaves = 7, leaf_edges = "path",
  lambda = check.DEFAULT_LAMBDA, offset = 1, dropout = 0.1, attention_dropout = 0.1, relation_dropout = 0.3,
  hgat = true, hgat_interleaved = true, positions = false, init_std = 0.02, relations = 1, compact = true,
  head = "official", sbo = true, graph_token = true, init = "torch", pad_id = "auto", relation_dropout_mask = "table",
}
GraphMERT.defaults = defaults


-- config completed with the defaults and checked, every value, before a tensor is made (a config
-- may come from a file); an error names the option. Training configs are checked with it too.
function GraphMERT.options(config)
  local c = {}
  for k, v in pairs(defaults) do c[k] = v end
  for k, v in pairs(config or {}) do
    if defaults[k] == nil and k ~= "vocab" then
      error(string.format("GraphMERT: unknown option '%s' (known: vocab, %s)", tostring(k), table.concat(check.sorted_keys(defaults), ", ")), 2)
    end
    c[k] = v
  end
  -- integral floats (JSON numbers from a config.json) are taken as integers
  for _, key in ipairs { "vocab", "hidden", "heads", "ffn", "roots", "relations" } do
    c[key] = check.positive_integer("GraphMERT", key, c[key])
  end
  c.layers, c.leaves = check.integer("GraphMERT", "layers", c.layers, 0), check.integer("GraphMERT", "leaves", c.leaves, 0)
  if c.init ~= "torch" and c.init ~= "official" then
    error("GraphMERT: init must be \"torch\" or \"official\", got " .. tostring(c.init), 2)
  end
  if c.relation_dropout_mask ~= "table" and c.relation_dropout_mask ~= "triple" then
    error("GraphMERT: relation_dropout_mask must be \"table\" or \"triple\", got " .. tostring(c.relation_dropout_mask), 2)
  end
  -- "auto": the official init's [PAD] row (official id 0, ours 1), none with the torch init
  if c.pad_id == "auto" then c.pad_id = c.init == "official" and 1 end
  if c.pad_id then c.pad_id = check.integer("GraphMERT", "pad_id", c.pad_id, 1) end
  if c.hidden % c.heads ~= 0 then error(string.format("GraphMERT: heads %d does not divide hidden %d", c.heads, c.hidden), 2) end
  for _, key in ipairs { "dropout", "attention_dropout", "relation_dropout" } do
    local v = c[key]
    if type(v) ~= "number" or not (v >= 0 and v < 1) then
      error(string.format("GraphMERT: %s must be a number in [0, 1), got %s", key, tostring(v)), 2)
    end
  end
  for _, key in ipairs { "hgat", "hgat_interleaved", "positions", "compact", "sbo", "graph_token" } do
    if type(c[key]) ~= "boolean" then error(string.format("GraphMERT: %s must be true or false, got %s", key, tostring(c[key])), 2) end
  end
  local ok, err = pcall(check.lambda, "GraphMERT: lambda", c.lambda)
  if not ok then error(err, 2) end
  if type(c.init_std) ~= "number" or not (c.init_std >= 0 and c.init_std < math.huge) then
    error("GraphMERT: init_std must be a number >= 0, got " .. tostring(c.init_std), 2)
  end
  if c.head ~= "official" and c.head ~= "single" then
    error("GraphMERT: head must be \"official\" or \"single\", got " .. tostring(c.head), 2)
  end
  if c.sbo and c.head ~= "official" then error("GraphMERT: sbo = true needs head = \"official\"", 2) end
  return c
end

function GraphMERT:__init(config)
  Module.__init(self)
  local ok, c = pcall(GraphMERT.options, config)
  if not ok then error(c, 2) end
  self.config = c
  self.layout = gm.layout { roots = c.roots, leaves = c.leaves }
  local H, std = c.hidden, c.init_std
  self.nodes = self.layout.nodes
  self:add_module("embed_tokens", Embedding(c.vocab, H, std, c.pad_id or nil))
  if c.positions then self:add_module("embed_positions", Embedding(self.nodes, H, std)) end
  if c.hgat then
    self:register_parameter("hgat_weight", gm.randn(c.relations, H, H) * std)
    self:register_parameter("hgat_attention", gm.randn(c.relations, 2 * H) * std)
  end
  self:add_module("decay", DecayMask {
    heads = c.heads, lambda = c.lambda, offset = c.offset })
  self:add_module("layers", Module())
  for i = 1, c.layers do
    self.layers:add_module(tostring(i - 1), EncoderLayer {
      dim = H, heads = c.heads, ffn = c.ffn, dropout = c.dropout, attention_dropout = c.attention_dropout })
  end
  self:add_module("lm_head", Transform(H, H))
  self.lm_head:register_parameter("bias", gm.zeros(c.vocab))
  if c.head == "official" then self:add_module("lm_transform", Transform(H, H)) end
  if c.sbo then
    self:add_module("lm_pair_head", SpanBoundaryHead { hidden = H, vocab = c.vocab, max_targets = c.leaves, std = std })
  end
  if c.graph_token then
    self:register_parameter("graph_token", gm.randn(1, H) * std)
    self:register_parameter("graph_token_distance", gm.ones(1, self.nodes))
  end
  gm.no_grad(function() -- N(0, std) linear weights with zero biases, as the official code
    for _, np in ipairs(self:named_parameters()) do
      local name, t = np[1], np[2]
      if name:match("fc%d%.weight$") or name:match("dense%.weight$") or name:match("decoder%.weight$") then
        t:copy_(gm.randn(t:shape()) * std)
      end
      if name:match("fc%d%.bias$") or name:match("dense%.bias$") or name:match("decoder%.bias$") then t:zero_() end
    end
  end)
  if c.init == "official" then self:_official_attention_init() end
  self.graph = gm.leafy_chain { roots = c.roots, leaves = c.leaves, leaf_edges = c.leaf_edges }
end

-- token embeddings, the relation tables, each layer's attention and feed-forward weights, the
-- graph token's distances: a lower bound of the parameters (biases and norms left out); a
-- number, so a hostile config cannot overflow it
local function declared_elements(config)
  local function n(key, default)
    local v = config[key]
    if v == nil then v = default end
    return type(v) == "number" and v >= 0 and v + 0.0 or 0.0 -- a float: 2^61 layers do not wrap around
  end
  local H, layers = n("hidden", defaults.hidden), n("layers", defaults.layers)
  return n("vocab", 1) * H + n("relations", defaults.relations) * (H * H + 2 * H)
    + layers * (4 * H * H + 2 * H * n("ffn", defaults.ffn)) + n("roots", defaults.roots) * (n("leaves", defaults.leaves) + 1)
end

function GraphMERT.check_declared(config, bytes, width, config_name, weights_name)
  local declared = declared_elements(config)
  if declared * width > bytes then
    error(string.format("%s declares a model of more than %.0f parameters, which the %d bytes of %s cannot hold",
      config_name, declared, bytes, weights_name), 0)
  end
end

-- GraphMertMultiheadAttention.reset_parameters: q, k and v each xavier_uniform with gain 1/√2,
-- out_proj xavier_uniform (gain 1) with a zero bias.
function GraphMERT:_official_attention_init()
  local H = self.config.hidden
  local function xavier(t, gain)
    local bound = gain * math.sqrt(6 / (t:size(1) + t:size(2)))
    t:copy_(gm.rand(t:shape()) * (2 * bound) - bound)
  end
  gm.no_grad(function()
    for i = 1, self.config.layers do
      local attn = self.layers[tostring(i - 1)].self_attn
      for part = 0, 2 do xavier(attn.in_proj_weight:narrow(1, part * H + 1, H), 1 / math.sqrt(2)) end
      xavier(attn.out_proj.weight, 1)
      attn.out_proj.bias:zero_()
    end
  end)
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

-- softplus with threshold 1 (torch's softplus(x, threshold = 1)): x above 1, log(1 + eˣ) below
local function softplus1(x)
  local above = {}
  for i, v in ipairs(x:reshape(-1):totable()) do above[i] = v > 1 and 1 or 0 end
  above = gm.tensor(above):reshape(x:shape())
  return x * above + (x:exp() + 1):log() * (1 - above)
end

-- The decay mask [heads, N+1, N+1] with the graph token's row and column first: its distance to
-- node n is softplus(graph_token_distance[n]), to itself 0; the tokens' decay (the same kernel,
-- λ, p and GELU) over √d, i.e. offset 0, learned through d.
function GraphMERT:_graph_token_decay(decay)
  local N = self.nodes
  local d = gm.cat({ gm.zeros(1, 1), softplus1(self.graph_token_distance):reshape(1, N) }, 2) -- [1, N+1]
  local row = self.decay:over(d, 0) -- [heads, 1, N+1]
  local column = row:narrow(3, 2, N):permute(1, 3, 2)
  return gm.cat({ row, gm.cat({ column, decay }, 3) }, 2)
end

-- [n, n] ones with column 1 (the graph token) closed to every other row, made once per size
function GraphMERT:_graph_token_mask(n)
  self._masks = self._masks or {}
  if not self._masks[n] then
    local m = gm.ones(n, n)
    for r = 2, n do m:set(0, r, 1) end
    self._masks[n] = m
  end
  return self._masks[n]
end

-- batch → hidden states [B, N, H], the sequence representation [B, H] (the graph token's final
-- state; nil without graph_token) and, when need_weights is true, the per-layer head-averaged
-- attention weights (over the graph token too when there is one). By default padding costs
-- nothing: the real nodes of all sequences are packed into one [T, H] matrix for the token-wise
-- layers, and each sequence attends with the rows and columns of the decay mask at its own
-- nodes; the result is scattered back, with zeros at empty leaf slots. config.compact = false
-- (or need_weights) runs the dense masked version, which gives the same values at real nodes.
function GraphMERT:forward(batch, need_weights)
  local c, N, H = self.config, self.nodes, self.config.hidden
  if type(batch) ~= "table" or not gm.is_tensor(batch.ids) or not gm.is_tensor(batch.valid) then
    error("GraphMERT: a batch is a table with ids and valid, tensors [B, N] (layout:batch makes one)", 2)
  end
  if batch.ids:dim() ~= 2 or batch.ids:size(2) ~= N then
    error(string.format("GraphMERT: ids have shape %s, the graph has %d nodes", batch.ids:shape_string(), N), 2)
  end
  if batch.valid:shape_string() ~= batch.ids:shape_string() then
    error(string.format("GraphMERT: valid has shape %s, ids %s", batch.valid:shape_string(), batch.ids:shape_string()), 2)
  end
  local B = batch.ids:size(1)
  -- each step's input is released as its output replaces it (a recorded graph keeps what its
  -- backward reads), so that inference leaves few tensors to the collector
  local function replaced(old, new)
    if new ~= old then old:release() end
    return new
  end
  local embedded = self.embed_tokens(batch.ids)
  local x = replaced(embedded, embedded:reshape(B * N, H))
  local valid = batch.valid:totable()
  if c.hgat then
    local tails, heads, rel, start, count = self:_triples(batch, B, valid)
    if #tails > 0 then
      local W, a, opts = self.hgat_weight, self.hgat_attention, { interleaved = c.hgat_interleaved }
      if c.relation_dropout_mask == "triple" then -- each triple's own mask (its tails share a start)
        opts.dropout = self.training and c.relation_dropout or 0
      else
        W, a = W:dropout(c.relation_dropout, self.training), a:dropout(c.relation_dropout, self.training)
      end
      local tail_rows <close> = x:index_select(1, tails)
      local head_rows <close> = x:index_select(1, heads)
      local delta <close> = gm.hgat(tail_rows, head_rows, W, a, rel, start, count, opts)
      x = replaced(x, gm.index_add(x, tails, delta))
    end
  end
  x = replaced(x, x:reshape(B, N, H))
  if c.positions then x = replaced(x, x + self.embed_positions.weight) end
  local node_decay <close> = self.decay(self.graph:distances())
  local decay, key_mask, attn_mask = node_decay, batch.valid, nil
  local n = N
  if c.graph_token then
    x = replaced(x, gm.cat({ gm.ones(B, 1, 1) * self.graph_token, x }, 2))
    for b = 1, B do table.insert(valid[b], 1, 1) end
    decay, key_mask, attn_mask = self:_graph_token_decay(decay), gm.tensor(valid), self:_graph_token_mask(N + 1)
    n = N + 1
  end
  x = replaced(x, x:dropout(c.dropout, self.training))
  local weights
  if c.compact and not need_weights then
    x = replaced(x, self:_forward_packed(x, valid, decay, B, n))
  else
    local opts = { decay = decay, key_mask = key_mask, attn_mask = attn_mask, need_weights = need_weights }
    weights = {}
    for i = 1, c.layers do
      local y
      y, weights[i] = self.layers[tostring(i - 1)](x, opts)
      x = replaced(x, y)
    end
  end
  if not c.graph_token then return x, nil, weights end
  return x:narrow(2, 2, N), x:narrow(2, 1, 1):reshape(B, H), weights
end

function GraphMERT:_forward_packed(x, valid, decay, B, n)
  local H = self.config.hidden
  local rows, segments, opts_list = {}, {}, {}
  for b = 1, B do
    local nodes = {}
    for i = 1, n do
      if valid[b][i] ~= 0 then
        nodes[#nodes + 1] = i
        rows[#rows + 1] = (b - 1) * n + i
      end
    end
    if #nodes > 0 then
      segments[#segments + 1] = { #rows - #nodes + 1, #nodes }
      local d = #nodes == n and decay or decay:index_select(2, nodes):index_select(3, nodes)
      opts_list[#opts_list + 1] = { decay = d, attn_mask = self.config.graph_token and self:_graph_token_mask(#nodes) or nil }
    end
  end
  if #rows == 0 then return gm.zeros(B, n, H) end
  local flat <close> = x:reshape(B * n, H)
  local packed = flat:index_select(1, rows)
  for i = 1, self.config.layers do
    local input <close> = packed -- (released as the next layer's output replaces it)
    packed = self.layers[tostring(i - 1)]:forward_packed(input, segments, opts_list)
  end
  local result <close> = packed
  local zeros <close> = gm.zeros(B * n, H)
  local scattered <close> = gm.index_add(zeros, rows, result)
  return scattered:reshape(B, n, H)
end

-- The rows of hidden at flat 1-based positions of [B·N], as the heads read them: through the
-- LM transform with head = "official" (the official last_hidden_state).
function GraphMERT:_head_input(hidden, positions)
  local rows = hidden:reshape(-1, self.config.hidden):index_select(1, positions)
  if self.lm_transform then rows = self.lm_transform(rows) end
  return rows
end

-- Vocabulary logits at flat 1-based positions of [B·N] (only where there are labels).
function GraphMERT:logits(hidden, positions)
  local rows <close> = self:_head_input(hidden, positions)
  local h <close> = self.lm_head(rows)
  local product <close> = h:matmul(self.embed_tokens.weight, false, true)
  return product + self.lm_head.bias
end

-- Span-boundary logits [n, vocab] for sbo = {left, right, offset} (flat positions of the span's
-- boundary tokens and 1-based offsets in the span, as gm.data.masking's labels.sbo).
function GraphMERT:sbo_logits(hidden, sbo)
  if not self.lm_pair_head then error("GraphMERT:sbo_logits: the model has no span-boundary head (sbo = false)", 2) end
  return self.lm_pair_head(self:_head_input(hidden, sbo.left), self:_head_input(hidden, sbo.right), sbo.offset)
end

-- The loss of a masked batch (gm.data.masking) → total, parts. The masked-token term pools root
-- and leaf targets: normalization = "joint" (default, the official code: one average over every
-- masked token, parts.mlm) or "separate" (L_MLM + mu · L_MNM, each averaged over its own tokens,
-- parts.mlm and parts.mnm). With sbo the span-boundary term is added with weight 1 (parts.sbo);
-- a batch with no SBO target has no such term (the official code gives NaN there).
-- opts.counts (data parallelism: loss_counts of the global batch this one is a share of) makes
-- each term a sum over this batch's targets divided by the global count, so that the shares'
-- losses and gradients add up to the global batch's.
function GraphMERT:loss(batch, opts)
  opts = opts or {}
  local hidden = self:forward(batch)
  local counts = opts.counts
  local function share(term, n, name)
    if counts and counts[name] ~= n then return term * (n / counts[name]) end
    return term
  end
  local function ce(positions, targets, name)
    if #positions == 0 then return nil end
    return share(self:logits(hidden, positions):cross_entropy(targets), #positions, name)
  end
  local lb, parts, total = batch.labels, {}, nil
  if (opts.normalization or "joint") == "joint" then
    local pos, tgt = {}, {}
    for _, part in ipairs { lb.roots, lb.leaves } do
      for i = 1, #part.positions do
        pos[#pos + 1], tgt[#tgt + 1] = part.positions[i], part.targets[i]
      end
    end
    parts.mlm = ce(pos, tgt, "mlm")
    total = parts.mlm
  else
    parts.mlm = ce(lb.roots.positions, lb.roots.targets, "mlm")
    parts.mnm = ce(lb.leaves.positions, lb.leaves.targets, "mnm")
    local mu = opts.mu or 1
    if parts.mlm and parts.mnm then total = parts.mlm + parts.mnm * mu
    else total = parts.mlm or (parts.mnm and parts.mnm * mu) end
  end
  if self.lm_pair_head then
    if not lb.sbo then
      error("GraphMERT:loss: the model has a span-boundary head (sbo = true) but the batch has no labels.sbo " ..
        "(gm.data.masking.mask makes them)", 2)
    end
    if #lb.sbo.targets > 0 then
      parts.sbo = share(self:sbo_logits(hidden, lb.sbo):cross_entropy(lb.sbo.targets), #lb.sbo.targets, "sbo")
      total = total and total + parts.sbo or parts.sbo
    end
  end
  return total or gm.zeros(1):sum(), parts
end

-- The number of targets each term of loss(batch, opts) averages over: {mlm, mnm, sbo} (the
-- terms the batch and options have).
function GraphMERT:loss_counts(batch, opts)
  local lb = batch.labels
  local counts = {}
  if ((opts or {}).normalization or "joint") == "joint" then
    counts.mlm = #lb.roots.positions + #lb.leaves.positions
  else
    counts.mlm, counts.mnm = #lb.roots.positions, #lb.leaves.positions
  end
  if self.lm_pair_head and lb.sbo then counts.sbo = #lb.sbo.targets end
  return counts
end

-- An official checkpoint folder (config.json + model.safetensors) → a model in eval mode.
function GraphMERT.from_pretrained(dir) return require("graphmert.nn.pretrained").load(GraphMERT, dir) end

-- Writes this model as an official checkpoint folder that GraphMertForMaskedLM.from_pretrained opens.
function GraphMERT:save_pretrained(dir) require("graphmert.nn.pretrained").save(self, dir) end

function GraphMERT:extra_repr()
  local c = self.config
  return string.format("layers = %d, hidden = %d, heads = %d, vocab = %d", c.layers, c.hidden, c.heads, c.vocab)
end

return GraphMERT
