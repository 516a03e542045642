-- The λ × H-GAT ablation grid (experiments/ablation.lua) with the small-model settings that work
-- on 2 cores: wordnet_10min's data and model (learned positions, half of the tail groups
-- masked, one LM transform, no SBO, no graph token) on a budget of 1,000 steps a cell;
-- λ ∈ {none, 0.4, 0.6, 0.8, 0.9} × H-GAT on/off × 3 seeds = 30 cells.
--   mpirun -np 2 graphmert experiments/ablation.lua --config experiments/configs/ablation.lua --out out/ablation
return {
  extends = "wordnet_10min.lua", -- its data, split, tokenizer and model
  steps = 1000, eval_every = 1000, checkpoint_every = 1000,
  grid = { lambdas = { false, 0.4, 0.6, 0.8, 0.9 }, hgat = { true, false }, seeds = { 1, 2, 3 },
           reference = { lambda = 0.6, hgat = true }, passages = 60, probe_sequences = 64 },
}
