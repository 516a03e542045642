-- train.lua — train GraphMERT on WordNet 3.0 (glosses as text, WordNet relations as the seed
-- knowledge graph), with a progress line, a CSV log, periodic evaluation and checkpoints.
--   graphmert experiments/train.lua [--config experiments/configs/wordnet_small.lua]
--                                   [--out out/wordnet_small] [--steps N] [--resume]
-- Ctrl-C writes a checkpoint and exits; --resume continues from it bit for bit.
local gm = require "graphmert"

local args = { config = "experiments/configs/wordnet_small.lua", out = "out/wordnet_small" }
local i = 1
while i <= #arg do
  local a = arg[i]
  if a == "--resume" then args.resume = true
  elseif a == "--config" or a == "--out" or a == "--steps" then args[a:sub(3)] = arg[i + 1]; i = i + 1
  else error("train.lua: unknown argument " .. a) end
  i = i + 1
end

local chunk = assert(loadfile(args.config, "t", {}))
local cfg = chunk()
if args.steps then cfg.steps = math.tointeger(tonumber(args.steps)) end
os.execute("mkdir -p " .. args.out)
local ckpt_path, tok_path, log_path = args.out .. "/checkpoint.safetensors", args.out .. "/tokenizer.txt",
    args.out .. "/log.csv"

