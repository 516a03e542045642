-- The ablation grid with the official configuration at the small model's size and budget: no
-- learned positions (the official model has none), the official masking rate (15% of the tail
-- groups), the official two-stage LM head with the span-boundary objective (root spans of at
-- most `leaves` tokens) and the graph token, the official initialisation — on the same data,
-- model size and budget as ablation.lua, so the two grids differ only in these settings.
-- λ ∈ {none, 0.6} × H-GAT on/off × 3 seeds = 12 cells.
--   mpirun -np 2 graphmert experiments/ablation.lua --config experiments/configs/ablation_official.lua --out out/ablation_official
return {
  extends = "ablation.lua",
  leaf_rate = 0.15,         -- mlm_on_leaves_probability
  max_span = false,         -- root spans up to `leaves` tokens, as the SBO head needs
  model = { positions = false, head = "official", sbo = true, graph_token = true,
            init = "official", relation_dropout_mask = "triple" },
  grid = { lambdas = { false, 0.6 } },
}
