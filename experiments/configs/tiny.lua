-- The tiny example dataset (experiments/data/tiny: 32 passages on human anatomy, 34 entities,
-- 43 triples): a few seconds of training that runs the whole path — far too little data for a
-- useful model; copy this file and point `data` at your own folder.
--   graphmert experiments/validate.lua --config experiments/configs/tiny.lua
--   graphmert experiments/train.lua --config experiments/configs/tiny.lua --out out/tiny
--   graphmert experiments/extract.lua --checkpoint out/tiny --input experiments/data/tiny/corpus.txt --out out/tiny/kg.jsonl
return {
  seed = 1,
  data = { dir = "../data/tiny" }, -- relative to this file
  heldout = 0.1,            -- share of entities kept out of training (their passages and triples)
  copies = 4,
  vocab_size = 400,
  leaf_rate = 0.5,
  tail_end = true,
  model = { roots = 48, leaves = 3, hidden = 32, layers = 1, heads = 2, ffn = 64, lambda = 0.6,
            positions = true, head = "single", sbo = false, graph_token = false },
  steps = 40, batch = 4, lr = 2e-3, warmup = 4, eval_every = 20, checkpoint_every = 20, eval_triples = 50,
}
