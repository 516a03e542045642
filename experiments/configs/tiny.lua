-- The tiny example dataset (experiments/data/tiny: 32 passages on human anatomy, 34 entities,
-- 43 triples): seconds of training that runs the whole path — far too little data for a
-- useful model; copy this file and point `data` at your own folder.
--   graphmert experiments/validate.lua --config experiments/configs/tiny.lua
--   graphmert experiments/train.lua --config experiments/configs/tiny.lua --out out/tiny
--   graphmert experiments/extract.lua --checkpoint out/tiny --input experiments/data/tiny/corpus.txt \
--       --out out/tiny/kg.jsonl --decoding constrained
return {
  seed = 1,
  data = { dir = "../data/tiny" }, -- relative to this file
  heldout = 0.1,            -- share of entities kept out of training (their passages and triples)
  heldout_triples = 0.1,    -- share of the remaining facts (both directions) kept out
  copies = 4,               -- a passage is repeated once per triple it carries, up to 4 times
  vocab_size = 600,
  leaf_rate = 0.5,
  tail_end = true,          -- the model learns where a tail ends
  model = { roots = 64, leaves = 4, hidden = 64, layers = 2, heads = 2, ffn = 128, lambda = 0.6,
            positions = true, head = "single", sbo = false, graph_token = false },
  steps = 300, batch = 8, lr = 3e-3, warmup = 20, eval_every = 100, checkpoint_every = 100, eval_triples = 50,
}
