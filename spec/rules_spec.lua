-- The rule extractor (gm.kg.rules): a patterns file read and checked, its rules and the two
-- generic ones applied to a small hand-made ontology whose answers are known, and each rule's
-- measured precision.
local gm = require "graphmert"
local files = require "spec.files"
local rules = require "graphmert.kg.rules"

-- processes and components, as in the Gene Ontology: is_a and regulates join processes, part_of
-- a component to a component
local function ontology()
  local ds = gm.data.dataset.new("hand-made")
  local entities = {
    { "P1", "cell growth", "process" }, { "P2", "regulation of cell growth", "process" },
    { "P3", "positive regulation of cell growth", "process" }, { "P4", "growth", "process" },
    { "P5", "biological regulation", "process" }, { "P6", "regulation of Ménière's disease", "process" },
    { "P7", "Ménière's disease", "process" }, { "P8", "glucose metabolic process", "process" },
    { "P9", "glucose catabolic process", "process" }, { "P10", "metabolic process", "process" },
    { "C1", "membrane", "component" }, { "C2", "inner membrane", "component" },
    { "C3", "mitochondrial inner membrane", "component", { "inner mitochondrial membrane" } },
    { "C4", "mitochondrion", "component" }, { "C5", "protein complex", "component" },
    { "C6", "mitochondrial membrane", "component" }, { "C7", "ribosome", "component" },
    { "C8", "cell", "component" },
  }
  for _, e in ipairs(entities) do ds:add_entity(e[1], e[2], e[3], e[4] or {}) end
  for _, t in ipairs { { "P2", "regulates", "P1" }, { "P3", "regulates", "P1" }, { "P1", "is_a", "P4" },
      { "P2", "is_a", "P5" }, { "P6", "regulates", "P7" }, { "P9", "is_a", "P8" }, { "P8", "is_a", "P10" },
      { "C2", "part_of", "C1" }, { "C3", "part_of", "C4" }, { "C6", "part_of", "C4" }, { "C7", "part_of", "C8" },
      { "C5", "part_of", "C8" } } do
    ds:add_triple(t[1], t[2], t[3])
  end
  ds:finish()
  return gm.data.seed_graph.new(ds)
end

local function write(text)
  local path = files.tmpname()
  files.write(path, text)
  return path
end

