-- gene_ontology_leaves8.lua given the hour on 2 cores that a user may spend, instead of 3.5
-- minutes: twice the layers and seven and a half times the steps. The held-out terms' tail@10
-- rises from 0.26 to 0.54 and GraphMERT alone becomes more precise than GO's string rules; the
-- extraction pipeline on this run is the README's result (docs/results.md, "Triples a user can
-- trust"). 56 minutes of wall time on a 2-core Zen 5 shared with evaluations.
--   graphmert train --config experiments/configs/gene_ontology_hour.lua --out out/gene_ontology_hour
return {
  extends = "gene_ontology_leaves8.lua",
  model = { layers = 4 },
  steps = 30000, warmup = 500,
  eval_every = 10000, checkpoint_every = 1000,
}
