-- GraphMERT on WordNet 3.0 in about ten minutes on 2 cores: the README's main run.
return {
  seed = 1,
  wordnet = { pos = { "noun", "verb", "adj", "adv" }, limit = 4000 },
  heldout = 0.05,
  vocab_size = 6000,
  model = { roots = 32, leaves = 3, hidden = 160, layers = 2, heads = 4, ffn = 640, lambda = 0.6,
            dropout = 0.1, attention_dropout = 0.1, relation_dropout = 0.3 },
  steps = 1200, batch = 16, lr = 2e-3, min_lr = 1e-5, warmup = 100, weight_decay = 0.01, clip = 1.0,
  eval_every = 300, checkpoint_every = 300,
}
