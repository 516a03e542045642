-- seed_graph.lua — what extraction and evaluation ask of a dataset's seed graph, indexed once:
-- the linker over every entity name and alias (gm.data.linker), each entity's type, the types
-- each relation joins (the schema, or those its triples join), and the facts it holds.
--
--   local g = seed_graph.new(dataset)
--   g:heads(text) → the distinct entity phrases mentioned in the text (normalised), in order
--   g:candidates(phrase) → the ranked entity ids a name or alias denotes (nil: none)
--   g:entity(text[, relation, role, head_id]) → the entity a name or alias (any case, not
--     normalised) denotes first, and its preferred name (nil: none) — how a knowledge graph names what
--     extraction found; with a relation, the first the relation's schema allows as its role
--     ("head" or "tail"), so that an alias two entities share names the one the triple can join
--     (the first of all when none fits); for a tail, with the head's id, the types the relation
--     reaches from the head's type where the schema pairs them
--   g:relations_for(phrase, names) → the relations of `names` whose schema allows a head of a
--     type the phrase's entities have
--   g:present(phrase) → set of the relations the phrase's entities have as heads in the seed graph
--   g:known_tails(tok, relations, leaves) → relation id → the names and aliases of the types
--     the relation reaches that fit the leaves, as a gm.data.tail_list (constrained decoding's
--     list; relations reaching the same types share one), with .by_key (every list, by the types
--     it holds; in the metatable, so that pairs() gives the relations' lists only), and "stored"
--     when they come from the index (saved with this tokenizer and leaf count) or "built"
--     (tokenizing every name: seconds)
--   g:tail_types_of(relation, head type) → the types the relation reaches from a head of that type
--     (a set, or "*"; nil: none): a schema of several rows pairs them (is_a: a process of a
--     process), else they are the relation's
--   g:head_tails(known, relation, phrase) → the known tails (of g:known_tails) of the types the
--     relation reaches from the phrase's entities' type, when its schema pairs types and they
--     are of one type (nil otherwise: the relation's own list serves)
--   g:holds(t) → whether a head candidate of t.head has t.relation to a tail candidate of t.tail
--   g:valid(t) → whether t.tail names an entity of a type t.relation reaches from t.head's
--     (t.head_id's type when given)
--   g.subsumption → the relation the schema marks as subsumption (is_a, hypernym), or nil
--   g.dataset, g.relation_names → the dataset's name and relations; g.name[id], g.type[id] an
--     entity's name and type, g.aliases[id] its aliases as written, joined by "\0" (nil: none; an
--     index without them, of version 1 or 2 or saved again from one, has no g.aliases)
--   g:save(path[, {tok, leaves}]) → the index as one file (g:encode(known) its bytes,
--     gm.pack_tables), with the known tails for that tokenizer and leaf count when given, and
--     seed_graph.load(path) → the graph it holds, answering exactly as the one saved: seconds of
--     building become a fraction of one
-- Phrases are strings; a triple's head and tail are normalised before they are looked up.
-- Everything is kept in flat tables of strings (no table per entity or triple), so a graph of
-- 10⁵ entities costs the collector little during training, and saving it writes those tables;
-- a loaded graph reads them as maps over the file (gm.load_tables{lazy}): all of WordNet's
-- index loads in a few hundredths of a second.
local gm = require "graphmert"
local linker = require "graphmert.data.linker"
local tail_list = require "graphmert.data.tail_list"

local M = {}

local Graph = {}
Graph.__index = Graph

-- a relation's head or tail types as the schema gives them (a set, or "*" for any) → a sorted
-- list, or "*": how the index and the kg.sqlite store write them
function M.type_list(types)
  if types == "*" then return "*" end
  local list = {}
  for t in pairs(types) do list[#list + 1] = t end
  table.sort(list)
  return list
end

-- types (a set or "*") as one string, the same for the same types: how the index keys them
function M.types_string(types)
  local list = M.type_list(types)
  return list == "*" and list or table.concat(list, "\0")
end
local types_string = M.types_string

-- the union of two sets of types (a nil: none; "*": any)
function M.type_union(a, b)
  if a == "*" or b == "*" then return "*" end
  local out = {}
  for t in pairs(a or {}) do out[t] = true end
  for t in pairs(b or {}) do out[t] = true end
  return out
end
local union = M.type_union

-- a relation's rows → head type → the union of the tail types of the rows that take it (a row
-- whose heads are "*" takes every head type: under "*" and in every other type's union)
local function pairs_of(rows)
  local out = {}
  for _, row in ipairs(rows) do
    if row.head == "*" then out["*"] = union(out["*"], row.tail)
    else for ht in pairs(row.head) do out[ht] = union(out[ht], row.tail) end end
  end
  if out["*"] then
    for ht, tails in pairs(out) do out[ht] = union(tails, out["*"]) end
  end
  return out
end

-- the pairs of a relation's rows, or nil where they pair nothing: every head type reaches the
-- relation's tail types (its union), as with one row
local function narrowing(rows, tail_types)
  if #rows < 2 then return nil end
  local by_head, all = pairs_of(rows), types_string(tail_types)
  for _, types in pairs(by_head) do
    if types_string(types) ~= all then return by_head end
  end
end

function M.new(ds)
  local g = setmetatable({ dataset = ds.name, type = {}, name = {}, aliases = {}, tails = {}, relation_names = ds.relation_names,
    head_types = {}, tail_types = {}, subsumption = ds.subsumption }, Graph)
  -- the facts as relation → head id → its tails' ids joined by "\0": keys that are ids, which
  -- the entities made strings already, and a third of the entries of a set of triples (loading
  -- the index costs about one string and one table entry each)
  local count, lists = {}, {}
  for _, t in ipairs(ds.triples) do
    lists[t.relation] = lists[t.relation] or {}
    local list = lists[t.relation][t.head] or {}
    lists[t.relation][t.head] = list
    list[#list + 1] = t.tail
    count[t.head] = (count[t.head] or 0) + 1
    count[t.tail] = (count[t.tail] or 0) + 1
  end
  for relation, heads in pairs(lists) do
    g.tails[relation] = {}
    for head, list in pairs(heads) do g.tails[relation][head] = table.concat(list, "\0") end
  end
  g.pair_tails = {} -- relation → head type → the tail types rows pair with it ("*": any head), when several rows
  for name, s in pairs(ds.schema) do
    g.head_types[name], g.tail_types[name] = s.head, s.tail
    g.pair_tails[name] = s.rows and narrowing(s.rows, s.tail)
  end
  g.linker = linker.new(ds.link)
  for _, id in ipairs(ds.entity_order) do
    local e = ds.entities[id]
    g.type[id], g.name[id] = e.type, e.name
    if #e.aliases > 0 then g.aliases[id] = table.concat(e.aliases, "\0") end
    g.linker:add(id, e.name, true, count[id], e.any_case)
    for _, a in ipairs(e.aliases) do g.linker:add(id, a, false, count[id], e.any_case) end
  end
  g.linker:freeze()
  return g
end

-- The file: gm.pack_tables' tables, `meta` saying what it is (format, version) and holding the
-- graph's scalars; the others the graph's tables as they are ("tails:<relation>" a relation's
-- tails), but the schema's type sets, which are "*" or their types joined by "\0". Saved with a
-- tokenizer, `known_tails` holds constrained decoding's lists ("ids:<key>" and "lengths:<key>"
-- of a tail list per key, tails_key) and meta the tokenizer's signature and the leaf count they
-- are for.
-- Version 1 had no known tails, version 2 no aliases as written (the linker holds them folded);
-- before version 4 a name's typographic apostrophes, quotes and hyphens were kept in its phrase
-- (such a name links only where the text writes those marks). Version 5 adds `pair_tails`
-- ("<relation>\0<head type>" → the tail types, for a relation whose schema has several rows),
-- `cased` (the linker's acronyms, matched only as written in capitals), and its phrases fold en
-- and figure dashes and the micro sign (gm.data.linker). Version 6 makes `cased` a map: how each
-- word of a phrase is written, names with capitals too (before, a set of acronyms). An earlier
-- version still loads (g.version says which); a run's index of one is built again from its seed graph.
local FORMAT, VERSION = "graphmert seed graph index", "6"
M.VERSION = VERSION
local READS = { ["1"] = true, ["2"] = true, ["3"] = true, ["4"] = true, ["5"] = true, ["6"] = true }
local TABLES = { meta = "map", phrases = "map", prefixes = "set", stopwords = "set", entity_types = "map",
  entity_names = "map", head_types = "map", tail_types = "map" }
local OPTIONAL = { known_tails = "map", entity_aliases = "map", pair_tails = "map", cased = "map" }

local function types_set(s)
  if s == "*" then return "*" end
  local set = {}
  for _, t in ipairs(linker.split(s)) do set[t] = true end
  return set
end

local function map(tbl, fn)
  local out = {}
  for k, v in pairs(tbl) do out[k] = fn(v) end
  return out
end

-- the key of a relation's known tails: its tail types as the index writes them ("" for none)
local function tails_key(types) return types and types_string(types) or "" end

-- each key's known tails (the names and aliases of entities of its types that fit `leaves`
-- tokens, in sorted phrase order: ties rank the same on every run) as a tail list; a name the
-- tokenizer spells with [UNK] (a character its corpus never had: "Landlord & Tenant Act") is
-- none, since its tokens would not write the name back
local function build_tails(self, tok, leaves, keys)
  local phrases = {}
  for phrase in pairs(self.linker.index) do phrases[#phrases + 1] = phrase end
  table.sort(phrases)
  -- each phrase's token ids and its entities' types, looked up once (not once per key)
  local encoded = {}
  for _, phrase in ipairs(phrases) do
    local ids = tok:encode(phrase)
    if #ids > 0 and #ids <= leaves and tok:spells(ids) then
      local types = {}
      for i, entity in ipairs(self.linker:candidates(phrase)) do types[i] = self.type[entity] end
      encoded[#encoded + 1] = { types, ids }
    end
  end
  local out = {}
  for key in pairs(keys) do
    local wanted, list = key ~= "" and types_set(key) or nil, {}
    for _, e in ipairs(encoded) do
      local fits = wanted == "*"
      for _, t in ipairs(wanted and not fits and e[1] or {}) do
        if wanted[t] then fits = true break end
      end
      if fits then list[#list + 1] = e[2] end
    end
    out[key] = tail_list.new(list, leaves, tok.pad_id)
  end
  return out
end

-- the keys of `names`' known tails (the relations', and their rows' where they pair types), as a set
local function keys_of(self, names)
  local keys = {}
  for _, name in ipairs(names) do
    keys[tails_key(self.tail_types[name])] = true
    for _, types in pairs(self.pair_tails[name] or {}) do keys[tails_key(types)] = true end
  end
  return keys
end

-- the known tails the index holds (saved with this tokenizer and leaf count), or nil
local function stored_tails(self, tok, leaves, keys)
  local known = self.known
  if not known or known.leaves ~= leaves or known.tokenizer ~= tok:signature() then return nil end
  local out = {}
  for key in pairs(keys) do
    local ids, lengths = known.lists["ids:" .. key], known.lists["lengths:" .. key]
    if not ids or not lengths then
      error(string.format("%s: the seed graph index's known tails lack the types %q", known.path, key), 0)
    end
    local ok, list = pcall(tail_list.from_bytes, ids, lengths, leaves, tok.pad_id, tok:size())
    if not ok then error(string.format("%s: the known tails of the types %q: %s", known.path, key,
      tostring(list):gsub("^tail_list.from_bytes: ", "")), 0) end
    out[key] = list
  end
  return out
end

-- the known tails built for this tokenizer and leaf count, kept so that saving the index (or
-- asking again) does not tokenize every name a second time
local function built_tails(self, tok, leaves, keys)
  local built = self.built
  if not built or built.leaves ~= leaves or built.tokenizer ~= tok:signature() then
    built = { leaves = leaves, tokenizer = tok:signature(), lists = {} }
    self.built = built
  end
  local missing = {}
  for key in pairs(keys) do missing[key] = not built.lists[key] or nil end
  for key, list in pairs(next(missing) and build_tails(self, tok, leaves, missing) or {}) do built.lists[key] = list end
  return built.lists
end

function Graph:encode(known)
  local l = self.linker
  local tables = {
    meta = { format = FORMAT, version = VERSION, dataset = self.dataset, relations = table.concat(self.relation_names, "\0"),
      longest = tostring(l.longest), max_words = l.max_words and string.format("%.17g", l.max_words), subsumption = self.subsumption },
    phrases = l.index, prefixes = l.prefix, stopwords = l.stopwords, cased = l.cased, entity_types = self.type, entity_names = self.name,
    entity_aliases = self.aliases,
    head_types = map(self.head_types, types_string), tail_types = map(self.tail_types, types_string), pair_tails = {} }
  for relation, heads in pairs(self.tails) do tables["tails:" .. relation] = heads end
  for relation, by_head in pairs(self.pair_tails) do
    for head_type, types in pairs(by_head) do tables.pair_tails[relation .. "\0" .. head_type] = types_string(types) end
  end
  if known then
    tables.meta.tails_tokenizer, tables.meta.tails_leaves = known.tok:signature(), tostring(known.leaves)
    tables.meta.tails_spelled = "1" -- (no name spelled with [UNK] among them)
    tables.known_tails = {}
    local keys = keys_of(self, self.relation_names)
    local lists = stored_tails(self, known.tok, known.leaves, keys) or built_tails(self, known.tok, known.leaves, keys)
    for key, list in pairs(lists) do
      tables.known_tails["ids:" .. key], tables.known_tails["lengths:" .. key] = list:bytes()
    end
  end
  return gm.pack_tables(tables)
end

function Graph:save(path, known)
  local ok, err = gm.write_atomic(path, { self:encode(known) })
  if not ok then error("seed_graph:save: " .. err, 2) end
end

function M.load(path)
  local t = gm.load_tables(path, { lazy = true }) -- maps over the file: no Lua string per entry
  local meta = t.meta or {}
  if meta.format ~= FORMAT then error(path .. ": not a seed graph index (seed_graph:save writes one)", 0) end
  if not READS[meta.version] then
    error(string.format("%s: a seed graph index of version %s, this build reads versions 1 to %s", path,
      tostring(meta.version), VERSION), 0)
  end
  local tails = {}
  for name, tbl in pairs(t) do
    local relation = name:match("^tails:(.*)")
    local kind = relation and "map" or TABLES[name] or OPTIONAL[name]
    local v
    for _, first in pairs(tbl) do v = first break end
    if not kind then error(string.format("%s: the seed graph index has an unknown table %s", path, name), 0) end
    if kind == "map" and v ~= nil and type(v) ~= "string" and not (name == "cased" and meta.version == "5") then
      error(string.format("%s: the seed graph index's %s table is not a map of strings", path, name), 0)
    end
    if relation then tails[relation] = tbl end
  end
  for name in pairs(TABLES) do
    if not t[name] then error(string.format("%s: the seed graph index lacks its %s table", path, name), 0) end
  end
  local longest, max_words = math.tointeger(tonumber(meta.longest)), tonumber(meta.max_words or "")
  if type(meta.dataset) ~= "string" or type(meta.relations) ~= "string" or not longest
    or (meta.max_words and not max_words) then
    error(path .. ": the seed graph index's meta table lacks dataset, relations or longest, or has a bad max_words", 0)
  end
  local known
  if t.known_tails then
    local leaves = math.tointeger(tonumber(meta.tails_leaves or ""))
    if not leaves or type(meta.tails_tokenizer) ~= "string" then
      error(path .. ": the seed graph index has known tails but its meta table lacks their tokenizer or leaf count", 0)
    end
    -- tails stored before names spelled with [UNK] were left out are built again (and stored)
    if meta.tails_spelled == "1" then
      known = { path = path, lists = t.known_tails, tokenizer = meta.tails_tokenizer, leaves = leaves }
    end
  end
  local pair_tails = {}
  for key, types in pairs(t.pair_tails or {}) do
    local relation, head_type = key:match("^(.-)%z(.*)$")
    if not relation then error(string.format("%s: the seed graph index's pair_tails table has a bad key", path), 0) end
    pair_tails[relation] = pair_tails[relation] or {}
    pair_tails[relation][head_type] = types_set(types)
  end
  if meta.subsumption and not t.tail_types[meta.subsumption] then
    error(path .. ": the seed graph index's subsumption relation is none of its relations", 0) end
  return setmetatable({ version = meta.version, known = known, dataset = meta.dataset, type = t.entity_types, name = t.entity_names,
    subsumption = meta.subsumption,
    aliases = t.entity_aliases, tails = tails, pair_tails = pair_tails,
    relation_names = linker.split(meta.relations), head_types = map(t.head_types, types_set),
    tail_types = map(t.tail_types, types_set),
    linker = linker.restore { index = t.phrases, prefix = t.prefixes, longest = longest, max_words = max_words,
      stopwords = t.stopwords, cased = t.cased } }, Graph)
end

function Graph:heads(text) return self.linker:heads(text) end

function Graph:candidates(phrase) return self.linker:candidates(phrase) end

-- the first of the entities `ids` (a phrase's candidates, nil: none) of a type in `types` (a set,
-- or "*" for any), or nil
local function first_of_type(g, ids, types)
  if not types or not ids then return nil end
  if types == "*" then return ids[1] end
  for _, id in ipairs(ids) do if types[g.type[id]] then return id end end
end

local function of_type(g, ids, types) return first_of_type(g, ids, types) ~= nil end

function Graph:entity(text, relation, role, head_id)
  local ids = self.linker:candidates(linker.normalize(text))
  if not ids then return nil end
  local types = relation and (role == "head" and self.head_types or self.tail_types)[relation]
  if role == "tail" and head_id and self.type[head_id] and self.pair_tails[relation] then
    types = self:tail_types_of(relation, self.type[head_id]) or types
  end
  local id = types and first_of_type(self, ids, types) or ids[1]
  return id, self.name[id]
end

function Graph:relations_for(phrase, names)
  local out, ids = {}, self.linker:candidates(phrase)
  for _, name in ipairs(names) do
    if of_type(self, ids, self.head_types[name]) then out[#out + 1] = name end
  end
  return out
end

function Graph:present(phrase)
  local out = {}
  for _, id in ipairs(self.linker:candidates(phrase) or {}) do
    for _, name in ipairs(self.relation_names) do
      if self.tails[name] and self.tails[name][id] then out[name] = true end
    end
  end
  return out
end

function Graph:known_tails(tok, relations, leaves)
  local names = {}
  for name in pairs(relations) do names[#names + 1] = name end
  local keys = keys_of(self, names)
  local lists = stored_tails(self, tok, leaves, keys)
  local how = lists and "stored" or "built"
  lists = lists or built_tails(self, tok, leaves, keys)
  -- (by_key through the metatable: iterating the lists gives relation ids only)
  local out = setmetatable({}, { __index = { by_key = lists } })
  for name, id in pairs(relations) do out[id] = lists[tails_key(self.tail_types[name])] end
  return out, how
end

function Graph:tail_types_of(name, head_type)
  local by_head = self.pair_tails[name]
  if not by_head then return self.tail_types[name] end
  return by_head[head_type] or by_head["*"]
end

-- the type of the first of a phrase's (or name's) entities the relation takes as a head, or nil
local function head_type(self, name, text)
  local id = first_of_type(self, self.linker:candidates(linker.normalize(text)), self.head_types[name])
  return id and self.type[id]
end

-- (when the phrase's entities the relation takes are of several types — WordNet's noun and verb
-- "dog" —, the relation's own list serves: the mention may be either)
function Graph:head_tails(known, name, phrase)
  if not self.pair_tails[name] then return nil end
  local allowed, ht = self.head_types[name], nil
  for _, id in ipairs(self.linker:candidates(phrase) or {}) do
    local t = self.type[id]
    if allowed == "*" or allowed[t] then
      if ht and t ~= ht then return nil end
      ht = t
    end
  end
  local types = ht and self:tail_types_of(name, ht)
  return types and known.by_key[tails_key(types)]
end

function Graph:holds(t)
  local heads, tails = self.linker:candidates(linker.normalize(t.head)), self.linker:candidates(linker.normalize(t.tail))
  if not heads or not tails then return false end
  local by_head = self.tails[t.relation]
  if not by_head then return false end
  for _, h in ipairs(heads) do
    local known = by_head[h]
    if known then
      known = "\0" .. known .. "\0" -- every id between two \0, so one is never found inside another
      for _, x in ipairs(tails) do
        if known:find("\0" .. x .. "\0", 1, true) then return true end
      end
    end
  end
  return false
end

function Graph:valid(t)
  local types = self.tail_types[t.relation]
  if self.pair_tails[t.relation] then -- (the head's entity when the triple names it, else its name's first)
    local ht = type(t.head_id) == "string" and self.type[t.head_id] or head_type(self, t.relation, t.head)
    types = ht and self:tail_types_of(t.relation, ht)
  end
  return of_type(self, self.linker:candidates(linker.normalize(t.tail)), types)
end

return M
