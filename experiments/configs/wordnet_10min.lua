-- GraphMERT on WordNet 3.0 in a few minutes on 2 cores (3.5 min on a Zen 5): `make demo`
-- (GraphMERT, then the same budget for the baseline without decay and without H-GAT).
return {
  extends = "wordnet_long.lua", -- all of its settings but the size and the budget
  data = { limit = 4000 },      -- synsets per part of speech
  heldout = 0.05,               -- share of synsets kept out of training (text and triples)
  vocab_size = 6000,
  model = { hidden = 160, ffn = 640 },
  steps = 2000, lr = 2e-3, warmup = 100, eval_every = 500, eval_triples = 500,
}
