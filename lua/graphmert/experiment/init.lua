-- graphmert.experiment — the pieces experiments share, one module each, and every function of
-- theirs by its own name (gm.experiment.prepare, gm.experiment.load_model, ...):
--   preparation   a dataset prepared once: read, linked, split, tokenized, sequences, masking
--   data_options  the commands' --data and --config: which config and dataset they run on
--   variants      the model a config builds, its variants, and the config's settings
--   trainer       one optimisation step, and the held-out masked-token accuracy
--   metrics       tail prediction on the held-out facts and entities
--   report        the evaluation table and gnuplot pictures
--   run_folder    a training run's output folder: run.json, model, tokenizer, seed graph
-- and, as modules: config (the config schema), args (the scripts' argument parser), commands (the
-- binary's subcommands), progress (a long run's progress line). The commands' own drivers
-- (training_run, ablation_*, heldout_extraction, sizing: a config sized from a dataset) are
-- required by the commands that use them.
local M = {
  config = require "graphmert.experiment.config",
  args = require "graphmert.experiment.args",
  commands = require "graphmert.experiment.commands",
  progress = require "graphmert.experiment.progress",
}

for _, part in ipairs { "preparation", "variants", "trainer", "metrics", "report", "run_folder" } do
  for name, fn in pairs(require("graphmert.experiment." .. part)) do M[name] = fn end
end

return M
