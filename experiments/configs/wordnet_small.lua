-- A small GraphMERT on WordNet 3.0 for a 2-core machine (a few minutes).
return {
  extends = "wordnet_10min.lua", -- a smaller model on fewer synsets, for a few minutes
  data = { limit = 2500 },       -- synsets per part of speech
  vocab_size = 4000,
  model = { hidden = 128, ffn = 256 },
  steps = 300, batch = 8, lr = 1e-3, warmup = 30, eval_every = 100, checkpoint_every = 100,
}
