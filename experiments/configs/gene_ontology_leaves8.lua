-- gene_ontology_mentions.lua with room for long tails: 8 leaf slots per root instead of 6, so
-- that most of the third of GO names longer than 6 WordPiece tokens are taught and can be scored
-- (the sequence grows from 48 × 7 to 48 × 9 nodes). Measures the effect of the leaf count on its
-- own, against gene_ontology_mentions.lua (the same seed, split and budget).
--   graphmert experiments/train.lua --config experiments/configs/gene_ontology_leaves8.lua
return {
  extends = "gene_ontology_mentions.lua",
  model = { leaves = 8 },
}
