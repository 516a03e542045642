-- merge.lua — extracted triples into a knowledge graph: one entry per (head, relation, tail),
-- with the passages that support it, and the best few tails per (head, relation). Heads and
-- tails are told apart by id, as a store tells them (gm.kg.key): two entities of one name stay
-- two; a tail without an id (a new one open decoding wrote) by its name.
--
--   merger({top = 5, min_score, disk = path}) → m: m:add(t) takes one extracted triple {head,
--     relation, tail, score, source, tokens, decoding, head_id, tail_id}; m:each() then gives the
--     merged entries one by one, m:result() all of them in a list (either once, on disk); m:close()
--     ends it (also as a to-be-closed variable, or when collected: the scratch file goes).
--   merge(triples, opts) → merger(opts) fed the list → its result.
--
-- The rule, whichever way it is kept:
--   - a self-loop (tail = head once case and accents are folded), a tail without a letter or of
--     function words only ("the", "of the": gm.data.linker's stop words), and a triple scoring
--     below min_score are dropped;
--   - an entry's score is its best, count the number of distinct sources, sources their ids in
--     the order first seen; tail, tokens, decoding and the ids are its first triple's, the head's
--     name its group's first triple's;
--   - of each (head, relation) the `top` entries are kept by score, then count, then first seen
--     (so equal entries keep the order they came in), and they come best first by the same
--     order over the whole graph (kg.jsonl's and kg.tsv's line order).
-- In memory by default. With disk = path the entries live in a scratch SQLite file there (removed
-- by close, and replaced if a killed run left one), so a corpus's graph is merged in a memory that
-- does not grow with it; both ways give the same entries.
local linker = require "graphmert.data.linker"
local normalize = linker.normalize
local ids = require("graphmert.kg.entity_ids").of

local M = {}

-- a tail of function words only ("the", "of the"): no entity, as a lone one is no mention
local function function_words(text)
  for w in normalize(text):gmatch("%S+") do
    if not linker.english_stopwords[w] then return false end
  end
  return true
end

local function kept(t, min_score)
  return t.tail:match("%a") and not function_words(t.tail) and normalize(t.tail) ~= normalize(t.head)
    and not (min_score and t.score < min_score)
end

local function entry(e, sources)
  return { head = e.head, relation = e.relation, tail = e.tail, tokens = e.tokens, score = e.score,
    model_score = e.model_score, count = e.count, sources = sources, decoding = e.decoding, head_id = e.head_id,
    tail_id = e.tail_id }
end

-- In memory: entries in a table by key, in the order first seen.
local Memory = {}
Memory.__index = Memory

function Memory:add(t)
  if not kept(t, self.opts.min_score) then return end
  local head, tail = ids(t)
  local group = head .. "\0" .. t.relation
  local key = group .. "\0" .. tail
  local e = self.by_key[key]
  if not e then
    self.head_of[group] = self.head_of[group] or t.head
    e = { head = self.head_of[group], relation = t.relation, tail = t.tail, tokens = t.tokens, score = t.score,
      model_score = t.model_score, count = 0, sources = {}, decoding = t.decoding, head_id = t.head_id, tail_id = t.tail_id,
      seen = {}, first = #self.order + 1, group = group }
    self.by_key[key] = e
    self.order[#self.order + 1] = e
  end
  if not e.seen[t.source] then
    e.seen[t.source] = true
    e.count = e.count + 1
    e.sources[#e.sources + 1] = t.source
  end
  if t.score > e.score then e.score, e.model_score = t.score, t.model_score end
end

local function better(x, y)
  if x.score ~= y.score then return x.score > y.score end
  if x.count ~= y.count then return x.count > y.count end
  return x.first < y.first
end

function Memory:each()
  local groups, kept = {}, {}
  for _, e in ipairs(self.order) do
    groups[e.group] = groups[e.group] or {}
    table.insert(groups[e.group], e)
  end
  for _, g in pairs(groups) do
    table.sort(g, better)
    for k = 1, math.min(#g, self.opts.top or 5) do kept[#kept + 1] = g[k] end
  end
  table.sort(kept, better) -- (a total order: first seen tells every two entries apart)
  local i = 0
  return function()
    i = i + 1
    return kept[i] and entry(kept[i], kept[i].sources)
  end
end

function Memory:close() end
Memory.__close = Memory.close

-- On disk: groups, entries and their sources in SQLite tables; rowids give the order first seen.
local SCHEMA = {
  "PRAGMA journal_mode = OFF", "PRAGMA synchronous = OFF", "PRAGMA cache_size = -8192", "PRAGMA temp_store = FILE",
  "CREATE TABLE groups (id INTEGER PRIMARY KEY, head_key TEXT NOT NULL, head TEXT NOT NULL, relation TEXT NOT NULL, " ..
    "UNIQUE (head_key, relation))",
  "CREATE TABLE entries (id INTEGER PRIMARY KEY, grp INTEGER NOT NULL, tail_key TEXT NOT NULL, tail TEXT NOT NULL, tokens INTEGER, " ..
    "score REAL NOT NULL, model_score REAL, decoding TEXT, head_id TEXT, tail_id TEXT, count INTEGER NOT NULL DEFAULT 0, " ..
    "UNIQUE (grp, tail_key))",
  "CREATE TABLE sources (entry INTEGER NOT NULL, source NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (entry, source)) WITHOUT ROWID",
}
local SQL = {
  group = "INSERT INTO groups (head_key, head, relation) VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET head = head RETURNING id",
  -- (the model's score goes with the best score: the expressions read the row as it was)
  entry = "INSERT INTO entries (grp, tail_key, tail, tokens, score, model_score, decoding, head_id, tail_id) " ..
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) " ..
    "ON CONFLICT DO UPDATE SET model_score = CASE WHEN excluded.score > score THEN excluded.model_score ELSE model_score END, " ..
    "score = max(score, excluded.score) RETURNING id",
  source = "INSERT OR IGNORE INTO sources (entry, source, seq) VALUES (?, ?, ?)",
  count = "UPDATE entries SET count = count + 1 WHERE id = ?",
  ranked = "SELECT e.id, g.head, g.relation, e.tail, e.tokens, e.score, e.model_score, e.count, e.decoding, e.head_id, e.tail_id FROM " ..
    "(SELECT *, row_number() OVER (PARTITION BY grp ORDER BY score DESC, count DESC, id) AS rank FROM entries) e " ..
    "JOIN groups g ON g.id = e.grp WHERE e.rank <= ? ORDER BY e.score DESC, e.count DESC, e.id",
  sources_of = "SELECT source FROM sources WHERE entry = ? ORDER BY seq",
}

local Disk = {}
Disk.__index = Disk

local function remove_files(path)
  for _, suffix in ipairs { "", "-journal", "-wal", "-shm" } do os.remove(path .. suffix) end
end

local function open_disk(opts)
  local DBI = require "DBI"
  local path = opts.disk
  remove_files(path) -- a scratch file a killed run left is rebuilt, never trusted
  local db, err = DBI.Connect("SQLite3", path)
  if not db then error(string.format("merge: cannot open the scratch database %s (%s)", path, tostring(err)), 0) end
  local self = setmetatable({ opts = opts, db = db, path = path, statements = {}, seq = 0 }, Disk)
  db:autocommit(true)
  for _, sql in ipairs(SCHEMA) do self:value(sql) end -- (value: a pragma answers with a row, read to its end)
  self:exec("BEGIN")
  return self
end

-- a statement run with values bound → the statement (prepared once, kept), or an error naming the file
function Disk:exec(sql, ...)
  local st = self.statements[sql]
  if not st then
    local err
    st, err = self.db:prepare(sql)
    if not st then error(string.format("merge: %s: %s", self.path, tostring(err)), 0) end
    self.statements[sql] = st
  end
  local ok, err = st:execute(...)
  if not ok then error(string.format("merge: %s: %s", self.path, tostring(err)), 0) end
  return st
end

-- the first column of the one row a statement gives (run to its end: an unfinished one would hold
-- the transaction open)
function Disk:value(sql, ...)
  local st = self:exec(sql, ...)
  local row = st:fetch(false)
  while st:fetch(false) do end
  return row and row[1]
end

function Disk:add(t)
  if not kept(t, self.opts.min_score) then return end
  local head, tail = ids(t)
  local grp = self:value(SQL.group, head, t.head, t.relation)
  local id = self:value(SQL.entry, grp, tail, t.tail, t.tokens, t.score, t.model_score, t.decoding, t.head_id, t.tail_id)
  self.seq = self.seq + 1
  local st = self:exec(SQL.source, id, t.source, self.seq)
  if st:affected() > 0 then self:exec(SQL.count, id) end
end

function Disk:each()
  if self.ranked then error("merge: a disk merge is read once (each or result)", 2) end
  self.ranked = true
  self:exec("COMMIT")
  local ranked = self:exec(SQL.ranked, self.opts.top or 5)
  return function()
    local e = ranked:fetch(true)
    if not e then return nil end
    local sources = {}
    local st = self:exec(SQL.sources_of, e.id)
    for row in st:rows(false) do sources[#sources + 1] = row[1] end
    e.tokens, e.count = math.tointeger(e.tokens) or e.tokens, math.tointeger(e.count)
    return entry(e, sources)
  end
end

function Disk:close()
  if not self.db then return end
  for _, st in pairs(self.statements) do st:close() end
  self.db:close()
  self.db = nil
  remove_files(self.path)
end

Disk.__close, Disk.__gc = Disk.close, Disk.close

function M.merger(opts)
  opts = opts or {}
  if opts.disk then return open_disk(opts) end
  return setmetatable({ opts = opts, by_key = {}, order = {}, head_of = {} }, Memory)
end

local function result(m)
  local out = {}
  for e in m:each() do out[#out + 1] = e end
  return out
end
Memory.result, Disk.result = result, result

function M.merge(triples, opts)
  local m = M.merger(opts)
  for _, t in ipairs(triples) do m:add(t) end
  local out = m:result()
  m:close()
  return out
end

return M
