-- preparation.lua — a dataset prepared once for training and evaluation: read and checked,
-- linked, split by entity and by fact, with its tokenizer, relation ids, layout, sequences and
-- masking options.
--   prepare(cfg, tok) → d      dataset(cfg.data) → Dataset      summary(d) → one line
--   heldout_passages(d, n)     reorder(d, seed): d with a training seed's batch order
--   validation_split(passages) → validation, test: the held-out passages halved by entity
--   heldout_halves(d) → validation, test, exclude (the held-out entities: heldout_entities(d))
local gm = require "graphmert"
local injection = require "graphmert.experiment.injection"

local M = {}

-- Stable hashes of a string into 0..999, so that a split never changes between runs. FNV-1a
-- (32-bit) spreads ids that differ in their last digits (GO:0000001, GO:0000002, ...) evenly; the
-- polynomial hash clusters them (34 ids ANAT:0001-0034 all land in 495..591) and is kept for the
-- WordNet source, whose published figures were measured with it (ds.split_hash).
local hashes = {
  fnv1a = function(key)
    local h = 2166136261
    for i = 1, #key do h = ((h ~ key:byte(i)) * 16777619) & 0xffffffff end
    return h % 1000
  end,
  polynomial = function(key)
    local h = 0
    for c in key:gmatch(".") do h = (h * 31 + c:byte()) % 1000003 end
    return h % 1000
  end,
}

-- A triple and its inverse (A hypernym B, B hyponym A) share one key, made of the two entities'
-- preferred names, so both sides of a held-out fact stay out of training, however the passages
-- name them.
local function pair_key(a, b)
  if a > b then a, b = b, a end
  return a .. "\0" .. b
end

