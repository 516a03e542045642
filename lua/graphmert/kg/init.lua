-- graphmert.kg — the extracted knowledge graph kept and shared: a SQLite store (kg.store), RDF
-- export (kg.rdf) and the KG page, a self-contained HTML file to browse and review it (kg.page).
--   kg.read(path, {top = 5}) → the triples of a kg.jsonl file or a kg.sqlite store (its `top`
--     best per head and relation, as kg.jsonl lists them), in kg.jsonl's fields {head, relation,
--     tail, score, count, sources, decoding, head_id, tail_id, seed}; from a store also its
--     passages (id → text), entities (id → {name, type, aliases, seed}) and the run it records
--     (meta: checkpoint, config, dataset, ...). A line that is not a triple is an error
--     "path:line: ...".
--   kg.read_review(path) → the decisions of a review the KG page exported (JSONL: head, head_id,
--     relation, tail, tail_id, verdict = "accept" | "reject"), checked line by line
--   kg.key(t) → one string per triple, the same for a kg.jsonl triple and a review decision about
--     it: head id, relation, tail id (a new tail, which has none, by "new:" and its name)
local cjson = require "cjson"

local M = {
  store = require "graphmert.kg.store",
  rdf = require "graphmert.kg.rdf",
  page = require "graphmert.kg.page",
}

local function read_store(path, top)
  local store = M.store.open(path, { read_only = true })
  local sources, triples, passages, entities = store:sources(), {}, {}, {}
  for _, t in ipairs(store:kg(top)) do
    triples[#triples + 1] = { head = t.head, relation = t.relation, tail = t.tail, score = t.score,
      count = math.tointeger(t.count), sources = sources[t.id] or {}, decoding = t.decoding, head_id = t.head_id,
      tail_id = not t.tail_id:match("^new:") and t.tail_id or nil, seed = t.seed == 1 }
  end
  for _, p in ipairs(store:rows("SELECT id, text FROM passages")) do passages[p.id] = p.text end
  for _, e in ipairs(store:rows("SELECT id, name, type, aliases, seed FROM entities")) do
    local ok, aliases = pcall(cjson.decode, e.aliases or "[]")
    entities[e.id] = { name = e.name, type = e.type, aliases = ok and type(aliases) == "table" and aliases or {}, seed = e.seed == 1 }
  end
  local meta = {}
  for _, m in ipairs(store:rows("SELECT key, value FROM meta")) do meta[m.key] = m.value end
  store:close()
  return triples, passages, entities, meta
end

function M.read(path, opts)
  if path:match("%.sqlite$") then return read_store(path, (opts or {}).top or 5) end
  local f, err = io.open(path, "r")
  if not f then error(err, 0) end
  local triples, n = {}, 0
  for line in f:lines() do
    n = n + 1
    if line:match("%S") then
      local ok, t = pcall(cjson.decode, line)
      if not ok or type(t) ~= "table" or type(t.relation) ~= "string" or type(t.head) ~= "string"
        or type(t.tail) ~= "string" or (t.score ~= nil and type(t.score) ~= "number") then
        f:close()
        error(string.format("%s:%d: not a kg.jsonl triple (head, relation and tail strings, a numeric score)", path, n), 0)
      end
      if t.tail_id == cjson.null then t.tail_id = nil end
      if t.head_id == cjson.null then t.head_id = nil end
      triples[#triples + 1] = t
    end
  end
  f:close()
  return triples
end

function M.key(t)
  local head = t.head_id ~= nil and t.head_id ~= cjson.null and t.head_id or ("new:" .. t.head)
  local tail = t.tail_id ~= nil and t.tail_id ~= cjson.null and t.tail_id or ("new:" .. t.tail)
  return head .. "\t" .. t.relation .. "\t" .. tail
end

function M.read_review(path)
  local f, err = io.open(path, "r")
  if not f then error(err, 0) end
  local decisions, n = {}, 0
  for line in f:lines() do
    n = n + 1
    if line:match("%S") then
      local ok, d = pcall(cjson.decode, line)
      if not ok or type(d) ~= "table" or type(d.head) ~= "string" or type(d.relation) ~= "string" or type(d.tail) ~= "string" then
        f:close()
        error(string.format("%s:%d: not a review decision (head, relation and tail strings, verdict)", path, n), 0)
      end
      if d.verdict ~= "accept" and d.verdict ~= "reject" then
        f:close()
        error(string.format("%s:%d: verdict %s: a decision is \"accept\" or \"reject\"", path, n, cjson.encode(d.verdict)), 0)
      end
      decisions[#decisions + 1] = d
    end
  end
  f:close()
  return decisions
end

return M