local function tails(proposed, relation, rule)
  local out = {}
  for _, t in ipairs(proposed) do
    if t.relation == relation and (not rule or t.rule == rule) then out[#out + 1] = t.head .. " -> " .. t.tail end
  end
  table.sort(out)
  return out
end

describe("a patterns file", function()
  local graph = ontology()

  it("gives one rule a line, its captures in the tail's template", function()
    local path = write("# GO's regulation terms\nrelation\ton\tpattern\ttail\tlabel\n"
      .. "regulates\tname\t'positive '? 'regulation of ' {.+}\t{1}\tregulation of X\n\n"
      .. "is_a\tname\t{[a-z]+} ' catabolic process' !.\t{1} metabolic process\n")
    local list = rules.read(path, graph)
    assert.are.equal(2, #list)
    assert.are.equal("regulation of X", list[1].label)
    assert.are.equal("is_a:5", list[2].label) -- (the default label: relation and line)
    local proposed = rules.propose(list, graph, { id = "1",
      text = "Positive regulation of cell growth speeds glucose catabolic process up." })
    assert.are.same({ "positive regulation of cell growth -> cell growth" }, tails(proposed, "regulates"))
    assert.are.same({ "glucose catabolic process -> glucose metabolic process" }, tails(proposed, "is_a"))
    assert.are.equal("regulation of X", proposed[1].rule)
    assert.are.equal("1", proposed[1].source)
  end)

  it("matches Unicode names, in lower case, and resolves the tail through the linker's folding", function()
    local list = rules.read(write("regulates\tname\t'regulation of ' {.+}\t{1}\n"), graph)
    local proposed = rules.propose(list, graph, { id = "u", text = "Regulation of Meniere's disease is rare." })
    assert.are.same({ "regulation of Ménière's disease -> Ménière's disease" }, tails(proposed, "regulates"))
  end)

  it("proposes nothing where the pattern matches nothing, or the tail names no entity the schema allows", function()
    local list = rules.read(write("regulates\tname\t'inhibition of ' {.+}\t{1}\n"
      .. "regulates\tname\t'regulation of ' {.+}\tmembrane\n"), graph) -- (a component: regulates reaches processes)
    assert.are.same({}, rules.propose(list, graph, { id = "1", text = "regulation of cell growth" }))
  end)

  it("keeps a tail that names no entity as a new one only when open", function()
    local list = rules.read(write("regulates\tname\t'regulation of ' {.+}\t{1} in plants\n"), graph)
    local text = { id = "1", text = "regulation of cell growth" }
    assert.are.same({}, rules.propose(list, graph, text))
    local open = rules.propose(list, graph, text, { open = true })
    assert.are.same({ "regulation of cell growth -> cell growth in plants" }, tails(open, "regulates"))
    assert.is_nil(open[1].tail_id)
  end)

  it("matches a passage pattern after the head's mention, taking the longest entity name the capture starts with", function()
    local list = rules.read(write("part_of\tpassage\t%s+ 'is found in the ' {[^.,;]+}\t{1}\tfound in\n"), graph)
    local proposed = rules.propose(list, graph, { id = "7",
      text = "The ribosome is found in the cell cytoplasm; a protein complex is found in the cell too." })
    assert.are.same({ "protein complex -> cell", "ribosome -> cell" }, tails(proposed, "part_of"))
  end)

  it("reports every bad line as file:line: reason before any work", function()
    local path = write("regulate\tname\t'regulation of ' {.+}\t{1}\n"
      .. "regulates\tname\t'regulation of {.+}\t{1}\n"
      .. "regulates\tname\t'regulation of ' {.+}\t{2}\n"
      .. "regulates\ttitle\t'x'\t{1}\n"
      .. "regulates\tname\t'x'\n"
      .. "is_a\tname\t{'a'} {'b'} {: 'c' :} [{}] '{'\t{1} {2}\n") -- (the last line is good: two captures)
    local ok, err = pcall(rules.read, path, graph)
    assert.is_false(ok)
    assert.matches(path .. ":1: unknown relation 'regulate' (did you mean 'regulates'?)", err, 1, true)
    assert.matches(path .. ":2: bad pattern: ", err, 1, true)
    assert.matches(path .. ":3: the tail names capture {2} but the pattern has 1 capture", err, 1, true)
    assert.matches(path .. ":4: 'title': the second field is name or passage", err, 1, true)
    assert.matches(path .. ":5: expected relation, on, pattern, tail and an optional label separated by tabs, found 3 fields",
      err, 1, true)
    assert.is_nil(err:find(path .. ":6", 1, true))
    local missing = files.tmpname() .. ".none"
    assert.has_error(function() rules.read(missing, graph) end)
  end)
end)

describe("the generic rules", function()
  local graph = ontology()
  local generic = rules.generic("part_of")

  it("subsumption: the longest proper word-suffix that names an entity, else the name without a modifier", function()
    local list = { generic[1] }
    local proposed = rules.propose(list, graph, { id = "1", text = "mitochondrial inner membrane" })
    assert.are.same({ "mitochondrial inner membrane -> inner membrane" }, tails(proposed, "part_of", "subsumption"))
    local is_a = rules.generic("is_a")
    proposed = rules.propose({ is_a[1] }, graph, { id = "2", text = "glucose metabolic process" })
    assert.are.same({ "glucose metabolic process -> metabolic process" }, tails(proposed, "is_a", "subsumption"))
    -- no suffix names an entity: the name without one modifier does
    local ds = gm.data.dataset.new("m")
    ds:add_entity("A", "mitochondrial inner membrane", "component", {})
    ds:add_entity("B", "mitochondrial membrane", "component", {})
    ds:add_triple("A", "part_of", "B")
    ds:finish()
    local g = gm.data.seed_graph.new(ds)
    proposed = rules.propose({ rules.generic("part_of")[1] }, g, { id = "3", text = "mitochondrial inner membrane" })
    assert.are.same({ "mitochondrial inner membrane -> mitochondrial membrane" }, tails(proposed, "part_of"))
  end)

  it("genus: in a passage about an entity, the first entity its first clause names", function()
    local list = { generic[2] }
    local about = { id = "d", entity = "C5", text = "A ribosome-like protein complex is part of the cell that binds RNA." }
    -- (the entity's own mention comes first: the clause is read after it)
    assert.are.same({ "protein complex -> cell" }, tails(rules.propose(list, graph, about), "part_of", "genus"))
    local def = { id = "e", entity = "C7", text = "A particle of the cell, which makes proteins, in the membrane." }
    assert.are.same({ "ribosome -> cell" }, tails(rules.propose(list, graph, def), "part_of", "genus"))
    -- a passage about no entity, or a clause naming nothing of an allowed type, gives nothing
    assert.are.same({}, rules.propose(list, graph, { id = "f", text = "A particle of the cell." }))
    assert.are.same({}, rules.propose(list, graph, { id = "g", entity = "C7", text = "A particle, in the cell." }))
  end)
end)

describe("the parallel rule", function()
  -- GO's compositional names: a regulation term's parent is the regulation of its part's parent
  local function regulation()
    local ds = gm.data.dataset.new("parallel")
    ds.subsumption = "is_a" -- (what relations.tsv's subsumption property sets)
    for _, e in ipairs { { "A1", "thymocyte apoptotic process" }, { "A2", "T cell apoptotic process" },
        { "A3", "negative regulation of T cell apoptotic process" }, { "A4", "negative regulation of thymocyte apoptotic process" },
        { "A5", "apoptotic process" }, { "A6", "negative regulation of apoptotic process" } } do
      ds:add_entity(e[1], e[2], "process", {})
    end
    ds:add_triple("A1", "is_a", "A2")
    ds:add_triple("A2", "is_a", "A5")
    ds:add_triple("A3", "is_a", "A6")
    ds:finish()
    return gm.data.seed_graph.new(ds)
  end

  it("puts a known part's tails in the part's place, where that names an entity", function()
    local g = regulation()
    assert.are.same({ "A3" }, require("graphmert.kg.name_rules").parallels(g, "is_a", "A4"))
    -- (A3's part "T cell apoptotic process" is_a "apoptotic process": its parallel is A6)
    assert.are.same({ "A6" }, require("graphmert.kg.name_rules").parallels(g, "is_a", "A3"))
    -- nothing for a name with no known part, and never the head itself or its whole name
    assert.are.same({}, require("graphmert.kg.name_rules").parallels(g, "is_a", "A5"))
    local proposed = rules.propose({ rules.parallel("is_a") }, g, { id = "1", entity = "A4",
      text = "negative regulation of thymocyte apoptotic process: stops the death of a thymocyte." })
    assert.are.same({ "negative regulation of thymocyte apoptotic process -> negative regulation of T cell apoptotic process" },
      tails(proposed, "is_a", "parallel:is_a"))
  end)

  it("reads only the facts it is given: none of an excluded entity's", function()
    local g = regulation()
    local facts = rules.facts(g, { A1 = true })
    assert.are.same({}, require("graphmert.kg.name_rules").parallels(g, "is_a", "A4", facts))
    assert.are.same({}, rules.propose({ rules.parallel("is_a") }, g, { id = "1", text = "negative regulation of thymocyte apoptotic process" },
      { facts = facts }))
    -- measured with an exclusion, a proposal naming an excluded entity is not counted: its facts
    -- (which may be held out) would decide whether it holds
    -- (A3 is_a A6, the rule's proposal for it, is a fact)
    local passages = { { id = "1", text = "negative regulation of T cell apoptotic process" } }
    local list = { rules.parallel("is_a") }
    assert.are.equal(1, rules.measure(list, g, passages)["parallel:is_a"].held)
    local m = rules.measure(list, g, passages, { exclude = { A3 = true } })["parallel:is_a"]
    assert.are.same({ 0, 0 }, { m.proposed, m.held })
    -- (an excluded tail goes too, and an empty exclusion keeps the graph's own facts)
    assert.is_nil(rules.facts(g, { A2 = true }).is_a.A1)
    assert.are.equal(g.tails, rules.facts(g, {}))
  end)

  it("is built in for every relation, beside the generic rules of the subsumption relation", function()
    local labels = {}
    for _, rule in ipairs(rules.builtin(regulation())) do labels[#labels + 1] = rule.label end
    assert.are.same({ "subsumption", "genus", "parallel:is_a" }, labels)
    labels = {}
    for _, rule in ipairs(rules.builtin(ontology())) do labels[#labels + 1] = rule.label end
    table.sort(labels)
    assert.are.same({ "parallel:is_a", "parallel:part_of", "parallel:regulates" }, labels)
    -- (kept as a table and read back, as reranker.json keeps the rules)
    local g = regulation()
    local back = rules.from_table(rules.to_table({ rules.parallel("is_a") }), g, "test")
    assert.are.same({ "negative regulation of thymocyte apoptotic process -> negative regulation of T cell apoptotic process" },
      tails(rules.propose(back, g, { id = "1", text = "negative regulation of thymocyte apoptotic process" }), "is_a",
        "parallel:is_a"))
  end)
end)

describe("a rule's measured precision", function()
  local graph = ontology()

  it("is the share of its distinct proposals the seed graph holds, smoothed", function()
    local list = rules.read(write("regulates\tname\t'positive '? 'regulation of ' {.+}\t{1}\tregulation\n"
      .. "is_a\tname\t{.+}\tgrowth\teverything is growth\n"), graph)
    local passages = {
      { id = "1", text = "regulation of cell growth and positive regulation of cell growth" },
      { id = "2", text = "regulation of cell growth again" }, -- (the same proposal: counted once)
      { id = "3", text = "cell growth, biological regulation, glucose metabolic process" },
    }
    local measured = rules.measure(list, graph, passages)
    assert.are.same({ proposed = 2, held = 2 }, { proposed = measured.regulation.proposed, held = measured.regulation.held })
    assert.are.near(3 / 4, measured.regulation.precision, 1e-12)
    -- cell growth is_a growth holds; regulation of cell growth, positive ..., biological regulation and
    -- glucose metabolic process is_a growth do not
    local e = measured["everything is growth"]
    assert.are.same({ 5, 1 }, { e.proposed, e.held })
    assert.are.near(2 / 7, e.precision, 1e-12)
    rules.score(list, measured)
    assert.are.near(3 / 4, rules.propose(list, graph, passages[2])[1].score, 1e-12)
  end)

  it("warns, with the count, of a pattern that matches nearly everything it is tried on", function()
    local path = write("is_a\tname\t{.+}\tgrowth\n")
    local list = rules.read(path, graph)
    local passages = {}
    for i = 1, 25 do passages[i] = { id = tostring(i), text = "cell growth" } end
    local _, warnings = rules.measure(list, graph, passages)
    assert.are.same({ path .. ":1: the pattern matches 25 of the 25 heads it was tried on (a head once a passage)" }, warnings)
    _, warnings = rules.measure(list, graph, { passages[1] })
    assert.are.same({}, warnings)
  end)
end)

describe("the affix rule", function()
  -- adverbs and the adjectives they pertain to, and antonyms made with "un": WordNet's pointers
  local function lexicon()
    local ds = gm.data.dataset.new("affix")
    for _, w in ipairs { "happily", "quickly", "slowly", "sadly", "gladly", "oddly" } do ds:add_entity(w, w, "adv", {}) end
    for _, w in ipairs { "happy", "quick", "slow", "sad", "glad", "odd", "kind", "unkind", "fair", "unfair", "wise", "unwise",
        "true", "untrue" } do
      ds:add_entity(w, w, "adj", {})
    end
    for _, t in ipairs { { "happily", "happy" }, { "quickly", "quick" }, { "slowly", "slow" }, { "sadly", "sad" }, { "oddly", "odd" } } do
      ds:add_triple(t[1], "pertainym", t[2])
    end
    for _, t in ipairs { { "unkind", "kind" }, { "unfair", "fair" }, { "unwise", "wise" } } do ds:add_triple(t[1], "antonym", t[2]) end
    ds:finish()
    return gm.data.seed_graph.new(ds)
  end
  local name_rules = require "graphmert.kg.name_rules"

  it("learns a relation's rewrites of a name from its facts, each scored by the share of the heads it is right for", function()
    local g = lexicon()
    local learned = name_rules.affixes(g, g.tails, {})
    -- -ly → (4 facts; "happily" → "happi" names nothing): right for quickly, slowly, sadly, oddly,
    -- not gladly (no fact): (4 + 1) / (5 + 2). "ily" → "y" joins one fact only: not learned.
    assert.are.same({ { side = "suffix", from = "ly", to = "", support = 4, precision = 5 / 7 } }, learned.pertainym)
    -- un- → : right for unkind, unfair, unwise, not untrue (no fact)
    assert.are.same({ { side = "prefix", from = "un", to = "", support = 3, precision = 4 / 6 } }, learned.antonym)
    -- learned without an excluded entity's facts, and not scored on it
    local exclude = { oddly = true }
    learned = name_rules.affixes(g, rules.facts(g, exclude), exclude)
    assert.are.same({ side = "suffix", from = "ly", to = "", support = 3, precision = 4 / 6 }, learned.pertainym[1])
  end)

  it("proposes the rewritten name with its rewrite's precision, kept as a table and read back", function()
    local g = lexicon()
    local exclude = { oddly = true }
    local list = {}
    for _, rule in ipairs(rules.builtin(g, exclude)) do if rule.generic == "affix" then list[#list + 1] = rule end end
    local proposed = rules.propose(list, g, { id = "1", text = "oddly, untrue", entity = "oddly" }, { facts = rules.facts(g, exclude) })
    assert.are.same({ "oddly -> odd" }, tails(proposed, "pertainym", "affix:pertainym"))
    assert.are.same({ "untrue -> true" }, tails(proposed, "antonym", "affix:antonym"))
    for _, t in ipairs(proposed) do assert.are.near(4 / 6, t.score, 1e-12) end
    -- (never a rewritten name that names no entity: "happily" → "happi")
    assert.are.same({}, rules.propose(list, g, { id = "2", text = "happily" }))
    local back = rules.from_table(rules.to_table(list), g, "reranker.json")
    assert.are.same(proposed, rules.propose(back, g, { id = "1", text = "oddly, untrue", entity = "oddly" }))
    local bad = rules.to_table(list)
    bad[1].rewrites[1].side = "middle"
    assert.has_error(function() rules.from_table(bad, g, "reranker.json") end,
      "reranker.json, rule 1, rewrite 1: needs side (suffix or prefix), from, to and a precision in [0, 1]")
  end)
end)

describe("the specialization rule", function()
  -- hypernym and its mirror hyponym, as in WordNet: "red oak" → "oak" and back, for ten trees
  -- but the last, whose hyponym fact is missing
  local function trees()
    local ds = gm.data.dataset.new("trees")
    ds.subsumption = "hypernym"
    local bases = { "oak", "maple", "birch", "pine", "elm", "ash", "fir", "yew", "lime", "palm" }
    for _, b in ipairs(bases) do
      ds:add_entity(b, b, "noun", {})
      ds:add_entity("red " .. b, "red " .. b, "noun", {})
    end
    for i, b in ipairs(bases) do
      ds:add_triple("red " .. b, "hypernym", b)
      if i < #bases then ds:add_triple(b, "hyponym", "red " .. b) end
    end
    ds:finish()
    return gm.data.seed_graph.new(ds)
  end

  it("gives the subsumption relation's inverse the entities whose subsumer the head is", function()
    local g = trees()
    local name_rules = require "graphmert.kg.name_rules"
    assert.are.equal("hyponym", name_rules.inverse(g, g.tails, "hypernym"))
    assert.is_nil(name_rules.inverse(g, g.tails, "hyponym")) -- (9 mirrored of 9 facts: too few to tell)
    local list = {}
    for _, rule in ipairs(rules.builtin(g)) do if rule.generic == "specialization" then list[#list + 1] = rule end end
    assert.are.same({ "specialization:hyponym" }, { list[1].label })
    assert.are.same({ "palm -> red palm" }, tails(rules.propose(list, g, { id = "1", text = "palm" }), "hyponym"))
    local back = rules.from_table(rules.to_table(list), g, "reranker.json")
    assert.are.same({ "palm -> red palm" }, tails(rules.propose(back, g, { id = "1", text = "palm" }), "hyponym"))
    -- (with oak held out, 9 facts are left: too few to tell)
    assert.is_nil(name_rules.inverse(g, rules.facts(g, { oak = true }), "hypernym"))
  end)
end)
