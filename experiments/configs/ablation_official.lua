-- The ablation grid with the official configuration at the small model's size and budget: no
-- learned positions (the official model has none), the official masking rate (15% of the tail
-- groups), the official two-stage LM head with the span-boundary objective (root spans of at
-- most `leaves` tokens) and the graph token, the official initialisation — on the same data,
-- model size and budget as experiments/configs/ablation.lua, so the two grids differ only in
-- these settings. λ ∈ {none, 0.6} × H-GAT on/off × 3 seeds = 12 cells.
--   mpirun -np 2 graphmert experiments/ablation.lua --config experiments/configs/ablation_official.lua --out out/ablation_official
return {
  seed = 1,
  wordnet = { pos = { "noun", "verb", "adj", "adv" }, limit = 4000 },
  heldout = 0.05, heldout_triples = 0.05, copies = 4, vocab_size = 6000,
  leaf_rate = 0.15,         -- mlm_on_leaves_probability
  model = { roots = 32, leaves = 3, hidden = 160, layers = 2, heads = 4, ffn = 640, lambda = 0.6,
            positions = false, dropout = 0.1, attention_dropout = 0.1, relation_dropout = 0.3,
            init = "official", relation_dropout_mask = "triple" }, -- official head, SBO and graph token (defaults)
  steps = 1000, batch = 16, lr = 2e-3, min_lr = 1e-5, warmup = 100, weight_decay = 0.01, clip = 1.0,
  eval_triples = 500,
  grid = { lambdas = { false, 0.6 }, hgat = { true, false }, seeds = { 1, 2, 3 },
           reference = { lambda = 0.6, hgat = true }, passages = 60, probe_sequences = 64 },
}
