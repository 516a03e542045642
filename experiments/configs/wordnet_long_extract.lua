-- The README's longer configuration (wordnet_long.lua: all of WordNet 3.0, hidden 192, 2 layers,
-- 5,000 steps of 16, then the baseline without decay and H-GAT on the same budget) with
-- tail_end = true, so the models learn where a tail ends (masked tails also cover their root's
-- empty leaf slots, labelled [PAD]) and the extraction decoder reads each tail up to it. The
-- extraction evaluation of the README (experiments/extract_eval.lua) ran on this run.
--   graphmert experiments/train.lua --config experiments/configs/wordnet_long_extract.lua --out out/wordnet_long_extract
--   graphmert experiments/extract_eval.lua --checkpoint out/wordnet_long_extract --decoding constrained
return {
  seed = 1,
  wordnet = { pos = { "noun", "verb", "adj", "adv" } },
  heldout = 0.02,           -- share of synsets kept out of training (text and triples)
  heldout_triples = 0.05,   -- share of the remaining facts (both directions) kept out
  copies = 4,               -- a glossary entry is repeated once per triple, up to 4 times
  vocab_size = 8000,
  leaf_rate = 0.5,          -- share of injected tail groups masked per step (official 0.15)
  max_span = 7,             -- root spans up to 7 tokens (with no SBO head, spans need not fit the leaves)
  tail_end = true,          -- learn where a tail ends (not in the official code)
  model = { roots = 32, leaves = 3, hidden = 192, layers = 2, heads = 4, ffn = 768, lambda = 0.6,
            positions = true, dropout = 0.1, attention_dropout = 0.1, relation_dropout = 0.3,
            head = "single", sbo = false, graph_token = false },
  steps = 5000, batch = 16, lr = 1.5e-3, min_lr = 1e-5, warmup = 200, weight_decay = 0.01, clip = 1.0,
  eval_every = 1000, checkpoint_every = 500, eval_triples = 1000,
}
