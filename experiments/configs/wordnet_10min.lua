-- GraphMERT on WordNet 3.0 in a few minutes on 2 cores (3.5 min on a Zen 5): `make demo`,
-- the README's main run (GraphMERT, then the same budget for the baseline without decay and
-- without H-GAT).
return {
  seed = 1,
  data = { source = "wordnet", pos = { "noun", "verb", "adj", "adv" }, limit = 4000 },
  heldout = 0.05,           -- share of synsets kept out of training (text and triples)
  heldout_triples = 0.05,   -- share of the remaining facts (both directions) kept out
  copies = 4,               -- a glossary entry is repeated once per triple, up to 4 times
  vocab_size = 6000,
  leaf_rate = 0.5,          -- share of injected tail groups masked per step (official 0.15)
  max_span = 7,             -- root spans up to 7 tokens (with no SBO head, spans need not fit the leaves)
  -- learned positions (not in the official model) let a small model tell leaves from roots
  -- early; without them tail prediction stays below the frequency baseline at this budget
  model = { roots = 32, leaves = 3, hidden = 160, layers = 2, heads = 4, ffn = 640, lambda = 0.6,
            positions = true, dropout = 0.1, attention_dropout = 0.1, relation_dropout = 0.3,
            -- the model the README's tables were measured with: one LM transform, no SBO, no graph token
            head = "single", sbo = false, graph_token = false },
  steps = 2000, batch = 16, lr = 2e-3, min_lr = 1e-5, warmup = 100, weight_decay = 0.01, clip = 1.0,
  eval_every = 500, checkpoint_every = 500,
}
