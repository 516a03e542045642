-- ablation.lua — the λ × H-GAT ablation as evidence: every cell of the config's grid (λ ∈
-- grid.lambdas, false = no decay; H-GAT in grid.hgat; training seeds grid.seeds) trained on one
-- budget and one data split, then for every metric the mean over seeds with a 95% interval and
-- each variant's paired difference against the reference cell (grid.reference, by default the
-- official λ = 0.6 with H-GAT), and pictures (gnuplot).
--   graphmert experiments/ablation.lua [--config experiments/configs/ablation.lua] [--out out/ablation]
--                                      [--steps N]
-- Metrics, each on units that are the same for every cell (so differences pair unit by unit):
--   MLM acc      masked-token accuracy on the held-out entities' sequences (units: sequences)
--   facts/entities tail@1, tail@10, MRR@10  whole tails decoded without their length and ranked
--                among the known tails, on held-out facts (seen text) and held-out entities'
--                triples (unseen text) (units: triples)
--   precision    extraction from held-out passages, top tail per head and relation, constrained
--                decoding, held by the seed graph (units: passages)
-- Intervals: percentile bootstrap (2,000 resamples) drawing the seeds and, once for all seeds, the
-- units (gm.eval.stats.over_seeds / paired_over_seeds); a difference is marked better (▲) or
-- worse (▼) only when its interval excludes 0.
-- Each finished cell is written to OUT/cells/<cell>.json (atomically): a stopped grid (Ctrl-C, a
-- crash) is resumed by running the same command again. Under MPI (mpirun -np K) rank r trains
-- the cells r, r + K, ... by itself (1 thread each is the efficient setting for small models);
-- rank 0 then writes results.md, summary.json and the pictures.
local gm = require "graphmert"
local ex = gm.experiment
local dist = gm.distributed
local ablation_figures = require "graphmert.experiment.ablation_figures"
local ablation_grid = require "graphmert.experiment.ablation_grid"
local ablation_pictures = require "graphmert.experiment.ablation_pictures"
local data_options = require "graphmert.experiment.data_options"
local preparation = require "graphmert.experiment.preparation"
local variants = require "graphmert.experiment.variants"

local session <close> = dist.session() -- ends MPI at the end, or the whole job on an error
local main, say = dist.is_main(), dist.say

local args = ex.args.parse(arg, ex.args.training("ablation.lua",
  "The λ × H-GAT ablation over seeds, with intervals, paired differences and pictures.", "out/ablation"))
args.config = ex.args.training_config("ablation.lua", args)
local cfg = data_options.config(args)
variants.apply_settings(cfg)
if args.steps then cfg.steps = args.steps end
local cells_dir = args.out .. "/cells"
ex.args.folder("ablation.lua", args.out, true) -- checked and made before any work, by every rank (each writes cells)
ex.args.folder("ablation.lua", cells_dir, true)

local d = ex.args.try("ablation.lua", preparation.prepare, cfg) -- a dataset's error is the user's: one line
say(preparation.summary(d), "\n")
local grid = ablation_grid.new(cfg, d, cells_dir)

local t_start = gm.clock()
ablation_grid.run(grid)
dist.barrier()
if not main then return end

-- everything below is rank 0's: the cells of every rank are on disk
ablation_grid.collect(grid)
local summary = ablation_figures.summarize(grid, args.config)
local pictures = ablation_pictures.draw(grid, args.out)
print(ablation_figures.write(grid, summary, pictures, args.out, args.config))
if #pictures == 0 then print("(gnuplot not available: no pictures)") end
print(string.format("done in %.0f s: %s/results.md", gm.clock() - t_start, args.out))
