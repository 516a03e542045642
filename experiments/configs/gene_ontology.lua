-- GraphMERT on the Gene Ontology (Debian's r-bioc-go.db, release 2022-07-01, exported by
-- scripts/data/gene_ontology.sh: 35,140 definitions as "term name: definition" passages, 43,558
-- terms with 117,981 synonyms as entities typed by namespace, 85,713 is_a / part_of /
-- (positively, negatively) regulates edges as the seed graph), then the baseline without decay
-- and H-GAT on the same budget — about 20 minutes on 2 cores (docs/results.md):
--   make gene-ontology
-- GO names are long (a median of 5-6 WordPiece tokens): 6 leaf slots per root hold about two
-- thirds of the tails, a 12,000-piece vocabulary keeps them short; tail_end lets the decoder
-- choose a tail's length, absent lets the model answer "none" for a relation a term lacks.
return {
  seed = 1,
  data = { dir = "../data/gene_ontology" }, -- relative to this file
  heldout = 0.02,           -- share of terms kept out of training (their definitions and edges)
  heldout_triples = 0.05,   -- share of the remaining edges (both directions) kept out
  copies = 4,
  vocab_size = 12000,
  leaf_rate = 0.5,
  max_span = 7,
  tail_end = true,
  absent = 0.5,
  model = { roots = 48, leaves = 6, hidden = 192, layers = 2, heads = 4, ffn = 768, lambda = 0.6,
            positions = true, dropout = 0.1, attention_dropout = 0.1, relation_dropout = 0.3,
            head = "single", sbo = false, graph_token = false },
  steps = 4000, batch = 16, lr = 1.5e-3, min_lr = 1e-5, warmup = 200, weight_decay = 0.01, clip = 1.0,
  eval_every = 1000, checkpoint_every = 500, eval_triples = 500,
}
