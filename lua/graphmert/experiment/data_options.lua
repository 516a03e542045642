-- data_options.lua — the --data and --config options: which config and which dataset a command
-- runs on. A command that trains or evaluates a model (train, ablate, evaluate) runs a config,
-- --data DIR replacing its data; a command that only reads a dataset (validate, score, extract)
-- takes it from --data DIR or from --config FILE's data, never both. A command that reads a
-- graph's seed graph (page, score) may take instead the one a training run kept (--checkpoint).
--   config(opts) → a checked config      check(script, opts, required, alternative)
--   dataset(opts) → the Dataset named      (opts: the parsed options, with .data and .config)
--   seed_graph(opts) → the seed graph's index named by --checkpoint, --data or --config, or nil
local args = require "graphmert.experiment.args"
local config = require "graphmert.experiment.config"
local preparation = require "graphmert.experiment.preparation"

local M = {}

-- The config opts.config names (a file or a shipped config's name), with the folder opts.data
-- names as its data when given.
function M.config(opts)
  return config.load(opts.config, opts.data and { data = { dir = opts.data } })
end

-- A usage error when both --data and --config are given (which dataset was meant?), and, when
-- `required`, when neither is; `alternative` names another option that would do instead
-- ("--gold review.jsonl").
function M.check(script, opts, required, alternative)
  if opts.data and opts.config then args.fail(script, "give --data DIR or --config FILE, not both") end
  if required and not opts.data and not opts.config then
    args.fail(script, "give --data DIR or --config FILE" .. (alternative and ", or " .. alternative or "") .. " (see --help)")
  end
end

-- The Dataset the options name: the folder --data names, else --config's data.
function M.dataset(opts)
  return preparation.dataset(opts.data and { dir = opts.data } or config.load(opts.config).data)
end

-- The seed graph (gm.data.seed_graph) the options name: the run's own with --checkpoint (its
-- seed_graph/, as extract reads it), else the dataset's of --data or --config; nil for none.
function M.seed_graph(opts)
  if opts.checkpoint then
    local run_folder = require "graphmert.experiment.run_folder"
    run_folder.read_run(opts.checkpoint) -- (a folder that is no run is named as extract names it)
    return run_folder.run_graph(opts.checkpoint)
  end
  if opts.data or opts.config then return require("graphmert").data.seed_graph.new(M.dataset(opts)) end
end

return M
