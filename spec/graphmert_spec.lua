-- The GraphMERT model: shapes, H-GAT wiring, the masking objective, training to near-zero loss,
-- and resuming from a checkpoint bit for bit.
local gm = require "graphmert"

local R, L, V = 8, 2, 40
local N = R * (1 + L)
local SPECIAL = { [1] = true, [2] = true, [3] = true } -- [PAD], [CLS], [SEP]
local MASK = 4

local function make_batch(seed)
  gm.manual_seed(seed)
  local r = gm.rand(2, N):totable()
  local ids, valid = {}, {}
  for b = 1, 2 do
    ids[b], valid[b] = {}, {}
    for n = 1, N do
      local leaf = n > R
      local filled = not leaf or ((n - R - 1) // L) % 3 == 0
      ids[b][n] = filled and (5 + math.floor(r[b][n] * (V - 5))) or 1
      valid[b][n] = filled and 1 or 0
    end
    ids[b][1], ids[b][R] = 2, 3
  end
  return {
    ids = gm.tensor(ids), valid = gm.tensor(valid),
    relation = { { 2, 0, 0, 1, 0, 0, 0, 0 }, { 0, 0, 0, 3, 0, 0, 2, 0 } },
    head_length = { { 2, 0, 0, 1, 0, 0, 0, 0 }, { 0, 0, 0, 2, 0, 0, 1, 0 } },
  }
end

local function tiny(extra)
  local cfg = { vocab = V, hidden = 16, layers = 2, heads = 2, ffn = 32, roots = R, leaves = L, relations = 3, sbo = false }
  for k, v in pairs(extra or {}) do cfg[k] = v end
  return gm.nn.GraphMERT(cfg)
end

local mask_opts = { vocab = V, mask_id = MASK, special = SPECIAL, layout = gm.layout { roots = R, leaves = L }, leaf_rate = 0.5 }

describe("GraphMERT", function()
  it("maps a batch to hidden states with PyTorch-style parameter names", function()
    local model = tiny()
    local h = model(make_batch(1))
    assert.same({ 2, N, 16 }, h:shape())
    local sd = model:state_dict()
    for _, name in ipairs { "embed_tokens.weight", "hgat_weight", "hgat_attention", "decay.sp_param",
      "layers.0.self_attn.in_proj_weight", "layers.1.final_layer_norm.bias", "lm_head.dense.weight", "lm_head.bias" } do
      assert.is_not_nil(sd[name], name)
    end
    assert.same({ 2, 1, 1 }, sd["decay.sp_param"]:shape())
  end)

  it("sends gradients through H-GAT to W_r, a_r, the embeddings and the decay's p", function()
    local model = tiny { dropout = 0, attention_dropout = 0, relation_dropout = 0 }
    gm.manual_seed(3)
    local batch = gm.data.masking.mask(make_batch(2), mask_opts)
    model:loss(batch):backward()
    for _, name in ipairs { "hgat_weight", "hgat_attention", "embed_tokens.weight", "decay.sp_param" } do
      local g = model:state_dict()[name]:grad()
      assert.is_not_nil(g, name)
      assert.is_true((g * g):sum():item() > 0, name)
    end
  end)

  it("changes only leaves with a relation when H-GAT is on", function()
    local on = tiny { layers = 0, dropout = 0 }
    local off = tiny { layers = 0, dropout = 0, hgat = false }
    off:load_state_dict(on:state_dict(), false)
    local batch = make_batch(4)
    local a, b = on(batch):totable(), off(batch):totable()
    local changed = {}
    for n = 1, N do
      local d = 0
      for k = 1, 16 do d = d + math.abs(a[1][n][k] - b[1][n][k]) end
      if d > 0 then changed[#changed + 1] = n end
    end
    -- sequence 1: relation on roots 1 and 4; filled leaves are those of roots 1, 4, 7
    assert.same({ R + 1, R + 2, R + 7, R + 8 }, changed)
  end)

  it("masks about 15% of the roots in whole spans and whole tail groups, 80/10/10", function()
    gm.manual_seed(5)
    local batch = make_batch(6)
    local m = gm.data.masking.mask(batch, { vocab = V, mask_id = MASK, special = SPECIAL, layout = gm.layout { roots = R, leaves = L }, leaf_rate = 1 })
    assert.is_true(#m.labels.roots.positions >= 1)
    for _, p in ipairs(m.labels.roots.positions) do assert.is_true((p - 1) % N + 1 <= R) end
    -- leaf_rate 1: every filled leaf is a target
    local filled = 0
    for b = 1, 2 do for n = R + 1, N do if batch.valid:get(b, n) == 1 then filled = filled + 1 end end end
    assert.equal(filled, #m.labels.leaves.positions)
    -- replacement shares over many draws
    local ids = {}
    for n = 1, 200 do ids[n] = 5 + n % 30 end
    local big = { ids = gm.tensor { ids }, valid = gm.ones(1, 200) }
    local mm = gm.data.masking.mask(big, { vocab = V, mask_id = MASK, special = {}, layout = gm.layout { roots = 200, leaves = 0 }, root_rate = 1, spans = false })
    local masked, kept = 0, 0
    local after = mm.ids:totable()[1]
    for i, p in ipairs(mm.labels.roots.positions) do
      if after[p] == MASK then masked = masked + 1 elseif after[p] == mm.labels.roots.targets[i] then kept = kept + 1 end
    end
    local n = #mm.labels.roots.positions
    assert.is_true(n >= 190)
    assert.near(0.8, masked / n, 0.1)
  end)

  it("drives the loss of a handful of sequences to near zero", function()
    gm.manual_seed(7)
    -- learned positions: without them, tokens at mirror positions of the symmetric decay look alike
    local model = tiny { dropout = 0, attention_dropout = 0, relation_dropout = 0, positions = true }
    local batch = gm.data.masking.mask(make_batch(8), mask_opts)
    local opt = gm.optim.adamw(model:named_parameters(), { lr = 1e-2, weight_decay = 0 })
    local loss
    for _ = 1, 300 do
      opt:zero_grad()
      loss = model:loss(batch)
      loss:backward()
      opt:step()
    end
    assert.is_true(loss:item() < 0.05, "loss " .. loss:item())
    local separate = model:loss(batch, { normalization = "separate", mu = 1 })
    assert.is_true(separate:item() < 0.1)
  end)

  it("resumes from a checkpoint with exactly the remaining loss curve", function()
    local path = os.tmpname()
    local function run(steps, from, save_at)
      gm.manual_seed(11)
      local model = tiny()
      local opt = gm.optim.adamw(model:named_parameters(), { lr = 5e-3 })
      local start = 1
      if from then start = gm.checkpoint.load(from, { model = model, optimizer = opt }) + 1 end
      local losses = {}
      for step = start, steps do
        local batch = gm.data.masking.mask(make_batch(20 + step), mask_opts) -- reseeds: fixed data per step
        gm.manual_seed(1000 + step)
        opt:zero_grad()
        local loss = model:loss(batch) -- with dropout: uses the generator
        loss:backward()
        opt:step()
        losses[step] = loss:item()
        if step == save_at then gm.checkpoint.save(path, { model = model, optimizer = opt, step = step }) end
      end
      return losses
    end
    local full = run(12, nil, 6)
    local resumed = run(12, path, nil)
    for step = 7, 12 do assert.equal(full[step], resumed[step]) end
    os.remove(path)
  end)

  it("skips padding and gives the dense masked computation's values at real nodes", function()
    local compact = tiny { dropout = 0, attention_dropout = 0, relation_dropout = 0 }
    local dense = tiny { dropout = 0, attention_dropout = 0, relation_dropout = 0, compact = false }
    dense:load_state_dict(compact:state_dict())
    local batch = make_batch(9)
    local a, b = compact(batch), dense(batch)
    local m = batch.valid:reshape(2, N, 1)
    assert.tensor_near(b * m, a, 1e-5, 1e-6)
    ;(a * a):sum():backward()
    ;((b * m) * (b * m)):sum():backward()
    for _, name in ipairs { "embed_tokens.weight", "decay.sp_param", "layers.1.fc1.weight", "hgat_weight" } do
      assert.tensor_near(dense:state_dict()[name]:grad(), compact:state_dict()[name]:grad(), 1e-3, 1e-4)
    end
  end)

  it("init = \"official\": a zero [PAD] row without lookup gradient, xavier attention projections", function()
    gm.manual_seed(21)
    local model = tiny { init = "official", dropout = 0, attention_dropout = 0, relation_dropout = 0 }
    assert.equal(1, model.config.pad_id)
    local function max_abs(t)
      local m = 0
      for _, v in ipairs(t:reshape(-1):totable()) do m = math.max(m, math.abs(v)) end
      return m
    end
    local function pad_row(t) return max_abs(t:narrow(1, 1, 1)) end
    assert.equal(0, pad_row(model.embed_tokens.weight))
    local attn = model.layers["0"].self_attn
    local qkv, out = math.sqrt(6 / 32) / math.sqrt(2), math.sqrt(6 / 32)
    assert.is_true(max_abs(attn.in_proj_weight) <= qkv and max_abs(attn.in_proj_weight) > 0.9 * qkv)
    -- xavier's bound √(6/2H) is above torch.nn.Linear's 1/√H
    assert.is_true(max_abs(attn.out_proj.weight) <= out and max_abs(attn.out_proj.weight) > 1 / math.sqrt(16))
    assert.equal(0, max_abs(attn.out_proj.bias))
    -- a real root whose input is [PAD] (a random replacement can draw it): the row keeps its value
    -- in the forward, and only the tied decoder gives it gradient
    local batch = make_batch(2)
    local ids = batch.ids:totable()
    ids[1][3] = 1
    batch.ids = gm.tensor(ids)
    batch.labels = { roots = { positions = { 3 }, targets = { 7 } }, leaves = { positions = {}, targets = {} } }
    local hidden = model(batch)
    local untied = tiny { dropout = 0, attention_dropout = 0, relation_dropout = 0 }
    untied:load_state_dict(model:state_dict())
    assert.tensor_near(untied(batch), hidden, 0, 0)
    model:zero_grad()
    local h = model(batch):reshape(-1, 16):index_select(1, { 3 })
    model.lm_head(h):matmul(model.embed_tokens.weight:detach(), false, true):sum():backward()
    assert.equal(0, pad_row(model.embed_tokens.weight:grad()))
    untied:zero_grad()
    h = untied(batch):reshape(-1, 16):index_select(1, { 3 })
    untied.lm_head(h):matmul(untied.embed_tokens.weight:detach(), false, true):sum():backward()
    assert.is_true(pad_row(untied.embed_tokens.weight:grad()) > 0)
    model:zero_grad()
    model:loss(batch):backward()
    assert.is_true(pad_row(model.embed_tokens.weight:grad()) > 0)
    assert.is_false(tiny { init = "official", pad_id = false }.config.pad_id)
    assert.is_false(tiny().config.pad_id)
    assert.equal(3, tiny { pad_id = 3 }.embed_tokens.padding)
    assert.error_matches(function() tiny { init = "paper" } end, "init must be \"torch\" or \"official\", got paper")
    assert.error_matches(function() tiny { pad_id = 0 } end, "pad_id must be a positive integer")
  end)

  it("relation_dropout_mask = \"triple\": one mask per triple while training, none in eval", function()
    local per_table = tiny { dropout = 0, attention_dropout = 0, relation_dropout = 0.5 }
    local per_triple = tiny { dropout = 0, attention_dropout = 0, relation_dropout = 0.5, relation_dropout_mask = "triple" }
    per_triple:load_state_dict(per_table:state_dict())
    local batch = gm.data.masking.mask(make_batch(2), mask_opts)
    per_table:eval(); per_triple:eval()
    assert.tensor_near(per_table(batch), per_triple(batch), 0, 0)
    per_table:train(); per_triple:train()
    gm.manual_seed(5)
    local a = per_triple(batch)
    gm.manual_seed(5)
    assert.tensor_near(a, per_triple(batch), 0, 0)
    assert.is_true(((a - per_table(batch)) ^ 2):sum():item() > 0)
    per_triple:loss(batch):backward()
    assert.is_true((per_triple.hgat_weight:grad() ^ 2):sum():item() > 0)
    assert.error_matches(function() tiny { relation_dropout_mask = "row" } end, "relation_dropout_mask must be \"table\" or \"triple\"")
  end)

  it("refuses batches that do not fit the graph", function()
    local model = tiny()
    local batch = make_batch(1)
    batch.ids = gm.ones(2, N - 1)
    assert.error_matches(function() model(batch) end, "ids have shape 2x23, the graph has 24 nodes")
    batch = make_batch(1)
    batch.valid = gm.ones(1, N - 1)
    assert.error_matches(function() model(batch) end, "valid has shape 1x23, ids %dx24")
    batch.valid = nil
    assert.error_matches(function() model(batch) end, "a batch is a table with ids and valid, tensors %[B, N%]")
    batch = make_batch(1)
    batch.relation[1][2], batch.head_length[1][2] = 9, 1
    assert.error_matches(function() model(batch) end, "relation 9 of root 2 in sequence 1 is not in %[1, 3%]")
  end)
end)

describe("nn.GraphAttentionStack", function()
  local g = gm.graph(5, { { 1, 2 }, { 2, 3 }, { 3, 4 } }) -- node 5 is isolated
  it("attends only along edges (and self loops), with head-averaged weights per layer", function()
    gm.manual_seed(2)
    local stack = gm.nn.GraphAttentionStack { input = 3, hidden = 8, output = 2, heads = 2, layers = 2 }
    local x = gm.randn(2, 5, 3)
    local y = stack(x, g:adjacency())
    assert.same({ 2, 5, 2 }, y:shape())
    local weights = stack:attention_weights(x, g:adjacency())
    assert.equal(2, #weights)
    local adj = g:adjacency { self_loops = true }:totable()
    local w = weights[2]:totable()
    for b = 1, 2 do
      for i = 1, 5 do
        local sum = 0
        for j = 1, 5 do
          if adj[i][j] == 0 then assert.equal(0, w[b][i][j]) end
          sum = sum + w[b][i][j]
        end
        assert.near(1, sum, 1e-5)
      end
    end
    assert.equal(1, w[1][5][5]) -- the isolated node attends to itself alone
  end)

  it("passes finite-difference checks through the masked layers", function()
    gm.manual_seed(3)
    local stack = gm.nn.GraphAttentionStack { input = 2, hidden = 4, output = 2, heads = 2, layers = 1, ffn = 4 }
    local x = gm.randn(1, 5, 2):requires_grad(true)
    local ok, report = gm.gradcheck(function(a) return stack(a, g:adjacency()) end, { x })
    assert.is_true(ok, table.concat(report.failures, "\n"))
  end)
end)

describe("nn.EncoderLayer", function()
  it("matches a float64 PyTorch post-LN layer with decay and padding (outputs and every gradient)", function()
    local fixture = require "spec.fixture"
    local T = fixture.tensor
    local doc = fixture.load("spec/fixtures/encoder_layer.json")
    local layer = gm.nn.EncoderLayer { dim = math.tointeger(doc.dims.E), heads = math.tointeger(doc.dims.H),
      ffn = math.tointeger(doc.dims.ffn), dropout = 0, attention_dropout = 0 }
    local sd = {}
    for name, e in pairs(doc.params) do sd[name] = T(e) end
    layer:load_state_dict(sd)
    local x, decay = T(doc.x):requires_grad(true), T(doc.decay):requires_grad(true)
    local out = layer(x, { decay = decay, key_mask = T(doc.key_mask) })
    assert.tensor_near(doc.output.data, out, 1e-5, 1e-6)
    ;(out * T(doc.cotangent)):sum():backward()
    assert.tensor_near(doc.grads.x.data, x:grad(), 1e-4, 1e-5)
    assert.tensor_near(doc.grads.decay.data, decay:grad(), 1e-4, 1e-5)
    local params = layer:state_dict()
    for name in pairs(doc.params) do
      assert.tensor_near(doc.grads[name].data, params[name]:grad(), 1e-4, 1e-5)
    end
  end)
end)
