-- The longer WordNet configuration (wordnet_long.lua: all of WordNet 3.0, hidden 192, 2 layers,
-- 5,000 steps of 16, then the baseline without decay and H-GAT on the same budget) trained for
-- extraction, asking the model what extraction asks it:
--   tail_end = true   masked tails also cover their root's empty leaf slots, labelled [PAD], so
--                     the models learn where a tail ends and the decoder reads a tail up to it;
--   mentions = true   tails also at the other WordNet lemmas mentioned in a gloss (one fact of
--                     the lemma per copy), not only at the gloss's own head;
--   absent = 0.5      half of those roots (and an extra copy of the head, half the time) get a
--                     relation the lemma lacks with an empty tail, so the model can say "none".
-- None of the three is in the official code. docs/extraction.md's and docs/results.md's
-- extraction figures were measured on this run.
--   graphmert experiments/train.lua --config experiments/configs/wordnet_long_extract.lua --out out/wordnet_long_extract
--   graphmert experiments/extract_eval.lua --checkpoint out/wordnet_long_extract --config experiments/configs/wordnet_long_extract.lua --decoding constrained --passages 100
return {
  extends = "wordnet_long.lua",
  tail_end = true,
  mentions = true,
  absent = 0.5,
}
