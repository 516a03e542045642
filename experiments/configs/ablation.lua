-- The λ × H-GAT ablation grid (experiments/ablation.lua) with the small-model settings that work
-- on 2 cores: wordnet_10min's data and model (learned positions, half of the tail groups
-- masked, one LM transform, no SBO, no graph token) on a budget of 1,000 steps a cell;
-- λ ∈ {none, 0.4, 0.6, 0.8, 0.9} × H-GAT on/off × 3 seeds = 30 cells.
--   mpirun -np 2 graphmert experiments/ablation.lua --config experiments/configs/ablation.lua --out out/ablation
return {
  seed = 1,                 -- the split and the tokenizer; the grid's seeds set initialisation, masks and batch order
  data = { source = "wordnet", pos = { "noun", "verb", "adj", "adv" }, limit = 4000 },
  heldout = 0.05, heldout_triples = 0.05, copies = 4, vocab_size = 6000,
  leaf_rate = 0.5,          -- share of injected tail groups masked per step (official 0.15)
  max_span = 7,
  model = { roots = 32, leaves = 3, hidden = 160, layers = 2, heads = 4, ffn = 640, lambda = 0.6,
            positions = true, dropout = 0.1, attention_dropout = 0.1, relation_dropout = 0.3,
            head = "single", sbo = false, graph_token = false },
  steps = 1000, batch = 16, lr = 2e-3, min_lr = 1e-5, warmup = 100, weight_decay = 0.01, clip = 1.0,
  eval_triples = 500,
  grid = { lambdas = { false, 0.4, 0.6, 0.8, 0.9 }, hgat = { true, false }, seeds = { 1, 2, 3 },
           reference = { lambda = 0.6, hgat = true }, passages = 60, probe_sequences = 64 },
}
