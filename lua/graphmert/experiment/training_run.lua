-- training_run.lua — what experiments/train.lua does: the checks that an output folder's run is
-- neither lost nor mixed with another, and the training of one model of the run (GraphMERT, then
-- its baseline) to the config's steps, with a progress line, a CSV log, periodic evaluation and
-- checkpoints; with --resume it continues bit for bit from its checkpoint.
--   check_output(script, opts, cfg, config_path)   opts: the parsed --out, --resume, --overwrite, --data
--   train(job, run) → the trained model, its config
--     job: {script, cfg, d (prepared data), config_path, resume, out (the run's folder)}
--     run: {name, out (its folder), overrides (its model keys)}
-- Under MPI rank 0 prints, logs and writes; every rank trains (gm.experiment.trainer).
local gm = require "graphmert"
local errors = require "graphmert.errors"
local dist = require "graphmert.distributed"
local args = require "graphmert.experiment.args"
local config = require "graphmert.experiment.config"
local progress = require "graphmert.experiment.progress"
local run_folder = require "graphmert.experiment.run_folder"
local trainer = require "graphmert.experiment.trainer"
local variants = require "graphmert.experiment.variants"

local M = {}

-- A run already in the output folder is continued (--resume) only when it is this config's and
-- data's, replaced only with --overwrite, and otherwise kept: checked before anything is written.
function M.check_output(script, opts, cfg, config_path)
  local function fail(msg) args.fail(script, msg) end
  local out = opts.out
  if opts.resume and opts.overwrite then fail("give --resume or --overwrite, not both") end
  if not opts.resume and not opts.overwrite and gm.stat(out .. "/checkpoint.safetensors") then -- hours of training are never lost to a rerun
    fail(out .. " holds a run, whole or stopped (checkpoint.safetensors): --resume continues it, --overwrite trains anew over it, or "
      .. "name another --out")
  end
  if not opts.resume then return end
  if not gm.stat(out .. "/run.json") then
    fail(out .. " holds no run to resume (no run.json): train without --resume to start one")
  end
  local before = args.try(script, run_folder.read_run, out)
  if not run_folder.same_data(cfg.data, before.data) then
    fail(string.format("%s was trained with %s on data %s, and %s%s names %s: resume with the run's config and data",
      out, tostring(before.config), run_folder.data_string(before.data), config_path, opts.data and " with --data" or "",
      run_folder.data_string(cfg.data)))
  end
  if not gm.stat(out .. "/checkpoint.safetensors") then
    fail(out .. " has no checkpoint yet (stopped before the first): train again without --resume")
  end
  -- what the config decides of training, compared value by value (a config copied elsewhere is the run's; one edited is not)
  local now = variants.settings(cfg)
  if before.settings and before.settings ~= now then
    local differ = gm.json.differences(before.settings, now)
    fail(string.format("%s was trained with another config (%s; run.json names %s): resume with the run's config", out,
      table.concat(differ, "; ", 1, math.min(#differ, 4)) .. (#differ > 4 and "; ..." or ""), tostring(before.config)))
  end
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

-- The step a resumed run starts at, its model and optimizer loaded from its checkpoint — before
-- the run's files are written again: a checkpoint that does not fit leaves them as they are.
local function resume_at(job, run, c, model, opt, ckpt_path, log_path)
  local start = args.try(job.script, function()
    local ok, step = pcall(gm.checkpoint.load, ckpt_path, { model = model, optimizer = opt })
    if not ok then
      local why = tostring(step):gsub("^[%w_./-]+%.lua:%d+: ", "")
      error(string.format("cannot resume %s: %s%s", run.out, why,
        why:find("load_state_dict", 1, true) and " (the config is not the run's?)" or ""), 0)
    end
    return step
  end) + 1
  if start > c.steps + 1 then -- the two models of a run are compared on one budget
    args.fail(job.script, string.format("%s's checkpoint is at step %d, past the %d steps asked: resume without --steps, or with more",
      run.out, start - 1, c.steps))
  elseif start > c.steps then
    dist.say(string.format("%s: already trained to step %d of %d\n", run.name, start - 1, c.steps))
  else
    dist.say(string.format("%s: resumed at step %d\n", run.name, start))
  end
  if dist.is_main() then drop_rows_after(log_path, start - 1) end
  return start
end

-- run.json and the seed graph (rank 0): extraction reads the run folder alone; the index holds
-- constrained decoding's known tails
local function write_description(job, run, c, model)
  local d, path = job.d, job.config_path
  args.try(job.script, run_folder.write_run, run.out, { config = path:sub(1, 1) == "/" and path
    or config.cwd() .. path, settings = variants.settings(c), model = model.config, relations = d.relation_names,
    data = job.cfg.data, tail_end = job.cfg.tail_end, absent = job.cfg.absent })
  args.try(job.script, d.dataset.save_seed_graph, d.dataset, run.out .. "/seed_graph", d.graph,
    { tok = d.tok, leaves = d.layout.leaves })
end

-- The checkpoint writer (rank 0). A checkpoint that cannot be written (a full disk) ends the run
-- in one line: the one before is whole (checkpoints are put in place atomically), and --resume
-- continues from it.
local function saver(script, model, opt, ckpt_path)
  return function(step)
    if not dist.is_main() then return end
    local ok, err = pcall(gm.checkpoint.save, ckpt_path, { model = model, optimizer = opt, step = step })
    if not ok and errors.kind(err) == "interrupted" then error(err, 0) end
    if not ok then
      args.fail(script, string.format("%s; %s", tostring(err):gsub("^[%w_./-]+%.lua:%d+: ", ""), gm.stat(ckpt_path)
        and "the checkpoint before it is kept: --resume continues from it once the problem is solved"
        or "no checkpoint was written before it: train again with --overwrite once the problem is solved"))
    end
  end
end

-- How training that stopped with `err` ends: a Ctrl-C writes the last whole step's checkpoint and
-- exits with status 130, a non-finite loss or gradient (which names its step) exits with 1, and
-- anything else is raised again.
local function stopped(err, save, last_step, line, ckpt_path)
  if errors.kind(err) == "interrupted" and last_step then
    save(last_step)
    line:say(string.format("interrupted: checkpoint at step %d written to %s (continue with --resume)", last_step, ckpt_path))
    os.exit(130)
  end
  if errors.kind(err) == "nonfinite" then
    line:finish()
    if dist.is_main() then io.stderr:write(tostring(err), "\n") end
    os.exit(1)
  end
  error(err, 0)
end

-- Trains one run to cfg.steps (continuing from its checkpoint with job.resume); returns its model.
function M.train(job, run)
  local main, cfg, d = dist.is_main(), job.cfg, job.d
  if main then args.folder(job.script, run.out, true) end
  local c = variants.variant(cfg, run.overrides)
  local ckpt_path, log_path = run.out .. "/checkpoint.safetensors", run.out .. "/log.csv"
  gm.manual_seed(cfg.seed)
  local model = variants.model(d, c)
  local opt = gm.optim.adamw(model:named_parameters(), { lr = c.lr, weight_decay = c.weight_decay })
  local start = 1
  local resuming = job.resume and (run.out == job.out or io.open(ckpt_path) ~= nil)
  if resuming then start = resume_at(job, run, c, model, opt, ckpt_path, log_path) end
  if main then write_description(job, run, c, model) end
  dist.broadcast(model:parameters(), 0) -- every rank starts from rank 0's weights
  local log = main and assert(io.open(log_path, resuming and "a" or "w"))
  if log and not resuming then log:write("step,loss,lr,tokens_per_s\n") end
  local t_start, tokens_done, last_step = gm.clock(), 0, nil
  local train_step = trainer.trainer(d, c, model, opt)
  local line = progress.new { stream = io.stdout, total = c.steps, enabled = main }
  local save = saver(job.script, model, opt, ckpt_path)
  -- one step, whole: a Ctrl-C meanwhile comes after it, so its checkpoint never holds half a step
  local function one_step(step)
    local t0 = gm.clock()
    local loss, tokens, skipped = train_step(step)
    if skipped then line:say(string.format("  step %d skipped: non-finite loss or gradient", step)) end
    tokens_done = tokens_done + tokens
    local elapsed = gm.clock() - t_start
    if log then
      local ok, err = log:write(string.format("%d,%.6f,%.3g,%.1f\n", step, loss, opt:get_lr(), tokens / (gm.clock() - t0)))
      if ok then ok, err = log:flush() end
      if not ok then args.fail(job.script, string.format("%s: %s", log_path, tostring(err))) end
    end
    line:update(step, string.format("%s: step %d/%d  loss %.4f  lr %.2e  %.0f tokens/s  ETA %ds", run.name, step,
      c.steps, loss, opt:get_lr(), tokens_done / elapsed, math.floor((c.steps - step) * elapsed / (step - start + 1))))
    if step % c.eval_every == 0 or step == c.steps then
      local acc, n = trainer.masked_accuracy(d, c, model)
      line:say(string.format("  eval at step %d: masked-token accuracy %.3f over %d held-out tokens", step, acc, n))
    end
    if step % c.checkpoint_every == 0 or step == c.steps then save(step) end
    last_step = step
  end
  local ok, err = pcall(function()
    for step = start, c.steps do errors.uninterrupted(one_step, step) end
  end)
  if log then log:close() end
  if not ok then stopped(err, save, last_step, line, ckpt_path) end
  return model, c
end

return M
