-- dataset.lua — the product's input: a corpus and a seed knowledge graph, read and checked
-- before any training (docs/datasets.md is the format's reference page).
--
-- A dataset folder holds (or a config's `data` table names each file):
--   corpus     corpus.txt (one passage per line) or corpus.jsonl ({"id", "text"} and optionally
--              "entity": the entity the passage is about, "triples": [{head, relation, tail}] of
--              its own), or a folder corpus/ of such files (read in name order)
--   triples    triples.tsv (head<TAB>relation<TAB>tail) or triples.jsonl ({head, relation,
--              tail}); head and tail by entity id, or by a name or alias naming one entity
--   entities   entities.tsv (id<TAB>name<TAB>type<TAB>aliases separated by |) or entities.jsonl
--              ({id, name, type, aliases = [...]}); optional when the triples name their
--              entities (each name is then an entity of type "entity")
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
--     ds:add_entity(id, name, type, aliases), ds:add_triple(head_id, relation, tail_id[, where]),
--     ds:add_passage{id, text, entity}, then ds:finish()
-- A Dataset: entities (id → {id, name, type, aliases}), entity_order (ids in file order),
-- triples ({head, relation, tail} entity ids, in file order), passages ({id, text, entity,
-- triples, source = "file:line"}), relation_names (sorted), schema (relation → {head = set of
-- types, tail = set: all its rows', or "*"; rows = {{head, tail, where}, ...}: the pairs it
-- allows; where = its first row's file:line}), link (the linker's options), report ({skipped =
-- reason → count, messages}).
-- ds:summary() says it all in one paragraph.
local gm = require "graphmert"
local cjson = require "cjson"
local normalize = require("graphmert.data.linker").normalize
local seed_graph = require "graphmert.data.seed_graph"

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

function Dataset:add_entity(id, name, type, aliases)
  local e = { id = id, name = name, type = type ~= "" and type or "entity", aliases = aliases or {} }
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
function M.a(word) return (word:match("^[aeiouAEIOU]") and "an " or "a ") .. word end

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

-- Reading files ----------------------------------------------------------------------------

local function fail(msg) error(msg, 0) end

-- each non-blank, non-comment line of a text file with its number (gm.data.corpus.lines)
local function lines_of(path)
  local ok, next_line = pcall(require("graphmert.data.corpus").lines, path)
  if not ok then fail("dataset: " .. next_line) end
  return next_line
end

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

local function tsv_fields(line)
  local fields = {}
  for field in (line .. "\t"):gmatch("([^\t]*)\t") do fields[#fields + 1] = field:match("^%s*(.-)%s*$") end
  return fields
end

local function is_header(fields, first) return fields[1] and fields[1]:lower() == first end

-- records of a TSV or JSONL file: fn(where, record, fields) with the record's values by name and,
-- for TSV, the line's field count up to its last non-empty field (tabs a spreadsheet pads a row
-- with are no fields); `columns` names the TSV columns (a header starts with columns[1])
local function each_record(ds, path, columns, fn)
  local jsonl = path:match("%.jsonl$")
  local first = true
  for n, line in lines_of(path) do
    local where = string.format("%s:%d", path, n)
    if not utf8.len(line) then
      ds:skip(where, "not UTF-8 text")
    elseif jsonl then
      local ok, rec = pcall(cjson.decode, line)
      if not ok or type(rec) ~= "table" or rec[1] ~= nil then ds:skip(where, "not a JSON object") else fn(where, rec) end
    else
      local fields = tsv_fields(line)
      if not (first and is_header(fields, columns[1])) then
        local rec = {}
        for i, c in ipairs(columns) do rec[c] = fields[i] end
        local count = #fields
        while count > 0 and fields[count] == "" do count = count - 1 end
        fn(where, rec, count)
      end
    end
    first = false
  end
end

-- a non-blank string, or a number as text (JSON's 7 is read as 7.0: written "7"); nil otherwise
-- (JSON null included)
local text_field = require("graphmert.data.corpus").scalar_text

local function split_list(v, sep)
  if type(v) == "table" then
    local out = {}
    for _, x in ipairs(v) do if type(x) == "string" and x:match("%S") then out[#out + 1] = x end end
    return out
  end
  local out = {}
  for x in ((v or "") .. sep):gmatch("([^" .. sep .. "]*)" .. sep) do
    x = x:match("^%s*(.-)%s*$")
    if x ~= "" then out[#out + 1] = x end
  end
  return out
end

-- whether a JSONL list field (aliases, head_types, tail_types) is absent, a list of strings, or a
-- string (split as the TSV column is); a number there would be taken as a name, and a type list
-- of numbers as "any"
local function string_list(v)
  if v == nil or v == cjson.null or type(v) == "string" then return true end
  if type(v) ~= "table" then return false end
  for k, x in pairs(v) do
    if math.type(k) ~= "integer" or type(x) ~= "string" then return false end
  end
  return true
end

local function read_entities(ds, path)
  each_record(ds, path, { "id", "name", "type", "aliases" }, function(where, r, fields)
    local id, name = text_field(r.id), text_field(r.name)
    if fields and fields < 2 then ds:skip(where, "fewer than 2 fields", "id<TAB>name<TAB>type<TAB>aliases; this line has one field: are its fields separated by tabs?")
    elseif fields and fields > 4 then -- aliases separated by tabs, not |, would lose all but the first
      ds:skip(where, "more than 4 fields", "id<TAB>name<TAB>type<TAB>aliases separated by |")
    elseif not id then ds:skip(where, "no entity id")
    elseif not name then ds:skip(where, "no entity name")
    elseif ds.entities[id] then ds:skip(where, "duplicate entity id", id)
    elseif not fields and not string_list(r.aliases) then ds:skip(where, "aliases not a list of strings", id)
    else
      local type_ = r.type ~= nil and text_field(r.type) or "entity"
      ds:add_entity(id, name, type_, split_list(r.aliases, "|"))
    end
  end)
end

local function read_relations(ds, path)
  ds.schema_given = true
  each_record(ds, path, { "relation", "head_types", "tail_types" }, function(where, r, fields)
    local name = text_field(r.relation or r.name)
    if fields and fields ~= 3 then
      ds:skip(where, fields < 3 and "fewer than 3 fields" or "more than 3 fields", "relation<TAB>head types<TAB>tail types")
    elseif not name then ds:skip(where, "no relation name")
    elseif not fields and not (string_list(r.head_types) and string_list(r.tail_types)) then
      ds:skip(where, "types not a list of strings", name)
    else
      local row = { head = {}, tail = {}, where = where }
      for _, side in ipairs { "head", "tail" } do
        for _, t in ipairs(split_list(r[side .. "_types"], ",")) do row[side][t] = true end
        if row[side]["*"] or next(row[side]) == nil then row[side] = "*" end
      end
      local s = ds.schema[name]
      if not s then
        ds.schema[name] = { head = row.head, tail = row.tail, where = where, rows = { row } }
      else -- another pair of types for the relation: the relation's sets are the union of its rows'
        local same
        for _, other in ipairs(s.rows) do
          same = same or (seed_graph.types_string(other.head) == seed_graph.types_string(row.head)
            and seed_graph.types_string(other.tail) == seed_graph.types_string(row.tail) and other.where)
        end
        if same then ds:skip(where, "duplicate relation row", name .. " as at " .. same)
        else
          s.rows[#s.rows + 1] = row
          s.head, s.tail = seed_graph.type_union(s.head, row.head), seed_graph.type_union(s.tail, row.tail)
        end
      end
    end
  end)
end

-- normalised names and aliases → entity ids, to resolve triples given by name (built on first use)
local function name_index(ds)
  if ds.names then return ds.names end
  local names = {}
  local function add(name, id)
    local k = normalize(name)
    local ids = names[k] or {}
    names[k] = ids
    if ids[#ids] ~= id then ids[#ids + 1] = id end
  end
  for _, id in ipairs(ds.entity_order) do
    local e = ds.entities[id]
    add(e.name, id)
    for _, a in ipairs(e.aliases) do add(a, id) end
  end
  ds.names = names
  return names
end

-- an entity id for a triple's head or tail, or nil, the reason and what it was; with `implicit`
-- (no entities file) a new name becomes an entity
local function resolve(ds, value, implicit)
  local v = text_field(value)
  if not v then return nil, "empty head or tail" end
  if ds.entities[v] then return v end
  local key = normalize(v)
  local ids = name_index(ds)[key]
  if not ids and implicit then
    ds:add_entity(v, v, "entity", {})
    ds.names[key] = { v }
    return v
  end
  if not ids then return nil, "unknown entity", v end
  if #ids > 1 then
    return nil, "ambiguous entity name", v .. " names " .. table.concat(ids, ", ", 1, math.min(#ids, 3)) .. ": give the id"
  end
  return ids[1]
end

local function allowed(set, type_) return set == "*" or set[type_] end

-- one triple from a file or a passage: resolved, its relation and types checked, added
-- (a per-passage triple may repeat one another passage gave: `from_passage` does not report it)
local function add_triple(ds, where, r, implicit, fields, from_passage)
  local relation = text_field(r.relation)
  if fields and fields ~= 3 then
    return ds:skip(where, fields < 3 and "fewer than 3 fields" or "more than 3 fields",
      "head<TAB>relation<TAB>tail" .. (fields == 1 and "; this line has one field: are its fields separated by tabs?" or ""))
  end
  if not relation then return ds:skip(where, "no relation") end
  local head, why, what = resolve(ds, r.head, implicit)
  if not head and why == "unknown entity" and fields and where:match(":1$") then
    what = what .. "; a header line's first field is head"
  end
  if not head then return ds:skip(where, why, what) end
  local tail
  tail, why, what = resolve(ds, r.tail, implicit)
  if not tail then return ds:skip(where, why, what) end
  if ds.schema_given then
    local s = ds.schema[relation]
    if not s then return ds:skip(where, "unknown relation", relation .. " is not in the relation schema") end
    local ht, tt = ds.entities[head].type, ds.entities[tail].type
    if not allowed(s.head, ht) then
      local places = {}
      for i, row in ipairs(s.rows) do places[i] = row.where end
      return ds:skip(where, "head type not allowed by the relation schema", string.format("%s is %s; %s at %s", head, M.a(ht),
        relation, table.concat(places, ", ")))
    end
    local rows_of_head, fits = {}, false -- the rows that take such a head: one must take such a tail
    for _, row in ipairs(s.rows) do
      if allowed(row.head, ht) then
        rows_of_head[#rows_of_head + 1] = row.where
        fits = fits or allowed(row.tail, tt)
      end
    end
    if not fits then
      return ds:skip(where, "tail type not allowed by the relation schema", string.format("%s is %s; %s of %s at %s", tail,
        M.a(tt), relation, M.a(ht), table.concat(rows_of_head, ", ")))
    end
  end
  local added, before = ds:add_triple(head, relation, tail, where)
  if not added and not from_passage then
    return ds:skip(where, "duplicate triple", type(before) == "string" and "as at " .. before or nil)
  end
  return head, tail
end

local function read_triples(ds, path, implicit)
  each_record(ds, path, { "head", "relation", "tail" }, function(where, r, fields) add_triple(ds, where, r, implicit, fields) end)
end

local function read_corpus_file(ds, path, prefix, implicit)
  local jsonl = path:match("%.jsonl$")
  for n, line in lines_of(path) do
    local where = string.format("%s:%d", path, n)
    local default_id = prefix and (prefix .. ":" .. n) or tostring(n)
    if not utf8.len(line) then
      ds:skip(where, "not UTF-8 text")
    elseif not jsonl then
      ds:add_passage { id = default_id, text = line, source = where }
    else
      local ok, rec = pcall(cjson.decode, line)
      if not ok or type(rec) ~= "table" or rec[1] ~= nil then ds:skip(where, "not a JSON object")
      else
        local no_id = rec.id == nil or rec.id == cjson.null
        local text, id = text_field(rec.text), no_id and default_id or text_field(rec.id)
        if not text then ds:skip(where, "no text")
        elseif not id then ds:skip(where, "id must be a string or a number")
        elseif ds.seen_passage[id] then ds:skip(where, "duplicate passage id", id)
        else
          -- per-passage triples (the earlier JSONL format) first: they may make the entities
          local triples
          if type(rec.triples) == "table" then
            triples = {}
            for i, t in ipairs(rec.triples) do
              if type(t) ~= "table" then ds:skip(where, "triple " .. i .. " is not an object")
              else
                local head, tail = add_triple(ds, where .. " triple " .. i, t, implicit, nil, true)
                if head then triples[#triples + 1] = { head = head, relation = text_field(t.relation), tail = tail } end
              end
            end
          end
          local entity, why, what
          if text_field(rec.entity) then entity, why, what = resolve(ds, rec.entity, false) end
          if why then ds:skip(where, why, what)
          else
            ds.seen_passage[id] = true
            ds:add_passage { id = id, text = text, entity = entity, triples = triples, source = where }
          end
        end
      end
    end
  end
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
  if files.entities then read_entities(ds, files.entities) end
  -- an empty result names its first bad line: "no entities" alone would hide why
  local function first_bad() return ds.report.messages[1] and ("; first skipped line: " .. ds.report.messages[1]) or "" end
  if files.entities and #ds.entity_order == 0 then fail("dataset: " .. files.entities .. " has no entities" .. first_bad()) end
  if files.relations then read_relations(ds, files.relations) end
  if files.relations and next(ds.schema) == nil then fail("dataset: " .. files.relations .. " has no relations" .. first_bad()) end
  if files.triples then read_triples(ds, files.triples, implicit) end
  if not seed_only then
    local corpus_files = is_dir(files.corpus) and folder_files(files.corpus) or { files.corpus }
    if #corpus_files == 0 then fail("dataset: " .. files.corpus .. " holds no .txt or .jsonl file") end
    for _, path in ipairs(corpus_files) do
      read_corpus_file(ds, path, #corpus_files > 1 and path:match("([^/]*)$"), implicit)
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

local SEED_FILES = { "entities.jsonl", "triples.jsonl", "relations.jsonl", "dataset.json" }

-- Writes the seed graph (entities, triples by id, the relation schema, and in dataset.json the
-- dataset's name and linker options) into `dir` as JSONL that load_seed_graph reads back: what a
-- training output keeps, so that extraction reads nothing outside it. Beside them index.bin, the
-- seed graph's index (`graph`, gm.data.seed_graph over this dataset, built when not given), which
-- loads in a fraction of the time it takes to build; with known = {tok, leaves} it holds
-- constrained decoding's known tails for that tokenizer and leaf count (seed_graph:save). The
-- files are written as one (all old or all new), so an index never goes with another graph's JSONL.
function Dataset:save_seed_graph(dir, graph, known)
  require("graphmert.folder").make(dir, "save_seed_graph")
  local entities, triples, relations = {}, {}, {}
  for i, id in ipairs(self.entity_order) do
    local e = self.entities[id]
    local aliases = {} -- a JSON array even when empty (cjson writes {} for an empty table)
    for j, a in ipairs(e.aliases) do aliases[j] = cjson.encode(a) end
    entities[i] = string.format('{"id":%s,"name":%s,"type":%s,"aliases":[%s]}\n', cjson.encode(e.id), cjson.encode(e.name),
      cjson.encode(e.type), table.concat(aliases, ","))
  end
  for i, t in ipairs(self.triples) do triples[i] = cjson.encode { head = t.head, relation = t.relation, tail = t.tail } .. "\n" end
  for _, name in ipairs(self.relation_names) do -- a line per pair of types it allows
    for _, row in ipairs(self.schema[name].rows) do
      relations[#relations + 1] = cjson.encode { name = name, head_types = seed_graph.type_list(row.head),
        tail_types = seed_graph.type_list(row.tail) } .. "\n"
    end
  end
  local meta = { cjson.encode { name = self.name, link = self.link, split_hash = self.split_hash } }
  graph = graph or seed_graph.new(self)
  local ok, err = gm.write_atomic { { dir .. "/" .. SEED_FILES[1], entities }, { dir .. "/" .. SEED_FILES[2], triples },
    { dir .. "/" .. SEED_FILES[3], relations }, { dir .. "/" .. SEED_FILES[4], meta }, { dir .. "/index.bin", { graph:encode(known) } } }
  if not ok then error("save_seed_graph: " .. err, 2) end
end

-- A Dataset with no passages from a folder save_seed_graph wrote (its files must be regular files
-- inside it: graphmert.folder).
function M.load_seed_graph(dir)
  local folder = require "graphmert.folder"
  local paths = {}
  for i, name in ipairs(SEED_FILES) do paths[i] = folder.need(dir, name, "dataset") end
  local meta = require("graphmert.json").read(paths[4], "dataset")
  local ds = M.load { entities = paths[1], triples = paths[2], relations = paths[3], corpus = false, on_error = "stop" }
  ds.name = type(meta.name) == "string" and meta.name or dir
  ds.link = type(meta.link) == "table" and meta.link or {}
  ds.split_hash = meta.split_hash ~= cjson.null and meta.split_hash or nil
  return ds
end

return M
