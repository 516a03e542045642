-- train.lua — train GraphMERT on a config's dataset (its corpus as text, its seed knowledge
-- graph injected: gm.data.dataset, or WordNet 3.0's glosses and relations), with a progress
-- line, a CSV log, periodic evaluation and checkpoints; then the same budget for the baseline
-- model without decay and without H-GAT, and the evaluation table (also written to
-- OUT/results.md). The dataset is read and checked before training starts.
--   graphmert experiments/train.lua [--config experiments/configs/wordnet_small.lua] [--data DIR]
--                                   [--out out/NAME] [--steps N] [--resume | --overwrite]
-- (NAME: the --data folder's name, else the config's: a run is named after what it learned)
-- Ctrl-C writes a checkpoint and exits; --resume continues from it bit for bit. An output folder
-- that holds a run (whole or stopped) is refused unless --resume or --overwrite says what to do with it.
-- `baseline = false` in the config skips the baseline run. A NaN or infinite loss or gradient
-- stops training with the step in the message (the last checkpoint is kept), or is skipped with
-- `on_nonfinite = "skip"`.
-- Under MPI (mpirun -np K graphmert experiments/train.lua ...) the K ranks share each batch (see
-- gm.experiment.trainer): rank 0 prints, logs, writes the checkpoints and the results; every rank
-- resumes from the same checkpoint (K may differ from the run that wrote it). An error on any
-- rank ends the job naming the rank.
local gm = require "graphmert"
local ex = gm.experiment
local errors = gm.errors
local dist = gm.distributed

local session <close> = dist.session() -- ends MPI at the end, or the whole job on an error
local main, say = dist.is_main(), dist.say

local args = ex.args.parse(arg, ex.args.training("train.lua",
  "Train GraphMERT on a dataset, then the baseline model; print the evaluation table.", nil,
  { { "resume", false, "continue from the checkpoints in the output folder", flag = true },
    { "overwrite", false, "train anew over a run already in the output folder (without it, such a run is kept)", flag = true } }))
args.config = ex.args.training_config("train.lua", args)
if not args.out then -- (the folder's own name: `--data .` is the current folder's)
  local named = args.data and (gm.realpath(args.data) or args.data) or args.config
  local name = named:gsub("/+$", ""):match("[^/]*$"):gsub("%.lua$", "")
  args.out = "out/" .. (name ~= "" and name or "run")
end

local config_path = ex.commands.config_path(args.config) -- a file, or a shipped config's name
local cfg = ex.config.load(config_path, args.data and { data = { dir = args.data } })
if args.steps then cfg.steps = args.steps end
ex.apply_settings(cfg)
local tok_path = args.out .. "/tokenizer.txt"
local function fail(msg) ex.args.fail("train.lua", msg) end
ex.args.folder("train.lua", args.out) -- made once the data has been read
-- a run's files are never written among the passages it reads (a dataset's corpus/ folder)
ex.args.apart("train.lua", { args.out }, { cfg.data.dir and { folder = cfg.data.dir .. "/corpus" },
  cfg.data.corpus and { folder = cfg.data.corpus } })
if args.resume and args.overwrite then fail("give --resume or --overwrite, not both") end
if not args.resume and not args.overwrite and gm.stat(args.out .. "/checkpoint.safetensors") then -- hours of training are never lost to a rerun
  fail(args.out .. " holds a run, whole or stopped (checkpoint.safetensors): --resume continues it, --overwrite trains anew over it, or "
    .. "name another --out")
