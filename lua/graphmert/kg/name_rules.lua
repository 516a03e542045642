-- name_rules.lua — the rules read off the entities' names, which need no patterns file
-- (graphmert.kg.rules applies them and measures them with the others):
--   subsumption  the entity named by the head's name without its first words (its longest such
--                proper word-suffix: "mitochondrial inner membrane" → "inner membrane"), else
--                without one modifier word ("mitochondrial membrane")
--   parallel     the head's name holds a known entity's name among other words; each tail the
--                seed graph gives that entity, put in its place, that names an entity:
--                "negative regulation of thymocyte apoptotic process" holds "thymocyte apoptotic
--                process", which is_a "T cell apoptotic process" → "negative regulation of T
--                cell apoptotic process" (a compositional name inherits its part's parents)
--   specialization  for the relation the seed graph shows to be the subsumption relation's
--                inverse (hyponym for hypernym): the entities whose subsumption rule gives the
--                head ("red oak", "white oak" for "oak")
--   affix        learned from the seed graph: where a relation's facts often join names that
--                differ only in their ending or their beginning ("abandonment" → "abandon",
--                "happily" → "happy", "unhappy" → "happy"), that rewrite of the head's name,
--                when it names an entity; each rewrite scored by the share of the seed graph's
--                own entities it is right for
--
--   takes(graph, relation, id) → whether the relation takes the entity as a head (its type among
--     the relation's head types)
--   fits(graph, relation, head_id, id) → whether the relation may reach entity id from the head
--     (the schema's types for the pair; never the head itself)
--   tail_entity(graph, relation, head_id, name) → the first entity a name denotes that the
--     relation may reach from the head (nil: none)
--   subsumers(graph, relation, head_id) → every lexical subsumer of the head, in the subsumption
--     rule's order (the rule takes the first)
--   parallels(graph, relation, head_id, facts) → the parallel rule's tails for the head
--   inverse(graph, facts, relation) → the relation whose facts mirror this one's (for at least
--     90% of at least 10 facts h → t, the fact t → h), or nil
--   specializations(graph, subsumption, relation, head_id) → the specialization rule's tails
--   affixes(graph, facts, exclude) → relation → its rewrites {side ("suffix"/"prefix"), from, to,
--     support (facts it joins), precision}, best first, learned from `facts` (rules.facts'
--     form) and scored on every entity the relation takes but those in `exclude`
--   affix_tails(graph, relation, rewrites, head_id) → the tails the rewrites give the head (ids)
--     and each one's score (its best rewrite's precision)
--   check_rewrites(list, where) → the rewrites of a saved rule, or an error naming `where`
local normalize = require("graphmert.data.linker").normalize

local M = {}

local STEM = 3          -- characters a rewrite keeps of a name at least (below that, it is a new word)
local SUPPORT = 3       -- facts a rewrite must join in the seed graph to be learned
local MIN_PRECISION = 0.1 -- a rewrite right less often proposes candidates that only cost time
local PER_HEAD = 5      -- the best-scored tails an affix rule gives one head and relation
local REWRITES = 200    -- the most supported rewrites a relation keeps (each costs every head a lookup)
local MIRRORED = 0.9    -- the share of a relation's facts another must mirror to be its inverse
local SPECIALIZATIONS = 10 -- the most a head gets ("oak" has dozens)

function M.fits(graph, relation, head_id, id)
  if id == head_id then return false end
  local types = graph:tail_types_of(relation, graph.type[head_id])
  return types == "*" or (types ~= nil and types[graph.type[id]] ~= nil)
end

-- (name already normalised)
local function fitting(graph, relation, head_id, name)
  for _, id in ipairs(graph:candidates(name) or {}) do
    if M.fits(graph, relation, head_id, id) then return id end
  end
end

function M.tail_entity(graph, relation, head_id, name) return fitting(graph, relation, head_id, normalize(name)) end
local tail_entity = M.tail_entity

