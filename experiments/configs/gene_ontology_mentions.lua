-- GraphMERT on the Gene Ontology taught what extraction asks: gene_ontology.lua with tails
-- injected at every linked mention of a definition (`mentions`), not only at its own term —
-- extraction asks about every term a passage mentions, and about half of those queries were
-- never taught — and bf16 products where the CPU has them (`precision = "medium"`, float32
-- sums). No baseline: the run measures `mentions` against gene_ontology.lua's GraphMERT (the
-- same seed, split and budget).
--   graphmert experiments/train.lua --config experiments/configs/gene_ontology_mentions.lua
return {
  extends = "gene_ontology.lua",
  mentions = true,
  precision = "medium",
  baseline = false,
}
