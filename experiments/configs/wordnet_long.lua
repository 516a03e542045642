-- GraphMERT on all of WordNet 3.0 (117,659 synsets): the longer run of docs/results.md (about
-- 35 minutes on 2 cores for GraphMERT and the no-decay / no-H-GAT baseline).
--   graphmert experiments/train.lua --config experiments/configs/wordnet_long.lua --out out/wordnet_long
return {
  seed = 1,
  data = { source = "wordnet", pos = { "noun", "verb", "adj", "adv" } },
  heldout = 0.02,           -- share of synsets kept out of training (text and triples)
  heldout_triples = 0.05,   -- share of the remaining facts (both directions) kept out
  copies = 4,               -- a glossary entry is repeated once per triple, up to 4 times
  vocab_size = 8000,
  leaf_rate = 0.5,          -- share of injected tail groups masked per step (official 0.15)
  max_span = 7,             -- root spans up to 7 tokens (with no SBO head, spans need not fit the leaves)
  -- learned positions (not in the official model) let a small model tell leaves from roots
  -- early; without them tail prediction stays below the frequency baseline at small budgets
  model = { roots = 32, leaves = 3, hidden = 192, layers = 2, heads = 4, ffn = 768, lambda = 0.6,
            positions = true, dropout = 0.1, attention_dropout = 0.1, relation_dropout = 0.3,
            -- the model docs/results.md's tables were measured with: one LM transform, no SBO, no graph token
            head = "single", sbo = false, graph_token = false },
  steps = 5000, batch = 16, lr = 1.5e-3, min_lr = 1e-5, warmup = 200, weight_decay = 0.01, clip = 1.0,
  eval_every = 1000, checkpoint_every = 500, eval_triples = 1000,
}
