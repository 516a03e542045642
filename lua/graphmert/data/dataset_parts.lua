-- dataset_parts.lua — the parts of a dataset read from their files into a Dataset
-- (graphmert.data.dataset), each record checked: an entity needs an id and a name, a relation row
-- its three fields; a triple's head and tail are resolved to entity ids (by id, or by a name or
-- alias naming one entity) and, with a relation schema, its types checked against the schema's
-- rows; a passage needs text and an id of its own; an entity's and a relation's properties must
-- be known ones. A record that fails is skipped, counted by
-- reason and named as `file:line: reason` (ds:skip).
--   parts.entities(ds, path), parts.relations(ds, path): entities.tsv/.jsonl, relations.tsv/.jsonl
--   parts.triples(ds, path, implicit): triples.tsv/.jsonl (implicit: no entities file, so a name
--     the dataset does not know yet becomes an entity)
--   parts.corpus_file(ds, path, prefix, implicit): one corpus file's passages (ids prefix:line when
--     a folder holds several files), with a corpus.jsonl's per-passage triples
--   parts.a(word) → a type with its article, as a message says it: "an entity", "a gene"
local cjson = require "cjson"
local normalize = require("graphmert.data.linker").normalize
local records = require "graphmert.data.dataset_records"
local seed_graph = require "graphmert.data.seed_graph"
local suggest = require("graphmert.experiment.args").suggest

local M = {}

function M.a(word) return (word:match("^[aeiouAEIOU]") and "an " or "a ") .. word end

-- A record's properties, `known` the list of those a file allows: in TSV its properties column,
-- comma-separated; in JSONL each a field of its own, true or false. → the set of those true, or
-- nil and why not.
local function properties(r, fields, known)
  local props, allowed = {}, {}
  for _, p in ipairs(known) do allowed[p] = true end
  if fields then
    for _, p in ipairs(records.list(r.properties, ",")) do
      if not allowed[p] then return nil, "unknown property '" .. p .. "' (known: " .. table.concat(known, ", ") .. ")" end
      props[p] = true
    end
    return props
  end
  for _, p in ipairs(known) do
    if r[p] ~= nil and type(r[p]) ~= "boolean" then return nil, p .. " not true or false" end
    props[p] = r[p] or nil
  end
  return props
end

-- An entity's properties (the fifth column; a JSONL record's "any_case": true): "any_case" has
-- its names matched in any case, where a name written with capitals is otherwise matched only
-- as written (gm.data.linker).
local ENTITY_PROPERTIES = { "any_case" }

function M.entities(ds, path)
  records.each(ds, path, { "id", "name", "type", "aliases", "properties" }, function(where, r, fields)
    local id, name = records.text(r.id), records.text(r.name)
    local props, why = properties(r, fields, ENTITY_PROPERTIES)
    if fields and fields < 2 then ds:skip(where, "fewer than 2 fields", "id<TAB>name<TAB>type<TAB>aliases; this line has one field: are its fields separated by tabs?")
    elseif fields and fields > 5 then -- aliases separated by tabs, not |, would lose all but the first
      ds:skip(where, "more than 5 fields", "id<TAB>name<TAB>type<TAB>aliases separated by |<TAB>properties")
    elseif not id then ds:skip(where, "no entity id")
    elseif not name then ds:skip(where, "no entity name")
    elseif ds.entities[id] then ds:skip(where, "duplicate entity id", id)
    elseif not fields and not records.is_string_list(r.aliases) then ds:skip(where, "aliases not a list of strings", id)
    elseif not props then ds:skip(where, why, fields and id .. "; aliases are separated by |, the fifth column holds properties" or id)
    else
      local type_ = r.type ~= nil and records.text(r.type) or "entity"
      ds:add_entity(id, name, type_, records.list(r.aliases, "|"), props.any_case)
    end
  end)
end

-- A relation's properties (the fourth column, comma-separated; a JSONL record's "subsumption":
-- true): "subsumption" marks the relation that orders the entities from specific to general (is_a,
-- hypernym), along which evaluation counts implied triples and the generic rules propose tails.
-- One relation at most has it.
local RELATION_PROPERTIES = { "subsumption" }

local function relation_properties(ds, name, r, fields)
  local props, why = properties(r, fields, RELATION_PROPERTIES)
  if not props then return nil, why end
  if props.subsumption and ds.subsumption and ds.subsumption ~= name then
    return nil, "a second subsumption relation (" .. ds.subsumption .. " is one)"
  end
  return props
end

function M.relations(ds, path)
  ds.schema_given = true
  records.each(ds, path, { "relation", "head_types", "tail_types", "properties" }, function(where, r, fields)
    local name = records.text(r.relation or r.name)
    local props, why
    if name and not (fields and (fields < 3 or fields > 4)) then props, why = relation_properties(ds, name, r, fields) end
    if fields and (fields < 3 or fields > 4) then
      ds:skip(where, fields < 3 and "fewer than 3 fields" or "more than 4 fields",
        "relation<TAB>head types<TAB>tail types[<TAB>properties]")
    elseif not name then ds:skip(where, "no relation name")
    elseif not fields and not (records.is_string_list(r.head_types) and records.is_string_list(r.tail_types)) then
      ds:skip(where, "types not a list of strings", name)
    elseif not props then ds:skip(where, why, name)
    else
      local row = { head = {}, tail = {}, where = where }
      for _, side in ipairs { "head", "tail" } do
        for _, t in ipairs(records.list(r[side .. "_types"], ",")) do row[side][t] = true end
        if row[side]["*"] or next(row[side]) == nil then row[side] = "*" end
      end
      if props.subsumption then ds.subsumption = name end
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
  local v = records.text(value)
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

-- ": did you mean part_of?" for a relation the schema lacks but names nearly (a typo), else ""
-- (once per name: a dataset may repeat it on every line)
local function near_relation(ds, relation)
  ds.near_relation = ds.near_relation or {}
  if not ds.near_relation[relation] then
    local known = {}
    for name in pairs(ds.schema) do known[#known + 1] = name end
    table.sort(known)
    local near = suggest(relation, known)
    ds.near_relation[relation] = near and ": did you mean " .. near .. "?" or ""
  end
  return ds.near_relation[relation]
end

-- one triple from a file or a passage: resolved, its relation and types checked, added
-- (a per-passage triple may repeat one another passage gave: `from_passage` does not report it)
local function add_triple(ds, where, r, implicit, fields, from_passage)
  local relation = records.text(r.relation)
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
    if not s then
      return ds:skip(where, "unknown relation", relation .. " is not in the relation schema" .. near_relation(ds, relation))
    end
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

function M.triples(ds, path, implicit)
  records.each(ds, path, { "head", "relation", "tail" }, function(where, r, fields) add_triple(ds, where, r, implicit, fields) end)
end

function M.corpus_file(ds, path, prefix, implicit)
  local jsonl = path:match("%.jsonl$")
  for n, line in records.lines(path) do
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
        local text, id = records.text(rec.text), no_id and default_id or records.text(rec.id)
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
                if head then triples[#triples + 1] = { head = head, relation = records.text(t.relation), tail = tail } end
              end
            end
          end
          local entity, why, what
          if records.text(rec.entity) then entity, why, what = resolve(ds, rec.entity, false) end
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

return M