-- A fixed permutation of the training sequences (a seeded LCG, independent of gm's generator),
-- so batches mix glossary neighbours and copies of one record.
local function shuffle(list, seed)
  local state = seed % 2147483647 + 1
  for i = #list, 2, -1 do
    state = state * 48271 % 2147483647
    local j = state % i + 1
    list[i], list[j] = list[j], list[i]
  end
end

-- A dataset from a config's `data` table (experiment/config.lua): gm.data.wordnet's source or
-- the files of gm.data.dataset.
function M.dataset(data_cfg)
  if data_cfg.source == "wordnet" then
    local opts = {}
    for k, v in pairs(data_cfg) do if k ~= "source" then opts[k] = v end end
    return gm.data.wordnet.dataset(opts)
  end
  return gm.data.dataset.load(data_cfg)
end

-- Passages as training records {id, text, entity, head, triples = {head, relation, tail (names),
-- head_id, tail_id, pair}, about (the entity the corpus says the passage is about, or nil)}. A record's triples are the passage's own (a JSONL corpus's
-- per-passage triples, WordNet's pointers), else those of the entity it is about, else those of
-- every entity linked in it. Its entity (what the split holds out) is the one it is about, else
-- its first triple's head, else its first linked mention's. A triple's head is written as the
-- passage writes it: the entity's preferred name when the text has it, else its first mention
-- (an alias), so that it is found in the text.
-- (names: entity id → its normalised names, the preferred one first)
local function records_of(ds, graph, names)
  local by_head, entities = ds:triples_by_head(), ds.entities
  local records, mentions, with_head = {}, 0, 0
  for _, p in ipairs(ds.passages) do
    local linked, words = graph.linker:mentions(p.text)
    mentions = mentions + #linked
    if #linked > 0 then with_head = with_head + 1 end
    local text, first_mention = " " .. table.concat(words, " ") .. " ", {}
    for _, m in ipairs(linked) do
      for _, id in ipairs(graph:candidates(m.phrase)) do first_mention[id] = first_mention[id] or m.phrase end
    end
    local function head_of(id)
      local name = entities[id].name
      if text:find(" " .. names[id][1] .. " ", 1, true) then return name end
      return first_mention[id] or name
    end
    local triples, entity = {}, p.entity
    local function add(t)
      local tail = entities[t.tail].name
      triples[#triples + 1] = { head = head_of(t.head), relation = t.relation, tail = tail, head_id = t.head,
        tail_id = t.tail, pair = pair_key(entities[t.head].name, tail) }
    end
    if p.triples then
      for _, t in ipairs(p.triples) do add(t) end
      entity = entity or (p.triples[1] and p.triples[1].head)
    elseif entity then
      for _, t in ipairs(by_head[entity] or {}) do add(t) end
    else
      local seen = {}
      for _, m in ipairs(linked) do
        local id = graph:candidates(m.phrase)[1]
        entity = entity or id
        if not seen[id] then
          seen[id] = true
          for _, t in ipairs(by_head[id] or {}) do add(t) end
        end
      end
    end
    records[#records + 1] = { id = p.id, text = p.text, entity = entity, head = entity and head_of(entity),
      triples = triples, about = p.entity }
  end
  return records, { mentions = mentions, with_head = with_head, passages = #ds.passages }
end

-- The split: `heldout` of the entities (by a hash of their id: the records about them, and
-- every triple they take part in) and `heldout_triples` of the remaining facts (by unordered
-- head/tail pair) never reach training. Held-out facts are evaluated on their seen text
-- (d.heldout_facts), held-out entities on unseen text (d.heldout).
local function split(records, ds, cfg)
  local d = { train = {}, heldout = {}, heldout_facts = {} }
  local bucket = hashes[ds.split_hash or "fnv1a"]
  local held = {}
  for _, id in ipairs(ds.entity_order) do
    if bucket(id) < cfg.heldout * 1000 then held[id] = true end
  end
  local fact_share = (cfg.heldout_triples or 0) * 1000
  for _, r in ipairs(records) do
    if held[r.entity or false] then
      -- its gold: the facts of held-out entities (a passage that links several entities also
      -- carries facts trained elsewhere)
      local gold = {}
      for _, t in ipairs(r.triples) do
        if held[t.head_id] or held[t.tail_id] then gold[#gold + 1] = t end
      end
      r.triples = gold
      d.heldout[#d.heldout + 1] = r
    else
      local kept, facts = {}, {}
      for _, t in ipairs(r.triples) do
        if bucket(t.pair) < fact_share then facts[#facts + 1] = t
        elseif not held[t.tail_id] and not held[t.head_id] then kept[#kept + 1] = t end
      end
      d.train[#d.train + 1] = { id = r.id, text = r.text, triples = kept, entity = r.entity, head = r.head, about = r.about }
      if #facts > 0 then
        d.heldout_facts[#d.heldout_facts + 1] = { id = r.id, text = r.text, triples = facts, entity = r.entity, head = r.head }
      end
    end
  end
  d.heldout_entities = 0
  for _ in pairs(held) do d.heldout_entities = d.heldout_entities + 1 end
  return d
end

-- cfg: a checked config (data, heldout, heldout_triples, vocab_size or bert_vocab, copies,
-- packing, leaf_rate, masking_spans, model.roots/leaves); tok: an existing tokenizer or nil.
-- d.graph is the seed graph's index (gm.data.seed_graph) that extraction and evaluation ask, d.dataset
-- the Dataset itself (a training run saves its seed graph from it).
function M.prepare(cfg, tok)
  local data = gm.data
  local ds = M.dataset(cfg.data)
  local graph = data.seed_graph.new(ds)
  local names = {} -- entity id → its names, normalised (the phrases the linker finds)
  for _, id in ipairs(ds.entity_order) do
    local e = ds.entities[id]
    local list = { data.linker.normalize(e.name) }
    for _, a in ipairs(e.aliases) do list[#list + 1] = data.linker.normalize(a) end
    names[id] = list
  end
  local records, linked = records_of(ds, graph, names)
  local d = split(records, ds, cfg)
  d.dataset, d.dataset_name, d.linked, d.graph, d.names = ds, ds.name, linked, graph, names
  if not tok and cfg.bert_vocab then
    tok = data.tokenizer.from_vocab(cfg.bert_vocab)
  elseif not tok then
    local texts = {}
    for _, r in ipairs(d.train) do texts[#texts + 1] = r.text end
    tok = data.tokenizer.train(texts, { vocab_size = cfg.vocab_size })
  end
  d.tok = tok
  d.relation_names = ds.relation_names
  d.relations = {}
  for id, n in ipairs(d.relation_names) do d.relations[n] = id end
  d.layout = gm.layout { roots = cfg.model.roots, leaves = cfg.model.leaves }
  if cfg.mentions or (cfg.absent or 0) > 0 then
    injection.plan(d.train, graph, d.names, d.relation_names, cfg)
  end
  d.train_seqs, d.report = data.corpus.build(d.train, tok,
    { layout = d.layout, relations = d.relations, copies = cfg.copies, packing = cfg.packing })
  shuffle(d.train_seqs, cfg.seed)
  d.eval_seqs = data.corpus.build(d.heldout, tok, { layout = d.layout, relations = d.relations, packing = cfg.packing })
  d.mask_opts = { vocab = tok:size(), mask_id = tok.mask_id, layout = d.layout,
    -- the official collator labels none of the five special tokens (collating_graphmert.py:478)
    special = { [tok.pad_id] = true, [tok.unk_id] = true, [tok.cls_id] = true, [tok.sep_id] = true, [tok.mask_id] = true },
    leaf_rate = cfg.leaf_rate, spans = cfg.masking_spans, sbo = cfg.model.sbo, max_span = cfg.max_span or nil,
    tail_end = cfg.tail_end, end_id = tok.pad_id,
    word_start = function(id) return tok:word_start(id) end }
  return d
end

-- what a user can do about tails that do not fit: they are neither taught nor extracted
local function long_tails(d)
  local n = d.report.skipped["tail longer than the leaf slots"]
  if not n then return "" end
  local lengths = {} -- every training triple's tail, tokenised: what a larger model.leaves would hold
  for _, r in ipairs(d.train) do
    for _, t in ipairs(r.triples) do lengths[#lengths + 1] = #d.tok:encode(t.tail) end
  end
  local covering = require("graphmert.eval.stats").covering
  return string.format("\nnote: %d tails to inject (a fact once per passage and copy) have more tokens than the %d leaf " ..
    "slots (model.leaves), the first %s: the model is not taught them and constrained decoding cannot give them; " ..
    "model.leaves = %d holds 98%% of the training triples' tails, %d all of them", n, d.layout.leaves,
    d.report.examples["tail longer than the leaf slots"], covering(lengths, 0.98), covering(lengths, 1))
end

function M.summary(d)
  local facts = 0
  for _, r in ipairs(d.heldout_facts) do facts = facts + #r.triples end
  local l = d.linked
  local skipped = {}
  for reason, n in pairs(d.report.skipped) do skipped[#skipped + 1] = string.format("%d %s", n, reason) end
  table.sort(skipped)
  return string.format("%s; linked %.1f mentions a passage, %.1f%% of passages with a head; %d entities held out " ..
    "(%d passages), %d held-out facts (counted once per passage they are in); %d training sequences, %d held out; %d triples injected%s; %d records truncated " ..
    "(%d tokens cut); vocabulary %d",
    d.dataset:summary(), l.mentions / math.max(l.passages, 1), 100 * l.with_head / math.max(l.passages, 1), d.heldout_entities,
    #d.heldout, facts, #d.train_seqs, #d.eval_seqs, d.report.injected or 0,
    #skipped > 0 and " (not injected: " .. table.concat(skipped, ", ") .. ")" or "", d.report.truncated_records,
    d.report.truncated_tokens, d.tok:size()) .. long_tails(d)
end

-- The first n held-out entities' passages as extraction passages {id, text, gold = their
-- triples, entity = the entity the corpus says it is about (or nil), subject = the record's
-- entity}: text the model never saw in training, scored against the entities' own facts.
function M.heldout_passages(d, n)
  local passages = {}
  for i = 1, math.min(n, #d.heldout) do
    local r = d.heldout[i]
    passages[i] = { id = i, text = r.text, gold = r.triples, entity = r.about, subject = r.entity }
  end
  return passages
end

-- The held-out passages in two halves by their entity (a stable hash: an entity's passages stay
-- together, and the halves never change between runs): validation, on which a reranker is fit,
-- and test, on which every system is measured.
function M.validation_split(passages)
  local validation, test = {}, {}
  for _, p in ipairs(passages) do
    -- (the hash's lower half, not its parity: FNV-1a's lowest bit is the parity of the key's bytes)
    local into = hashes.fnv1a("validation\0" .. tostring(p.subject or p.text)) < 500 and validation or test
    into[#into + 1] = p
  end
  return validation, test
end

-- The held-out entities (id → true): those of the held-out passages, of which nothing fit for
-- extraction (the relation prior, tail counts, the rules' precision) may know.
function M.heldout_entities(d)
  local exclude = {}
  for _, r in ipairs(d.heldout) do if r.entity then exclude[r.entity] = true end end
  return exclude
end

-- The held-out passages' two halves (validation_split) and the held-out entities.
function M.heldout_halves(d)
  local validation, test = M.validation_split(M.heldout_passages(d, #d.heldout))
  return validation, test, M.heldout_entities(d)
end

-- d for a training seed: the same split, sequences and masking options, the training batches in
-- that seed's order (a permutation of d's own order, so it does not depend on earlier calls).
function M.reorder(d, seed)
  local out = setmetatable({}, { __index = d })
  out.train_seqs = table.move(d.train_seqs, 1, #d.train_seqs, 1, {})
  shuffle(out.train_seqs, seed)
  return out
end

return M