end
if args.resume then -- the run to continue must be there, and trained on this data: checked before anything is written
  if not gm.stat(args.out .. "/run.json") then
    fail(args.out .. " holds no run to resume (no run.json): train without --resume to start one")
  end
  local before = ex.args.try("train.lua", ex.read_run, args.out)
  if not ex.same_data(cfg.data, before.data) then
    fail(string.format("%s was trained with %s on data %s, and %s%s names %s: resume with the run's config and data",
      args.out, tostring(before.config), ex.data_string(before.data), config_path, args.data and " with --data" or "",
      ex.data_string(cfg.data)))
  end
  if not gm.stat(args.out .. "/checkpoint.safetensors") then
    fail(args.out .. " has no checkpoint yet (stopped before the first): train again without --resume")
  end
  -- what the config decides of training, compared value by value (a config copied elsewhere is the run's; one edited is not)
  local now = ex.settings(cfg)
  if before.settings and before.settings ~= now then
    local differ = gm.json.differences(before.settings, now)
    fail(string.format("%s was trained with another config (%s; run.json names %s): resume with the run's config", args.out,
      table.concat(differ, "; ", 1, math.min(#differ, 4)) .. (#differ > 4 and "; ..." or ""), tostring(before.config)))
  end
end

gm.manual_seed(cfg.seed)
local d = ex.args.try("train.lua", function() -- a dataset's error is the user's: one line
  return ex.prepare(cfg, args.resume and ex.load_tokenizer(args.out) or nil) -- checked against the run's model
end)
if main then ex.args.folder("train.lua", args.out, true) end
if not args.resume and main then d.tok:save(tok_path) end
say(ex.summary(d), "\n")

local runs = { { name = "GraphMERT", out = args.out } }
if cfg.baseline ~= false then
  runs[2] = { name = "no decay, no H-GAT", out = args.out .. "/baseline", overrides = { lambda = false, hgat = false } }
end

-- A stopped run logged the steps after its last checkpoint, which the resumed run does again:
-- log.csv keeps its rows up to `last`, so that it holds each step once.
local function drop_rows_after(path, last)
  local f = io.open(path)
  if not f then return end
  local keep = {}
  for line in f:lines("L") do
    local step = tonumber(line:match("^(%d+),"))
    if not step or step <= last then keep[#keep + 1] = line end
  end
  f:close()
  local ok, err = gm.write_atomic(path, keep)
  if not ok then error(err, 0) end
end

-- Trains one run to cfg.steps (continuing from its checkpoint with --resume); returns its model.
local function train(run)
  if main then ex.args.folder("train.lua", run.out, true) end
  local c = ex.variant(cfg, run.overrides)
  local ckpt_path, log_path = run.out .. "/checkpoint.safetensors", run.out .. "/log.csv"
  gm.manual_seed(cfg.seed)
  local model = ex.model(d, c)
  local opt = gm.optim.adamw(model:named_parameters(), { lr = c.lr, weight_decay = c.weight_decay })
  local start = 1
  local resuming = args.resume and (run.out == args.out or io.open(ckpt_path) ~= nil)
  if resuming then -- before the run's files are written again: a checkpoint that does not fit leaves them as they are
    start = ex.args.try("train.lua", function()
      local ok, step = pcall(gm.checkpoint.load, ckpt_path, { model = model, optimizer = opt })
      if not ok then
        local why = tostring(step):gsub("^[%w_./-]+%.lua:%d+: ", "")
        error(string.format("cannot resume %s: %s%s", run.out, why,
          why:find("load_state_dict", 1, true) and " (the config is not the run's?)" or ""), 0)
      end
      return step
    end) + 1
    if start > c.steps + 1 then -- the two models of a run are compared on one budget
      fail(string.format("%s's checkpoint is at step %d, past the %d steps asked: resume without --steps, or with more",
        run.out, start - 1, c.steps))
    elseif start > c.steps then
      say(string.format("%s: already trained to step %d of %d\n", run.name, start - 1, c.steps))
    else
      say(string.format("%s: resumed at step %d\n", run.name, start))
    end
    if main then drop_rows_after(log_path, start - 1) end
  end
  if main then
    ex.args.try("train.lua", ex.write_run, run.out, { config = config_path:sub(1, 1) == "/" and config_path
      or ex.config.cwd() .. config_path, settings = ex.settings(c), model = model.config, relations = d.relation_names,
      data = cfg.data, tail_end = cfg.tail_end, absent = cfg.absent })
    -- extraction reads the run folder alone; the index holds constrained decoding's known tails
    ex.args.try("train.lua", d.dataset.save_seed_graph, d.dataset, run.out .. "/seed_graph", d.graph,
      { tok = d.tok, leaves = d.layout.leaves })
  end
  dist.broadcast(model:parameters(), 0) -- every rank starts from rank 0's weights
  local log = main and assert(io.open(log_path, resuming and "a" or "w"))
  if log and not resuming then log:write("step,loss,lr,tokens_per_s\n") end
  local t_start, tokens_done, last_step = gm.clock(), 0, nil
  local train_step = ex.trainer(d, c, model, opt)
  local progress = ex.progress.new { stream = io.stdout, total = c.steps, enabled = main }
  -- a checkpoint that cannot be written (a full disk) ends the run in one line: the one before
  -- is whole (checkpoints are put in place atomically), and --resume continues from it
  local function save(step)
    if not main then return end
    local ok, err = pcall(gm.checkpoint.save, ckpt_path, { model = model, optimizer = opt, step = step })
    if not ok and gm.errors.kind(err) == "interrupted" then error(err, 0) end
    if not ok then
      fail(string.format("%s; %s", tostring(err):gsub("^[%w_./-]+%.lua:%d+: ", ""), gm.stat(ckpt_path)
        and "the checkpoint before it is kept: --resume continues from it once the problem is solved"
        or "no checkpoint was written before it: train again with --overwrite once the problem is solved"))
    end
  end
  -- one step, whole: a Ctrl-C meanwhile comes after it, so its checkpoint never holds half a step
  local function one_step(step)
    local t0 = gm.clock()
    local loss, tokens, skipped = train_step(step)
    if skipped then progress:say(string.format("  step %d skipped: non-finite loss or gradient", step)) end
    tokens_done = tokens_done + tokens
    local elapsed = gm.clock() - t_start
    if log then
      local ok, err = log:write(string.format("%d,%.6f,%.3g,%.1f\n", step, loss, opt:get_lr(), tokens / (gm.clock() - t0)))
      if ok then ok, err = log:flush() end
      if not ok then fail(string.format("%s: %s", log_path, tostring(err))) end
    end
    progress:update(step, string.format("%s: step %d/%d  loss %.4f  lr %.2e  %.0f tokens/s  ETA %ds", run.name, step,
      c.steps, loss, opt:get_lr(), tokens_done / elapsed, math.floor((c.steps - step) * elapsed / (step - start + 1))))
    if step % c.eval_every == 0 or step == c.steps then
      local acc, n = ex.masked_accuracy(d, c, model)
      progress:say(string.format("  eval at step %d: masked-token accuracy %.3f over %d held-out tokens", step, acc, n))
    end
    if step % c.checkpoint_every == 0 or step == c.steps then save(step) end
    last_step = step
  end
  local ok, err = pcall(function()
    for step = start, c.steps do errors.uninterrupted(one_step, step) end
  end)
  if log then log:close() end
  if not ok then
    if errors.kind(err) == "interrupted" and last_step then
      save(last_step)
      progress:say(string.format("interrupted: checkpoint at step %d written to %s (continue with --resume)", last_step, ckpt_path))
      os.exit(130)
    end
    if errors.kind(err) == "nonfinite" then
      progress:finish()
      if main then io.stderr:write(tostring(err), "\n") end
      os.exit(1)
    end
    error(err, 0)
  end
  return model, c
end

-- the masked-token accuracy is shared by the ranks; the tail-prediction tables run on rank 0
local rows = {}
for _, run in ipairs(runs) do
  local model, c = train(run)
  local acc, tokens = ex.masked_accuracy(d, c, model)
  rows[#rows + 1] = { name = run.name, acc = tokens > 0 and acc or nil, tails = main and ex.tail_metrics(d, c, model) }
end
if not main then return end
rows[#rows + 1] = { name = "most frequent tail", tails = ex.baseline_metrics(d, cfg) }
local report = ex.table(rows)
print("\n" .. report)
local f = assert(io.open(args.out .. "/results.md", "w"))
f:write(string.format("# %s, %d steps of batch %d, seed %d\n\n%s\n\n%s\n", config_path, cfg.steps, cfg.batch, cfg.seed,
  ex.summary(d), report))
f:close()
print("done: " .. args.out .. "/checkpoint.safetensors")
