-- pretrained.lua — GraphMERT checkpoint folders as the official code writes and reads them
-- (GraphMertForMaskedLM.save_pretrained / from_pretrained): config.json and model.safetensors
-- with the official parameter names.
--
-- load(GraphMERT, dir) → model (eval mode): the weights from model.safetensors, else
--   pytorch_model.bin (what the official trainer writes: gm.torch_load, no pickle is run), else
--   the sharded forms Hugging Face writes (model.safetensors.index.json or
--   pytorch_model.bin.index.json and their shards); config.json → constructor options; λ is read from
--   "_exp_mask_base" (what the official config writes) or "exp_mask_base", and a config with
--   neither is refused (a silent default would change every logit). Every official tensor is
--   mapped to ours — q/k/v projections into in_proj_weight/in_proj_bias, the relation tables
--   [K+1, ·] without their padding row 0 — and a missing or unknown tensor, or a shape that
--   does not fit, is refused with its name. The model trains on as the official one: pad_id =
--   pad_token_id + 1 (no lookup gradient to that row) and relation_dropout_mask = "triple". lm_head.decoder.* may be absent (the official
--   checkpoints tie the decoder to the token embedding and leave it out) or equal to what it
--   is tied to.
-- A folder is untrusted input and is checked in an order that costs nothing first: config.json
--   (every value's type and range, heads dividing hidden), then the weight files (regular files,
--   inside the folder or its Hugging Face cache repository: graphmert.folder), then the size the
--   config declares against the bytes the weights have, then the tensors (whose loaders never
--   allocate more than twice the file), and only then the model.
-- save(model, dir): the same layout back (padding rows zero, no lm_head.decoder.*), written
--   atomically, so a model trained here opens with the official from_pretrained.
local gm = require "graphmert"
local cjson = require "cjson"
local safetensors = require "graphmert.safetensors"
local check = require "graphmert.check"
local folder = require "graphmert.folder"

local M = {}

local ENC = "graphmert.graph_encoder."
local FEATURE = ENC .. "graph_node_feature."

