-- graphmert.kg — the extracted knowledge graph kept and shared: a SQLite store (kg.store), RDF
-- export (kg.rdf), the KG page, a self-contained HTML file to browse and review it (kg.page), the
-- merge of extracted triples (kg.merge), the rule extractor (kg.rules), and what makes scores
-- probabilities: the relation prior (kg.relation_prior), candidates from every source
-- (kg.candidates) and the reranker (kg.reranker).
--   kg.read(path, {top = 5}) → the triples of a kg.jsonl file or a kg.sqlite store (its `top`
--     best per head and relation, as kg.jsonl lists them), in kg.jsonl's fields {head, relation,
--     tail, score, model_score, count, sources, decoding, head_id, tail_id, seed}; from a store also its
--     passages (id → text), entities (id → {name, type, aliases, seed}) and the run it records
--     (meta: checkpoint, config, dataset, ..., and corpus: the file of its passages, when one), and
--     the lines of its passages whose id is a JSONL record's own (id → line). A line that is not
--     a triple is an error "path:line: ...".
--   kg.read_review(path) → the decisions of a review the KG page exported (JSONL: head, head_id,
--     relation, tail, tail_id, verdict = "accept" | "reject"), checked line by line
--   kg.jsonl_line(t), kg.tsv_line(t), kg.TSV_HEADER → a triple as kg.jsonl and kg.tsv write it
--     (the fields in kg.FIELDS' order; tsv: head relation tail score count decoding head_id tail_id
--     seed), for every writer of the two files
--   kg.key(t) → one string per triple, the same for a kg.jsonl triple and a review decision about
--     it: head id, relation, tail id (a new tail, which has none, by "new:" and its name)
local cjson = require "cjson"
local json = require "graphmert.json"
local lines = require("graphmert.data.corpus").lines

local M = {
  store = require "graphmert.kg.store",
  rdf = require "graphmert.kg.rdf",
  page = require "graphmert.kg.page",
  merge = require "graphmert.kg.merge",
  rules = require "graphmert.kg.rules",
  relation_prior = require "graphmert.kg.relation_prior",
  candidates = require "graphmert.kg.candidates",
  reranker = require "graphmert.kg.reranker",
}

local function read_store(path, top)
  local store = M.store.open(path, { read_only = true })
  local triples, passages, entities, lines = store:kg(top), {}, {}, {}
  for _, p in ipairs(store:rows("SELECT id, line, text FROM passages")) do
    passages[p.id] = p.text
    local line = math.tointeger(p.line)
    if line and p.id ~= tostring(line) then lines[p.id] = line end
  end
  for _, e in ipairs(store:rows("SELECT id, name, type, aliases, seed FROM entities")) do
    local ok, aliases = pcall(cjson.decode, e.aliases or "[]")
    entities[e.id] = { name = e.name, type = e.type, aliases = ok and type(aliases) == "table" and aliases or {}, seed = e.seed == 1 }
  end
  local meta = {}
  for _, m in ipairs(store:rows("SELECT key, value FROM meta")) do meta[m.key] = m.value end
  local corpora = store:rows("SELECT DISTINCT source FROM passages LIMIT 2")
  if #corpora == 1 then meta.corpus = corpora[1].source end -- the file its passages' lines are of
  store:close()
  return triples, passages, entities, meta, lines
end

local function is_id(x) return x == nil or x == cjson.null or type(x) == "string" end
local function finite(x) return type(x) == "number" and x == x and x > -math.huge and x < math.huge end

