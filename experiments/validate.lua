-- validate.lua — read and check a dataset before training on it: every file is read, each bad
-- line counted by reason (the first ones named as file:line), and the corpus linked against the
-- entities' names and aliases, so a user sees what training would get.
--   graphmert experiments/validate.lua --data experiments/data/tiny
--   graphmert experiments/validate.lua --config experiments/configs/tiny.lua [--strict]
-- Prints the dataset's summary, the skipped lines, how many entity mentions a passage has and
-- the share of passages with one, the ambiguous mentions, the triples whose head no passage
-- mentions (they cannot be injected), and the names written with capitals that the corpus
-- mostly writes in lower case (common words: linked only where written as named). Exits 0, or 1
-- with --strict when a line was skipped.
local gm = require "graphmert"
local ex = gm.experiment
local data_options = require "graphmert.experiment.data_options"

local args = ex.args.parse(arg, {
  script = "validate.lua", about = "Read and check a dataset (corpus, seed graph, entities, relation schema).",
  { "data", nil, "a dataset folder (corpus, triples, entities, relations files)" },
  { "config", nil, "a training config: its data" },
  { "strict", false, "exit 1 when any line was skipped", flag = true },
})
data_options.check("validate.lua", args, true)

local ds = ex.args.try("validate.lua", data_options.dataset, args)
local r = ds.report
local count = gm.data.dataset.plural
local sorted = require("graphmert.check").sorted_keys
print((ds:summary():gsub("; first: .*$", ""))) -- the skipped lines are listed below

