-- graphmert.kg — the extracted knowledge graph kept and shared: a SQLite store (kg.store) and
-- RDF export (kg.rdf).
return {
  store = require "graphmert.kg.store",
  rdf = require "graphmert.kg.rdf",
}
