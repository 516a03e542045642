-- The README's longer configuration (wordnet_long.lua: all of WordNet 3.0, hidden 192, 2 layers,
-- 5,000 steps of 16, then the baseline without decay and H-GAT on the same budget) with
-- tail_end = true, so the models learn where a tail ends (masked tails also cover their root's
-- empty leaf slots, labelled [PAD]) and the extraction decoder reads each tail up to it. The
-- README's extraction evaluation ran on this run.
--   graphmert experiments/train.lua --config experiments/configs/wordnet_long_extract.lua --out out/wordnet_long_extract
--   graphmert experiments/extract_eval.lua --checkpoint out/wordnet_long_extract --decoding constrained
return {
  extends = "wordnet_long.lua",
  tail_end = true,          -- learn where a tail ends (not in the official code)
}
