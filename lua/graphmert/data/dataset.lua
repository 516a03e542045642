-- dataset.lua — the product's input: a corpus and a seed knowledge graph, read and checked
-- before any training (docs/datasets.md is the format's reference page).
--
-- A dataset folder holds (or a config's `data` table names each file):
--   corpus     corpus.txt (one passage per line) or corpus.jsonl ({"id", "text"} and optionally
--              "entity": the entity the passage is about, "triples": [{head, relation, tail}] of
--              its own), or a folder corpus/ of such files (read in name order)
--   triples    triples.tsv (head<TAB>relation<TAB>tail) or triples.jsonl ({head, relation,
--              tail}); head and tail by entity id, or by a name or alias naming one entity
--   entities   entities.tsv (id<TAB>name<TAB>type<TAB>aliases separated by |[<TAB>properties])
--              or entities.jsonl ({id, name, type, aliases = [...], any_case}); optional when the
--              triples name their entities (each name is then an entity of type "entity");
--              any_case: its names are matched in any case (gm.data.linker's written case)
--   relations  optional: relations.tsv (relation<TAB>head types<TAB>tail types, comma-separated,
--              * for any) or relations.jsonl ({name, head_types, tail_types}); a relation on
--              several lines allows each line's pairs (is_a: a process of a process, a function
--              of a function), not every head type with every tail type; without the file each
--              relation allows the pairs of types its triples join
-- In TSV files a first line naming the columns, blank lines and lines starting with # are
-- skipped. A bad line is skipped and counted by reason, and the first messages name it as
-- `file:line: reason` (on_error = "stop": the first one is an error); a missing file, an empty
-- corpus or a seed graph with no triple is an error.
--
--   dataset.load{dir = "experiments/data/tiny", corpus = ..., triples = ..., entities = ...,
--     relations = ..., on_error = "skip" | "stop"} → Dataset
--   dataset.new(name, {link = linker options, split_hash}) → an empty Dataset a source fills
--     (gm.data.wordnet.dataset):
--     ds:add_entity(id, name, type, aliases[, any_case]), ds:add_triple(head_id, relation, tail_id[, where]),
--     ds:add_passage{id, text, entity}, then ds:finish()
-- A Dataset: entities (id → {id, name, type, aliases, any_case}), entity_order (ids in file order),
-- triples ({head, relation, tail} entity ids, in file order), passages ({id, text, entity,
-- triples, source = "file:line"}), relation_names (sorted), schema (relation → {head = set of
-- types, tail = set: all its rows', or "*"; rows = {{head, tail, where}, ...}: the pairs it
-- allows; where = its first row's file:line}), link (the linker's options), report ({skipped =
-- reason → count, messages}).
-- ds:summary() says it all in one paragraph.
--   ds:save_seed_graph(dir, graph, known), dataset.load_seed_graph(dir): the seed graph alone,
--     as a training output keeps it
-- This module owns the Dataset and finds the files; graphmert.data.dataset_parts reads each
-- part and checks its records, over graphmert.data.dataset_records (the lines and records of TSV
-- and JSONL files); graphmert.data.dataset_save writes the seed graph alone.
local gm = require "graphmert"
local cjson = require "cjson"
local parts = require "graphmert.data.dataset_parts"
local save = require "graphmert.data.dataset_save"

local M = {}

local Dataset = {}
Dataset.__index = Dataset

local MESSAGES = 20 -- the first messages kept; the counts keep the rest

function M.new(name, opts)
  opts = opts or {}
  return setmetatable({ name = name, entities = {}, entity_order = {}, triples = {}, passages = {},
    relation_names = {}, schema = {}, schema_given = false, link = opts.link or {}, split_hash = opts.split_hash,
    on_error = opts.on_error or "skip",
    report = { skipped = {}, messages = {}, skipped_total = 0 }, seen_triple = {}, seen_passage = {} }, Dataset)
end

-- A skipped line: counted under `reason`; the message names the file and line.
function Dataset:skip(where, reason, detail)
  local msg = where .. ": " .. reason .. (detail and (" (" .. detail .. ")") or "")
  if self.on_error == "stop" then error(msg, 0) end
  local r = self.report
  r.skipped[reason] = (r.skipped[reason] or 0) + 1
  r.skipped_total = r.skipped_total + 1
  if #r.messages < MESSAGES then r.messages[#r.messages + 1] = msg end
end

function Dataset:add_entity(id, name, type, aliases, any_case)
  local e = { id = id, name = name, type = type ~= "" and type or "entity", aliases = aliases or {}, any_case = any_case or nil }
  self.entities[id] = e
  self.entity_order[#self.entity_order + 1] = id
  return e
end

function Dataset:add_triple(head, relation, tail, where)
  if not self.entities[head] or not self.entities[tail] then
    error(string.format("Dataset:add_triple: no entity %s (add_entity first)", tostring(self.entities[head] and tail or head)), 2)
  end
  local key = head .. "\0" .. relation .. "\0" .. tail
  if self.seen_triple[key] then return false, self.seen_triple[key] end
  self.seen_triple[key] = where or true
  self.triples[#self.triples + 1] = { head = head, relation = relation, tail = tail }
  return true
end

function Dataset:add_passage(p)
  if type(p.text) ~= "string" then error("Dataset:add_passage: text must be a string", 2) end
  if p.entity ~= nil and not self.entities[p.entity] then
    error("Dataset:add_passage: no entity " .. tostring(p.entity) .. " (add_entity first)", 2)
  end
  self.passages[#self.passages + 1] = p
  return p
end

-- The relation list and, without a schema file, each relation's observed pairs of head and tail
-- types: a row per head type, with the tail types its triples reach.
function Dataset:finish()
  if not self.schema_given then
    for _, t in ipairs(self.triples) do
      local s = self.schema[t.relation]
      if not s then
        s = { head = {}, tail = {}, rows = {}, by_head = {} }
        self.schema[t.relation] = s
      end
      local ht, tt = self.entities[t.head].type, self.entities[t.tail].type
      local row = s.by_head[ht]
      if not row then
        row = { head = { [ht] = true }, tail = {} }
        s.by_head[ht] = row
        s.rows[#s.rows + 1] = row
      end
      s.head[ht], s.tail[tt], row.tail[tt] = true, true, true
    end
    for _, s in pairs(self.schema) do s.by_head = nil end
  end
  self.relation_names = {}
  for name in pairs(self.schema) do self.relation_names[#self.relation_names + 1] = name end
  table.sort(self.relation_names)
  self.seen_triple, self.seen_passage = nil, nil -- only needed while reading
  return self
end

-- the triples of each head entity, in file order (made on first use)
function Dataset:triples_by_head()
  if not self.by_head then
    self.by_head = {}
    for _, t in ipairs(self.triples) do
      local list = self.by_head[t.head]
      if not list then list = {}; self.by_head[t.head] = list end
      list[#list + 1] = t
    end
  end
  return self.by_head
end

-- "1 triple", "3 triples", "2 entities" (many: the plural when it is not one .. "s")
function M.plural(n, one, many) return string.format("%d %s", n, n == 1 and one or (many or one .. "s")) end

-- a type with its article, as a message says it: "an entity", "a gene"
M.a = parts.a

function Dataset:summary()
  local about, aliases = 0, 0
  for _, p in ipairs(self.passages) do if p.entity then about = about + 1 end end
  for _, id in ipairs(self.entity_order) do aliases = aliases + #self.entities[id].aliases end
  local s = string.format("dataset %s: %s (%d about an entity), %s (%s), %s in %s", self.name,
    M.plural(#self.passages, "passage"), about, M.plural(#self.entity_order, "entity", "entities"),
    M.plural(aliases, "alias", "aliases"), M.plural(#self.triples, "triple"), M.plural(#self.relation_names, "relation"))
  local r = self.report
  if r.skipped_total > 0 then
    local reasons = {}
    for reason, n in pairs(r.skipped) do reasons[#reasons + 1] = string.format("%d %s", n, reason) end
    table.sort(reasons)
    s = s .. string.format("; %s skipped: %s; first: %s", M.plural(r.skipped_total, "line"), table.concat(reasons, ", "),
      r.messages[1])
  end
  return s
end

-- Finding and reading the files ------------------------------------------------------------

local function fail(msg) error(msg, 0) end

-- (gm.stat: a FIFO is never opened, so it cannot block)
local function is_dir(path)
  local info = gm.stat(path)
  return info ~= nil and info.type == "directory"
end

local function exists(path) return gm.stat(path) ~= nil end

-- the files of a folder, in name order (one level; hidden files left out)
local function folder_files(dir)
  local p = io.popen("ls -1 -- '" .. dir:gsub("'", "'\\''") .. "' 2>/dev/null")
  local out = {}
  for name in p:lines() do
    if not name:match("^%.") and (name:match("%.txt$") or name:match("%.jsonl$")) then out[#out + 1] = dir .. "/" .. name end
  end
  p:close()
  table.sort(out)
  return out
end

-- the file a folder holds under one of `names`, or nil; two of them are an error (which one
-- was meant?)
local function find(dir, names)
  local found
  for _, n in ipairs(names) do
    local path = dir .. "/" .. n
    if exists(path) then
      if found then fail(string.format("dataset %s: both %s and %s; keep one", dir, found:match("[^/]*$"), n)) end
      found = path
    end
  end
  return found
end

local LOAD_KEYS = { dir = true, corpus = true, triples = true, entities = true, relations = true, on_error = true }

function M.load(spec)
  if type(spec) == "string" then spec = { dir = spec } end
  if type(spec) ~= "table" then fail("dataset.load: expected a folder or a table of files, got " .. type(spec)) end
  for key, v in pairs(spec) do
    if not LOAD_KEYS[key] then fail("dataset.load: unknown option '" .. tostring(key) .. "' (known: corpus, dir, entities, on_error, relations, triples)") end
    if type(v) ~= "string" and not (key == "corpus" and v == false) then
      fail("dataset.load: " .. key .. " must be a string, got " .. type(v))
    end
  end
  if spec.on_error and spec.on_error ~= "skip" and spec.on_error ~= "stop" then
    fail("dataset.load: on_error must be \"skip\" or \"stop\", got \"" .. spec.on_error .. "\"")
  end
  local dir = spec.dir
  if dir and not is_dir(dir) then fail("dataset: " .. dir .. " is not a folder") end
  local files = {}
  for key, names in pairs { corpus = { "corpus.jsonl", "corpus.txt", "corpus" }, triples = { "triples.tsv", "triples.jsonl" },
    entities = { "entities.tsv", "entities.jsonl" }, relations = { "relations.tsv", "relations.jsonl" } } do
    files[key] = spec[key] or (dir and spec[key] == nil and find(dir, names))
    if spec[key] and not exists(spec[key]) then fail("dataset: " .. key .. " file " .. spec[key] .. " does not exist") end
  end
  local seed_only = spec.corpus == false
  if not files.corpus and not seed_only then fail("dataset" .. (dir and (" " .. dir) or "") .. ": no corpus (corpus.txt, corpus.jsonl or corpus/)") end
  local ds = M.new(dir or files.corpus or files.triples, { on_error = spec.on_error })
  local implicit = not files.entities -- without an entities file, names make the entities
  if files.entities then parts.entities(ds, files.entities) end
  -- an empty result names its first bad line: "no entities" alone would hide why
  local function first_bad() return ds.report.messages[1] and ("; first skipped line: " .. ds.report.messages[1]) or "" end
  if files.entities and #ds.entity_order == 0 then fail("dataset: " .. files.entities .. " has no entities" .. first_bad()) end
  if files.relations then parts.relations(ds, files.relations) end
  if files.relations and next(ds.schema) == nil then fail("dataset: " .. files.relations .. " has no relations" .. first_bad()) end
  if files.triples then parts.triples(ds, files.triples, implicit) end
  if not seed_only then
    local corpus_files = is_dir(files.corpus) and folder_files(files.corpus) or { files.corpus }
    if #corpus_files == 0 then fail("dataset: " .. files.corpus .. " holds no .txt or .jsonl file") end
    for _, path in ipairs(corpus_files) do
      parts.corpus_file(ds, path, #corpus_files > 1 and path:match("([^/]*)$"), implicit)
    end
    if #ds.passages == 0 then fail("dataset: the corpus " .. files.corpus .. " has no passages" .. first_bad()) end
  end
  if #ds.triples == 0 then
    fail("dataset " .. ds.name .. ": the seed graph has no triples (triples.tsv or triples.jsonl, or per-passage triples " ..
      "in a corpus.jsonl)" .. first_bad())
  end
  return ds:finish()
end

-- The seed graph alone ------------------------------------------------------------------------

Dataset.save_seed_graph = save.seed_graph

-- A Dataset with no passages from a folder save_seed_graph wrote (its files must be regular files
-- inside it: graphmert.folder).
function M.load_seed_graph(dir)
  local folder = require "graphmert.folder"
  local paths = {}
  for i, name in ipairs(save.SEED_FILES) do paths[i] = folder.need(dir, name, "dataset") end
  local meta = require("graphmert.json").read(paths[4], "dataset")
  local ds = M.load { entities = paths[1], triples = paths[2], relations = paths[3], corpus = false, on_error = "stop" }
  ds.name = type(meta.name) == "string" and meta.name or dir
  ds.link = type(meta.link) == "table" and meta.link or {}
  ds.split_hash = meta.split_hash ~= cjson.null and meta.split_hash or nil
  return ds
end

return M