gm.manual_seed(cfg.seed)
-- data: WordNet records, split by synset (a hash of the key, so the split never changes)
local wn = gm.wordnet.load(cfg.wordnet)
local records = gm.corpus.from_wordnet(wn)
local train, heldout = {}, {}
for _, r in ipairs(records) do
  local h = 0
  for c in r.synset:gmatch(".") do h = (h * 31 + c:byte()) % 1000003 end
  if h % 1000 < cfg.heldout * 1000 then heldout[#heldout + 1] = r else train[#train + 1] = r end
end
local tok
if args.resume then tok = gm.tokenizer.load(tok_path) else
  local texts = {}
  for _, r in ipairs(train) do texts[#texts + 1] = r.text end
  tok = gm.tokenizer.train(texts, { vocab_size = cfg.vocab_size })
  tok:save(tok_path)
end
local names, relations = {}, {}
for _, r in ipairs(records) do for _, t in ipairs(r.triples) do names[t.relation] = true end end
local list = {}
for n in pairs(names) do list[#list + 1] = n end
table.sort(list)
for id, n in ipairs(list) do relations[n] = id end
local m = cfg.model
local train_seqs, report = gm.corpus.build(train, tok, { roots = m.roots, leaves = m.leaves, relations = relations })
local eval_seqs = gm.corpus.build(heldout, tok, { roots = m.roots, leaves = m.leaves, relations = relations })
print(string.format("wordnet: %d synsets (%d parse errors); %d training sequences, %d held out; %d triples injected; vocabulary %d; %d relations",
  wn.count, wn.errors.count, #train_seqs, #eval_seqs, report.injected or 0, tok:size(), #list))

local model_cfg = { vocab = tok:size(), relations = #list }
for k, v in pairs(m) do model_cfg[k] = v end
local model = gm.nn.GraphMERT(model_cfg)
local opt = gm.optim.adamw(model:named_parameters(), { lr = cfg.lr, weight_decay = cfg.weight_decay })
local mask_opts = { vocab = tok:size(), mask_id = tok.mask_id, roots = m.roots, leaves = m.leaves,
  special = { [tok.pad_id] = true, [tok.cls_id] = true, [tok.sep_id] = true },
  word_start = function(id) return tok:word_start(id) end }

local start = 1
if args.resume then
  start = gm.checkpoint.load(ckpt_path, { model = model, optimizer = opt }) + 1
  print("resumed at step " .. start)
end

-- MLM accuracy on held-out sequences: argmax at masked roots and leaves
local function evaluate()
  model:eval()
  local state = gm.get_rng_state()
  gm.manual_seed(12345) -- the same masks at every evaluation
  local hits, total = 0, 0
  gm.no_grad(function()
    for first = 1, #eval_seqs, cfg.batch do
      local b = gm.masking.mask(gm.corpus.batch(eval_seqs, first, cfg.batch), mask_opts)
      local hidden = model(b)
      for _, part in ipairs { b.labels.roots, b.labels.leaves } do
        if #part.positions > 0 then
          local _, pred = model:logits(hidden, part.positions):max(2)
          local p = pred:totable()
          for k, t in ipairs(part.targets) do
            total = total + 1
            if p[k] == t then hits = hits + 1 end
          end
        end
      end
    end
  end)
  gm.set_rng_state(state)
  model:train()
  return total > 0 and hits / total or 0, total
end

local log = assert(io.open(log_path, args.resume and "a" or "w"))
if not args.resume then log:write("step,loss,lr,tokens_per_s\n") end
local t_start, tokens_done = gm.clock(), 0
local function save(step) gm.checkpoint.save(ckpt_path, { model = model, optimizer = opt, step = step }) end

local ok, err = pcall(function()
  for step = start, cfg.steps do
    local t0 = gm.clock()
    local first = ((step - 1) * cfg.batch) % math.max(1, #train_seqs) + 1
    local batch = gm.masking.mask(gm.corpus.batch(train_seqs, first, cfg.batch), mask_opts)
    opt:set_lr(gm.optim.cosine(step, { peak = cfg.lr, min_lr = cfg.min_lr, warmup = cfg.warmup, total = cfg.steps }))
    opt:zero_grad()
    local loss = model:loss(batch)
    loss:backward()
    gm.optim.clip_grad_norm(model:parameters(), cfg.clip)
    opt:step()
    local tokens = batch.valid:sum():item()
    tokens_done = tokens_done + tokens
    local rate = tokens_done / (gm.clock() - t_start)
    local eta = (cfg.steps - step) * (gm.clock() - t_start) / (step - start + 1)
    log:write(string.format("%d,%.6f,%.3g,%.1f\n", step, loss:item(), opt:get_lr(), tokens / (gm.clock() - t0)))
    log:flush()
    io.write(string.format("\rstep %d/%d  loss %.4f  lr %.2e  %.0f tokens/s  ETA %ds   ", step, cfg.steps,
      loss:item(), opt:get_lr(), rate, math.floor(eta)))
    io.flush()
    if step % cfg.eval_every == 0 or step == cfg.steps then
      local acc, n = evaluate()
      io.write(string.format("\n  eval at step %d: masked-token accuracy %.3f over %d held-out tokens\n", step, acc, n))
    end
    if step % cfg.checkpoint_every == 0 or step == cfg.steps then save(step) end
    _G.GRAPHMERT_LAST_STEP = step
  end
end)
log:close()
if not ok then
  local step = _G.GRAPHMERT_LAST_STEP
  if tostring(err):match("interrupted") and step then
    save(step)
    print(string.format("\ninterrupted: checkpoint at step %d written to %s (continue with --resume)", step, ckpt_path))
    os.exit(130)
  end
  error(err, 0)
end
-- tail prediction on held-out triples, next to the most frequent tail per relation
local eval_opts = { roots = m.roots, leaves = m.leaves, relations = relations, max_triples = cfg.eval_triples or 500 }
local res = gm.evaluate.tail_prediction(model, tok, heldout, eval_opts)
local base = gm.evaluate.most_frequent_tail(train, heldout, tok, eval_opts)
local acc = evaluate()
print(string.format("\nheld-out masked-token accuracy %.3f", acc))
print(string.format("%-28s %8s %8s %8s %8s %6s", "tail prediction", "hits@1", "hits@10", "MRR", "exact", "n"))
for _, row in ipairs { { "GraphMERT", res }, { "most frequent tail", base } } do
  local r = row[2]
  print(string.format("%-28s %8.3f %8.3f %8.3f %8.3f %6d", row[1], r.hits1, r.hits10, r.mrr, r.exact, r.n))
end
print("done: " .. ckpt_path)
