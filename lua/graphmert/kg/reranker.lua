-- reranker.lua — scores that are probabilities: a logistic regression (gm.optim.logistic) over
-- each candidate's features (graphmert.kg.candidates), fit on a validation split — entities that
-- neither the model's training nor the test uses — with the seed graph saying which candidates
-- hold. Its output is the share of such triples that hold: `--min-score 0.8` keeps triples of
-- which about 80% do (on data like the validation split's).
--
-- Features (FEATURES; the model's are left out of a reranker without a model):
--   model, model_score, margin_none, margin_best, log_rank: whether the model scored the tail,
--     its mean log-probability per slot, its margin over the model's "none" and below the
--     query's best tail, and log(rank) in the model's top K (0 when not in it)
--   top_k, mention, subsumer, subsumer_tail: which source proposed it; rules: how many rules
--     did, rule_precision: the best of their scores (measured precisions)
--   tail_in_head, tail_words_in_passage, tail_in_passage, same_last_word, under_subsumer: the
--     tail's words in the head's name and in the passage (shares), its name in the passage, the
--     head's last word as its own, whether it is a lexical subsumer of the head or below one;
--     above_other, below_other: whether it is above or below another of the query's candidates
--     along the subsumption relation (0 without one); log_tail_count: log(1 + its facts of the relation in the seed graph);
--     prior: the relation prior's log-odds (clipped to ±10); seen: the head's facts were in the
--     model's training (not one of the run's held-out entities: a model recalls what it was taught,
--     and a passage's own subject is no sign of it in a corpus of plain lines)
--   relation:<name> for each relation (its own bias), and <feature>|<relation> for the features
--     whose weight depends on the relation (BY_RELATION), for each relation with at least
--     OWN_WEIGHTS candidates that hold in the fit
--
--   reranker.fit(candidates, labels, {relations, model = true|false, l2}) → a reranker
--   r:probability(c) → the candidate's probability; r:features(c) → its feature list;
--   r:triple(graph, c) → the candidate as an extracted triple, scored by its probability
--     (decoding CALIBRATED, "calibrated": gm.kg.CALIBRATED)
--   r:save(path, stamp[, extra]) / reranker.load(path, stamp) → reranker.json (atomic), and the
--     one read back (r.pipeline: the extra saved), refused when its stamp (what it was fit for:
--     the run's weights) differs
local gm = require "graphmert"
local logistic = require "graphmert.optim.logistic"
local json = require "graphmert.json"
local cjson = require "cjson"

local M = {}

M.VERSION = 1
M.CALIBRATED = "calibrated" -- a triple's decoding when its score is this probability
M.NOTHING = "reranker.fit: " -- how fit's error starts when the candidates give it nothing to learn

local MODEL_FEATURES = { "model", "model_score", "margin_none", "margin_best", "log_rank" }
local SOURCE_FEATURES = { "top_k", "mention", "subsumer", "subsumer_tail", "rules", "rule_precision", "tail_in_head",
  "tail_in_passage", "tail_words_in_passage", "same_last_word", "under_subsumer", "above_other", "below_other", "log_tail_count", "prior", "seen" }

-- the features whose weight depends on the relation (a mention is a fair part_of tail and a poor
-- is_a one; the model's score means more for is_a, which it was taught most): each also as
-- `name|relation`, its value for that relation's candidates and 0 for the others'
local BY_RELATION = { "model_score", "log_rank", "mention", "rule_precision", "seen", "tail_in_head", "under_subsumer",
  "above_other" }
for _, n in ipairs(MODEL_FEATURES) do MODEL_FEATURES[n] = true end

local Reranker = {}
Reranker.__index = Reranker

local function clip(x, m) return math.max(-m, math.min(m, x)) end

-- a relation's own weights for BY_RELATION need this many candidates that hold among those it is
-- fit on: fewer would be noise, and WordNet's 40 relations would make hundreds of columns
local OWN_WEIGHTS = 30

-- the feature names of a reranker over these relations, with or without the model's; `rich`: the
-- relations with weights of their own
local function names_for(relations, with_model, rich)
  local names = {}
  if with_model then for _, n in ipairs(MODEL_FEATURES) do names[#names + 1] = n end end
  for _, n in ipairs(SOURCE_FEATURES) do names[#names + 1] = n end
  for _, r in ipairs(relations) do names[#names + 1] = "relation:" .. r end
  for _, r in ipairs(relations) do
    for _, n in ipairs(rich[r] and BY_RELATION or {}) do
      if with_model or not MODEL_FEATURES[n] then names[#names + 1] = n .. "|" .. r end
    end
  end
  return names
end

local value
function value(c, name)
  local s = c.model_score
  if name == "model" then return s and 1 or 0
  elseif name == "model_score" then return s and clip(s, 30) or 0
  elseif name == "margin_none" then return (s and c.none) and clip(s - c.none, 30) or 0
  elseif name == "margin_best" then return (s and c.best) and clip(s - c.best, 30) or 0
  elseif name == "log_rank" then return c.rank and math.log(c.rank) or 0
  elseif name == "top_k" or name == "mention" or name == "subsumer" or name == "subsumer_tail" then
    return c.sources[name] and 1 or 0
  elseif name == "rules" then return c.rules
  elseif name == "rule_precision" then return c.rule_precision
  elseif name == "tail_in_head" then return c.tail_in_head
  elseif name == "tail_in_passage" or name == "tail_words_in_passage" or name == "same_last_word"
    or name == "under_subsumer" then return c[name]
  elseif name == "above_other" or name == "below_other" then return c[name] or 0
  elseif name == "log_tail_count" then return math.log(1 + c.tail_count)
  elseif name == "prior" then
    local p = math.max(1e-6, math.min(1 - 1e-6, c.prior))
    return math.log(p / (1 - p))
  elseif name == "seen" then return c.seen and 1 or 0
  end
  local base, of = name:match("^(.-)|(.*)$")
  if base then return of == c.relation and value(c, base) or 0 end
  local relation = name:match("^relation:(.*)$")
  return relation == c.relation and 1 or 0
end

function Reranker:features(c)
  local out = {}
  for j, name in ipairs(self.names) do out[j] = value(c, name) end
  return out
end

function Reranker:probability(c)
  return logistic.probability(self.model, { self:features(c) })[1]
end

-- the candidate as an extracted triple (kg.jsonl's fields), its score the probability, the
-- model's own kept; named as the seed graph names its entities
function Reranker:triple(graph, c)
  return { head = graph.name[c.head_id], head_id = c.head_id, relation = c.relation, tail = graph.name[c.tail_id],
    tail_id = c.tail_id, score = self:probability(c), model_score = c.model_score, tokens = c.tokens, source = c.source,
    span = c.span, decoding = M.CALIBRATED }
end

function M.fit(candidates, labels, opts)
  if #candidates == 0 then error(M.NOTHING .. "no candidates to fit on", 0) end
  local positives = 0
  for _, y in ipairs(labels) do if y then positives = positives + 1 end end
  if positives == 0 or positives == #labels then
    error(string.format(M.NOTHING .. "the %d candidates are all %s: nothing to learn from", #labels,
      positives == 0 and "wrong" or "right"), 2)
  end
  local held_by, rich = {}, {}
  for i, c in ipairs(candidates) do
    if labels[i] then held_by[c.relation] = (held_by[c.relation] or 0) + 1 end
  end
  for relation, n in pairs(held_by) do rich[relation] = n >= OWN_WEIGHTS end
  local r = setmetatable({ names = names_for(opts.relations, opts.model, rich), with_model = opts.model and true or false },
    Reranker)
  local rows = {}
  for i, c in ipairs(candidates) do rows[i] = r:features(c) end
  r.model = logistic.fit(rows, labels, { l2 = opts.l2 or 1 })
  r.examples, r.positives = #labels, positives
  return r
end

-- JSON with every number as 17 digits (cjson writes 14): weights read back bit for bit give the
-- same probabilities; object keys sorted, so the file is the same bytes for the same fit
local function encode(v)
  local kind = type(v)
  if kind == "number" then
    if math.type(v) == "integer" then return tostring(v) end
    if v ~= v or v == math.huge or v == -math.huge then error("reranker: a number that is not finite", 0) end
    return string.format("%.17g", v)
  elseif kind == "table" then
    local parts = {}
    if #v > 0 or next(v) == nil then
      for i = 1, #v do parts[i] = encode(v[i]) end
      return "[" .. table.concat(parts, ",") .. "]"
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = tostring(k) end
    table.sort(keys)
    for i, k in ipairs(keys) do parts[i] = cjson.encode(k) .. ":" .. encode(v[k]) end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  return cjson.encode(v)
end

-- extra: what else the pipeline needs to give the same candidates (the relation prior and the
-- rules as tables, the model's top K and the prior's threshold), kept as they are
function Reranker:save(path, stamp, extra)
  local t = { format = "graphmert-reranker", version = M.VERSION, stamp = stamp, features = self.names,
    with_model = self.with_model, examples = self.examples, positives = self.positives,
    model = logistic.to_table(self.model), pipeline = extra }
  local ok, err = gm.write_atomic(path, { encode(t), "\n" })
  if not ok then error(err, 0) end
end

function M.load(path, stamp)
  local ok, t = pcall(json.read, path, "reranker")
  if not ok then error(t, 0) end
  if t.format ~= "graphmert-reranker" then
    error(path .. ": not a reranker file (graphmert calibrate writes one)", 0)
  end
  if t.version ~= M.VERSION then error(string.format("%s: version %s, this graphmert reads %d", path, tostring(t.version), M.VERSION), 0) end
  if stamp and t.stamp ~= stamp then
    error(string.format("%s was fit for another run (%s), not this one (%s): run graphmert calibrate again", path,
      tostring(t.stamp), stamp), 0)
  end
  if type(t.features) ~= "table" or #t.features ~= #(type(t.model) == "table" and type(t.model.weights) == "table"
      and t.model.weights or {}) then
    error(path .. ": its features and weights do not match", 0)
  end
  local known = {}
  for _, n in ipairs(MODEL_FEATURES) do known[n] = true end
  for _, n in ipairs(SOURCE_FEATURES) do known[n] = true end
  for j, name in ipairs(t.features) do
    local base = type(name) == "string" and (name:match("^(.-)|") or name)
    if not (base and (known[base] or name:match("^relation:"))) then
      error(string.format("%s: feature %d (%s) is not one this graphmert computes", path, j, tostring(name)), 0)
    end
  end
  return setmetatable({ names = t.features, with_model = t.with_model, examples = t.examples, positives = t.positives,
    model = logistic.from_table(t.model, path), pipeline = t.pipeline }, Reranker)
end

return M