local function words_of(graph, id)
  local words = {}
  for w in normalize(graph.name[id] or ""):gmatch("%S+") do words[#words + 1] = w end
  return words
end

function M.subsumers(graph, relation, head_id)
  local words, out, seen = words_of(graph, head_id), {}, {}
  local function add(id) if id and not seen[id] then seen[id] = true; out[#out + 1] = id end end
  for k = 2, #words do add(tail_entity(graph, relation, head_id, table.concat(words, " ", k))) end
  for k = 1, #words - 1 do
    local rest = {}
    for j, w in ipairs(words) do if j ~= k then rest[#rest + 1] = w end end
    add(tail_entity(graph, relation, head_id, table.concat(rest, " ")))
  end
  return out
end

-- a name's parts that name entities, with the words around each: {before, after, ids}, found once
-- per graph and head (every passage and relation asks again)
local parts_memo = setmetatable({}, { __mode = "k" })
local function parts_of(graph, head_id)
  local memo = parts_memo[graph] or {}
  parts_memo[graph] = memo
  if memo[head_id] then return memo[head_id] end
  local words, parts = words_of(graph, head_id), {}
  for i = 1, #words do
    for j = i, i == 1 and #words - 1 or #words do -- (a part among other words, not the whole name)
      local ids = {}
      for _, id in ipairs(graph:candidates(table.concat(words, " ", i, j)) or {}) do
        if id ~= head_id then ids[#ids + 1] = id end -- (an alias inside its own name is no part)
      end
      if #ids > 0 then
        parts[#parts + 1] = { before = table.concat(words, " ", 1, i - 1), after = table.concat(words, " ", j + 1), ids = ids }
      end
    end
  end
  memo[head_id] = parts
  return parts
end

function M.parallels(graph, relation, head_id, facts)
  local out, seen = {}, { [head_id] = true }
  local by_head = (facts or graph.tails)[relation] or {}
  for _, part in ipairs(parts_of(graph, head_id)) do
    for _, id in ipairs(part.ids) do
      for tail in (by_head[id] or ""):gmatch("[^%z]+") do
        local name = part.before .. " " .. normalize(graph.name[tail]) .. " " .. part.after
        local found = tail_entity(graph, relation, head_id, name:match("^%s*(.-)%s*$"))
        if found and not seen[found] then seen[found] = true; out[#out + 1] = found end
      end
    end
  end
  return out
end

function M.inverse(graph, facts, relation)
  local by_head, total, mirrored = facts[relation] or {}, 0, {}
  for head, joined in pairs(by_head) do
    for tail in joined:gmatch("[^%z]+") do
      total = total + 1
      for _, other in ipairs(graph.relation_names) do
        local back = other ~= relation and facts[other] and facts[other][tail]
        if back and ("\0" .. back .. "\0"):find("\0" .. head .. "\0", 1, true) then
          mirrored[other] = (mirrored[other] or 0) + 1
        end
      end
    end
  end
  if total < 10 then return nil end
  for _, other in ipairs(graph.relation_names) do
    if (mirrored[other] or 0) >= MIRRORED * total then return other end
  end
end

function M.takes(graph, relation, id)
  local types = graph.head_types[relation]
  return types == "*" or (types and types[graph.type[id]]) and true or false
end
local takes = M.takes

-- the graph's entities in a fixed order (so that learning never depends on a table's), each
-- with its name normalised; found once per graph
local entities_memo = setmetatable({}, { __mode = "k" })
local function entities(graph)
  local memo = entities_memo[graph]
  if not memo then
    memo = { ids = {}, names = {} }
    for id, name in pairs(graph.name) do memo.ids[#memo.ids + 1] = id; memo.names[id] = normalize(name) end
    table.sort(memo.ids)
    entities_memo[graph] = memo
  end
  return memo.ids, memo.names
end

-- subsumption relation → entity → the entities whose subsumption rule gives it, shortest name
-- first (the nearest specializations), found once per graph (names only: no fact is read)
local specialized_memo = setmetatable({}, { __mode = "k" })
function M.specializations(graph, subsumption, relation, head_id)
  local memo = specialized_memo[graph] or {}
  specialized_memo[graph] = memo
  local by_general = memo[subsumption]
  if not by_general then
    by_general = {}
    local ids, names = entities(graph)
    for _, id in ipairs(ids) do
      local general = M.subsumers(graph, subsumption, id)[1]
      if general then
        local list = by_general[general] or {}
        by_general[general] = list
        list[#list + 1] = id
      end
    end
    for _, list in pairs(by_general) do
      table.sort(list, function(a, b) if #names[a] ~= #names[b] then return #names[a] < #names[b] end return a < b end)
    end
    memo[subsumption] = by_general
  end
  local out = {}
  for _, id in ipairs(by_general[head_id] or {}) do
    if #out < SPECIALIZATIONS and M.fits(graph, relation, head_id, id) then out[#out + 1] = id end
  end
  return out
end

-- the rewrite that turns name a into name b, keeping their longest common beginning (a suffix
-- rewrite) or ending (a prefix rewrite) of at least STEM characters; nil when they share less,
-- or all (two entities of one name)
local function rewrite_of(a, b)
  if a == b then return nil end
  local p, s = 0, 0
  while p < #a and p < #b and a:byte(p + 1) == b:byte(p + 1) do p = p + 1 end
  while s < #a and s < #b and a:byte(#a - s) == b:byte(#b - s) do s = s + 1 end
  if p >= s and p >= STEM then return "suffix", a:sub(p + 1), b:sub(p + 1) end
  if s > p and s >= STEM then return "prefix", a:sub(1, #a - s), b:sub(1, #b - s) end
end

-- the rewrites (indexed: side → from → list) that apply to a name, with the names they give
local function rewritten(index, name, visit)
  for side, by_from in pairs(index.by) do
    for k = 0, math.min(#name - STEM, index.longest[side]) do
      local list = by_from[side == "suffix" and name:sub(#name - k + 1) or name:sub(1, k)]
      for _, r in ipairs(list or {}) do
        local stem = side == "suffix" and name:sub(1, #name - k) or name:sub(k + 1)
        local out = side == "suffix" and stem .. r.to or r.to .. stem
        if out ~= name then visit(r, out) end
      end
    end
  end
end

local function index_of(rewrites)
  local index = { by = { suffix = {}, prefix = {} }, longest = { suffix = -1, prefix = -1 } }
  for _, r in ipairs(rewrites) do
    local list = index.by[r.side][r.from] or {}
    index.by[r.side][r.from] = list
    list[#list + 1] = r
    index.longest[r.side] = math.max(index.longest[r.side], #r.from)
  end
  return index
end

local function key_of(r) return r.side .. "\0" .. r.from .. "\0" .. r.to end

-- a sort of rewrites by a field, largest first, ties in a fixed order
local function most(field)
  return function(a, b)
    if a[field] ~= b[field] then return a[field] > b[field] end
    return key_of(a) < key_of(b)
  end
end

-- (a rewrite is scored as rules.measure scores a rule: a proposal naming an excluded entity is
-- not counted, and it holds when the name denotes one of the head's tails, by any of its names)
function M.affixes(graph, facts, exclude)
  local out, ids, names = {}, entities(graph)
  for _, relation in ipairs(graph.relation_names) do
    local seen, by_head = {}, facts[relation] or {}
    for head, joined in pairs(by_head) do
      local name = names[head] or ""
      for tail in joined:gmatch("[^%z]+") do
        local side, from, to = rewrite_of(name, names[tail] or "")
        if side then
          local r = { side = side, from = from, to = to, support = 0, proposed = 0, held = 0 }
          local key = key_of(r)
          seen[key] = seen[key] or r
          seen[key].support = seen[key].support + 1
        end
      end
    end
    local rewrites = {}
    for _, r in pairs(seen) do
      if r.support >= SUPPORT then rewrites[#rewrites + 1] = r end
    end
    table.sort(rewrites, most "support")
    for i = #rewrites, REWRITES + 1, -1 do rewrites[i] = nil end
    if #rewrites > 0 then
      local index = index_of(rewrites)
      for _, head in ipairs(ids) do
        if not exclude[head] and takes(graph, relation, head) then
          local known
          rewritten(index, names[head], function(r, name)
            local id = fitting(graph, relation, head, name)
            if id and not exclude[id] then
              if not known then
                known = {}
                for tail in (by_head[head] or ""):gmatch("[^%z]+") do known[tail] = true end
              end
              r.proposed = r.proposed + 1
              for _, other in ipairs(graph:candidates(name)) do
                if known[other] then r.held = r.held + 1 break end
              end
            end
          end)
        end
      end
      local kept = {}
      for _, r in ipairs(rewrites) do
        r.precision = (r.held + 1) / (r.proposed + 2)
        r.proposed, r.held = nil, nil
        if r.precision >= MIN_PRECISION then kept[#kept + 1] = r end
      end
      table.sort(kept, most "precision")
      if #kept > 0 then out[relation] = kept end
    end
  end
  return out
end

-- (a rule's rewrites → their index and each head's tails, found once: a head is asked once a
-- passage that mentions it)
local affix_memo = setmetatable({}, { __mode = "k" })
function M.affix_tails(graph, relation, rewrites, head_id)
  local memo = affix_memo[rewrites] or { index = index_of(rewrites), heads = {} }
  affix_memo[rewrites] = memo
  local found = memo.heads[head_id]
  if found then return found[1], found[2] end
  local index, best = memo.index, {}
  rewritten(index, normalize(graph.name[head_id] or ""), function(r, name)
    local id = fitting(graph, relation, head_id, name)
    if id and (best[id] or 0) < r.precision then best[id] = r.precision end
  end)
  local ids = {}
  for id in pairs(best) do ids[#ids + 1] = id end
  table.sort(ids, function(a, b) if best[a] ~= best[b] then return best[a] > best[b] end return a < b end)
  local scores = {}
  for i = #ids, 1, -1 do
    if i > PER_HEAD then ids[i] = nil else scores[i] = best[ids[i]] end
  end
  memo.heads[head_id] = { ids, scores }
  return ids, scores
end

function M.check_rewrites(list, where)
  if type(list) ~= "table" or #list == 0 then error(where .. ": an affix rule needs a list of its rewrites", 0) end
  for i, r in ipairs(list) do
    if type(r) ~= "table" or (r.side ~= "suffix" and r.side ~= "prefix") or type(r.from) ~= "string"
        or type(r.to) ~= "string" or type(r.precision) ~= "number" or not (r.precision >= 0 and r.precision <= 1) then
      error(string.format("%s, rewrite %d: needs side (suffix or prefix), from, to and a precision in [0, 1]", where, i), 0)
    end
  end
  return list
end

return M
