-- graphmert.data — the GraphMERT application's data: a dataset (corpus, seed graph, entities,
-- relation schema: dataset.lua) from files or from a source (WordNet: wordnet.lua), entity
-- linking (linker.lua), the seed graph's index for extraction and evaluation (seed_graph.lua)
-- with constrained decoding's known tails (tail_list.lua),
-- the WordPiece tokenizer (tokenizer.lua), training records into leafy-chain sequences
-- (corpus.lua), and the training objective's masking (masking.lua). The node layout they share
-- is the library's gm.layout.
return {
  dataset = require "graphmert.data.dataset",
  linker = require "graphmert.data.linker",
  seed_graph = require "graphmert.data.seed_graph",
  tail_list = require "graphmert.data.tail_list",
  wordnet = require "graphmert.data.wordnet",
  tokenizer = require "graphmert.data.tokenizer",
  corpus = require "graphmert.data.corpus",
  masking = require "graphmert.data.masking",
}
