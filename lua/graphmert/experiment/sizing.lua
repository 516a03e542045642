-- sizing.lua — a training config sized from a dataset, each value with the reason it was chosen:
-- what `graphmert init --data DIR` writes and `graphmert train --data DIR` (no --config) trains.
-- A copied config sized for another dataset leaves names untaught (leaf slots too few for its
-- tails, a vocabulary that spells them in letters) and its step count says nothing of this CPU;
-- here each size is read off the data, and the steps off a few steps timed on this machine.
--   sizing.size(dir, {minutes = 10, all_data, say = function(line)}) → cfg, reasons (key → why)
--   sizing.text(cfg, reasons, header) → the config as an editable Lua file, reasons as comments
--   sizing.summary(cfg, reasons) → the lines a command prints
--   sizing.write(script, dir, path, {minutes, all_data, steps}) → sizes, prints and writes the
--     config `path` (its data.dir relative to the file's folder), then returns path
--   sizing.run_config(script, opts) → OUT/config.lua for `train --data DIR`: written, or read
--     again with --resume
-- The choices (each printed with its figures):
--   vocab_size   the smallest of a ladder of sizes at which 90% of the words of the triples'
--                tails are whole pieces (a tail spelled in letters is long and hard to learn)
--   model.leaves the fewest leaf slots that hold 95% of the triples' tails, tokenised
--   model.roots  the passages' 95th-percentile length in pieces, plus [CLS] and [SEP]
--   model width  by the training tokens: a wider model memorises a small corpus
--   steps        40 passes over the training sequences, or what the time budget allows at the
--                speed of steps timed here, whichever is fewer
--   heldout      enough held-out entities and facts for the verdict after training
--   absent, mentions, tail_end on: the model learns to say a relation does not hold, and is
--                taught tails where extraction asks (docs/training.md)
local gm = require "graphmert"
local config = require "graphmert.experiment.config"
local preparation = require "graphmert.experiment.preparation"
local trainer = require "graphmert.experiment.trainer"
local variants = require "graphmert.experiment.variants"
local machine = require "graphmert.machine"

local M = {}

M.DEFAULT_MINUTES = 10
local VOCAB_LADDER = { 500, 1000, 2000, 4000, 8000, 12000, 16000, 24000, 32000 }
local WHOLE_WORDS = 0.9 -- share of tail words a vocabulary must keep whole
local TAILS_HELD = 0.98 -- share of tails the leaf slots must hold
local MIN_LEAVES, MAX_LEAVES = 3, 12
local MIN_ROOTS, MAX_ROOTS = 16, 128
local UNSEEN_MARGIN = 0.15 -- text a tokenizer did not learn from takes more pieces
local PASSES = 40
local MIN_STEPS = 200
local BUDGET_USED = 0.85 -- of the time budget, for training steps: evaluations and checkpoints take the rest

local covering = require("graphmert.eval.stats").covering

local function grouped(n) -- 12345 → "12,345"
  local s = tostring(math.floor(n))
  repeat local k; s, k = s:gsub("^(%d+)(%d%d%d)", "%1,%2") until k == 0
  return s
end

local function round_to(x, step) return math.max(step, math.floor(x / step + 0.5) * step) end

-- the share of the tails' words (a tail once per triple) that tok keeps whole
local function whole_share(tok, tail_words)
  local whole = 0
  for _, w in ipairs(tail_words) do if #tok:encode_word(w) == 1 then whole = whole + 1 end end
  return whole / math.max(#tail_words, 1)
end

local function vocabulary(texts, tails, reasons)
  local tokenizer = gm.data.tokenizer
  local words = {}
  for _, name in ipairs(tails) do
    for _, w in ipairs(tokenizer.pretokenize(name)) do words[#words + 1] = w end
  end
  local full = tokenizer.train(texts, { vocab_size = VOCAB_LADDER[#VOCAB_LADDER] })
  local chosen, share, before, smaller
  for _, size in ipairs(VOCAB_LADDER) do
    local tok = full:first(size)
    smaller, before = chosen, share
    chosen, share = size, whole_share(tok, words)
    if share >= WHOLE_WORDS or tok:size() >= full:size() then break end
  end
  if full:size() < chosen then chosen = round_to(full:size(), 100) end
  reasons.vocab_size = string.format("%.0f%% of the %s words of the triples' tails are whole pieces%s", 100 * share,
    grouped(#words), before and string.format(" (%.0f%% with %s)", 100 * before, grouped(smaller)) or
      (full:size() <= chosen and " (every piece the corpus has)" or ""))
  return chosen, full:first(chosen)
end

local function leaves_for(tok, tails, reasons)
  local lengths, longest, longest_name = {}, 0, nil
  for i, name in ipairs(tails) do
    lengths[i] = #tok:encode(name)
    if lengths[i] > longest then longest, longest_name = lengths[i], name end
  end
  local leaves = math.min(MAX_LEAVES, math.max(MIN_LEAVES, covering(lengths, TAILS_HELD)))
  local held = 0
  for _, n in ipairs(lengths) do if n <= leaves then held = held + 1 end end
  reasons.leaves = string.format("%s of the %s triples' tails fit (%.0f%%); the longest, %q, has %d pieces", grouped(held),
    grouped(#lengths), 100 * held / #lengths, longest_name, longest)
  return leaves
end

local function roots_for(tok, texts, reasons)
  local lengths = {}
  for i, text in ipairs(texts) do lengths[i] = #tok:encode(text) end
  local p95 = covering(lengths, 0.95)
  local wanted = math.ceil(p95 * (1 + UNSEEN_MARGIN)) + 2
  local roots = math.min(MAX_ROOTS, math.max(MIN_ROOTS, 8 * math.ceil(wanted / 8)))
  reasons.roots = string.format("95%% of the passages have at most %d pieces (the longest %d); + %.0f%% for text the " ..
    "tokenizer never saw (held-out and new passages spell more pieces), + [CLS] and [SEP], to a multiple of 8%s", p95,
    covering(lengths, 1), 100 * UNSEEN_MARGIN, wanted > MAX_ROOTS and "; longer passages are cut" or "")
  return roots, lengths
end

-- width by the training tokens: a small corpus is memorised by a wide model
local WIDTHS = {
  { below = 50000, hidden = 64, heads = 2, lr = 3e-3 },
  { below = 500000, hidden = 128, heads = 4, lr = 2e-3 },
  { below = math.huge, hidden = 192, heads = 4, lr = 1.5e-3 },
}

local function width_for(tokens, reasons)
  for _, w in ipairs(WIDTHS) do
    if tokens < w.below then
      reasons.hidden = string.format("%s tokens of text%s", grouped(tokens), w.below < math.huge and
        string.format(" (under %s: a wider model memorises a corpus this small)", grouped(w.below)) or "")
      return w
    end
  end
end

local function heldout_for(entities, reasons, all_data)
  if all_data then
    reasons.heldout = "--all-data: every entity and fact trained on, none held out (nothing to measure the model on, " ..
      "or to calibrate it with)"
    reasons.heldout_triples = "--all-data"
    return 0, 0
  end
  local facts = entities < 500 and 0.1 or 0.05
  reasons.heldout_triples = string.format("%g of the other facts kept out too, and asked on the passages training read",
    facts)
  return entities < 500 and 0.1 or entities < 10000 and 0.05 or 0.02, facts
end

-- the held-out entities by name (the first few), once the split is known
local function heldout_reason(d, entities)
  local names, seen = {}, {}
  for _, r in ipairs(d.heldout) do
    local id = r.entity
    if id and not seen[id] then
      seen[id] = true
      names[#names + 1] = d.dataset.entities[id] and d.dataset.entities[id].name or id
    end
  end
  local shown = table.concat(names, ", ", 1, math.min(#names, 6)) .. (#names > 6 and ", ..." or "")
  return string.format("%d of the %s entities (%s) kept out of training with their passages and facts: the verdict is " ..
    "measured on them, and this model never learns their facts (--all-data trains the model to extract with on everything)",
    d.heldout_entities, grouped(entities), shown)
end

-- seconds per training step of cfg's model on the prepared data, timed here (after one step
-- that warms the caches and the allocator up)
local function seconds_per_step(d, cfg)
  local c = variants.variant(cfg, {})
  c.steps = 1000 -- the schedule's length; only its first steps run
  local model = variants.model(d, c)
  local opt = gm.optim.adamw(model:named_parameters(), { lr = c.lr })
  local step = trainer.trainer(d, c, model, opt, { alone = true })
  step(1)
  local start, n = gm.clock(), 0
  repeat
    n = n + 1
    step(n + 1)
  until n >= 20 or (n >= 3 and gm.clock() - start > 2)
  return (gm.clock() - start) / n
end

function M.size(dir, opts)
  opts = opts or {}
  local minutes = opts.minutes or M.DEFAULT_MINUTES
  local say = opts.say or function() end
  local reasons = {}
  local ds = preparation.dataset { dir = dir }
  local texts, tails = {}, {}
  for _, p in ipairs(ds.passages) do texts[#texts + 1] = p.text end
  for _, t in ipairs(ds.triples) do tails[#tails + 1] = ds.entities[t.tail].name end
  say(string.format("sizing a model for %s: %s passages, %s entities, %s triples", dir, grouped(#texts),
    grouped(#ds.entity_order), grouped(#tails)))
  local vocab_size, tok = vocabulary(texts, tails, reasons)
  local leaves = leaves_for(tok, tails, reasons)
  local roots, lengths = roots_for(tok, texts, reasons)
  local tokens = 0
  for _, n in ipairs(lengths) do tokens = tokens + n end
  local width = width_for(tokens, reasons)
  local heldout, heldout_triples = heldout_for(#ds.entity_order, reasons, opts.all_data)
  local cfg = {
    seed = 1, data = { dir = dir }, heldout = heldout, heldout_triples = heldout_triples, copies = 4,
    vocab_size = vocab_size, leaf_rate = 0.5, tail_end = true, mentions = true, absent = 0.5,
    model = { roots = roots, leaves = leaves, hidden = width.hidden, layers = 2, heads = width.heads, ffn = 4 * width.hidden,
      lambda = require("graphmert.check").DEFAULT_LAMBDA, positions = true, head = "single", sbo = false, graph_token = false },
    steps = 1, batch = 8, lr = width.lr, min_lr = 1e-5, warmup = 0, eval_every = 1, checkpoint_every = 1,
    eval_triples = 500, baseline = false,
  }
  reasons.absent = "half the injected roots get a relation their entity lacks, with an empty tail: the model " ..
    "learns to say a relation does not hold (without it every head gets a tail for every relation)"
  reasons.mentions = "tails taught at every linked mention, not only at a passage's own entity: where extraction asks"
  reasons.baseline = "no second model without decay and H-GAT (it doubles the time; true compares them)"
  local checked = config.check(cfg, "sizing") -- with every default, as training reads it
  local d = preparation.prepare(checked)
  if heldout > 0 then reasons.heldout = heldout_reason(d, #ds.entity_order) end
  local per_pass = math.ceil(#d.train_seqs / cfg.batch)
  local seconds = seconds_per_step(d, checked)
  local by_data = math.max(MIN_STEPS, PASSES * per_pass)
  local by_time = math.floor(minutes * 60 * BUDGET_USED / seconds)
  local steps = round_to(math.min(by_data, by_time), 10)
  local cpu = string.format("%.3f s a step timed on this CPU (%s, %d threads)", seconds, machine.cpu_name(),
    gm.get_num_threads())
  if by_data <= by_time then
    reasons.steps = string.format("%d passes over the %s training sequences (%d batches of %d)%s; %s", steps // per_pass,
      grouped(#d.train_seqs), per_pass, cfg.batch, by_data == MIN_STEPS and ", at least " .. MIN_STEPS or "", cpu)
  else
    reasons.steps = string.format("what %g minutes allow at %s; %d passes over the data would take %.0f minutes " ..
      "(--minutes)", minutes, cpu, PASSES, by_data * seconds / 60 / BUDGET_USED)
  end
  cfg.steps = steps
  cfg.warmup = math.max(10, round_to(steps * 0.05, 10))
  cfg.eval_every = math.max(10, round_to(steps / 4, 10))
  cfg.checkpoint_every = cfg.eval_every
  local minutes_used = steps * seconds / 60
  reasons.minutes = minutes_used < 1 and "under a minute of training" or
    string.format("about %.0f minutes of training", minutes_used)
  return cfg, reasons
end

-- the config's keys in the order the file lists them, and the reason a key's line carries
local ORDER = { "seed", "data", "heldout", "heldout_triples", "copies", "vocab_size", "leaf_rate", "tail_end", "mentions",
  "absent", "model", "steps", "batch", "lr", "min_lr", "warmup", "eval_every", "checkpoint_every", "eval_triples", "baseline" }
local MODEL_ORDER = { "roots", "leaves", "hidden", "layers", "heads", "ffn", "lambda", "positions", "head", "sbo", "graph_token" }
local REASON_OF = { heldout = "heldout", heldout_triples = "heldout_triples", vocab_size = "vocab_size", mentions = "mentions", absent = "absent",
  steps = "steps", baseline = "baseline", roots = "roots", leaves = "leaves", hidden = "hidden" }

local function literal(v)
  if type(v) == "string" then return string.format("%q", v) end
  if math.type(v) == "float" then return string.format("%.4g", v) end
  return tostring(v)
end

function M.text(cfg, reasons, header)
  local lines = {}
  for line in (header .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = "-- " .. line end
  lines[#lines + 1] = "return {"
  local function entry(indent, key, value)
    local why = reasons[REASON_OF[key] or ""]
    lines[#lines + 1] = string.format("%s%s = %s,%s", indent, key, value, why and ("  -- " .. why) or "")
  end
  for _, key in ipairs(ORDER) do
    local v = cfg[key]
    if key == "data" then
      entry("  ", key, string.format("{ dir = %q }", v.dir))
    elseif key == "model" then
      lines[#lines + 1] = "  model = {"
      for _, k in ipairs(MODEL_ORDER) do entry("    ", k, literal(v[k])) end
      lines[#lines + 1] = "  },"
    else
      entry("  ", key, literal(v))
    end
  end
  lines[#lines + 1] = "}"
  return table.concat(lines, "\n") .. "\n"
end

-- the sizes and their reasons as the lines a command prints
function M.summary(cfg, reasons)
  local m = cfg.model
  return {
    string.format("  vocab_size %d: %s", cfg.vocab_size, reasons.vocab_size),
    string.format("  model.leaves %d: %s", m.leaves, reasons.leaves),
    string.format("  model.roots %d: %s", m.roots, reasons.roots),
    string.format("  model.hidden %d, %d layers, %d heads: %s", m.hidden, m.layers, m.heads, reasons.hidden),
    string.format("  heldout %g: %s", cfg.heldout, reasons.heldout),
    string.format("  steps %d: %s (%s)", cfg.steps, reasons.steps, reasons.minutes),
    "  absent, mentions, tail_end on: " .. reasons.absent:gsub(": .*", "") .. "; tails taught where extraction asks",
  }
end

-- the path from folder `from` to `to` ("../data/astro"), both existing folders
local function relative(from, to)
  local a, b = {}, {}
  for part in gm.realpath(from):gmatch("[^/]+") do a[#a + 1] = part end
  for part in gm.realpath(to):gmatch("[^/]+") do b[#b + 1] = part end
  local same = 0
  while same < #a and same < #b and a[same + 1] == b[same + 1] do same = same + 1 end
  local parts = {}
  for _ = same + 1, #a do parts[#parts + 1] = ".." end
  for i = same + 1, #b do parts[#parts + 1] = b[i] end
  return #parts > 0 and table.concat(parts, "/") or "."
end

function M.write(script, dir, path, opts)
  local args = require "graphmert.experiment.args"
  local cfg, reasons = args.try(script, M.size, dir, { minutes = opts.minutes, all_data = opts.all_data, say = print })
  if opts.steps then -- (train's --steps: the file says what the run trains)
    reasons.steps = string.format("--steps (sized: %d, %s)", cfg.steps, reasons.steps)
    cfg.steps = opts.steps
  end
  for _, line in ipairs(M.summary(cfg, reasons)) do print(line) end
  local folder = path:match("^(.*)/[^/]*$") or "."
  args.writable(script, path) -- (its folder made once the data has been read)
  cfg.data.dir = relative(folder, dir) -- a relative data.dir is read from the config file's folder
  local header = string.format("%s — GraphMERT sized for the dataset %s by `graphmert %s` on %s,\n" ..
    "on %s: each size's reason is beside it. Edit it freely; train it with\n" ..
    "  graphmert train --config %s", path:match("[^/]*$"), dir, script:gsub("%.lua$", ""), os.date("!%Y-%m-%d"),
    machine.cpu(), path)
  local ok, err = gm.write_atomic(path, { M.text(cfg, reasons, header) })
  if not ok then args.fail(script, string.format("cannot write %s: %s", path, tostring(err))) end
  return path
end

-- The config `train --data DIR` (no --config) trains: OUT/config.lua, sized and written unless
-- --resume continues the run it belongs to. Sizing is timed, so two ranks could size apart:
-- under MPI a config is asked for.
function M.run_config(script, opts)
  local args = require "graphmert.experiment.args"
  local path = opts.out .. "/config.lua"
  if opts.resume then
    if not gm.stat(path) then
      args.fail(script, string.format("%s has no config.lua to resume with: give the run's --config", opts.out))
    end
    return path
  end
  if require("graphmert.distributed").size() > 1 then
    args.fail(script, "under MPI give --config: graphmert init --data " .. opts.data .. " writes one, sized once for every rank")
  end
  require("graphmert.experiment.training_run").check_output(script, opts, nil, path) -- a run there is never lost
  args.folder(script, opts.out)
  return M.write(script, opts.data, path, { minutes = opts.minutes, all_data = opts["all-data"], steps = opts.steps })
end

return M
