-- The official GraphMERT hyperparameters (jha-lab/graphmert_umls launch_configs/args_mlm.yaml,
-- docs/official.md) on all of WordNet 3.0, the corpus this machine has: 128 roots
-- × 7 leaves, 12 layers, hidden 512, 8 heads, FFN 2048, λ = 0.6, relation dropout 0.3, AdamW
-- lr 4e-4 with a cosine schedule to 1e-5 after 500 warm-up steps, weight decay 0.01, chunk
-- packing, span masking with SBO targets. Runnable here, but slowly (seconds per step: docs/official.md).
--   graphmert experiments/train.lua --config experiments/configs/official.lua --out out/official
return {
  seed = 0,
  data = { source = "wordnet", pos = { "noun", "verb", "adj", "adv" } },
  heldout = 0.02,           -- share of synsets kept out of training (text and triples)
  heldout_triples = 0.05,   -- share of the remaining facts (both directions) kept out
  copies = 1,               -- chunk packing: records are not repeated
  packing = "chunk",        -- records concatenated and cut into 126-token [CLS] … [SEP] chunks
  masking_spans = true,     -- root spans of at most 7 tokens (= leaves) with SBO targets
  vocab_size = 30522,       -- the size of the official (BiomedBERT) vocabulary, trained on WordNet here
  leaf_rate = 0.15,         -- mlm_on_leaves_probability
  model = { roots = 128, leaves = 7, hidden = 512, layers = 12, heads = 8, ffn = 2048, lambda = 0.6,
            positions = false, dropout = 0.1, attention_dropout = 0.1, relation_dropout = 0.3,
            init = "official", relation_dropout_mask = "triple" }, -- pad_id "auto": the [PAD] row
  -- 25 epochs of the official 989,666 sequences at batch 64 ≈ 387k steps; a budget for this corpus
  steps = 20000,
  -- the official batch is 32 per GPU with 2 accumulation steps; the trainer has no gradient
  -- accumulation, so the 64 = 32 × 2 sequences of one GPU's optimizer step are one batch here
  batch = 64,
  lr = 4e-4, min_lr = 1e-5, warmup = 500, weight_decay = 0.01, clip = 1.0,
  eval_every = 1000, checkpoint_every = 1000, eval_triples = 1000,
  baseline = false,         -- the official run has no no-decay / no-H-GAT twin
}
