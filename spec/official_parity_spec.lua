-- Official parity: checkpoint folders load through GraphMERT.from_pretrained and give the
-- reference logits, span-boundary logits, sequence representation, loss and gradients. The
-- folders: written by the unmodified official GraphMERT code (jha-lab/graphmert_umls @ 5a86858c,
-- run in float64 by ../shared/official_ref/run_official.py SEED DIR: tiny config, seeded weights,
-- a batch from the official collator with padding leaves, a head over two roots and one relation
-- on several roots), and by the project's own float64 twin of the official forward
-- (scripts/refs/gen_official_twin.py: another tiny config, a head over three roots, one relation
-- on three roots, padding leaves, and real roots whose input is [PAD], with a non-zero [PAD] row).
local gm = require "graphmert"
local fixture = require "spec.fixture"
local files = require "spec.files"

local function nested(t) return gm.tensor(t) end

-- the official labels ([B, N] 0-based ids, -100 elsewhere) and SBO pairs/labels as ours
local function labels_of(o, layout)
  local U = o.dims.U_max_targets
  local roots = { positions = {}, targets = {} }
  for b, row in ipairs(o.inputs.labels) do
    for n, cell in ipairs(row) do
      local id = cell[1] -- labels are [B, N, 1]
      if id ~= -100 then
        roots.positions[#roots.positions + 1] = layout:flat(b, n)
        roots.targets[#roots.targets + 1] = id + 1
      end
    end
  end
  local sbo = { left = {}, right = {}, offset = {}, targets = {} }
  for b, pairs in ipairs(o.inputs.pairs) do
    for p, pair in ipairs(pairs) do
      for k = 1, U do
        local id = o.inputs.pair_labels[b][(p - 1) * U + k][1]
        if id ~= -100 then
          sbo.left[#sbo.left + 1], sbo.right[#sbo.right + 1] = layout:flat(b, pair[1] + 1), layout:flat(b, pair[2] + 1)
          sbo.offset[#sbo.offset + 1], sbo.targets[#sbo.targets + 1] = k, id + 1
        end
      end
    end
  end
  return { roots = roots, leaves = { positions = {}, targets = {} }, sbo = sbo }
end

-- The checks on one folder: title, the folder, the folder of its case.json, and the sizes its
-- config must give ({vocab, hidden, layers, heads, ffn, roots, leaves, relations}, λ).
local function check_folder(title, dir, case_dir, sizes, lambda)
  describe("GraphMERT.from_pretrained on " .. title, function()
    local case = fixture.load(case_dir .. "/case.json")
    local o = case.official
    local model = gm.nn.GraphMERT.from_pretrained(dir)
    local batch = { ids = nested(case.ids), valid = nested(case.valid), relation = case.relation,
      head_length = case.head_length, labels = labels_of(o, model.layout) }

    it("reads the official config (λ from _exp_mask_base, sizes, SBO)", function()
      local c = model.config
      assert.equal(lambda, c.lambda)
      assert.same(sizes, { c.vocab, c.hidden, c.layers, c.heads, c.ffn, c.roots, c.leaves, c.relations })
      assert.is_true(c.sbo)
      assert.is_false(model.training)
    end)

    it("gives the official logits at every real position and the sequence representation", function()
      local hidden, graph_rep = model(batch)
      assert.tensor_near(case.logits, model:logits(hidden, case.positions), 1e-5, 1e-5)
      local last = o.hidden_states[#o.hidden_states]
      local expected = {}
      for b = 1, #last do expected[b] = last[b][1] end
      assert.tensor_near(expected, graph_rep, 1e-5, 1e-5)
    end)

    it("gives the official span-boundary logits for every real pair", function()
      local hidden = model(batch)
      local U, P = o.dims.U_max_targets, #o.inputs.pairs[1]
      for b, pairs in ipairs(o.inputs.pairs) do
        for p, pair in ipairs(pairs) do
          if pair[1] >= 0 then
            local left, right, offsets = {}, {}, {}
            for k = 1, U do
              left[k], right[k], offsets[k] = model.layout:flat(b, pair[1] + 1), model.layout:flat(b, pair[2] + 1), k
            end
            local got = model:sbo_logits(hidden, { left = left, right = right, offset = offsets })
            assert.tensor_near(o.sbo_logits[(b - 1) * P + p], got, 1e-5, 1e-5)
          end
        end
      end
    end)

    it("gives the official loss, its parts and the gradients", function()
      model:zero_grad()
      local loss, parts = model:loss(batch)
      assert.near(o.loss, loss:item(), 1e-5 * o.loss)
      assert.near(o.mlm_loss, parts.mlm:item(), 1e-5 * o.mlm_loss)
      assert.near(o.sbo_loss, parts.sbo:item(), 1e-5 * o.sbo_loss)
      loss:backward()
      local g = o.grad_total
      assert.tensor_near(g.atom_encoder, model.embed_tokens.weight:grad(), 1e-4, 1e-6)
      assert.tensor_near(g.sp, model.decay.sp_param:grad(), 1e-4, 1e-6)
      local rows = {}
      for r = 2, #g.relation_matrix_encoder do rows[#rows + 1] = g.relation_matrix_encoder[r] end
      assert.tensor_near(rows, model.hgat_weight:grad(), 1e-4, 1e-6)
    end)
  end)
end

-- the official folders, seed1's weights in the other layouts (pytorch_model.bin as the official
-- trainer writes it, and both formats sharded; scripts/refs/gen_official_folders.py), and the twin
local official = { { 40, 16, 2, 2, 32, 6, 3, 3 }, 0.6 }
for _, f in ipairs { { "seed1", "seed1" }, { "seed2", "seed2" }, { "layouts/bin", "seed1" },
  { "layouts/bin_sharded", "seed1" }, { "layouts/safetensors_sharded", "seed1" } } do
  check_folder("the official code's " .. f[1] .. " checkpoint", "spec/fixtures/official/" .. f[1],
    "spec/fixtures/official/" .. f[2], official[1], official[2])
end
check_folder("the float64 twin's checkpoint (scripts/refs/gen_official_twin.py)", "spec/fixtures/official_twin",
  "spec/fixtures/official_twin", { 30, 12, 2, 3, 24, 7, 3, 4 }, 0.7)

describe("GraphMERT:save_pretrained", function()
  local src = "spec/fixtures/official/seed1"
  local cjson = require "cjson"

  -- a copy of the official folder with its config and tensors passed through edit functions
  local function folder(edit_config, edit_tensors)
    local dir = files.tmpname()
    os.execute("mkdir -p " .. dir)
    local cfg = fixture.load(src .. "/config.json")
    if edit_config then edit_config(cfg) end
    local f = assert(io.open(dir .. "/config.json", "w"))
    f:write(cjson.encode(cfg))
    f:close()
    local tensors = gm.safetensors.load(src .. "/model.safetensors")
    if edit_tensors then edit_tensors(tensors) end
    gm.safetensors.save(dir .. "/model.safetensors", tensors)
    return dir
  end

  it("writes a folder that from_pretrained reads back bit for bit, in the official layout", function()
    local model = gm.nn.GraphMERT.from_pretrained(src)
    local dir = files.tmpname()
    model:save_pretrained(dir)
    local again = gm.nn.GraphMERT.from_pretrained(dir)
    for name, t in pairs(model:state_dict()) do assert.tensor_near(t, again:state_dict()[name], 0, 0) end
    local official, written = gm.safetensors.load(src .. "/model.safetensors"), gm.safetensors.load(dir .. "/model.safetensors")
    for name, t in pairs(official) do assert.tensor_near(t, written[name], 0, 0) end
    for name in pairs(written) do assert.is_truthy(official[name], name) end
    assert.equal(0.6, fixture.load(dir .. "/config.json")._exp_mask_base)
    os.execute("rm -rf " .. dir)
  end)

  it("refuses a folder without weights, and a shard index that disagrees with its shards", function()
    local dir = files.tmpname()
    os.execute("mkdir -p " .. dir .. " && cp " .. src .. "/config.json " .. dir)
    assert.error_matches(function() gm.nn.GraphMERT.from_pretrained(dir) end,
      "has no model.safetensors, pytorch_model.bin or sharded index", nil, true)
    os.execute("cp spec/fixtures/official/layouts/bin_sharded/* " .. dir ..
      " && sed -i 's/00002-of/00001-of/' " .. dir .. "/pytorch_model.bin.index.json")
    assert.error_matches(function() gm.nn.GraphMERT.from_pretrained(dir) end, "has no tensor", nil, true)
    os.execute("rm -rf " .. dir)
  end)

  it("refuses a missing tensor, an unknown one and a shape that does not fit, naming it", function()
    local cases = {
      { nil, function(t) t["graphmert.graph_encoder.sp"] = nil end, "has no tensor 'graphmert.graph_encoder.sp'" },
      { nil, function(t) t["extra.weight"] = gm.zeros(2) end, "tensors this config does not use: extra.weight" },
      { nil, function(t) t["lm_head.dense.weight"] = gm.zeros(16, 15) end, "'lm_head.dense.weight' has size 16x15, which does not fit the config (16x16 here)" },
      { nil, function(t) t["lm_head.decoder.weight"] = gm.zeros(40, 16) end, "'lm_head.decoder.weight' differs" },
      { function(c) c.hidden_size = 8 end, nil, "'graphmert.graph_encoder.graph_node_feature.atom_encoder.weight' has size 40x16, which does not fit the config (40x8 here)" },
      { function(c) c._exp_mask_base = nil end, nil, "neither '_exp_mask_base' nor 'exp_mask_base'" },
      { function(c) c.pre_layernorm = true end, nil, "pre_layernorm = true is not supported" },
    }
    for _, case in ipairs(cases) do
      local dir = folder(case[1], case[2])
      assert.error_matches(function() gm.nn.GraphMERT.from_pretrained(dir) end, case[3], nil, true)
      os.execute("rm -rf " .. dir)
    end
  end)

  it("reads exp_mask_base when _exp_mask_base is absent, and a float vocab_size", function()
    local dir = folder(function(c) c._exp_mask_base, c.exp_mask_base, c.vocab_size = nil, 0.8, 40.0 end)
    assert.equal(0.8, gm.nn.GraphMERT.from_pretrained(dir).config.lambda)
    os.execute("rm -rf " .. dir)
  end)

  it("refuses to write a model the official layout cannot hold", function()
    local m = gm.nn.GraphMERT { vocab = 10, hidden = 8, layers = 1, heads = 2, ffn = 16, roots = 4, leaves = 1, positions = true }
    assert.error_matches(function() m:save_pretrained(os.tmpname()) end,
      "cannot hold a model with positions = true %(a run's own checkpoint.safetensors keeps any model: gm.experiment.load_model")
    -- a training run's folder is not a checkpoint folder, and the error says what opens it
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p " .. dir .. " && echo '{}' > " .. dir .. "/run.json")
    assert.error_matches(function() gm.nn.GraphMERT.from_pretrained(dir .. "/run.json") end,
      "run.json is a file; give the folder that holds config.json and the weights")
    assert.error_matches(function() gm.nn.GraphMERT.from_pretrained(dir) end,
      "is a training run %(run.json, checkpoint.safetensors%), not a checkpoint folder %(config.json%): gm.experiment.load_model")
    os.execute("rm -rf " .. dir)
  end)
end)
