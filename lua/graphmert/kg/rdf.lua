-- rdf.lua — a knowledge-graph store (kg.store) as RDF, for rdflib, Apache Jena and triple stores:
-- N-Triples or Turtle, written atomically.
--
-- IRIs are stable and built under a base IRI the user gives (default http://example.org/kg/):
--   entity   <base>entity/<id>      the dataset's own id kept (GO:0006096 stays GO:0006096; a tail
--                                   open decoding named is new:<name>)
--   relation <base>relation/<name>  used as the property of the extracted triples
--   passage  <base>passage/<id>
-- In an IRI, characters outside RFC 3987's unreserved set, sub-delimiters, ':' and '@' are
-- percent-encoded as UTF-8 bytes (a space is %20, '#' is %23, '"' is %22); letters beyond
-- ASCII stay as they are, as IRIs allow. Every entity has an rdfs:label (its name) and, with a
-- type, <base>type/<type> as rdf:type. Each extracted triple is stated plainly and, to carry its
-- score, passage count, seed flag and evidence, as a reified statement (rdf:Statement with
-- rdf:subject/predicate/object; IRI <base>statement/<n>) — standard RDF 1.1, which every parser
-- reads, where RDF-star is not yet (Debian 12's raptor 2.0.15 does not parse it):
--   gm:score (xsd:double), gm:count (xsd:integer), gm:seed (xsd:boolean), gm:evidence <passage>
-- with gm: = <base>vocab#. Each passage that is evidence has its id as rdfs:label, gm:text,
-- gm:line (xsd:integer, its line in the input) and gm:corpus (the input file), so that a triple's
-- provenance is in the graph itself. A base that does not end in / or : gets a /; one holding '#' is an error.
--   rdf.export(store, path, {format = "ntriples" | "turtle", base = "http://..."}) → triples written
local gm = require "graphmert"

local M = {}

local RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
local RDFS = "http://www.w3.org/2000/01/rdf-schema#"
local XSD = "http://www.w3.org/2001/XMLSchema#"

-- an IRI path segment: unreserved, sub-delims, ':' and '@' and non-ASCII bytes kept
local function segment(s)
  return (tostring(s):gsub("[^%w%-%._~!%$&'%(%)%*%+,;=:@\128-\255]", function(c) return string.format("%%%02X", c:byte()) end))
end

-- an N-Triples / Turtle string literal
local function literal(s)
  return '"' .. tostring(s):gsub('[\\"\n\r]', { ["\\"] = "\\\\", ['"'] = '\\"', ["\n"] = "\\n", ["\r"] = "\\r" }) .. '"'
end

local function check_base(base)
  if type(base) ~= "string" or not base:match("^[%a][%w+.-]*:[^%s<>\"{}|\\^`]*$") then
    error("rdf.export: base must be an absolute IRI without spaces or <>\"{}|\\^` (e.g. http://example.org/kg/), got " ..
      tostring(base), 3)
  end
  if base:find("#", 1, true) then -- the vocabulary's terms are <base>vocab#name: one fragment only
    error("rdf.export: base cannot hold '#' (the vocabulary is <base>vocab#score, ...; end it with / or :), got " .. base, 3)
  end
  if not base:match("[/:]$") then base = base .. "/" end
  return base
end

function M.export(store, path, opts)
  opts = opts or {}
  local format = opts.format or (path:match("%.ttl$") and "turtle" or "ntriples")
  if format ~= "ntriples" and format ~= "turtle" then error("rdf.export: format must be ntriples or turtle, got " .. tostring(format), 2) end
  local base = check_base(opts.base or "http://example.org/kg/")
  local vocab = base .. "vocab#"
  local function iri(s) return "<" .. s .. ">" end
  local function entity(id) return iri(base .. "entity/" .. segment(id)) end
  local out, n = {}, 0
  local function emit(s, p, o)
    out[#out + 1] = s .. " " .. p .. " " .. o .. " .\n"
    n = n + 1
  end
  if format == "turtle" then
    out[1] = "# a graphmert knowledge graph (" .. store.path:match("[^/]*$") .. "); see lua/graphmert/kg/rdf.lua\n"
  end
  local a, label = iri(RDF .. "type"), iri(RDFS .. "label")
  for _, e in ipairs(store:rows("SELECT id, name, type FROM entities WHERE id IN (SELECT head FROM triples) OR id IN (SELECT tail FROM triples) ORDER BY id")) do
    emit(entity(e.id), label, literal(e.name))
    if e.type and e.type ~= "" then emit(entity(e.id), a, iri(base .. "type/" .. segment(e.type))) end
  end
  for _, r in ipairs(store:rows("SELECT name FROM relations ORDER BY name")) do
    emit(iri(base .. "relation/" .. segment(r.name)), a, iri(RDF .. "Property"))
    emit(iri(base .. "relation/" .. segment(r.name)), label, literal(r.name))
  end
  local evidence = store:sources()
  for _, t in ipairs(store:rows("SELECT id, head, relation, tail, score, count, seed FROM triples ORDER BY id")) do
    local s, p, o = entity(t.head), iri(base .. "relation/" .. segment(t.relation)), entity(t.tail)
    emit(s, p, o)
    local st = iri(base .. "statement/" .. math.tointeger(t.id))
    emit(st, a, iri(RDF .. "Statement"))
    emit(st, iri(RDF .. "subject"), s)
    emit(st, iri(RDF .. "predicate"), p)
    emit(st, iri(RDF .. "object"), o)
    emit(st, iri(vocab .. "score"), literal(string.format("%.17g", t.score)) .. "^^" .. iri(XSD .. "double"))
    emit(st, iri(vocab .. "count"), literal(math.tointeger(t.count)) .. "^^" .. iri(XSD .. "integer"))
    emit(st, iri(vocab .. "seed"), literal(t.seed == 1 and "true" or "false") .. "^^" .. iri(XSD .. "boolean"))
    for _, pid in ipairs(evidence[t.id] or {}) do emit(st, iri(vocab .. "evidence"), iri(base .. "passage/" .. segment(pid))) end
  end
  for _, p in ipairs(store:rows("SELECT id, source, line, text FROM passages WHERE id IN (SELECT passage FROM evidence) ORDER BY line, id")) do
    local node = iri(base .. "passage/" .. segment(p.id))
    emit(node, label, literal(p.id))
    emit(node, iri(vocab .. "text"), literal(p.text))
    if math.tointeger(p.line) then emit(node, iri(vocab .. "line"), literal(math.tointeger(p.line)) .. "^^" .. iri(XSD .. "integer")) end
    if p.source then emit(node, iri(vocab .. "corpus"), literal(p.source)) end
  end
  local ok, err = gm.write_atomic(path, out)
  if not ok then error("rdf.export: " .. err, 2) end
  return n
end

return M