-- the schema's types against the entities' (a typo on either side leaves a relation unusable, and
-- skips every triple it should join: said before those lines, as their cause)
if ds.schema_given then
  local typed, named, used_anywhere = {}, {}, false -- type → its entities; type → the schema lines naming it
  for _, id in ipairs(ds.entity_order) do
    local t = ds.entities[id].type
    typed[t] = typed[t] or {}
    table.insert(typed[t], id)
  end
  for _, name in ipairs(ds.relation_names) do
    for _, row in ipairs(ds.schema[name].rows) do -- (each line of the schema, named by its own place)
      for _, side in ipairs { "head", "tail" } do
        if row[side] == "*" then used_anywhere = true
        else
          for t in pairs(row[side]) do
            named[t] = named[t] or {}
            if named[t][#named[t]] ~= row.where then table.insert(named[t], row.where) end
          end
        end
      end
    end
  end
  local types = sorted(typed)
  for _, t in ipairs(sorted(named)) do
    if not typed[t] then
      local near = ex.args.suggest(t, types)
      print(string.format("the relation schema names the type %s, which no entity has (%s)%s", t,
        table.concat(named[t], ", ", 1, math.min(#named[t], 3)) .. (#named[t] > 3 and ", ..." or ""),
        near and ": did you mean " .. near .. "?" or " (entity types: " .. table.concat(types, ", ") .. ")"))
    end
  end
  if not used_anywhere then
    for _, t in ipairs(types) do
      if not named[t] then
        print(string.format("no relation takes entities of type %s: %s (%s%s)%s", t, count(#typed[t], "entity", "entities"),
          table.concat(typed[t], ", ", 1, math.min(#typed[t], 3)), #typed[t] > 3 and ", ..." or "",
          t == "entity" and "; an entity with an empty type is of type entity" or ""))
      end
    end
  end
end
if r.skipped_total > 0 then
  print(string.format("skipped lines (%d; the first %d):", r.skipped_total, #r.messages))
  for _, m in ipairs(r.messages) do print("  " .. m) end
end

local graph = gm.data.seed_graph.new(ds)
local linker = gm.data.linker
local mentions, with_head, ambiguous, mentioned, names = 0, 0, 0, {}, {}
-- names with capitals (the linker's cased phrases) met in the corpus in any case: as the entities
-- file writes them (`starts`: at a sentence's start, where the capital may be the place's) or
-- otherwise; in passages with a capital only, where the linker minds the case
local written, starts, otherwise = {}, {}, {}
local SENTENCE_END = { ["."] = true, ["!"] = true, ["?"] = true, [":"] = true }
local function add(tally, phrase) tally[phrase] = (tally[phrase] or 0) + 1 end
local function count_case(text, words)
  local spans, first, after = linker.word_spans(text)
  local surface = #spans == #words and linker.surface(text, function(i) return first[i], after[i] end)
  for _, m in ipairs(surface and graph.linker:mentions(nil, words) or {}) do -- (in any case)
    if graph.linker.cased[m.phrase] then
      local ok = graph.linker:as_written(m.phrase, m.first, m.words, surface)
      add(ok and written or otherwise, m.phrase)
      if ok and (m.first == 1 or SENTENCE_END[words[m.first - 1]]) then add(starts, m.phrase) end
    end
  end
end
for _, p in ipairs(ds.passages) do
  local found, words = graph.linker:mentions(p.text)
  count_case(p.text, words)
  mentions = mentions + #found
  if #found > 0 then with_head = with_head + 1 end
  for _, m in ipairs(found) do
    local c = graph:candidates(m.phrase)
    if #c > 1 then
      ambiguous = ambiguous + 1
      names[m.phrase] = names[m.phrase] or { n = 0, ids = c }
      names[m.phrase].n = names[m.phrase].n + 1
    end
    for _, id in ipairs(c) do mentioned[id] = true end
  end
  if p.entity then mentioned[p.entity] = true end
end
local unplaced = 0
for _, t in ipairs(ds.triples) do if not mentioned[t.head] then unplaced = unplaced + 1 end end
print(string.format("linking: %s, %.2f a passage; %d of %d passages (%.1f%%) have a head; %s " ..
  "ambiguous (kept with every candidate, ranked); %d of %s have a head no passage mentions",
  count(mentions, "mention"), mentions / #ds.passages, with_head, #ds.passages, 100 * with_head / #ds.passages,
  count(ambiguous, "mention"), unplaced, count(#ds.triples, "triple")))
local list = sorted(names)
table.sort(list, function(a, b) return names[a].n > names[b].n or (names[a].n == names[b].n and a < b) end)
for i = 1, math.min(#list, 10) do
  local n = names[list[i]]
  print(string.format("  ambiguous: %s names %s (%s)", list[i], table.concat(n.ids, ", "), count(n.n, "mention")))
end
if #list > 10 then print(string.format("  ... and %d more ambiguous names", #list - 10)) end

-- a phrase as the entities file writes it with capitals (its first such name or alias)
local function as_named(phrase)
  for _, id in ipairs(graph:candidates(phrase)) do
    for _, name in ipairs { graph.name[id], table.unpack(linker.split(graph.aliases[id] or "")) } do
      if name:find("%u") and linker.normalize(name) == phrase then return name end
    end
  end
  return phrase
end
local common = {}
for phrase, n in pairs(otherwise) do if n > (written[phrase] or 0) then common[#common + 1] = phrase end end
table.sort(common, function(a, b) return otherwise[a] > otherwise[b] or (otherwise[a] == otherwise[b] and a < b) end)
if #common > 0 then
  print(string.format("%s with capitals mostly written in lower case in the corpus (common words?), linked only where " ..
    "written as named; the entity property any_case links a name in any case (docs/datasets.md):", count(#common, "name")))
end
for i = 1, math.min(#common, 10) do
  local phrase = common[i]
  print(string.format("  %s: %d in lower case, %d as named%s", as_named(phrase), otherwise[phrase], written[phrase] or 0,
    starts[phrase] and string.format(" (%d at a sentence's start)", starts[phrase]) or ""))
end
if #common > 10 then print(string.format("  ... and %d more such names", #common - 10)) end
if args.strict and r.skipped_total > 0 then os.exit(1) end
