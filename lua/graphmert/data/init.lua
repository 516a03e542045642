-- graphmert.data — the GraphMERT application's data: WordNet (wordnet.lua), the WordPiece
-- tokenizer (tokenizer.lua), corpora and seed graphs into leafy-chain sequences (corpus.lua),
-- and the training objective's masking (masking.lua). The node layout they share is the
-- library's gm.layout.
return {
  wordnet = require "graphmert.data.wordnet",
  tokenizer = require "graphmert.data.tokenizer",
  corpus = require "graphmert.data.corpus",
  masking = require "graphmert.data.masking",
}