-- One entry per tensor of ours: the official names it comes from, and how to convert. `read`
-- takes the official tensors in that order, `write` gives them back.
local function rules(model)
  local c = model.config
  local H, K = c.hidden, c.relations
  local list = {}
  local function same(official, ours) list[#list + 1] = { ours = ours, official = { official } } end
  local function padded_table(official, ours, shape)
    list[#list + 1] = { ours = ours, official = { official },
      read = function(t) return t:narrow(1, 2, K):reshape(shape) end,
      write = function(t) return gm.cat({ gm.zeros(1, t:numel() // K), t:reshape(K, -1) }, 1) end }
  end
  same(FEATURE .. "atom_encoder.weight", "embed_tokens.weight")
  same(FEATURE .. "graph_token.weight", "graph_token")
  same(ENC .. "graph_token_virtual_distance", "graph_token_distance")
  same(ENC .. "sp", "decay.sp_param")
  padded_table(FEATURE .. "relation_matrix_encoder.weight", "hgat_weight", { K, H, H })
  padded_table(FEATURE .. "relation_encoder.weight", "hgat_attention", { K, 2 * H })
  for i = 0, c.layers - 1 do
    local off, ours = ENC .. "layers." .. i .. ".", "layers." .. i .. "."
    for _, kind in ipairs { "weight", "bias" } do
      list[#list + 1] = { ours = ours .. "self_attn.in_proj_" .. kind,
        official = { off .. "self_attn.q_proj." .. kind, off .. "self_attn.k_proj." .. kind, off .. "self_attn.v_proj." .. kind },
        read = function(q, k, v) return gm.cat({ q, k, v }, 1) end,
        write = function(t) return t:narrow(1, 1, H), t:narrow(1, H + 1, H), t:narrow(1, 2 * H + 1, H) end }
      for _, m in ipairs { "self_attn.out_proj", "self_attn_layer_norm", "fc1", "fc2", "final_layer_norm" } do
        same(off .. m .. "." .. kind, ours .. m .. "." .. kind)
      end
    end
  end
  for _, kind in ipairs { "weight", "bias" } do
    same("graphmert.lm_head_transform_weight." .. kind, "lm_transform.dense." .. kind)
    same("graphmert.layer_norm." .. kind, "lm_transform.layer_norm." .. kind)
    same("lm_head.dense." .. kind, "lm_head.dense." .. kind)
    same("lm_head.layer_norm." .. kind, "lm_head.layer_norm." .. kind)
  end
  same("lm_head.bias", "lm_head.bias")
  if c.sbo then
    local P, MLP = "lm_pair_head.", "lm_pair_head.mlp_layer_norm.mlp_layer_norm."
    same(P .. "position_embeddings.weight", P .. "position_embeddings.weight")
    for _, kind in ipairs { "weight", "bias" } do
      same(MLP .. "0." .. kind, P .. "transform_1.dense." .. kind)
      same(MLP .. "2." .. kind, P .. "transform_1.layer_norm." .. kind)
      same(MLP .. "3." .. kind, P .. "transform_2.dense." .. kind)
      same(MLP .. "5." .. kind, P .. "transform_2.layer_norm." .. kind)
      same(P .. "decoder." .. kind, P .. "decoder." .. kind)
    end
  end
  return list
end

local function member(dir, name) return folder.member(dir, name, "from_pretrained") end

local function read_json(dir, name)
  local path = folder.need(dir, name, "from_pretrained")
  return require("graphmert.json").read(path, "from_pretrained"), path
end

-- config.json → GraphMERT options; refuses what this model cannot reproduce and every value of
-- the wrong type or range, before anything is allocated
local function options(cfg, path)
  local function bad(key, what) error(string.format("from_pretrained: %s: %s must be %s, got %s", path, key, what, cjson.encode(cfg[key])), 0) end
  local function need(key)
    if cfg[key] == nil then error(string.format("from_pretrained: %s has no '%s'", path, key), 0) end
    return cfg[key]
  end
  local function integer(key, min)
    return check.integer("from_pretrained: " .. path, key, need(key), min)
  end
  local function flag(key, default)
    local v = cfg[key]
    if v == nil or v == cjson.null then return default end
    if type(v) ~= "boolean" then bad(key, "true or false") end
    return v
  end
  local function rate(key, default)
    local v = cfg[key]
    if v == nil then return default end
    if type(v) ~= "number" or not (v >= 0 and v < 1) then bad(key, "a number in [0, 1)") end
    return v
  end
  local function refuse_unless(ok, what)
    if not ok then error(string.format("from_pretrained: %s: %s is not supported", path, what), 0) end
  end
  local roots, nodes = integer("root_nodes", 1), integer("max_nodes", 1)
  if nodes % roots ~= 0 then
    error(string.format("from_pretrained: %s: max_nodes %d is not a multiple of root_nodes %d", path, nodes, roots), 0)
  end
  local lambda_key = cfg._exp_mask_base ~= nil and "_exp_mask_base" or "exp_mask_base"
  local lambda = cfg[lambda_key]
  if lambda == nil then
    error("from_pretrained: " .. path .. " has neither '_exp_mask_base' nor 'exp_mask_base' (λ of the decay mask)", 0)
  end
  -- JSON says "no decay" with null; its false is no λ at all
  if lambda == cjson.null then lambda = false
  elseif lambda == false or not pcall(check.lambda, lambda_key, lambda) then bad(lambda_key, "a number in (0, 1] or null") end
  refuse_unless(not flag("pre_layernorm", false), "pre_layernorm = true")
  refuse_unless(not flag("encoder_normalize_before", false), "encoder_normalize_before = true")
  refuse_unless(cfg.embed_scale == nil or cfg.embed_scale == cjson.null, "embed_scale")
  refuse_unless(cfg.activation_fn == nil or cfg.activation_fn == "gelu", "activation_fn " .. tostring(cfg.activation_fn))
  local leaves = nodes // roots - 1
  local upper = cfg.span_upper_length
  refuse_unless(upper == nil or upper == cjson.null or upper == leaves, "span_upper_length other than leaves per root")
  local vocab, hidden, heads = integer("vocab_size", 1), integer("hidden_size", 1), integer("num_attention_heads", 1)
  if hidden % heads ~= 0 then
    error(string.format("from_pretrained: %s: num_attention_heads %d does not divide hidden_size %d", path, heads, hidden), 0)
  end
  local pad = check.integer("from_pretrained: " .. path, "pad_token_id", cfg.pad_token_id or 0, 0)
  if pad >= vocab then bad("pad_token_id", "below vocab_size " .. vocab) end
  local dropout = rate("dropout", 0.1)
  return {
    vocab = vocab, hidden = hidden, layers = integer("num_hidden_layers", 0),
    heads = heads, ffn = integer("intermediate_size", 1), roots = roots, leaves = leaves,
    relations = integer("num_relationships", 1), lambda = lambda,
    -- the official attention dropout is config.dropout (attention_dropout is unused there)
    dropout = dropout, attention_dropout = dropout,
    relation_dropout = rate("relation_emb_dropout", 0.3),
    sbo = flag("mlm_sbo", true), head = "official", graph_token = true,
    -- training it goes on as the official code does: padding_idx, one relation mask per triple
    pad_id = pad + 1, relation_dropout_mask = "triple",
  }
end

-- the weight files: a single one, or an index (→ its weight_map) and its shards; total bytes
local function weight_files(dir)
  for _, name in ipairs { "model.safetensors", "pytorch_model.bin" } do
    local path, size = member(dir, name)
    if path then return { path }, size, path end
  end
  for _, index in ipairs { "model.safetensors.index.json", "pytorch_model.bin.index.json" } do
    if member(dir, index) then
      local json, path = read_json(dir, index)
      local map = json.weight_map
      if type(map) ~= "table" then error("from_pretrained: " .. path .. " has no weight_map", 0) end
      local files, total, seen = {}, 0, {}
      for name, shard in pairs(map) do
        if type(shard) ~= "string" or shard == "" or shard == "." or shard == ".." or shard:find("[/%z]") then
          error(string.format("from_pretrained: %s: the shard of '%s' is not a file name in the folder", path, tostring(name)), 0)
        end
        if not seen[shard] then
          local shard_path, size = member(dir, shard)
          if not shard_path then error(string.format("from_pretrained: %s names %s, which %s lacks", path, shard, dir), 0) end
          seen[shard] = shard_path
          files[#files + 1] = shard_path
          total = total + size
        end
      end
      table.sort(files)
      return files, total, path, map, seen
    end
  end
  error("from_pretrained: " .. dir .. " has no model.safetensors, pytorch_model.bin or sharded index", 0)
end

local function read_tensors(path)
  local ok, tensors = pcall(path:match("%.bin$") and gm.torch_load or safetensors.load, path)
  if not ok then -- the loader's message names the file; where in the library it was raised says nothing
    error("from_pretrained: " .. tostring(tensors):gsub("^[^\n]-%.lua:%d+: ", ""), 0)
  end
  return tensors
end

-- name → tensor from the weight files; an index must say where every tensor is
local function read_weights(files, index_path, map, shard_paths)
  if not map then return read_tensors(files[1]) end
  local tensors, by_path = {}, {}
  for shard, path in pairs(shard_paths) do by_path[path] = shard end
  for _, path in ipairs(files) do
    for name, t in pairs(read_tensors(path)) do
      if map[name] ~= by_path[path] then
        error(string.format("from_pretrained: %s holds '%s', which %s does not map there", path, name, index_path), 0)
      end
      tensors[name] = t
    end
  end
  for name, shard in pairs(map) do
    if not tensors[name] then error(string.format("from_pretrained: %s has no tensor '%s' (%s says it does)", shard_paths[shard], name, index_path), 0) end
  end
  return tensors
end

function M.load(GraphMERT, dir)
  if type(dir) ~= "string" then error("from_pretrained: a folder expected, got " .. type(dir), 0) end
  local info = gm.stat(dir)
  if info and info.type ~= "directory" then
    error(string.format("from_pretrained: %s is a %s; give the folder that holds config.json and the weights", dir, info.type), 0)
  end
  local run = gm.stat(dir .. "/run.json")
  if run and not gm.stat(dir .. "/config.json") then
    error(string.format("from_pretrained: %s is a training run (run.json, checkpoint.safetensors), not a checkpoint "
      .. "folder (config.json): gm.experiment.load_model(%q) loads it", dir, dir), 0)
  end
  local cfg, config_path = read_json(dir, "config.json")
  local o = options(cfg, config_path)
  local files, bytes, weights_path, map, shard_paths = weight_files(dir)
  -- read first, so a file of another format is named as such (reading costs what the file is);
  -- then, before the model is built: weights of 16-bit floats or wider hold at least 2 bytes per
  -- parameter
  local official = read_weights(files, weights_path, map, shard_paths)
  GraphMERT.check_declared(o, bytes, 2, "from_pretrained: " .. config_path, weights_path)
  local model = GraphMERT(o)
  local state, used, own = {}, {}, model:state_dict()
  for _, rule in ipairs(rules(model)) do
    local inputs = {}
    for i, name in ipairs(rule.official) do
      inputs[i] = official[name]
      if not inputs[i] then error(string.format("from_pretrained: %s has no tensor '%s'", weights_path, name), 0) end
      used[name] = true
    end
    local ok, t = pcall(rule.read or function(x) return x end, table.unpack(inputs))
    local expected = own[rule.ours]
    if not ok or t:shape_string() ~= expected:shape_string() then
      error(string.format("from_pretrained: %s: '%s' has size %s, which does not fit the config (%s here)", weights_path,
        rule.official[1], inputs[1]:shape_string(), expected:shape_string()), 0)
    end
    state[rule.ours] = t
  end
  -- the tied decoder: absent, or the very tensors it is tied to
  for name, tied in pairs { ["lm_head.decoder.weight"] = FEATURE .. "atom_encoder.weight", ["lm_head.decoder.bias"] = "lm_head.bias" } do
    local t = official[name]
    if t then
      used[name] = true
      if t:shape_string() ~= official[tied]:shape_string() or ((t - official[tied]) ^ 2):sum():item() ~= 0 then
        error(string.format("from_pretrained: %s: '%s' differs from '%s', to which GraphMERT ties it", weights_path, name, tied), 0)
      end
    end
  end
  local unknown = {}
  for name in pairs(official) do if not used[name] then unknown[#unknown + 1] = name end end
  if #unknown > 0 then
    table.sort(unknown)
    error(string.format("from_pretrained: %s has tensors this config does not use: %s", weights_path, table.concat(unknown, ", ")), 0)
  end
  model:load_state_dict(state)
  return model:eval()
end

-- what a GraphMERT config must be for the official code to reproduce it
local function check_saveable(c)
  local function need(ok, what)
    if not ok then
      error("save_pretrained: the official layout cannot hold a model with " .. what .. " (a run's own "
        .. "checkpoint.safetensors keeps any model: gm.experiment.load_model(dir) loads it)", 3)
    end
  end
  need(c.head == "official", "head = \"single\"")
  need(c.graph_token, "graph_token = false")
  need(c.hgat, "hgat = false")
  need(c.hgat_interleaved, "hgat_interleaved = false")
  need(not c.positions, "positions = true")
  need(c.offset == 1 and c.leaf_edges == "path", "offset ~= 1 or leaf_edges ~= \"path\"")
end

function M.save(model, dir)
  if type(dir) ~= "string" then error("save_pretrained: a folder expected, got " .. type(dir), 3) end
  local c = model.config
  check_saveable(c)
  folder.make(dir, "save_pretrained")
  local state, tensors = model:state_dict(), {}
  for _, rule in ipairs(rules(model)) do
    local out = { (rule.write or function(x) return x end)(state[rule.ours]) }
    for i, name in ipairs(rule.official) do tensors[name] = out[i] end
  end
  safetensors.save(dir .. "/model.safetensors", tensors, { format = "pt" })
  local config = {
    model_type = "graphmert", architectures = { "GraphMertForMaskedLM" },
    vocab_size = c.vocab, hidden_size = c.hidden, num_hidden_layers = c.layers, num_attention_heads = c.heads,
    intermediate_size = c.ffn, root_nodes = c.roots, max_nodes = model.nodes, num_relationships = c.relations,
    _exp_mask_base = c.lambda or cjson.null, dropout = c.dropout, attention_dropout = c.dropout,
    activation_dropout = c.dropout, relation_emb_dropout = c.relation_dropout, mlm_sbo = c.sbo and true or false,
    activation_fn = "gelu", pre_layernorm = false, encoder_normalize_before = false, embed_scale = cjson.null,
    span_upper_length = cjson.null, tie_word_embeddings = true, pad_token_id = (c.pad_id or 1) - 1,
  }
  local ok, err = gm.write_atomic(dir .. "/config.json", { cjson.encode(config) })
  if not ok then error("save_pretrained: " .. err, 2) end
end

return M
