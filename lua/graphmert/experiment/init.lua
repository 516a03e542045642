-- graphmert.experiment — the pieces experiments share: a dataset prepared once (read and
-- checked, linked, split by entity and by fact, tokenizer, relation ids, layout, sequences,
-- masking options), a model from a config, the trainer (experiment/trainer.lua), the config
-- schema (experiment/config.lua), the scripts' argument parser (experiment/args.lua) and the
-- evaluation tables.
local gm = require "graphmert"
local trainer = require "graphmert.experiment.trainer"
local injection = require "graphmert.experiment.injection"

local M = {
  config = require "graphmert.experiment.config",
  args = require "graphmert.experiment.args",
  commands = require "graphmert.experiment.commands",
  progress = require "graphmert.experiment.progress",
  trainer = trainer.trainer,
  masked_accuracy = trainer.masked_accuracy,
}

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

-- The Dataset a command's options name: --data DIR (a dataset folder) or --config FILE (its data).
function M.named_dataset(args)
  return M.dataset(args.data and { dir = args.data } or M.config.load(args.config).data)
end

-- Passages as training records {id, text, entity, head, triples = {head, relation, tail (names),
-- head_id, tail_id, pair}}. A record's triples are the passage's own (a JSONL corpus's
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
      triples = triples }
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
      d.train[#d.train + 1] = { id = r.id, text = r.text, triples = kept, entity = r.entity, head = r.head }
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
  return string.format("\nnote: %d tails to inject (a fact once per passage and copy) have more tokens than the %d leaf " ..
    "slots (model.leaves), the first %s: the model is " ..
    "not taught them and constrained decoding cannot give them; a larger model.leaves fits them", n, d.layout.leaves,
    d.report.examples["tail longer than the leaf slots"])
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
-- triples}: text the model never saw in training, scored against the entities' own facts.
function M.heldout_passages(d, n)
  local passages = {}
  for i = 1, math.min(n, #d.heldout) do
    passages[i] = { id = i, text = d.heldout[i].text, gold = d.heldout[i].triples }
  end
  return passages
end

-- d for a training seed: the same split, sequences and masking options, the training batches in
-- that seed's order (a permutation of d's own order, so it does not depend on earlier calls).
function M.reorder(d, seed)
  local out = setmetatable({}, { __index = d })
  out.train_seqs = table.move(d.train_seqs, 1, #d.train_seqs, 1, {})
  shuffle(out.train_seqs, seed)
  return out
end

-- Runs gnuplot on `commands` (a list of lines) with `terminal` ("png size 900,600") and writes
-- the picture to `path`; true when it did, false when gnuplot is missing or failed (the caller
-- says there is no picture). gnuplot writes to a temporary file: a path is never put in its
-- script, where a quote or a line break in it would be gnuplot's to run.
function M.plot(path, terminal, commands)
  local gm = require "graphmert"
  local made, tmp = pcall(os.tmpname)
  if not made then return false end
  local script = { "set terminal " .. terminal, string.format("set output '%s'", tmp), table.unpack(commands) }
  local gp = io.popen("gnuplot 2>&1", "w")
  local ok = gp ~= nil and gp:write(table.concat(script, "\n"), "\n") ~= nil and gp:close() == true
  local f = ok and io.open(tmp, "rb")
  local picture = f and f:read("a")
  if f then f:close() end
  os.remove(tmp)
  return type(picture) == "string" and #picture > 0 and gm.write_atomic(path, { picture }) == true
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

-- A training output folder: run.json (what a later tool needs to rebuild the run's model and
-- read its outputs: the config file, the model's options, the relation names in id order, the
-- config's `data` with absolute paths — a record, never followed by the tools below — and the
-- config's settings, which --resume compares),
-- tokenizer.txt, checkpoint.safetensors and seed_graph/ (the dataset's seed graph and its index,
-- Dataset:save_seed_graph). A folder may come from elsewhere, so the tools read only its own
-- regular files (graphmert.folder) and check what it declares before allocating for it.
function M.write_run(dir, run)
  local ok, err = gm.write_atomic(dir .. "/run.json", { require("cjson").encode(run) })
  if not ok then error("write_run: " .. err, 2) end
end

local HINT = " (experiments/train.lua writes it into its output folder)"

function M.read_run(dir)
  local info = gm.stat(dir)
  if not info then error(dir .. ": no such folder (a training run's folder: graphmert train --out writes one)", 0) end
  if info.type ~= "directory" then
    error(dir .. " is a " .. info.type .. ", not a training run's folder (the folder holding run.json, tokenizer.txt "
      .. "and checkpoint.safetensors)", 0)
  end
  if not gm.stat(dir .. "/run.json") then
    error(dir .. " is not a training run's folder: it has no run.json (graphmert train --out writes one)", 0)
  end
  local found, path = pcall(gm.folder.need, dir, "run.json", "read_run")
  if not found then error(path .. HINT, 0) end
  local ok, run = pcall(require("graphmert.json").read, path, "read_run")
  if not ok then error(run .. HINT, 0) end
  if type(run.model) ~= "table" or type(run.relations) ~= "table" then
    error(path .. " is not a run description (model and relations expected)", 0)
  end
  for i, name in ipairs(run.relations) do
    if type(name) ~= "string" then error(string.format("%s: relation %d is not a name", path, i), 0) end
  end
  -- a run written before datasets: its seed graph was WordNet's
  if run.data == nil and type(run.wordnet) == "table" then
    run.data = { source = "wordnet" }
    for k, v in pairs(run.wordnet) do run.data[k] = v end
  end
  if type(run.data) ~= "table" then error(path .. " names no dataset (data expected)", 0) end
  return run
end

-- A config's or run's data as the user reads it: its JSON, slashes unescaped.
function M.data_string(data) return (require("cjson").encode(data):gsub("\\/", "/")) end

-- The data keys that name files or folders: compared by what they name, not as typed.
local DATA_PATHS = { dir = true, corpus = true, triples = true, entities = true, relations = true }

-- Whether a config's data and a run's name the same dataset: equal values, tables by their
-- contents, paths by the file or folder they name (a trailing "/", "./" or a link is the same).
function M.same_data(a, b, key)
  if DATA_PATHS[key] then return M.args.place(a) == M.args.place(b) end
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  for k, v in pairs(a) do if not M.same_data(v, b[k], k) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

-- The run's model with its trained weights (eval mode). run.json's model options are checked by
-- GraphMERT and must not declare more than checkpoint.safetensors holds (4 bytes a parameter)
-- before the model is built.
function M.load_model(dir, run)
  run = run or M.read_run(dir)
  local path, bytes = gm.folder.need(dir, "checkpoint.safetensors", "load_model")
  gm.nn.GraphMERT.check_declared(run.model, bytes, 4, dir .. "/run.json", path) -- float32 weights
  local ok, model = pcall(gm.nn.GraphMERT, run.model)
  if not ok then error(string.format("%s/run.json: %s", dir, tostring(model):gsub("^[^:]*:%d+: ", "")), 0) end
  gm.checkpoint.load(path, { model = model })
  return model:eval()
end

-- The run's tokenizer, which must be the model's (as many pieces as its vocabulary).
function M.load_tokenizer(dir, run)
  run = run or M.read_run(dir)
  local tok = gm.data.tokenizer.load(gm.folder.need(dir, "tokenizer.txt", "load_tokenizer"))
  if tok:size() ~= math.tointeger(run.model.vocab) then
    error(string.format("the tokenizer in %s has %d pieces, the model %s: they are not from one run", dir, tok:size(),
      tostring(math.tointeger(run.model.vocab) or run.model.vocab)), 0)
  end
  return tok
end

-- The run's seed graph from its own seed_graph/ folder (a Dataset without passages).
function M.run_seed_graph(dir)
  if not gm.stat(dir .. "/seed_graph") then
    error(dir .. " has no seed_graph/ (train.lua writes it); name the run's dataset with --data DIR or --config FILE", 0)
  end
  return gm.data.dataset.load_seed_graph(dir .. "/seed_graph")
end

-- Writes a run's seed graph index (rank 0), which a run trained before it (or before the index
-- held what is asked now) lacks, so that the next start reads it. Only inside the run folder: a
-- seed_graph/ that links elsewhere (a shared copy) is not written, nor a folder that takes no
-- file. stderr says which, with `what` was built.
local function store_index(dir, graph, known, what)
  if not gm.distributed.is_main() then return end
  local path = dir .. "/seed_graph/index.bin"
  local root, folder = gm.realpath(dir), gm.realpath(dir .. "/seed_graph")
  local ok, err = root and folder and folder:sub(1, #root + 1) == root .. "/", "seed_graph/ links outside the run folder"
  if ok then ok, err = pcall(graph.save, graph, path, known) end
  io.stderr:write(ok and string.format("%s: %s built once and stored in %s\n", dir, what, path)
    or string.format("%s: %s built (at each start: %s could not be written: %s)\n", dir, what, path,
      tostring(err):gsub("^seed_graph:save: ", "")))
end

-- The run's seed graph index (gm.data.seed_graph): seed_graph/index.bin, which train.lua writes
-- with the JSONL, loads in a fraction of a second; for a run without one (trained before it), or
-- with one of an earlier version (whose phrases were folded otherwise), the index is built from
-- its seed_graph/ JSONL (seconds), and with `store` (extraction) stored.
function M.run_graph(dir, store)
  local path = gm.folder.member(dir, "seed_graph/index.bin", "run_graph")
  local why = dir .. "/seed_graph has no index.bin"
  if path then
    local graph = gm.data.seed_graph.load(path)
    if graph.version == gm.data.seed_graph.VERSION then return graph end
    why = string.format("%s is of version %s, this graphmert's is %s", path, graph.version, gm.data.seed_graph.VERSION)
  end
  local graph = gm.data.seed_graph.new(M.run_seed_graph(dir))
  if store then store_index(dir, graph, nil, "the seed graph's index was")
  elseif gm.distributed.is_main() then io.stderr:write(why .. ": the seed graph's index was built\n") end
  return graph
end

-- Constrained decoding's known tails for a run's own seed graph (M.run_graph): read from its
-- index, which train.lua writes with them; for a run whose index lacks them they are built
-- (seconds: every name is tokenized) and stored in it.
function M.run_known_tails(dir, graph, tok, relations, leaves)
  local tails, how = graph:known_tails(tok, relations, leaves)
  if how == "built" then
    store_index(dir, graph, { tok = tok, leaves = leaves }, "constrained decoding's known tails were")
  end
  return tails
end

function M.model(d, cfg)
  local model_cfg = { vocab = d.tok:size(), relations = #d.relation_names }
  for k, v in pairs(cfg.model) do model_cfg[k] = v end
  -- the official init's padding row is the tokenizer's [PAD]
  if model_cfg.init == "official" and (model_cfg.pad_id or "auto") == "auto" then model_cfg.pad_id = d.tok.pad_id end
  return gm.nn.GraphMERT(model_cfg)
end

-- The known tails (constrained decoding's lists: relation id → a gm.data.tail_list of the names
-- of the types it reaches), built once per data: train.lua builds them to store them in the run's
-- index, and the graph keeps them (as tensors) for the evaluations.
function M.known_tails(d)
  d.known_tails = d.known_tails or d.graph:known_tails(d.tok, d.relations, d.layout.leaves)
  return d.known_tails
end

local function tail_opts(d, cfg)
  M.known_tails(d)
  return { layout = d.layout, relations = d.relations, max_triples = cfg.eval_triples, tails = d.known_tails,
    tail_end = cfg.tail_end }
end

-- Tail prediction for the model on held-out facts (seen text) and held-out entities (unseen text).
function M.tail_metrics(d, cfg, model)
  local o = tail_opts(d, cfg)
  return { facts = gm.eval.tail_prediction(model, d.tok, d.heldout_facts, o),
           entities = gm.eval.tail_prediction(model, d.tok, d.heldout, o) }
end

-- The same for the most-frequent-tail-per-relation baseline.
function M.baseline_metrics(d, cfg)
  local o = tail_opts(d, cfg)
  return { facts = gm.eval.most_frequent_tail(d.train, d.heldout_facts, d.tok, o),
           entities = gm.eval.most_frequent_tail(d.train, d.heldout, d.tok, o) }
end

local function rule(widths)
  local parts = {}
  for i, w in ipairs(widths) do parts[i] = string.rep("-", w + 2) end
  return "|" .. table.concat(parts, "|") .. "|"
end

-- The evaluation table: one row per {name, acc (masked-token accuracy or nil), tails (from
-- tail_metrics)}, tail prediction on held-out facts and on held-out entities side by side: the
-- whole tail decoded without its length and ranked among the known tails (hits@1, hits@10,
-- MRR@10), then the first-token hits@1 with the length given (the earlier protocol).
function M.table(rows)
  local lines = {
    "| model                    | MLM acc | facts: tail@1 | tail@10 | MRR@10 | first@1 | entities: tail@1 | tail@10 | MRR@10 | first@1 |",
    rule { 24, 7, 13, 7, 6, 7, 16, 7, 6, 7 } }
  -- a figure over no cases is "-", not 0.000
  local function cells(m)
    local v = { m.tail.hits1, m.tail.hits10, m.tail.mrr, m.hits1 }
    for i = 1, 4 do v[i] = m.n > 0 and string.format("%.3f", v[i]) or "-" end
    return v
  end
  for _, r in ipairs(rows) do
    local f, s = cells(r.tails.facts), cells(r.tails.entities)
    lines[#lines + 1] = string.format("| %-24s | %7s | %13s | %7s | %6s | %7s | %16s | %7s | %6s | %7s |",
      r.name, r.acc and string.format("%.3f", r.acc) or "-", f[1], f[2], f[3], f[4], s[1], s[2], s[3], s[4])
  end
  local f, s = rows[1].tails.facts, rows[1].tails.entities
  lines[#lines + 1] = string.format("(tail prediction on %d held-out facts on seen text and %d triples of held-out entities " ..
    "on unseen text: those whose head is in the text and whose tail fits the leaves, at most eval_triples; " ..
    "tail@k: the whole tail among the decoder's top k of the known tails, its length not given; first@1: the " ..
    "first token's hits@1 with the length given; -: nothing to score)", f.n, s.n)
  return table.concat(lines, "\n")
end

return M
