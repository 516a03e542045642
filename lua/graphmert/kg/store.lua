-- store.lua — a knowledge graph kept in SQLite (kg.sqlite): what extraction writes as it goes,
-- and what the KG page, the evaluation and users (the sqlite3 command line, Python, R) read.
-- Through Lua DBI (Debian's lua-dbi-sqlite3: prepared statements with bound values over the
-- system's libsqlite3, so a name with quotes is data, never SQL; nothing to build or link).
--
-- Tables, schema version 2 (meta.schema_version; a version-1 store, which had no model_score, is
-- upgraded in place when opened for writing, and read as one whose model scores are unknown):
--   meta(key, value)        the run: checkpoint, config, model (JSON), dataset, created, extraction
--                           (JSON: the input and the options that decide a passage's triples)
--   entities(id, name, type, aliases, seed)   aliases a JSON array; seed 1 for the seed graph's
--                           entities, 0 for a tail open decoding named (id "new:<name>")
--   relations(name, head_types, tail_types)   JSON arrays of types, or "*"
--   triples(id, head, relation, tail, score, model_score, count, decoding, seed)   one row per
--                           distinct triple: score the best over its passages (mean log-probability
--                           per decoded slot, or with a reranker the probability that it holds),
--                           model_score the model's own at that best passage (NULL without a
--                           reranker, or for a tail the model could not score), count its passages,
--                           seed whether the seed graph holds it
--   passages(id, source, line, text)          each passage extraction finished: id a JSONL
--                           record's "id", else its line number (as text)
--   evidence(triple, passage, score, model_score, head_start, head_end)   where a triple was
--                           read: the passage, its scores there, the character span of the passage's first
--                           mention of the head (0-based, end exclusive; NULL: none given)
-- Indexes serve the lookups: triples by head, tail, relation and score, evidence by passage.
-- Writes go in transactions, one per batch of passages, with the WAL journal: a killed run
-- leaves a valid store of whole passages, and a re-run skips the passages it holds.
--
--   store.open(path, {create = true}) → Store   (a missing file is created only with create)
--   s:begin_run(meta)       records the run, or checks a re-run is the same run (checkpoint, model,
--                           extraction)
--   s:add_seed_graph(ds)    the dataset's entities and relation schema (a Dataset)
--   s:done(ids)             → set of those passage ids (as strings) already stored
--   s:add_passage(p, triples)   p = {id, source, line, text}; triples as extract.lua names them
--                           ({head, head_id, relation, tail, tail_id, score, decoding, seed, span})
--   s:commit()              ends the current batch; s:close()
--   s:triples_of(entity)    triples with the entity (an id or a name) as head or tail, best first
--   s:top(relation, k)      the relation's k best triples
--   s:evidence(head, relation, tail)   the passages of a triple (ids), best first
--   s:kg(top)               the top triples per (head, relation), as kg.jsonl records, best first
--   s:listed(top)           → how many triples s:kg(top) gives (a kg.jsonl's lines), without reading them
--   s:sources(numbered)     triple id → the ids of its passages
--   s:count(table)          rows of a table
local DBI = require "DBI"
local cjson = require "cjson"
local json = require "graphmert.json"
local gm = require "graphmert"
local type_list = require("graphmert.data.seed_graph").type_list
local entity_ids = require "graphmert.kg.entity_ids"

local M = {}
M.SCHEMA_VERSION = 2

local Store = {}
Store.__index = Store

local SCHEMA = {
  "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)",
  "CREATE TABLE entities (id TEXT PRIMARY KEY, name TEXT NOT NULL, type TEXT, aliases TEXT, seed INTEGER NOT NULL)",
  "CREATE TABLE relations (name TEXT PRIMARY KEY, head_types TEXT, tail_types TEXT)",
  "CREATE TABLE triples (id INTEGER PRIMARY KEY, head TEXT NOT NULL REFERENCES entities(id), " ..
    "relation TEXT NOT NULL REFERENCES relations(name), tail TEXT NOT NULL REFERENCES entities(id), " ..
    "score REAL NOT NULL, model_score REAL, count INTEGER NOT NULL, decoding TEXT, seed INTEGER NOT NULL, " ..
    "UNIQUE (head, relation, tail))",
  "CREATE TABLE passages (id TEXT PRIMARY KEY, source TEXT, line INTEGER, text TEXT)",
  "CREATE TABLE evidence (triple INTEGER NOT NULL REFERENCES triples(id), passage TEXT NOT NULL REFERENCES passages(id), " ..
    "score REAL NOT NULL, model_score REAL, head_start INTEGER, head_end INTEGER, PRIMARY KEY (triple, passage))",
  "CREATE INDEX triples_by_head ON triples (head)",
  "CREATE INDEX triples_by_tail ON triples (tail)",
  "CREATE INDEX triples_by_relation ON triples (relation, score DESC)",
  "CREATE INDEX triples_by_score ON triples (score DESC)",
  "CREATE INDEX evidence_by_passage ON evidence (passage)",
}

-- a store's problems (a full disk, another schema, a file that is no store) are errors of kind
-- "store": one line, no traceback
local function fail(path, msg) require("graphmert.errors").raise("store", string.format("store %s: %s", path, msg)) end

-- sql run with values bound → the statement, or an error naming the store
local function execute(self, sql, ...)
  local st, err = self.db:prepare(sql)
  if not st then fail(self.path, tostring(err)) end
  local ok, e = st:execute(...)
  if not ok then
    st:close()
    fail(self.path, tostring(e))
  end
  return st
end

-- sql run for its effect (the statement finished at once: an open one would hold the database)
function Store:run(sql, ...) execute(self, sql, ...):close() end

function Store:rows(sql, ...)
  local st, out = execute(self, sql, ...), {}
  for row in st:rows(true) do
    local copy = {}
    for k, v in pairs(row) do copy[k] = v end
    out[#out + 1] = copy
  end
  st:close()
  return out
end

function Store:value(sql, ...)
  local row = self:rows(sql, ...)[1]
  if not row then return nil end
  local _, v = next(row)
  return v
end

function M.open(path, opts)
  opts = opts or {}
  if type(path) ~= "string" then error("store.open: a path expected", 2) end
  local info = gm.stat(path)
  if info and info.type ~= "file" then fail(path, "is a " .. info.type .. ", not a store") end
  if not info and not opts.create then fail(path, "No such file or directory") end
  if info then -- a file that is not SQLite is refused before SQLite writes to it
    local head = gm.read_file(path, 0, math.min(16, info.size))
    if info.size > 0 and head ~= "SQLite format 3\0" then fail(path, "not a SQLite database") end
  end
  local db, err = DBI.Connect("SQLite3", path)
  if not db then fail(path, tostring(err)) end
  local self = setmetatable({ db = db, path = path, in_batch = false, writing = not opts.read_only }, Store)
  -- the driver starts in a transaction of its own; the store runs BEGIN and COMMIT itself, so that
  -- the journal mode is set outside one and a failed commit reports SQLite's own reason
  db:autocommit(true)
  self:run("PRAGMA busy_timeout = 5000")
  local tables = self:value("SELECT count(*) FROM sqlite_master WHERE type = 'table'")
  if tables == 0 then
    if opts.read_only then fail(path, "an empty database, not a store") end
    self:run("PRAGMA journal_mode = WAL")
    self:begin()
    for _, sql in ipairs(SCHEMA) do self:run(sql) end
    self:run("INSERT INTO meta (key, value) VALUES ('schema_version', ?)", tostring(M.SCHEMA_VERSION))
    self:commit()
  else
    local has_meta = self:value("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'") == 1
    local version = has_meta and self:value("SELECT value FROM meta WHERE key = 'schema_version'")
    if tonumber(version) == 1 then self:upgrade(opts.read_only) version = M.SCHEMA_VERSION end
    if tonumber(version) ~= M.SCHEMA_VERSION then
      db:close()
      fail(path, string.format("a store of schema version %s; this graphmert reads version %d", tostring(version or "none"),
        M.SCHEMA_VERSION))
    end
    self:run("PRAGMA journal_mode = WAL")
  end
  return self
end

-- Version 1 → 2: the model_score columns, added in place (one transaction) for a store that will
-- be written; read only, the file is left as it is and temporary views (SQLite's temp schema,
-- never written to the file) give the two tables the column, NULL, under their own names.
function Store:upgrade(read_only)
  if read_only then
    for _, tbl in ipairs { "triples", "evidence" } do
      self:run("CREATE TEMP VIEW " .. tbl .. " AS SELECT *, NULL AS model_score FROM main." .. tbl)
    end
    return
  end
  self:begin()
  -- (another run may have upgraded it since the version was read: read it again in the transaction)
  if tonumber(self:value("SELECT value FROM meta WHERE key = 'schema_version'")) == M.SCHEMA_VERSION then
    self:commit()
    return
  end
  self:run("ALTER TABLE triples ADD COLUMN model_score REAL")
  self:run("ALTER TABLE evidence ADD COLUMN model_score REAL")
  self:run("UPDATE meta SET value = ? WHERE key = 'schema_version'", tostring(M.SCHEMA_VERSION))
  self:commit()
end

-- a batch's transaction, opened by its first write
function Store:begin()
  if not self.in_batch then
    self:run("BEGIN IMMEDIATE")
    self.in_batch = true
  end
end

-- ends the batch (nothing to do when nothing was written since the last one)
function Store:commit()
  if not self.in_batch then return end
  self.in_batch = false
  local ok, err = pcall(self.run, self, "COMMIT")
  if not ok then
    pcall(self.run, self, "ROLLBACK") -- SQLite may have rolled back already
    fail(self.path, "the batch could not be committed (" .. tostring(err):gsub("^store [^:]*: ", "") ..
      "); the store keeps what was committed before")
  end
end

-- A writer's close copies the write-ahead log into the store (a checkpoint) and fails when it
-- cannot (a full disk): the store is then whole only with its -wal file beside it, and a copy of
-- kg.sqlite alone would be damaged. (Another connection reading it only delays the copy: said.)
function Store:close()
  if not self.db then return end
  self:commit()
  local ok, err = true, nil
  if self.writing then
    local done, result = pcall(self.rows, self, "PRAGMA wal_checkpoint(TRUNCATE)")
    if not done then ok, err = false, result
    elseif math.tointeger(result[1] and result[1].busy) == 1 then -- a reader: whole, copied at a later open
      io.stderr:write(string.format("store %s: another connection is reading it: its last commits stay in %s-wal " ..
        "until a later open copies them (keep the two files together)\n", self.path, self.path))
    end
  end
  self.db:close()
  self.db = nil
  if not ok then
    fail(self.path, string.format("its last commits are in %s-wal, which could not be copied into it (%s): keep the two " ..
      "files together (%s alone lacks them); the next open of the store, once there is room, copies them", self.path,
      tostring(err):gsub("^store [^:]*: ", ""), self.path))
  end
end

-- the run: written once; a re-run must be the same checkpoint and model, and the same extraction
-- (input and options, meta.extraction), since the passages it holds are not asked again (a store
-- from before it was recorded takes this one's)
function Store:begin_run(meta)
  local old = self:rows("SELECT key, value FROM meta")
  local have = {}
  for _, r in ipairs(old) do have[r.key] = r.value end
  if have.checkpoint then
    for _, key in ipairs { "checkpoint", "model" } do
      if have[key] ~= meta[key] then
        local what = key == "checkpoint" and have[key] == "" and "rules, --extractor rules" or (key .. " " .. have[key])
        fail(self.path, string.format("holds the extraction of another run (%s); name a new store", what))
      end
    end
    local function extractor(s)
      local ok, t = pcall(cjson.decode, s or "")
      return ok and type(t) == "table" and t.extractor or nil
    end
    if have.extraction and meta.extraction and extractor(have.extraction) ~= extractor(meta.extraction) then
      fail(self.path, "holds passages extracted by an earlier graphmert, which found or placed heads otherwise: its passages would "
        .. "not be asked again; name a new store")
    elseif have.extraction and meta.extraction and have.extraction ~= meta.extraction then
      fail(self.path, string.format("holds an extraction with other input or options (%s): its passages would not be "
        .. "asked again; name a new store", table.concat(json.differences(have.extraction, meta.extraction), "; ")))
    elseif meta.extraction and not have.extraction then
      self:begin()
      self:run("INSERT INTO meta (key, value) VALUES ('extraction', ?)", meta.extraction)
      self:commit()
    end
    return
  end
  self:begin()
  for key, value in pairs(meta) do self:run("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", key, tostring(value)) end
  self:commit()
end

local function types_json(set)
  local list = type_list(set)
  return list == "*" and list or cjson.encode(list)
end

local function aliases_json(aliases)
  local parts = {}
  for i, a in ipairs(aliases or {}) do parts[i] = cjson.encode(a) end
  return "[" .. table.concat(parts, ",") .. "]"
end

function Store:add_seed_graph(ds)
  self:begin()
  local ent = self.db:prepare("INSERT OR IGNORE INTO entities (id, name, type, aliases, seed) VALUES (?, ?, ?, ?, 1)")
  for _, id in ipairs(ds.entity_order) do
    local e = ds.entities[id]
    local ok, err = ent:execute(e.id, e.name, e.type, aliases_json(e.aliases))
    if not ok then fail(self.path, tostring(err)) end
  end
  ent:close()
  for _, name in ipairs(ds.relation_names) do
    local s = ds.schema[name]
    self:run("INSERT OR IGNORE INTO relations (name, head_types, tail_types) VALUES (?, ?, ?)", name, types_json(s.head),
      types_json(s.tail))
  end
  self:commit()
end

function Store:done(ids)
  local set = {}
  for _, id in ipairs(ids) do
    if self:value("SELECT 1 FROM passages WHERE id = ?", tostring(id)) then set[tostring(id)] = true end
  end
  return set
end

-- A passage and its triples, in the current batch's transaction.
function Store:add_passage(p, triples)
  self:begin()
  local added, err = pcall(self.run, self, "INSERT INTO passages (id, source, line, text) VALUES (?, ?, ?, ?)", tostring(p.id),
    p.source, p.line, p.text)
  if not added and tostring(err):find("UNIQUE constraint failed: passages.id", 1, true) then
    -- (a passage done() did not hold when the chunk began: another run is writing the same store)
    fail(self.path, string.format("passage %s was added meanwhile: another graphmert extract is writing this store; " ..
      "one run at a time: let it end, then run again to continue", tostring(p.id)))
  end
  if not added then error(err, 0) end
  for _, t in ipairs(triples) do
    if not t.head_id then error("add_passage: a triple without head_id (heads are seed-graph entities)", 2) end
    local _, tail_id = entity_ids.of(t)
    if not t.tail_id then
      self:run("INSERT OR IGNORE INTO entities (id, name, type, aliases, seed) VALUES (?, ?, NULL, '[]', 0)", tail_id, t.tail)
    end
    -- (the model's score goes with the best score: SET reads the row as it was)
    self:run("INSERT INTO triples (head, relation, tail, score, model_score, count, decoding, seed) VALUES (?, ?, ?, ?, ?, 1, ?, ?) " ..
      "ON CONFLICT (head, relation, tail) DO UPDATE SET score = max(score, excluded.score), " ..
      "model_score = CASE WHEN excluded.score > score THEN excluded.model_score ELSE model_score END, count = count + 1",
      t.head_id, t.relation, tail_id, t.score, t.model_score, t.decoding, t.seed and 1 or 0)
    local id = self:value("SELECT id FROM triples WHERE head = ? AND relation = ? AND tail = ?", t.head_id, t.relation, tail_id)
    local span = t.span or {}
    self:run("INSERT INTO evidence (triple, passage, score, model_score, head_start, head_end) VALUES (?, ?, ?, ?, ?, ?)", id,
      tostring(p.id), t.score, t.model_score, span[1], span[2])
  end
end

local TRIPLE = "SELECT t.id, t.head AS head_id, h.name AS head, t.relation, t.tail AS tail_id, e.name AS tail, t.score, t.model_score, " ..
  "t.count, t.decoding, t.seed FROM triples t JOIN entities h ON h.id = t.head JOIN entities e ON e.id = t.tail "

function Store:triples_of(entity, limit)
  local id = self:value("SELECT id FROM entities WHERE id = ?", entity) or
    self:value("SELECT id FROM entities WHERE name = ? ORDER BY seed DESC, id LIMIT 1", entity)
  if not id then return {} end
  return self:rows(TRIPLE .. "WHERE t.head = ? OR t.tail = ? ORDER BY t.score DESC, t.count DESC LIMIT ?", id, id, limit or -1)
end

function Store:top(relation, k)
  return self:rows(TRIPLE .. "WHERE t.relation = ? ORDER BY t.score DESC, t.count DESC LIMIT ?", relation, k or 10)
end

function Store:evidence(head, relation, tail)
  return self:rows("SELECT v.passage, p.source, p.line, p.text, v.score, v.model_score, v.head_start, v.head_end FROM evidence v " ..
    "JOIN triples t ON t.id = v.triple JOIN passages p ON p.id = v.passage " ..
    "WHERE t.head = ? AND t.relation = ? AND t.tail = ? ORDER BY v.score DESC", head, relation, tail)
end

-- triple id → its passages' ids, in passage-line order (as text; `numbered` = true: a passage
-- whose id is its line number as a number, as extract gives it in kg.jsonl)
function Store:sources(numbered)
  local out = {}
  for _, v in ipairs(self:rows("SELECT v.triple, v.passage, p.line FROM evidence v JOIN passages p ON p.id = v.passage " ..
    "ORDER BY v.triple, p.line, v.passage")) do
    local list = out[v.triple] or {}
    out[v.triple] = list
    local line = math.tointeger(v.line)
    list[#list + 1] = numbered and line and v.passage == tostring(line) and line or v.passage
  end
  return out
end

-- a triple's rank within its (head, relation): score, then count, then first stored (the merge's
-- first seen: passages are stored in input order)
local RANK = "row_number() OVER (PARTITION BY t.head, t.relation ORDER BY t.score DESC, t.count DESC, t.id) AS rank"

-- kg.jsonl's view: per (head, relation), the `top` best triples, as kg.jsonl records in its order
-- (best first, as graphmert.kg.merge: score, count, first stored; a new tail has no tail_id;
-- sources in passage-line order)
function Store:kg(top)
  local sources, out = self:sources(true), {}
  local rows = self:rows("SELECT * FROM (" .. TRIPLE:gsub("^SELECT ", "SELECT " .. RANK .. ", ") .. ") WHERE rank <= ? " ..
    "ORDER BY score DESC, count DESC, id", top or 5)
  for i, t in ipairs(rows) do
    out[i] = { head = t.head, relation = t.relation, tail = t.tail, score = t.score, model_score = t.model_score,
      count = math.tointeger(t.count),
      sources = sources[t.id] or {}, decoding = t.decoding, head_id = t.head_id,
      tail_id = not t.tail_id:match("^new:") and t.tail_id or nil, seed = t.seed == 1 }
  end
  return out
end

function Store:listed(top)
  return self:value("SELECT count(*) FROM (SELECT " .. RANK .. " FROM triples t) WHERE rank <= ?", top or 5)
end

function Store:count(tbl)
  local known = { entities = true, relations = true, triples = true, passages = true, evidence = true }
  if not known[tbl] then error("count: no table " .. tostring(tbl), 2) end
  return self:value("SELECT count(*) FROM " .. tbl)
end

return M