-- what is wrong with a kg.jsonl record, or nil
local function triple_problem(t)
  if type(t) ~= "table" or type(t.head) ~= "string" or type(t.relation) ~= "string" or type(t.tail) ~= "string" then
    return "not a kg.jsonl triple (head, relation and tail strings)"
  end
  local by_rule = type(t.decoding) == "string" and t.decoding:match("^rule:")
  if by_rule and not (finite(t.score) and t.score >= 0 and t.score <= 1) then
    return "the score of a rule's triple is not its rule's precision (a number from 0 to 1)"
  end
  local calibrated = t.decoding == M.CALIBRATED
  if calibrated and not (finite(t.score) and t.score >= 0 and t.score <= 1) then
    return "the score of a calibrated triple is not a probability (a number from 0 to 1)"
  end
  if not by_rule and not calibrated and (not finite(t.score) or t.score > 0) then
    return "the score is not a mean log-probability (a finite number <= 0)"
  end
  if t.model_score ~= nil and (not finite(t.model_score) or t.model_score > 0) then
    return "model_score is not a mean log-probability (a finite number <= 0)"
  end
  if t.count ~= nil and not (type(t.count) == "number" and math.tointeger(t.count) and t.count >= 1) then return "count is not a number of passages (an integer >= 1)" end
  if not is_id(t.head_id) or not is_id(t.tail_id) then return "head_id and tail_id are strings (or absent)" end
  if t.sources ~= nil then
    if type(t.sources) ~= "table" then return "sources is not a list of passage ids" end
    for _, s in ipairs(t.sources) do
      if type(s) ~= "string" and not math.tointeger(s) then return "sources is not a list of passage ids" end
    end
  end
end

-- the records of a JSONL file, each checked by problem(record, line) → what is wrong with it, or nil
local function read_jsonl(path, problem)
  local records = {}
  for n, line in lines(path) do
    local ok, record = pcall(cjson.decode, line)
    local wrong = not ok and "not JSON" or problem(record, n)
    if wrong then error(string.format("%s:%d: %s", path, n, wrong), 0) end
    records[#records + 1] = record
  end
  return records
end

function M.read(path, opts)
  if path:match("%.sqlite$") then return read_store(path, (opts or {}).top or 5) end
  if path:match("%.tsv$") then
    error(path .. ": kg.tsv is for people to read; give the kg.jsonl beside it (or a kg.sqlite store)", 0)
  end
  local seen = {} -- a triple twice (two files put together) would count twice
  local triples = read_jsonl(path, function(t, n)
    local wrong = triple_problem(t)
    if wrong then return wrong end
    local key = M.key(t)
    if seen[key] then return string.format("the triple of line %d again (%s / %s / %s)", seen[key], t.head, t.relation, t.tail) end
    seen[key] = n
  end)
  for _, t in ipairs(triples) do
    if t.tail_id == cjson.null then t.tail_id = nil end
    if t.head_id == cjson.null then t.head_id = nil end
  end
  return triples
end

-- the decoding of a triple whose score is the reranker's probability that it holds
-- (graphmert.kg.reranker); its model_score is the model's mean log-probability per slot
M.CALIBRATED = require("graphmert.kg.reranker").CALIBRATED
-- the decoding of an open-decoded triple whose tail names an entity of a type the schema does
-- not let the relation reach from its head's type: kept, and flagged for the reviewer
M.OUTSIDE_SCHEMA = "open, outside the schema"

M.FIELDS = { "head", "relation", "tail", "score", "model_score", "count", "sources", "decoding", "head_id", "tail_id", "seed" }
M.TSV_HEADER = "head\trelation\ttail\tscore\tcount\tdecoding\thead_id\ttail_id\tseed\n"

function M.jsonl_line(t) return json.object(t, M.FIELDS) .. "\n" end

-- a TSV field: a tab or a line break in a name (a dataset may have one) would split the row
local function field(s) return (tostring(s):gsub("[\t\r\n]", " ")) end

function M.tsv_line(t)
  return string.format("%s\t%s\t%s\t%.6f\t%d\t%s\t%s\t%s\t%s\n", field(t.head), field(t.relation), field(t.tail), t.score,
    t.count, field(t.decoding), field(t.head_id or ""), field(t.tail_id or ""), t.seed)
end

function M.key(t)
  local head, tail = require("graphmert.kg.entity_ids").of(t)
  return head .. "\t" .. t.relation .. "\t" .. tail
end

local function decision_problem(d)
  if type(d) ~= "table" or type(d.head) ~= "string" or type(d.relation) ~= "string" or type(d.tail) ~= "string"
    or not is_id(d.head_id) or not is_id(d.tail_id) then
    return "not a review decision (head, relation and tail strings, string ids, verdict)"
  end
  if d.verdict ~= "accept" and d.verdict ~= "reject" then
    return string.format("verdict %s: a decision is \"accept\" or \"reject\"", cjson.encode(d.verdict))
  end
end

function M.read_review(path) return read_jsonl(path, decision_problem) end

return M
