-- train.lua — train GraphMERT on WordNet 3.0 (glosses as text, WordNet relations as the seed
-- knowledge graph), with a progress line, a CSV log, periodic evaluation and checkpoints.
--   graphmert experiments/train.lua [--config experiments/configs/wordnet_small.lua]
--                                   [--out out/wordnet_small] [--steps N] [--resume]
-- Ctrl-C writes a checkpoint and exits; --resume continues from it bit for bit.
local gm = require "graphmert"
local ex = gm.experiment

local args = { config = "experiments/configs/wordnet_small.lua", out = "out/wordnet_small" }
local i = 1
while i <= #arg do
  local a = arg[i]
  if a == "--resume" then args.resume = true
  elseif a == "--config" or a == "--out" or a == "--steps" then args[a:sub(3)] = arg[i + 1]; i = i + 1
  else error("train.lua: unknown argument " .. a) end
  i = i + 1
end

local cfg = assert(loadfile(args.config, "t", {}))()
if args.steps then cfg.steps = math.tointeger(tonumber(args.steps)) end
os.execute("mkdir -p " .. args.out)
local ckpt_path, tok_path, log_path = args.out .. "/checkpoint.safetensors", args.out .. "/tokenizer.txt",
    args.out .. "/log.csv"

gm.manual_seed(cfg.seed)
local d = ex.prepare(cfg, args.resume and gm.tokenizer.load(tok_path) or nil)
if not args.resume then d.tok:save(tok_path) end
print(ex.summary(d))
local model = ex.model(d, cfg)
local opt = gm.optim.adamw(model:named_parameters(), { lr = cfg.lr, weight_decay = cfg.weight_decay })
local start = 1
if args.resume then
  start = gm.checkpoint.load(ckpt_path, { model = model, optimizer = opt }) + 1
  print("resumed at step " .. start)
end

local log = assert(io.open(log_path, args.resume and "a" or "w"))
if not args.resume then log:write("step,loss,lr,tokens_per_s\n") end
local t_start, tokens_done, last_step = gm.clock(), 0, nil
local function save(step) gm.checkpoint.save(ckpt_path, { model = model, optimizer = opt, step = step }) end

local ok, err = pcall(function()
  for step = start, cfg.steps do
    local t0 = gm.clock()
    local loss, tokens = ex.step(d, cfg, model, opt, step)
    tokens_done = tokens_done + tokens
    local elapsed = gm.clock() - t_start
    log:write(string.format("%d,%.6f,%.3g,%.1f\n", step, loss, opt:get_lr(), tokens / (gm.clock() - t0)))
    log:flush()
    io.write(string.format("\rstep %d/%d  loss %.4f  lr %.2e  %.0f tokens/s  ETA %ds   ", step, cfg.steps, loss,
      opt:get_lr(), tokens_done / elapsed, math.floor((cfg.steps - step) * elapsed / (step - start + 1))))
    io.flush()
    if step % cfg.eval_every == 0 or step == cfg.steps then
      local acc, n = ex.masked_accuracy(d, cfg, model)
      io.write(string.format("\n  eval at step %d: masked-token accuracy %.3f over %d held-out tokens\n", step, acc, n))
    end
    if step % cfg.checkpoint_every == 0 or step == cfg.steps then save(step) end
    last_step = step
  end
end)
log:close()
if not ok then
  if tostring(err):match("interrupted") and last_step then
    save(last_step)
    print(string.format("\ninterrupted: checkpoint at step %d written to %s (continue with --resume)", last_step, ckpt_path))
    os.exit(130)
  end
  error(err, 0)
end

local res, base = ex.tail_metrics(d, cfg, model)
print("\n" .. ex.header)
print(ex.row("GraphMERT", (ex.masked_accuracy(d, cfg, model)), res))
print(ex.row("most frequent tail", nil, base))
print("done: " .. ckpt_path)
