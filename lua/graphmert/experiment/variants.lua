-- variants.lua — the model a config builds and its variants, and the config's settings: those the
-- process applies (memory cap, matmul precision, attention scores) and those a run records.
--   model(d, cfg) → GraphMERT     variant(cfg, overrides) → cfg with model keys replaced
--   apply_settings(cfg)           settings(cfg, extra) → JSON text
local gm = require "graphmert"

local M = {}

-- The GraphMERT a config's model table describes, sized by the prepared data's tokenizer and
-- relations.
function M.model(d, cfg)
  local model_cfg = { vocab = d.tok:size(), relations = #d.relation_names }
  for k, v in pairs(cfg.model) do model_cfg[k] = v end
  -- the official init's padding row is the tokenizer's [PAD]
  if model_cfg.init == "official" and (model_cfg.pad_id or "auto") == "auto" then model_cfg.pad_id = d.tok.pad_id end
  return gm.nn.GraphMERT(model_cfg)
end

-- A copy of cfg whose model table has `overrides` applied (an ablation or baseline variant).
function M.variant(cfg, overrides)
  local c, m = {}, {}
  for k, v in pairs(cfg) do c[k] = v end
  for k, v in pairs(cfg.model) do m[k] = v end
  for k, v in pairs(overrides or {}) do m[k] = v end
  c.model = m
  return c
end

-- The process-wide settings a config holds: the tensor memory cap, the matmul precision and
-- whether attention keeps its scores for backward.
function M.apply_settings(cfg)
  if cfg.memory_limit then gm.set_memory_limit(cfg.memory_limit) end
  gm.set_float32_matmul_precision(cfg.precision)
  gm.set_attention_keep_scores(cfg.attention_keep_scores)
end

-- What a config decides of a model's training, flat (gm.json.flat) and as one JSON text: every
-- key but those a resumed run may change (steps, how often it evaluates and checkpoints, what it
-- evaluates, memory and speed settings) and the data (compared by the folders it names); `extra`
-- adds keys.
local FREE = { steps = true, eval_every = true, checkpoint_every = true, eval_triples = true, memory_limit = true,
  attention_keep_scores = true, baseline = true, grid = true, data = true }
function M.settings(cfg, extra)
  local kept = {}
  for k, v in pairs(cfg) do if not FREE[k] then kept[k] = v end end
  local flat = require("graphmert.json").flat(kept)
  for k, v in pairs(extra or {}) do flat[k] = v end
  return require("graphmert.json").object(flat, require("graphmert.check").sorted_keys(flat))
end

return M
