-- page.lua — the KG page: an extracted knowledge graph as one self-contained HTML file (its CSS,
-- JavaScript and data inline: no server, no network, opens from disk offline) to browse, check
-- and review it. The page (graphmert.kg.page_template) searches entities by name or alias, draws
-- an entity's neighbourhood (extracted triples and seed-graph facts told apart, coloured by
-- relation, score as line weight), shows each triple's evidence (its passages, the head and tail
-- mentions marked), filters by relation, minimum score and seed vs new (kept in the URL's
-- fragment, so a view can be shared), sums the graph up, and records a reviewer's accept / reject
-- per triple, exported as JSONL that `graphmert score --gold` reads as a gold set.
--
--   page.data{triples =, graph =, passages =, lines =, stored =, title =, kg =, corpus =} → the page's data
--     triples: kg.jsonl records {head, relation, tail, score, count, sources, decoding, head_id,
--       tail_id, seed}; a head or tail without an id is a new entity, "new:" .. its name (kg.entity_ids)
--     graph: the seed graph (gm.data.seed_graph; optional): entity names, types and aliases, and
--       the facts that touch the triples' entities, drawn beside them
--     passages: passage id (a source, as a string) → text (optional: without it the page lists
--       the sources' ids only); a source missing from it is an error, and so is (with the graph)
--       a source that does not mention its triple's head, or (without) passages of which most do
--       not (another corpus, or its lines reordered; not checked with stored = true: a store's
--       own passages)
--     lines: passage id → its line in the corpus, for the ids that are not their line number (a
--       JSONL record's own "id"; optional), shown with the passage
--     With the graph and the passages, each triple's row holds where each source mentions its
--     head and tail, as the linker reads the passage (mention_marker)
--   page.cited(triples, next_passage) → id → text of the passages the triples cite, read from an
--     iterator over a corpus's passages ({id, line, text}, gm.data.corpus.each_passage), and
--     their lines (page.data's lines); sources that are all line numbers of a corpus whose
--     records have ids (a graph extracted before ids were kept) are read by line
--   page.html(data) → the page's text
--   page.write(path, data) → writes it atomically (true, or nil and the error)
--   page.path(kg) → the page's path beside a kg file: kg.jsonl's is kg.html (.jsonl replaced), any
--     other file's (a kg.sqlite store's) its name and .html (kg.sqlite.html), so that a kg.jsonl
--     and a kg.sqlite in one folder have a page each
--   page.page_of_other(path, kg) → the kg file beside `kg` whose page `path` is, when it is not kg
--     itself and exists (nil otherwise): a page not to be replaced unasked
-- The data is JSON in a <script type="application/json"> element, every "<" escaped, so no text
-- of the corpus can end it. Scores are kept to 4 decimals.
local cjson = require "cjson"
local gm = require "graphmert"
local linker = require "graphmert.data.linker"
local ids_of = require("graphmert.kg.entity_ids").of

local M = {}

local MAX_ALIASES = 12 -- per entity: enough to find it by, bounded for graphs with long synonym lists

local function round4(x) return math.floor(x * 1e4 + 0.5) / 1e4 end

-- the ids, in order of first appearance, and a table id → position (0-based, as JavaScript counts)
local function indexer()
  local list, at = {}, {}
  return list, at, function(id)
    local i = at[id]
    if not i then
      list[#list + 1] = id
      i = #list - 1
      at[id] = i
    end
    return i
  end
end

local function fail(msg) error("kg page: " .. msg, 0) end

-- the ids of a linker index entry: joined by "\0" once frozen, a list while it is built
local function each_id(candidates)
  if type(candidates) == "string" then return candidates:gmatch("[^\0]+") end
  local i = 0
  return function()
    i = i + 1
    return candidates[i]
  end
end

-- the entries of a seed-graph table (a Lua table, or a map over the index file, which
-- gm.table_find searches without a Lua string per entry) whose key or one of whose ids is wanted
local function entries_touching(tbl, wanted)
  if type(tbl) == "userdata" then return gm.table_find(tbl, wanted) end
  local out = {}
  for key, ids in pairs(tbl) do
    local hit = wanted[key]
    for id in each_id(ids) do
      if hit then break end
      hit = wanted[id]
    end
    if hit then out[key] = ids end
  end
  return out
end

-- the linker's phrases (names and aliases, normalised) of the entities in `wanted`: id → list
local function linker_phrases(graph, wanted)
  local out = {}
  for phrase, candidates in pairs(entries_touching(graph.linker.index, wanted)) do
    for id in each_id(candidates) do
      if wanted[id] then
        out[id] = out[id] or {}
        table.insert(out[id], phrase)
      end
    end
  end
  return out
end

-- a source as the page keys it: a line number as text (cjson reads 2 as 2.0), a record's id as it is
-- ("007" stays "007": only numbers are converted)
local function source_id(s) return type(s) == "number" and tostring(math.tointeger(s) or s) or s end

function M.cited(triples, next_passage)
  local wanted, by_id, by_line = {}, {}, {}
  for _, t in ipairs(triples) do
    for _, s in ipairs(type(t.sources) == "table" and t.sources or {}) do wanted[source_id(s)] = true end
  end
  for p in next_passage do
    local id, line = source_id(p.id), p.line and tostring(p.line)
    if wanted[id] then by_id[id] = p end
    if line and line ~= id and wanted[line] then by_line[line] = p end
  end
  -- a graph extracted before a JSONL record's id was its passage's id lists line numbers: when
  -- every source is a line of the corpus and not all are ids, it is read by line
  local found = by_id
  if next(by_line) then
    local all_ids, all_lines = true, true
    for w in pairs(wanted) do all_ids, all_lines = all_ids and by_id[w] ~= nil, all_lines and by_line[w] ~= nil end
    if all_lines and not all_ids then found = by_line end
  end
  local out, lines = {}, {}
  for id, p in pairs(found) do
    out[id] = p.text
    if found == by_id and p.line and id ~= tostring(p.line) then lines[id] = p.line end
  end
  return out, lines
end

-- The phrases (normalised names and aliases: all the linker links by) that name each triple's
-- head and tail, as sets: the head by its written name, the page's name of its entity and the
-- phrases of any entity of its name (kg.jsonl merges WordNet's noun and verb "discharge" by
-- name) and of its id; the tail by its written name and its id's phrases.
local function phrase_sets(graph, triples, entities, entity_at)
  local of_name, wanted = {}, {}
  if graph then
    for _, t in ipairs(triples) do
      local head = linker.normalize(t.head)
      of_name[head] = of_name[head] or graph:candidates(head) or {}
      for _, id in ipairs(of_name[head]) do wanted[id] = true end
      local h, tl = ids_of(t)
      wanted[h], wanted[tl] = true, true
    end
  end
  local phrases = graph and linker_phrases(graph, wanted) or {}
  local heads, tails = {}, {}
  for n, t in ipairs(triples) do
    local h, tl = ids_of(t)
    local head = linker.normalize(t.head)
    heads[n] = { [head] = true, [linker.normalize(entities[entity_at[h] + 1][2])] = true }
    tails[n] = { [linker.normalize(t.tail)] = true }
    for _, same in ipairs(of_name[head] or {}) do
      for _, p in ipairs(phrases[same] or {}) do heads[n][p] = true end
    end
    for _, p in ipairs(phrases[h] or {}) do heads[n][p] = true end
    for _, p in ipairs(phrases[tl] or {}) do tails[n][p] = true end
  end
  return heads, tails
end

-- marker(source, head phrases, tail phrases, new tail) → {head start, end, tail start, end} in a
-- passage: the first of the linker's mentions (the longest name at a place, never inside a word
-- or a contraction: where extraction found the head) that is one of the head's phrases, and the
-- first of the tail's apart from it — for a tail open decoding wrote (no entity, no mention),
-- the first run of whole words that spells it. In UTF-16 code units, as the page's JavaScript
-- counts; cjson.null where there is none. Each passage is read once.
local function mention_marker(graph, passages)
  local read = {}
  local function passage(s)
    if not read[s] then
      local text = passages[s]
      local words, first, after = linker.word_spans(text)
      -- the UTF-16 offset of a byte: characters before it, and one more for each beyond U+FFFF
      local function offset(b)
        local before = text:sub(1, b - 1)
        return (utf8.len(before) or #before) + select(2, before:gsub("[\240-\247]", ""))
      end
      local surface = linker.surface(text, function(i) return first[i], after[i] end)
      read[s] = { words = words, first = first, after = after, mentions = graph.linker:mentions(nil, words, surface),
        offset = offset }
    end
    return read[s]
  end
  local function span(p, i, count) return p.offset(p.first[i]), p.offset(p.after[i + count - 1]) end
  return function(s, heads, tails, new_tail)
    local p = passage(s)
    local mark = { cjson.null, cjson.null, cjson.null, cjson.null }
    local head_first, head_last
    for _, m in ipairs(p.mentions) do
      if heads[m.phrase] then
        mark[1], mark[2] = span(p, m.first, m.words)
        head_first, head_last = m.first, m.first + m.words - 1
        break
      end
    end
    local function apart(i, count) return not head_first or i + count - 1 < head_first or i > head_last end
    if new_tail then
      local want = {}
      for w in new_tail:gmatch("%S+") do want[#want + 1] = w end
      for i = 1, #p.words - #want + 1 do
        local same = #want > 0
        for k = 1, #want do same = same and p.words[i + k - 1] == want[k] end
        if same and apart(i, #want) then
          mark[3], mark[4] = span(p, i, #want)
          break
        end
      end
    else
      for _, m in ipairs(p.mentions) do
        if tails[m.phrase] and apart(m.first, m.words) then
          mark[3], mark[4] = span(p, m.first, m.words)
          break
        end
      end
    end
    return mark
  end
end

function M.data(opts)
  local graph, passages = opts.graph, opts.passages
  local triples = opts.triples or fail("no triples given")
  local ids, entity_at, entity = indexer()
  local names = {}
  local relations, _, relation = indexer()
  if graph then for _, name in ipairs(graph.relation_names) do relation(name) end end
  local decodings, _, decoding = indexer()

  local rows = {}
  for n, t in ipairs(triples) do
    if type(t.head) ~= "string" or type(t.relation) ~= "string" or type(t.tail) ~= "string" or type(t.score) ~= "number" then
      fail(string.format("triple %d has no head, relation, tail and score", n))
    end
    local head_id, tail_id = ids_of(t)
    names[head_id], names[tail_id] = names[head_id] or t.head, names[tail_id] or t.tail
    local sources = {}
    for i, s in ipairs(type(t.sources) == "table" and t.sources or {}) do
      sources[i] = source_id(s)
      if passages and not passages[sources[i]] then
        fail(string.format("passage %s, a source of %s / %s / %s, is not in the corpus given", sources[i], t.head,
          t.relation, t.tail))
      end
    end
    rows[n] = { entity(head_id), relation(t.relation), entity(tail_id), round4(t.score), math.tointeger(t.count) or #sources,
      decoding(t.decoding or "open"), t.seed and 1 or 0, sources }
  end

  -- the seed graph's facts with an end among the triples' entities (one hop around the graph)
  local facts = {}
  if graph then
    local wanted, found = {}, {}
    for _, id in ipairs(ids) do wanted[id] = true end
    for name, heads in pairs(graph.tails) do
      for head, joined in pairs(entries_touching(heads, wanted)) do
        for tail in joined:gmatch("[^\0]+") do
          if wanted[head] or wanted[tail] then found[#found + 1] = { name, head, tail } end
        end
      end
    end
    table.sort(found, function(a, b)
      if a[1] ~= b[1] then return a[1] < b[1] end
      if a[2] ~= b[2] then return a[2] < b[2] end
      return a[3] < b[3]
    end)
    for i, f in ipairs(found) do facts[i] = { entity(f[2]), relation(f[1]), entity(f[3]) } end
  end

  -- the entities: [id, name, type, seed (0/1), aliases]; aliases are a store's, else the seed
  -- graph's as written, else (an index of before version 3) the linker's phrases, folded to lower
  -- case, for the entity other than its own name
  local known = opts.entities or {}
  local aliases = {}
  if graph and graph.aliases then
    for id, joined in pairs(entries_touching(graph.aliases, entity_at)) do
      if entity_at[id] and not known[id] then aliases[id] = linker.split(joined) end
    end
  elseif graph then
    aliases = linker_phrases(graph, entity_at) -- (a store's own entities keep theirs, below)
  end
  local entities = {}
  for i, id in ipairs(ids) do
    local e = known[id] or {}
    local name = e.name or graph and graph.name[id] or names[id] or id:gsub("^new:", "")
    local own, list = linker.normalize(name), {}
    local candidates = e.aliases or aliases[id] or {}
    if not e.aliases and not (graph and graph.aliases) then table.sort(candidates) end
    for _, a in ipairs(candidates) do
      if linker.normalize(a) ~= own and #list < MAX_ALIASES then list[#list + 1] = a end
    end
    -- in the seed graph: as a store says, else as the graph says, else whether extraction named
    -- it by an id (only the seed graph's entities have one)
    local seed = e.seed
    if seed == nil then seed = not id:match("^new:") and (graph == nil or graph.name[id] ~= nil) end
    entities[i] = { id, name, e.type or graph and graph.type[id] or cjson.null, seed and 1 or 0, list }
  end

  -- the passages given must be those extracted from: a corpus of the same lines in another
  -- order would pair triples with passages that do not say them. Extraction asks a head only
  -- where its passage mentions it, so with the seed graph the triples' entities come from, each
  -- source of a triple must mention its head (by name or alias): one that does not is an error.
  -- Without that graph an alias may go unrecognised: refused when most triples' heads are in
  -- none of their passages.
  local head_phrases, tail_phrases
  if passages then head_phrases, tail_phrases = phrase_sets(graph, triples, entities, entity_at) end
  if passages and not opts.stored then
    local words, missing, checked, first = {}, 0, 0, nil
    for n, t in ipairs(triples) do
      local known = graph and graph.name[(ids_of(t))] ~= nil
      local found_any = false
      for _, s in ipairs(rows[n][8]) do
        words[s] = words[s] or " " .. linker.normalize(passages[s]) .. " "
        local here = false
        for name in pairs(head_phrases[n]) do here = here or words[s]:find(" " .. name .. " ", 1, true) ~= nil end
        found_any = found_any or here
        if known and not here and not first then first = { s, t } end
      end
      if #rows[n][8] > 0 then checked, missing = checked + 1, missing + (found_any and 0 or 1) end
    end
    local function wrong(why)
      fail(why .. ": the corpus given is not the one the graph was extracted from (its passages are known by their ids: line numbers, or a JSONL record's \"id\")")
    end
    if first then
      wrong(string.format("passage %s does not mention %s, the head of %s / %s / %s it is a source of", first[1],
        first[2].head, first[2].head, first[2].relation, first[2].tail))
    elseif checked > 0 and missing * 2 > checked then
      wrong(string.format("%d of the %d triples name a head that none of their passages mentions", missing, checked))
    end
  end

  if passages and graph then -- where the sources mention each triple's ends, as extraction read them
    local marker = mention_marker(graph, passages)
    for n, t in ipairs(triples) do
      local marks, new_tail = {}, graph.name[select(2, ids_of(t))] == nil and linker.normalize(t.tail)
      for i, s in ipairs(rows[n][8]) do marks[i] = marker(s, head_phrases[n], tail_phrases[n], new_tail) end
      rows[n][9] = marks
    end
  end

  local cited, cited_count, lines = {}, 0, {}
  if passages then
    for _, row in ipairs(rows) do
      for _, s in ipairs(row[8]) do
        if not cited[s] then
          cited[s], cited_count = passages[s], cited_count + 1
          lines[s] = opts.lines and opts.lines[s]
        end
      end
    end
  end
  return { format = "graphmert-kg-page", version = 1, title = opts.title or "Knowledge graph", kg = opts.kg or "",
    corpus = opts.corpus or "", dataset = graph and graph.dataset or "", created = os.date("!%Y-%m-%dT%H:%M:%SZ"),
    relations = relations, decodings = decodings, entities = entities, triples = rows, facts = facts,
    passages = cited, lines = lines, passage_count = cited_count }
end

-- JSON for the page, "<" escaped (cjson writes an empty list as {}: the page reads either)
local function page_json(data)
  local text = cjson.encode(data):gsub("<", "\\u003c")
  return text
end

function M.html(data)
  local template = require "graphmert.kg.page_template"
  local title = data.title:gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;" })
  local fill = { TITLE = title, DATA = page_json(data) }
  local html = template:gsub("{{(%u+)}}", fill)
  return html
end

function M.write(path, data)
  return gm.write_atomic(path, { M.html(data) })
end

function M.path(kg) return (kg:match("^(.*)%.jsonl$") or kg) .. ".html" end

-- The page by `path`, when it is the page of another kg file that is still there (a store's page
-- of an earlier graphmert, which named it kg.html too; a kg file named x.sqlite.jsonl): that
-- file's path, as the page names it, else nil.
function M.page_of_other(path, kg)
  local ok, html = pcall(gm.read_file, path)
  local made_of = ok and html:match('"kg":"(.-)"')
  made_of = made_of and made_of:gsub("\\/", "/")
  if not made_of or made_of:match("[^/]*$") == kg:match("[^/]*$") then return nil end
  local other = kg:gsub("[^/]*$", "") .. made_of:match("[^/]*$") -- beside kg, as the page's name says
  return gm.stat(other) and other or nil
end

return M
