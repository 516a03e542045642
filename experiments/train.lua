-- train.lua — train GraphMERT on a config's dataset (its corpus as text, its seed knowledge
-- graph injected: gm.data.dataset, or WordNet 3.0's glosses and relations), with a progress
-- line, a CSV log, periodic evaluation and checkpoints; then the same budget for the baseline
-- model without decay and without H-GAT, and the evaluation table (also written to
-- OUT/results.md). The dataset is read and checked before training starts.
--   graphmert experiments/train.lua [--config experiments/configs/wordnet_small.lua] [--data DIR]
--                                   [--out out/NAME] [--steps N] [--resume | --overwrite] [--minutes N]
-- --data DIR without --config trains a model sized for the data (gm.experiment.sizing: each size
-- printed with its reason, the config written to OUT/config.lua, which --resume reads again).
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
local dist = gm.distributed
local data_options = require "graphmert.experiment.data_options"
local metrics = require "graphmert.experiment.metrics"
local preparation = require "graphmert.experiment.preparation"
local report = require "graphmert.experiment.report"
local run_folder = require "graphmert.experiment.run_folder"
local sizing = require "graphmert.experiment.sizing"
local trainer = require "graphmert.experiment.trainer"
local training_run = require "graphmert.experiment.training_run"
local variants = require "graphmert.experiment.variants"

local session <close> = dist.session() -- ends MPI at the end, or the whole job on an error
local main, say = dist.is_main(), dist.say

local args = ex.args.parse(arg, ex.args.training("train.lua",
  "Train GraphMERT on a dataset (then its baseline, when the config has one); print the evaluation table and a verdict.", nil,
  { { "resume", false, "continue from the checkpoints in the output folder", flag = true },
    { "overwrite", false, "train anew over a run already in the output folder (without it, such a run is kept)", flag = true },
    { "all-data", false, "train on every entity and fact (heldout and heldout_triples 0): the model to extract with, once " ..
      "a run that held some out has its verdict; nothing is left to measure or calibrate it with", flag = true },
    { "minutes", nil, "with --data and no --config: the training time the model's steps are sized to (default " ..
      sizing.DEFAULT_MINUTES .. ")", type = "number", min = 0.1 } }))
-- --data without --config: a model sized for the data (its config written into the run folder)
local sized = args.data and not args.config
if args.minutes and not sized then ex.args.fail("train.lua", "--minutes sizes a model for --data given without --config") end
if not sized then args.config = ex.args.training_config("train.lua", args) end
if not args.out then -- (the folder's own name: `--data .` is the current folder's)
  local named = args.data and (gm.realpath(args.data) or args.data) or args.config
  local name = named:gsub("/+$", ""):match("[^/]*$"):gsub("%.lua$", "")
  args.out = "out/" .. (name ~= "" and name or "run")
end
if sized then args.config = sizing.run_config("train.lua", args) end

local config_path = ex.commands.config_path(args.config) -- a file, or a shipped config's name
local cfg = data_options.config(args)
if args.steps then cfg.steps = args.steps end
if args["all-data"] then cfg.heldout, cfg.heldout_triples = 0, 0 end
variants.apply_settings(cfg)
ex.args.folder("train.lua", args.out) -- made once the data has been read
-- a run's files are never written among the passages it reads (a dataset's corpus/ folder)
ex.args.apart("train.lua", { args.out }, { cfg.data.dir and { folder = cfg.data.dir .. "/corpus" },
  cfg.data.corpus and { folder = cfg.data.corpus } })
training_run.check_output("train.lua", args, cfg, config_path)

gm.manual_seed(cfg.seed)
local d = ex.args.try("train.lua", function() -- a dataset's error is the user's: one line
  return preparation.prepare(cfg, args.resume and run_folder.load_tokenizer(args.out) or nil) -- checked against the run's model
end)
if main then ex.args.folder("train.lua", args.out, true) end
if not args.resume and main then d.tok:save(args.out .. "/tokenizer.txt") end
say(preparation.summary(d), "\n")

local runs = { { name = "GraphMERT", out = args.out } }
if cfg.baseline ~= false then
  runs[2] = { name = "no decay, no H-GAT", out = args.out .. "/baseline", overrides = { lambda = false, hgat = false } }
end

-- the masked-token accuracy is shared by the ranks; the tail-prediction tables run on rank 0
local job = { script = "train.lua", cfg = cfg, d = d, config_path = config_path, resume = args.resume, out = args.out }
local rows = {}
for _, run in ipairs(runs) do
  local model, c = training_run.train(job, run)
  local acc, tokens = trainer.masked_accuracy(d, c, model)
  rows[#rows + 1] = { name = run.name, acc = tokens > 0 and acc or nil, tails = main and metrics.tail_metrics(d, c, model) }
end
if not main then return end
rows[#rows + 1] = { name = "most frequent tail", tails = metrics.baseline_metrics(d, cfg) }
local results = report.table(rows)
local hints = { string.format("more steps (--steps %d)", cfg.steps * 2), "more passages about each entity" }
if d.report.skipped["tail longer than the leaf slots"] then hints[#hints + 1] = "a larger model.leaves (see the note above)" end
if not cfg.mentions or (cfg.absent or 0) == 0 then hints[#hints + 1] = "mentions = true and absent = 0.5 (docs/training.md)" end
results = results .. "\n\n" .. report.verdict(rows[1].tails, rows[#rows].tails, hints,
  cfg.heldout > 0 or cfg.heldout_triples > 0)
print("\n" .. results)
local f = assert(io.open(args.out .. "/results.md", "w"))
f:write(string.format("# %s, %d steps of batch %d, seed %d\n\n%s\n\n%s\n", config_path, cfg.steps, cfg.batch, cfg.seed,
  preparation.summary(d), results))
f:close()
print("done: " .. args.out .. "/checkpoint.safetensors")
