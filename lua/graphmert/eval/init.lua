-- graphmert.eval — the GraphMERT application's evaluation: tail prediction on held-out triples
-- with the most-frequent-tail baseline (tail_prediction.lua), and triple extraction from new
-- text scored against the seed graph (extract.lua), multi-token tail decoding (decode.lua), bootstrap
-- intervals (stats.lua), ranking by a system's own score (ranking.lua), triples the seed graph
-- implies along its subsumption relation (implied.lua), attention mass and learned decay by graph
-- distance (attention_by_distance.lua).
local tails = require "graphmert.eval.tail_prediction"
return {
  tail_prediction = tails.tail_prediction,
  most_frequent_tail = tails.most_frequent_tail,
  tails_by_frequency = tails.tails_by_frequency,
  extract = require "graphmert.eval.extract",
  decode = require("graphmert.eval.decode").decode,
  stats = require "graphmert.eval.stats",
  ranking = require "graphmert.eval.ranking",
  implied = require "graphmert.eval.implied",
  attention_by_distance = require("graphmert.eval.attention_by_distance").attention_by_distance,
  decay_by_distance = require("graphmert.eval.attention_by_distance").decay_by_distance,
}
