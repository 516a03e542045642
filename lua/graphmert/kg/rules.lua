-- rules.lua — an extractor with no model: triples proposed by string rules, each rule scored by
-- how often what it proposes on the seed graph's own entities holds there.
--
-- A dataset's patterns file (patterns.tsv; docs/datasets.md has the format) holds rules, one a
-- line, relation<TAB>on<TAB>pattern<TAB>tail[<TAB>label]:
--   on       "name": the pattern is matched against the head entity's name, from its start;
--            "passage": against the passage, from the end of a mention of the head
--   pattern  an LPeg `re` pattern (re.compile's syntax), matched against the text in lower case;
--            its simple captures {...} are numbered 1, 2, ... in order; !. anchors the end
--   tail     the tail's name, a template where {1}, {2}, ... stand for the captures
--   label    the rule's name in the outputs (default relation:line)
-- e.g. `regulates<TAB>name<TAB>'regulation of ' {.+}<TAB>{1}` proposes, for the head "regulation
-- of cell growth", the tail "cell growth". A proposed tail must name an entity (name or alias) of
-- a type the schema lets the relation reach from the head's type; with open = true a tail naming
-- no entity is kept as a new one. A tail matched in a passage may run on past the name: its
-- longest first words that name such an entity are taken.
--
-- Rules that need no file (builtin(graph)), most read off the entities' names
-- (graphmert.kg.name_rules says how each works): for the dataset's subsumption relation (is_a,
-- hypernym; generic(relation)) the subsumption rule ("mitochondrial inner membrane" → "inner
-- membrane") and
--   genus        definition genus: in a passage about an entity (corpus.jsonl's `entity`), the
--                head noun of the first noun phrase of its first clause (after the entity's own
--                mention, if any): the last entity named before the first preposition or
--                conjunction, of a type the relation reaches, else the clause's first such one:
--                "A protein that binds ..." → protein
-- for every relation the parallel rule (parallel(relation): a compositional name inherits its
-- part's tails), for the subsumption relation's inverse, if the seed graph shows one, the
-- specialization rule ("oak" → "red oak"), and for each relation whose facts teach some, the
-- affix rule (rewrites of the head's name learned from the seed graph: "quickly" → "quick"; a
-- tail's score is its rewrite's precision on the seed graph, not the rule's).
--
--   rules.read(path, graph) → the file's rules, or an error listing every bad line as
--     `file:line: reason` (unknown relation, a pattern re cannot compile, a template naming a
--     capture the pattern lacks, ...) before any work
--   rules.generic(relation) → the subsumption and genus rules for that relation
--   rules.parallel(relation) → the parallel rule for that relation
--   rules.builtin(graph[, exclude]) → every rule the graph has without a file: generic for its
--     subsumption relation (if any), parallel for each relation, specialization for the
--     subsumption relation's inverse, affix for each that has rewrites, learned without the
--     facts of the entities `exclude` holds (ids → true)
--   rules.propose(list, graph, passage, opts) → the triples the rules propose for one passage
--     {id, text, entity}: {head, head_id, relation, tail, tail_id, rule (its label), source (the
--     passage id)}, for the passage's entity and every entity mentioned in it; opts.open keeps
--     tails naming no entity; opts.facts: the seed graph's facts the rules may read (rules.facts;
--     default all of them)
--   rules.measure(list, graph, passages[, opts]) → label → {proposed, held, precision, matched, tried}:
--     each rule's distinct proposals over the passages, the share the seed graph holds, and its
--     precision smoothed ((held + 1) / (proposed + 2): a rule seen once is not "certain"); and
--     warnings for rules that match nearly everything they are tried on; opts.facts as propose's,
--     opts.exclude (ids → true): proposals naming such an entity, as head or tail, are not
--     counted (their facts would decide whether they hold)
--   rules.score(list, measured) → sets each rule's score to its measured precision
--   rules.to_table(list) / rules.from_table(t, graph, where) → the rules (with their scores) as
--     plain tables (JSON) and back, checked as a patterns file is (errors name `where`)
--   rules.facts(graph, exclude) → the seed graph's facts (relation → head id → its tails' ids joined
--     by "\0") without any fact of an excluded entity (ids → true), as head or as tail
--   rules.subsumers, rules.fits, rules.tail_entity: graphmert.kg.name_rules's
local re = require "re"
local linker = require "graphmert.data.linker"
local normalize = linker.normalize
local suggest = require("graphmert.experiment.args").suggest
local corpus = require "graphmert.data.corpus"
local records = require "graphmert.data.dataset_records"
local name_rules = require "graphmert.kg.name_rules"

local M = {}

local MESSAGES = 20 -- bad lines listed in one error
-- the kinds of rule that need no file (a saved rule's `generic`)
local BUILTIN = { subsumption = true, genus = true, parallel = true, specialization = true, affix = true }

-- the number of simple captures {p} of an re pattern (not {: :}, {~ ~}, {| |}, {} or a {name}
-- back reference), skipping quoted strings and character classes
local function simple_captures(pattern)
  local n, i = 0, 1
  while i <= #pattern do
    local c = pattern:sub(i, i)
    if c == "'" or c == '"' then
      i = (pattern:find(c, i + 1, true) or #pattern) + 1
    elseif c == "[" then
      local close = pattern:find("]", i + 2, true) -- (a ] right after [ or [^ is a member)
      if pattern:sub(i + 1, i + 1) == "^" then close = pattern:find("]", i + 3, true) end
      i = (close or #pattern) + 1
    elseif c == "-" and pattern:sub(i + 1, i + 1) == "-" then -- a comment, to the end of the line
      i = (pattern:find("\n", i, true) or #pattern) + 1
    else
      if c == "{" and not pattern:sub(i + 1, i + 1):match("[:~|}]") then n = n + 1 end
      i = i + 1
    end
  end
  return n
end

-- one line of a patterns file → a rule, or nil and the reason
local function parse(fields, graph, where)
  if #fields < 4 or #fields > 5 then
    return nil, "expected relation, on, pattern, tail and an optional label separated by tabs, found "
      .. #fields .. " field" .. (#fields == 1 and "" or "s")
  end
  local relation, on, source, tail, label = fields[1], fields[2], fields[3], fields[4], fields[5]
  if not graph.tail_types[relation] then
    local guess = suggest(relation, graph.relation_names)
    return nil, "unknown relation '" .. relation .. "'" .. (guess and (" (did you mean '" .. guess .. "'?)") or "")
  end
  if on ~= "name" and on ~= "passage" then
    return nil, "'" .. on .. "': the second field is name or passage"
  end
  local ok, pattern = pcall(re.compile, source)
  if not ok then return nil, "bad pattern: " .. tostring(pattern):gsub("\n", " ") end
  local captures = simple_captures(source)
  for k in tail:gmatch("{(%d+)}") do
    if tonumber(k) < 1 or tonumber(k) > captures then
      return nil, "the tail names capture {" .. k .. "} but the pattern has " .. captures .. " capture"
        .. (captures == 1 and "" or "s")
    end
  end
  if tail:gsub("{%d+}", ""):find("[{}]") then return nil, "the tail has a brace that is not {N}" end
  if not tail:match("%S") then return nil, "empty tail" end
  return { relation = relation, on = on, pattern = pattern, source = source, tail = tail,
    label = label and label ~= "" and label or relation .. ":" .. where:match("(%d+)$"), where = where }
end

function M.read(path, graph)
  local ok, lines = pcall(corpus.lines, path) -- (comments, blank lines, CRLF and a byte-order mark skipped)
  if not ok then error("rules: " .. lines, 0) end
  local list, bad, first = {}, {}, true
  for n, line in lines do
    local where = path .. ":" .. n
    if not (first and line:lower():match("^relation\ton\t")) then -- (a first line naming the columns)
      local rule, why = parse(records.fields(line), graph, where)
      if rule then list[#list + 1] = rule else bad[#bad + 1] = where .. ": " .. why end
    end
    first = false
  end
  if #bad > 0 then
    local shown = { table.unpack(bad, 1, math.min(#bad, MESSAGES)) }
    if #bad > MESSAGES then shown[#shown + 1] = "(and " .. (#bad - MESSAGES) .. " more)" end
    error(table.concat(shown, "\n"), 0)
  end
  return list
end

function M.to_table(list)
  local out = {}
  for i, r in ipairs(list) do
    out[i] = { relation = r.relation, on = r.on, source = r.source, tail = r.tail, label = r.label, generic = r.generic,
      rewrites = r.rewrites, score = r.score }
  end
  return out
end

function M.from_table(t, graph, where)
  if type(t) ~= "table" then error(where .. ": rules must be a list", 0) end
  local list = {}
  for i, r in ipairs(t) do
    local at = where .. ", rule " .. i
    if type(r) ~= "table" or type(r.relation) ~= "string" or type(r.label) ~= "string" then
      error(at .. ": must hold a relation and a label", 0)
    end
    local rule, why
    if r.generic == "specialization" and not graph.subsumption then
      error(at .. ": a specialization rule, but the dataset's schema marks no subsumption relation", 0)
    elseif BUILTIN[r.generic] then
      rule = { relation = r.relation, on = "generic", label = r.label, generic = r.generic,
        rewrites = r.generic == "affix" and name_rules.check_rewrites(r.rewrites, at) or nil }
      if not graph.tail_types[r.relation] then why = "unknown relation '" .. r.relation .. "'" end
    else
      rule, why = parse({ r.relation, tostring(r.on), tostring(r.source), tostring(r.tail), r.label }, graph, at)
    end
    if not rule or why then error(at .. ": " .. why, 0) end
    rule.score = type(r.score) == "number" and r.score or nil
    list[i] = rule
  end
  return list
end

function M.generic(relation)
  return { { relation = relation, on = "generic", label = "subsumption", generic = "subsumption" },
    { relation = relation, on = "generic", label = "genus", generic = "genus" } }
end

function M.parallel(relation)
  return { relation = relation, on = "generic", label = "parallel:" .. relation, generic = "parallel" }
end

function M.builtin(graph, exclude)
  local list = graph.subsumption and M.generic(graph.subsumption) or {}
  for _, relation in ipairs(graph.relation_names) do list[#list + 1] = M.parallel(relation) end
  local facts = M.facts(graph, exclude or {})
  local inverse = graph.subsumption and name_rules.inverse(graph, facts, graph.subsumption)
  if inverse then
    list[#list + 1] = { relation = inverse, on = "generic", label = "specialization:" .. inverse, generic = "specialization" }
  end
  local affixes = name_rules.affixes(graph, facts, exclude or {})
  for _, relation in ipairs(graph.relation_names) do
    if affixes[relation] then
      list[#list + 1] = { relation = relation, on = "generic", label = "affix:" .. relation, generic = "affix",
        rewrites = affixes[relation] }
    end
  end
  return list
end

-- (held out: the split keeps both sides of a held-out entity's facts from the model, and a rule
-- or a candidate that read them would tell the test's answers)
function M.facts(graph, exclude)
  if not next(exclude) then return graph.tails end
  local out = {}
  for relation, by_head in pairs(graph.tails) do
    local kept = {}
    for head, joined in pairs(by_head) do
      if not exclude[head] then
        local ids = {}
        for id in joined:gmatch("[^%z]+") do if not exclude[id] then ids[#ids + 1] = id end end
        if #ids > 0 then kept[head] = table.concat(ids, "\0") end
      end
    end
    out[relation] = kept
  end
  return out
end

M.fits, M.tail_entity, M.subsumers = name_rules.fits, name_rules.tail_entity, name_rules.subsumers
local tail_entity = M.tail_entity

-- a captured tail that may run on: its longest first words that name an entity
local function longest_prefix(graph, relation, head_id, text)
  local words = {}
  for w in normalize(text):gmatch("%S+") do words[#words + 1] = w end
  for n = #words, 1, -1 do
    local id = tail_entity(graph, relation, head_id, table.concat(words, " ", 1, n))
    if id then return id end
  end
end

local function expand(template, captures)
  return (template:gsub("{(%d+)}", function(k) return captures[tonumber(k)] or "" end))
end

-- the heads of a passage: its entity, then each entity mentioned, with where each of its
-- mentions ends (a byte offset in the text) and the word after its first
local function heads_of(graph, passage)
  local words, first, after = linker.word_spans(passage.text)
  local out, seen = {}, {}
  if passage.entity and graph.type[passage.entity] then
    out[1] = { id = passage.entity }
    seen[passage.entity] = out[1]
  end
  for _, m in ipairs(graph.linker:mentions(passage.text, words, linker.surface(passage.text, function(i)
      return first[i], after[i] end))) do
    local id = graph.linker:candidates(m.phrase)[1]
    local h = seen[id]
    if not h then
      h = { id = id }
      seen[id] = h
      out[#out + 1] = h
    end
    h.ends = h.ends or {}
    h.ends[#h.ends + 1] = after[m.first + m.words - 1]
    h.after_word = h.after_word or m.first + m.words
  end
  return out, words, first, after
end

-- A definition's genus is the head noun of its first noun phrase ("A small membrane-bounded
-- organelle of the cell that ..." → organelle, not membrane): the last entity named before the
-- first preposition, conjunction or relative word of the first clause; failing that, the first
-- one the clause names.
local CLAUSE_END = { [","] = true, [";"] = true, [":"] = true, ["."] = true, ["("] = true, that = true,
  which = true, who = true, whose = true, where = true, whereby = true }
local PHRASE_END = { of = true, ["in"] = true, ["for"] = true, with = true, by = true, from = true, to = true,
  on = true, at = true, into = true, within = true, between = true, during = true, as = true, ["and"] = true,
  ["or"] = true, ["not"] = true, is = true, are = true, used = true, having = true }

local function genus(graph, relation, head, words)
  local from = head.after_word or 1 -- (after the entity's own mention: "mitochondrion: An organelle ...")
  while words[from] and CLAUSE_END[words[from]] and not words[from]:match("%a") do from = from + 1 end
  local clause_last, phrase_last = #words, nil
  for i = from + 1, #words do -- (its first word never ends it: "That which ...")
    if not phrase_last and PHRASE_END[words[i]] then phrase_last = i - 1 end
    if CLAUSE_END[words[i]] then clause_last = i - 1 break end
  end
  phrase_last = math.min(phrase_last or clause_last, clause_last)
  local function fitting(m) return tail_entity(graph, relation, head.id, m.phrase) end
  local mentions = graph.linker:mentions(table.concat(words, " ", from, clause_last))
  local last_in_phrase
  for _, m in ipairs(mentions) do
    if from + m.first + m.words - 2 > phrase_last then break end
    last_in_phrase = fitting(m) or last_in_phrase
  end
  if last_in_phrase then return last_in_phrase end
  for _, m in ipairs(mentions) do
    local id = fitting(m)
    if id then return id end
  end
end

local takes = name_rules.takes

-- rule × head → the tails it proposes (ids, or names for new entities under open), and their
-- scores when each has its own (the affix rule's); `hits` counts the pattern's matches, for
-- measure's warning
local function apply(rule, graph, head, text, words, opts, hits)
  local name = graph.name[head.id]
  if rule.generic == "subsumption" then
    return { M.subsumers(graph, rule.relation, head.id)[1] }
  elseif rule.generic == "genus" then
    return head.about and { genus(graph, rule.relation, head, words) } or {}
  elseif rule.generic == "parallel" then
    return name_rules.parallels(graph, rule.relation, head.id, opts.facts)
  elseif rule.generic == "specialization" then
    return name_rules.specializations(graph, graph.subsumption, rule.relation, head.id)
  elseif rule.generic == "affix" then
    return name_rules.affix_tails(graph, rule.relation, rule.rewrites, head.id)
  end
  local out = {}
  local function take(captures, run_on)
    hits.matched = hits.matched + 1
    local tail = expand(rule.tail, captures)
    local id = tail_entity(graph, rule.relation, head.id, tail)
      or (run_on and longest_prefix(graph, rule.relation, head.id, tail))
    if id then out[#out + 1] = id elseif opts.open and tail:match("%a") then out[#out + 1] = { new = tail } end
  end
  if rule.on == "name" then
    hits.tried = hits.tried + 1
    local captures = { rule.pattern:match(name:lower()) }
    if captures[1] ~= nil then take(captures, false) end
  else
    hits.tried = hits.tried + 1
    local lower = text:lower()
    for _, at in ipairs(head.ends or {}) do
      local captures = { rule.pattern:match(lower, at) }
      if captures[1] ~= nil then take(captures, true) break end
    end
  end
  return out
end

local function proposals(list, graph, passage, opts, hits)
  local heads, words = heads_of(graph, passage)
  local out = {}
  for _, head in ipairs(heads) do
    head.about = head.id == passage.entity
    for _, rule in ipairs(list) do
      if takes(graph, rule.relation, head.id) then
        local h = hits[rule] or { matched = 0, tried = 0 }
        hits[rule] = h
        local tails, scores = apply(rule, graph, head, passage.text, words, opts, h)
        for i, t in ipairs(tails) do
          local tail_id = type(t) == "string" and t or nil
          out[#out + 1] = { head = graph.name[head.id], head_id = head.id, relation = rule.relation,
            tail = tail_id and graph.name[tail_id] or t.new, tail_id = tail_id, rule = rule.label,
            score = scores and scores[i] or rule.score, source = passage.id }
        end
      end
    end
  end
  return out
end

function M.propose(list, graph, passage, opts)
  return proposals(list, graph, passage, opts or {}, {})
end

function M.measure(list, graph, passages, opts)
  local stats, seen, hits, exclude = {}, {}, {}, opts and opts.exclude or {}
  for _, rule in ipairs(list) do stats[rule.label] = stats[rule.label] or { proposed = 0, held = 0 } end
  for _, p in ipairs(passages) do
    for _, t in ipairs(proposals(list, graph, p, opts or {}, hits)) do
      local key = t.rule .. "\0" .. t.head_id .. "\0" .. t.relation .. "\0" .. t.tail_id
      if not seen[key] and not (exclude[t.head_id] or exclude[t.tail_id]) then
        seen[key] = true
        local s = stats[t.rule]
        s.proposed = s.proposed + 1
        if graph:holds(t) then s.held = s.held + 1 end
      end
    end
  end
  local warnings = {}
  for _, rule in ipairs(list) do
    local s, h = stats[rule.label], hits[rule] or { matched = 0, tried = 0 }
    s.precision = (s.held + 1) / (s.proposed + 2)
    s.matched, s.tried = (s.matched or 0) + h.matched, (s.tried or 0) + h.tried
    if rule.where and h.tried >= 20 and h.matched >= 0.9 * h.tried then
      warnings[#warnings + 1] = string.format("%s: the pattern matches %d of the %d heads it was tried on (a head once a passage)",
        rule.where, h.matched, h.tried)
    end
  end
  return stats, warnings
end

function M.score(list, measured)
  for _, rule in ipairs(list) do rule.score = measured[rule.label].precision end
  return list
end

return M
