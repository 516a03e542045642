-- The KG page (graphmert.kg.page, `graphmert page`, the kg.html extract writes): its data, the
-- command's usage errors, and the page itself in Debian's headless Chromium (spec/browser.lua) —
-- the neighbourhood drawn, search by alias, the filters and the fragment, evidence, the review
-- export and `graphmert score --gold` reading it.
local gm = require "graphmert"
local cjson = require "cjson"
local files = require "spec.files"
local browser = require "spec.browser"

local BIN = "./build/bin/graphmert "
local run, write, read = files.run, files.write, files.read
local TINY = "experiments/data/tiny"

local function jsonl(path)
  local out = {}
  for line in io.lines(path) do out[#out + 1] = cjson.decode(line) end
  return out
end

-- the tiny dataset's entities: id → {name, aliases (lower case)}, and its facts
local function tiny()
  local entities, facts = {}, {}
  for line in io.lines(TINY .. "/entities.tsv") do
    local id, name, _, aliases = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t?(.*)$")
    if id ~= "id" then
      local names = { [name:lower()] = true }
      for a in (aliases or ""):gmatch("[^|]+") do names[a:lower()] = true end
      entities[id] = { name = name, names = names }
    end
  end
  for line in io.lines(TINY .. "/triples.tsv") do
    local h, r, t = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)$")
    if h ~= "head" then facts[#facts + 1] = { h, r, t } end
  end
  return entities, facts
end

local sorted = require("graphmert.check").sorted_keys

describe("the KG page's data (graphmert.kg.page)", function()
  local page = gm.kg.page
  local graph = gm.data.seed_graph.new(gm.experiment.dataset { dir = TINY })
  local triples = {
    { head = "heart", relation = "connected_to", tail = "lung", score = -0.5, count = 2, sources = { 1, 2 },
      decoding = "open", head_id = "ANAT:0007", tail_id = "ANAT:0008", seed = true },
    { head = "heart", relation = "produces", tail = "cardiac glue", score = -2.25, count = 1, sources = { 2 },
      decoding = "open", head_id = "ANAT:0007", seed = false },
  }
  local passages = { ["1"] = "The heart pumps blood to the lungs.", ["2"] = "The heart </script><b>beats</b>." }

  it("holds the triples' entities, a new tail as new:<name>, and the seed-graph facts around them", function()
    local d = page.data { triples = triples, graph = graph, passages = passages }
    local ids = {}
    for i, e in ipairs(d.entities) do ids[e[1]] = i end
    assert.truthy(ids["ANAT:0007"] and ids["ANAT:0008"] and ids["new:cardiac glue"])
    local new = d.entities[ids["new:cardiac glue"]]
    assert.same({ "new:cardiac glue", "cardiac glue", cjson.null, 0, {} }, new)
    assert.equal(1, d.entities[ids["ANAT:0007"]][4])
    local _, facts = tiny()
    local expected = 0
    for _, f in ipairs(facts) do
      if f[1] == "ANAT:0007" or f[3] == "ANAT:0007" or f[1] == "ANAT:0008" or f[3] == "ANAT:0008" then expected = expected + 1 end
    end
    assert.equal(expected, #d.facts)
    assert.equal(2, #d.triples)
    assert.same({ "1", "2" }, d.triples[1][8])
    assert.equal(-2.25, d.triples[2][4])
    assert.equal(2, d.passage_count)
  end)

  it("finds an entity's aliases in the seed graph", function()
    local d = page.data { triples = { { head = "digestive system", relation = "part_of", tail = "heart", score = -1,
      head_id = "ANAT:0001", tail_id = "ANAT:0007" } }, graph = graph }
    for _, e in ipairs(d.entities) do
      if e[1] == "ANAT:0001" then assert.same({ "gastrointestinal system" }, e[5]) end
    end
  end)

  it("shows aliases as the dataset writes them, from a built graph or a loaded index, and folded from an older index", function()
    local ds = gm.data.dataset.new("written", {})
    ds:add_entity("E1", "Citroën", "maker", { "SA André Citroën", "Citroen" })
    ds:add_entity("E2", "Paris", "city", {})
    ds:add_triple("E1", "based_in", "E2")
    ds:finish()
    local built = gm.data.seed_graph.new(ds)
    local path = files.tmpname()
    built:save(path)
    local loaded = gm.data.seed_graph.load(path)
    local one = { { head = "Citroën", relation = "based_in", tail = "Paris", score = -1, head_id = "E1", tail_id = "E2" } }
    local function aliases(g)
      for _, e in ipairs(page.data { triples = one, graph = g }.entities) do
        if e[1] == "E1" then return e[5] end
      end
    end
    assert.same({ "SA André Citroën" }, aliases(built)) -- "Citroen" is the name, folded: not shown
    assert.same({ "SA André Citroën" }, aliases(loaded))
    loaded.aliases = nil -- as an index of version 2 loads: the linker's folded phrases
    assert.same({ "sa andre citroen" }, aliases(loaded))
    os.remove(path)
  end)

  it("keeps a record's id as written, and reads an older graph's line numbers by line", function()
    local records = { { id = "007", line = 2, text = "The heart pumps." }, { id = "7", line = 3, text = "The lung breathes." } }
    local function each()
      local i = 0
      return function() i = i + 1 return records[i] end
    end
    local texts, lines = page.cited({ { sources = { "007" } }, { sources = { "7" } } }, each())
    assert.same({ ["007"] = "The heart pumps.", ["7"] = "The lung breathes." }, texts)
    assert.same({ ["007"] = 2, ["7"] = 3 }, lines)
    texts, lines = page.cited({ { sources = { 2 } }, { sources = { 3.0 } } }, each()) -- (cjson reads 3 as 3.0)
    assert.same({ ["2"] = "The heart pumps.", ["3"] = "The lung breathes." }, texts)
    assert.same({}, lines)
  end)

  it("marks each source's head and tail where the linker finds them: the longest name, never inside a word", function()
    local ds = gm.data.dataset.new("written", {})
    ds:add_entity("G1", "TNF", "gene", { "TNF gene" })
    ds:add_entity("P1", "tumour necrosis factor", "protein", { "TNF-α" })
    ds:add_entity("D1", "Alzheimer's disease", "disease", { "AD" })
    ds:add_triple("G1", "encodes", "P1")
    ds:add_triple("P1", "associated_with", "D1")
    ds:finish()
    local g = gm.data.seed_graph.new(ds)
    -- "TNF-α" is the protein's alias, not the gene's name; "ad" of "adenocarcinoma" no mention;
    -- the emoji (two UTF-16 units) moves what follows it by two, as the page's JavaScript counts
    local text = "😀 TNF-α rises in lung adenocarcinoma, as the TNF gene says, and in Alzheimer’s disease."
    local function js_span(from, to) -- 0-based UTF-16 offsets of the bytes [from, to)
      local function at(b) return utf8.len(text:sub(1, b - 1)) + 1 end -- (one emoji before: one more unit)
      return { at(from), at(to) }
    end
    local d = page.data { graph = g, passages = { ["7"] = text }, triples = {
      { head = "TNF", relation = "encodes", tail = "tumour necrosis factor", score = -1, sources = { 7 }, head_id = "G1", tail_id = "P1" },
      { head = "tumour necrosis factor", relation = "associated_with", tail = "Alzheimer's disease", score = -1, sources = { 7 },
        head_id = "P1", tail_id = "D1" },
      { head = "TNF", relation = "encodes", tail = "lung", score = -1, sources = { 7 }, head_id = "G1" } } }
    local gene = js_span(text:find("TNF gene", 1, true), text:find("TNF gene", 1, true) + 8)
    local protein = js_span(text:find("TNF-α", 1, true), text:find("TNF-α", 1, true) + #"TNF-α")
    local disease = js_span(text:find("Alzheimer", 1, true), text:find(" disease", 1, true) + 8)
    local lung = js_span(text:find("lung", 1, true), text:find("lung", 1, true) + 4)
    assert.same({ { gene[1], gene[2], protein[1], protein[2] } }, d.triples[1][9])
    assert.same({ { protein[1], protein[2], disease[1], disease[2] } }, d.triples[2][9])
    assert.same({ { gene[1], gene[2], lung[1], lung[2] } }, d.triples[3][9]) -- a new tail, by its words
    d = page.data { graph = g, passages = { ["7"] = "Lung adenocarcinoma and TNF-α." }, triples = {
      { head = "tumour necrosis factor", relation = "associated_with", tail = "Alzheimer's disease", score = -1, sources = { 7 },
        head_id = "P1", tail_id = "D1" } } }
    assert.same({ { 24, 29, cjson.null, cjson.null } }, d.triples[1][9])
  end)

  it("finds the same facts and aliases in a loaded index (maps over its file) as in a built graph", function()
    local path = files.tmpname()
    graph:save(path)
    local loaded = gm.data.seed_graph.load(path)
    os.remove(path)
    local some = { triples[1], triples[2], { head = "digestive system", relation = "part_of", tail = "heart", score = -1,
      head_id = "ANAT:0001", tail_id = "ANAT:0007" } }
    local a = page.data { triples = some, graph = graph, passages = passages }
    local b = page.data { triples = some, graph = loaded, passages = passages }
    a.created, b.created = nil, nil
    assert.same(a, b)
    assert.is_true(#a.facts > 0)
    graph:save(path)
    local touched = gm.table_find(gm.load_tables(path, { lazy = true }).phrases, { ["ANAT:0001"] = true })
    os.remove(path)
    assert.same({ ["digestive system"] = "ANAT:0001", ["gastrointestinal system"] = "ANAT:0001" }, touched)
  end)

  it("names a source the corpus lacks, and a record that is no triple", function()
    assert.has_error(function() page.data { triples = triples, graph = graph, passages = { ["1"] = "x" } } end,
      "kg page: passage 2, a source of heart / connected_to / lung, is not in the corpus given")
    assert.has_error(function() page.data { triples = { { head = "a", relation = "r" } } } end,
      "kg page: triple 1 has no head, relation, tail and score")
    -- the same line numbers holding other passages: the triples' heads are not in them
    local other = { ["1"] = "The lungs take in air.", ["2"] = "Blood flows." }
    assert.has_error(function() page.data { triples = triples, passages = other } end,
      "kg page: 2 of the 2 triples name a head that none of their passages mentions: the corpus given is not the one "
      .. "the graph was extracted from (its passages are known by their ids: line numbers, or a JSONL record's \"id\")")
    -- with the seed graph, every source must mention its triple's head: one line moved is found
    local moved = { ["1"] = "The heart pumps blood to the lungs.", ["2"] = "Blood flows." }
    assert.has_error(function() page.data { triples = triples, graph = graph, passages = moved } end,
      "kg page: passage 2 does not mention heart, the head of heart / connected_to / lung it is a source of: the corpus "
      .. "given is not the one the graph was extracted from (its passages are known by their ids: line numbers, or a JSONL record's \"id\")")
    page.data { triples = triples, passages = moved } -- (without it, only most triples failing is an error)
    -- a head named by an alias in its passage is found through the seed graph
    local digests = { { head = "digestive system", relation = "part_of", tail = "heart", score = -1, sources = { 1 },
      head_id = "ANAT:0001", tail_id = "ANAT:0007" } }
    local d = page.data { triples = digests, graph = graph, passages = { ["1"] = "The Gastrointestinal System digests food." } }
    assert.equal(1, #d.triples)
    assert.has_error(function() page.data { triples = digests, graph = graph, passages = { ["1"] = "Food." } } end,
      "kg page: passage 1 does not mention digestive system, the head of digestive system / part_of / heart it is a "
      .. "source of: the corpus given is not the one the graph was extracted from (its passages are known by their ids: line numbers, or a JSONL record's \"id\")")
  end)

  it("keeps every < of the data out of the page's markup", function()
    local html = page.html(page.data { triples = triples, graph = graph, passages = passages, title = "a <title>" })
    local data = html:match('<script id="kg%-data" type="application/json">(.-)</script>')
    assert.truthy(data)
    assert.is_nil(data:find("<", 1, true))
    assert.equal("The heart </script><b>beats</b>.", cjson.decode(data).passages["2"])
    assert.truthy(html:find("<title>a &lt;title&gt;</title>", 1, true))
    assert.is_nil(html:find("https?://"), "the page loads nothing from the network")
  end)
end)

describe("kg.tsv_line", function()
  it("keeps a row one line of nine fields whatever the names hold", function()
    local line = gm.kg.tsv_line { head = "heart\npump", relation = "part_of", tail = "a\tb", score = -1, count = 1,
      decoding = "open", head_id = "X:1", seed = false }
    assert.equal("heart pump\tpart_of\ta b\t-1.000000\t1\topen\tX:1\t\tfalse\n", line)
  end)
end)

describe("kg.read and kg.read_review", function()
  it("name the line that is not a triple or not a decision", function()
    local path = files.tmpname()
    write(path, '{"head":"a","relation":"r","tail":"b","score":-1}\n[1,2]\n')
    local function message(fn, ...) return select(2, pcall(fn, ...)) end
    assert.equal(path .. ":2: not a kg.jsonl triple (head, relation and tail strings)", message(gm.kg.read, path))
    local cases = {
      { '{"head":"a","relation":"r","tail":"b"}', "the score is not a mean log-probability (a finite number <= 0)" },
      { '{"head":"a","relation":"r","tail":"b","score":NaN}', "the score is not a mean log-probability (a finite number <= 0)" },
      { '{"head":"a","relation":"r","tail":"b","score":-1e400}', "the score is not a mean log-probability (a finite number <= 0)" },
      { '{"head":"a","relation":"r","tail":"b","score":5}', "the score is not a mean log-probability (a finite number <= 0)" },
      { '{"head":"a","relation":"r","tail":"b","score":-1,"count":"2"}', "count is not a number of passages (an integer >= 1)" },
      { '{"head":"a","relation":"r","tail":"b","score":-1,"count":0.5}', "count is not a number of passages (an integer >= 1)" },
      { '{"head":"a","relation":"r","tail":"b","score":-1,"head_id":5}', "head_id and tail_id are strings (or absent)" },
      { '{"head":"a","relation":"r","tail":"b","score":-1,"sources":"12"}', "sources is not a list of passage ids" },
      { '{"head":"a","relation":"r","tail":"b","score":-1,"sources":[{}]}', "sources is not a list of passage ids" },
    }
    for _, case in ipairs(cases) do
      write(path, case[1] .. "\n")
      assert.equal(path .. ":1: " .. case[2], message(gm.kg.read, path))
    end
    assert.equal("/tmp is a directory, not a regular file", message(gm.kg.read, "/tmp"))
    assert.equal("/tmp is a directory, not a regular file", message(gm.kg.read_review, "/tmp"))
    local t = '{"head":"a","relation":"r","tail":"b","score":-1}\n'
    write(path, "\239\187\191" .. t:gsub("\n", "\r\n") .. "# a comment\n" .. t) -- a byte-order mark, CRLF, a file written twice
    assert.equal(path .. ":3: the triple of line 1 again (a / r / b)", message(gm.kg.read, path))
    assert.equal("kg.tsv: kg.tsv is for people to read; give the kg.jsonl beside it (or a kg.sqlite store)",
      message(gm.kg.read, "kg.tsv"))
    write(path, '{"head":"a","relation":"r","tail":"b","verdict":"accept","tail_id":{}}\n')
    assert.equal(path .. ":1: not a review decision (head, relation and tail strings, string ids, verdict)",
      message(gm.kg.read_review, path))
    write(path, '{"head":"a","relation":"r","tail":"b","verdict":"accept"}\n{"head":"a","relation":"r","tail":"b","verdict":"maybe"}\n')
    assert.equal(path .. ':2: verdict "maybe": a decision is "accept" or "reject"', message(gm.kg.read_review, path))
    os.remove(path)
  end)

  it("give a triple and a decision about it the same key, a new tail by its name", function()
    assert.equal("A\tr\tnew:b c", gm.kg.key { head = "a", head_id = "A", relation = "r", tail = "b c" })
    assert.equal("A\tr\tnew:b c", gm.kg.key { head = "a", head_id = "A", relation = "r", tail = "b c", tail_id = cjson.null })
    assert.equal("A\tr\tB", gm.kg.key { head = "a", head_id = "A", relation = "r", tail = "b", tail_id = "B" })
  end)
end)

describe("graphmert page and extract's kg.html", function()
  local dir = files.tmpname()
  local config = dir .. ".config.lua"
  -- nothing held out: the run's seed graph is the whole dataset, which the expectations read
  write(config, string.format([[return { seed = 1, data = { dir = %q }, heldout = 0, heldout_triples = 0, copies = 4,
    vocab_size = 600, leaf_rate = 0.5, tail_end = true,
    model = { roots = 64, leaves = 4, hidden = 32, layers = 1, heads = 2, ffn = 64, head = "single", sbo = false },
    steps = 60, batch = 8, lr = 3e-3, warmup = 10, baseline = false }]], gm.realpath(TINY)))
  local _, code = run(BIN .. "train --config " .. config .. " --out " .. dir)
  assert(code == 0, "training the checkpoint failed")
  local corpus = TINY .. "/corpus.txt"
  local out, status = run(BIN .. "extract --checkpoint " .. dir .. " --input " .. corpus .. " --out " .. dir ..
    "/kg.jsonl --decoding constrained")
  assert(status == 0, out)
  local kg_path, page_path = dir .. "/kg.jsonl", dir .. "/kg.html"

  it("extract writes kg.html beside kg.jsonl, and --no-page does not", function()
    assert.matches("the KG page: " .. page_path:gsub("%p", "%%%0"), out)
    local html = read(page_path)
    assert.truthy(html:find('<script id="kg-data"', 1, true))
    local o, c = run(BIN .. "extract --checkpoint " .. dir .. " --input " .. corpus .. " --out " .. dir .. "/bare.jsonl --no-page")
    assert.equal(0, c, o)
    assert.is_nil(gm.stat(dir .. "/bare.html"))
  end)

  it("makes the same page's data from kg.jsonl and the corpus", function()
    local o, c = run(BIN .. "page --kg " .. kg_path .. " --input " .. corpus .. " --checkpoint " .. dir .. " --out " .. dir .. "/again.html")
    assert.equal(0, c, o)
    local n = #jsonl(kg_path)
    assert.matches(": " .. n .. " triples, %d+ entities, %d+ seed%-graph facts, %d+ passages", o)
    local function data(path) return cjson.decode(read(path):match('<script id="kg%-data" type="application/json">(.-)</script>')) end
    local a, b = data(page_path), data(dir .. "/again.html")
    a.created, b.created, a.kg, b.kg, a.title, b.title = nil, nil, nil, nil, nil, nil
    assert.same(a, b)
  end)

  it("makes a page from a kg.sqlite store, with the run's seed graph, beside kg.jsonl's", function()
    -- (constrained: the small model's open tails are mostly function words, which are dropped)
    local page = files.read(page_path) -- kg.jsonl's: the store's is kg.sqlite.html
    local o, c = run(BIN .. "extract --checkpoint " .. dir .. " --input " .. corpus .. " --out " .. dir .. "/kg.sqlite --decoding constrained")
    assert.equal(0, c, o)
    assert.matches("the KG page: " .. (dir .. "/kg.sqlite.html"):gsub("%p", "%%%0"), o)
    assert.equal(page, files.read(page_path))
    os.remove(dir .. "/kg.sqlite.html")
    o, c = run(BIN .. "page --kg " .. dir .. "/kg.sqlite")
    assert.equal(0, c, o)
    assert.matches(dir:gsub("%p", "%%%0") .. "/kg%.sqlite%.html: %d+ triples, %d+ entities, [1-9]%d* seed%-graph facts, 32 passages", o)
    assert.equal(page, files.read(page_path))
    -- a page of another kg file by the name this one's would take (a store's page of an earlier
    -- graphmert was kg.html) is not replaced unasked
    os.execute("cp " .. dir .. "/kg.sqlite " .. dir .. "/old.sqlite")
    o, c = run(BIN .. "page --kg " .. dir .. "/old.sqlite --out " .. dir .. "/old.html")
    assert.equal(0, c, o)
    local old_page = files.read(dir .. "/old.html")
    o, c = run(BIN .. "extract --checkpoint " .. dir .. " --input " .. corpus .. " --out " .. dir .. "/old.jsonl --decoding constrained")
    assert.equal(2, c, o)
    assert.matches("old%.html is the page of .*old%.sqlite: give %-%-no%-page, or another %-%-out name", o)
    os.execute("cp " .. kg_path .. " " .. dir .. "/old.jsonl")
    o, c = run(BIN .. "page --kg " .. dir .. "/old.jsonl --input " .. corpus .. " --checkpoint " .. dir)
    assert.equal(2, c, o)
    assert.matches("old%.html is the page of .*old%.sqlite: %-%-out .*old%.html replaces it, or name another", o)
    assert.equal(old_page, files.read(dir .. "/old.html"))
  end)

  -- the tiny corpus as JSONL records with ids of their own ("PMID:<line>0"), a comment first so
  -- that no id is its line number
  local function id_corpus(path, records)
    local lines, n = { "# abstracts" }, 1
    for line in io.lines(corpus) do
      n = n + 1
      lines[#lines + 1] = records and records(n, line) or cjson.encode { id = "PMID:" .. n .. "0", text = line }
    end
    write(path, table.concat(lines, "\n") .. "\n")
  end

  it("keeps a JSONL corpus's own ids as the passages' ids: kg.jsonl, the store, its export, RDF and the page", function()
    local input = dir .. "/abstracts.jsonl"
    id_corpus(input)
    local o, c = run(BIN .. "extract --checkpoint " .. dir .. " --input " .. input .. " --out " .. dir ..
      "/ids.jsonl --decoding constrained")
    assert.equal(0, c, o)
    local by_line = {} -- the same extraction from the text corpus gives the line numbers
    for _, t in ipairs(jsonl(kg_path)) do by_line[t.head .. "/" .. t.relation .. "/" .. t.tail] = t.sources end
    local triples = jsonl(dir .. "/ids.jsonl")
    assert.is_true(#triples > 0)
    for _, t in ipairs(triples) do
      local lines = by_line[t.head .. "/" .. t.relation .. "/" .. t.tail]
      assert.is_table(lines, t.head)
      local want = {}
      for i, line in ipairs(lines) do want[i] = "PMID:" .. math.tointeger(line) + 1 .. "0" end -- (the comment moved each line down)
      assert.same(want, t.sources)
    end
    local data = cjson.decode(read(dir .. "/ids.html"):match('<script id="kg%-data" type="application/json">(.-)</script>'))
    local first = triples[1].sources[1]
    assert.equal(tonumber(first:match("PMID:(%d+)0")), data.lines[first])
    assert.truthy(data.passages[first])

    o, c = run(BIN .. "extract --checkpoint " .. dir .. " --input " .. input .. " --out " .. dir ..
      "/ids.sqlite --decoding constrained --no-page")
    assert.equal(0, c, o)
    local store = gm.kg.store.open(dir .. "/ids.sqlite")
    local row = store:rows("SELECT id, line FROM passages WHERE id = ?", first)[1]
    store:close()
    assert.equal(tonumber(first:match("PMID:(%d+)0")), math.tointeger(row.line))
    o, c = run(BIN .. "export --store " .. dir .. "/ids.sqlite --out " .. dir .. "/ids_export.jsonl --top 5")
    assert.equal(0, c, o)
    local exported = {}
    for _, t in ipairs(jsonl(dir .. "/ids_export.jsonl")) do exported[t.head .. "/" .. t.relation .. "/" .. t.tail] = t.sources end
    for _, t in ipairs(triples) do assert.same(t.sources, exported[t.head .. "/" .. t.relation .. "/" .. t.tail]) end
    o, c = run(BIN .. "export --store " .. dir .. "/ids.sqlite --out " .. dir .. "/ids.nt")
    assert.equal(0, c, o)
    local nt = read(dir .. "/ids.nt")
    assert.truthy(nt:find("/passage/" .. first .. "> <http://example.org/kg/vocab#line> \"" .. first:match("PMID:(%d+)0")
      .. '"^^<http://www.w3.org/2001/XMLSchema#integer> .', 1, true))
    assert.truthy(nt:find("/passage/" .. first .. '> <http://www.w3.org/2000/01/rdf-schema#label> "' .. first .. '" .', 1, true))
    -- a store of a text corpus still exports its line numbers as numbers
    o, c = run(BIN .. "export --store " .. dir .. "/kg.sqlite --out " .. dir .. "/lines_export.jsonl --top 5")
    assert.equal(0, c, o)
    for line in io.lines(dir .. "/lines_export.jsonl") do assert.matches('"sources":%[%d[%d,]*%]', line) end

    if browser.path then -- the passage shown by its id, with its line
      local r = browser.run(dir .. "/ids.html", [[
        const row = document.querySelector("#all-triples tr.triple");
        row.querySelector("button.evidence-toggle").click();
        return [...row.nextElementSibling.querySelectorAll(".passage .where")].map(w => w.textContent);]])
      assert.is_true(#r > 0)
      for _, where in ipairs(r) do assert.matches("^PMID:%d+0 %(line %d+ of .*abstracts%.jsonl%)$", where) end
    end
  end)

  it("refuses a JSONL corpus whose ids repeat, or are neither strings nor numbers, before any work", function()
    local input = dir .. "/bad_ids.jsonl"
    for _, case in ipairs {
      { function(n, line) return cjson.encode { id = n == 5 and "PMID:20" or "PMID:" .. n .. "0", text = line } end,
        ':5: passage id "PMID:20" again %(line 2 has it%)' },
      { function(n, line) return n == 4 and cjson.encode { text = line } or cjson.encode { id = n == 9 and 4 or "x" .. n, text = line } end,
        ':9: passage id "4" again %(line 4 has it%)' }, -- a record without an id is known by its line
      { function(n, line) return cjson.encode { id = n == 3 and { 1 } or n, text = line } end, ':3: "id" must be a string or a number' },
      { function(n, line) return n == 6 and '{"id": 123456789012345678901, "text": ' .. cjson.encode(line) .. "}"
        or cjson.encode { id = "x" .. n, text = line } end, ':6: "id" 1%.2345678901234568e%+20 is too large to be read exactly' },
    } do
      id_corpus(input, case[1])
      local o, c = run(BIN .. "extract --checkpoint " .. dir .. " --input " .. input .. " --out " .. dir .. "/bad_ids_kg.jsonl")
      assert.equal(2, c, o)
      assert.matches("bad_ids%.jsonl" .. case[2], o)
      assert.is_nil(o:find("traceback"), o)
      assert.is_nil(gm.stat(dir .. "/bad_ids_kg.jsonl.journal"))
    end
  end)

  it("gives usage errors, not tracebacks, and never writes over the kg", function()
    local cases = {
      { "page", "^graphmert page: %-%-kg is required" },
      { "page --kg " .. dir .. "/missing.jsonl", "missing%.jsonl: not a file" },
      { "page --kg " .. dir .. "/kg.sqlite --input " .. corpus, "holds its passages" },
      { "page --kg " .. kg_path .. " --out " .. kg_path, "the output .*kg%.jsonl would replace the input .*kg%.jsonl" },
      { "page --kg " .. kg_path .. " --input " .. corpus .. " --out " .. corpus, "would replace the input .*corpus%.txt" },
      { "page --kg " .. kg_path, "kg%.html exists, and this page would lack the passages' text %(%-%-input%): %-%-out .*kg%.html replaces it" },
      { "page --kg " .. kg_path .. " --input " .. corpus, "kg%.html exists, and this page would lack the seed graph" },
      { "page --kg " .. kg_path .. " --data " .. TINY .. " --config tiny" .. " --out " .. dir .. "/other.html", "give one of" },
      { "page --kg " .. kg_path .. " --input " .. dir .. "/none.txt" .. " --out " .. dir .. "/other.html", "none%.txt" },
      { "page --kg " .. kg_path .. " --input " .. TINY .. "/relations.tsv" .. " --out " .. dir .. "/other.html", "is not in the corpus given" },
      { "page --kg " .. kg_path .. " --out " .. kg_path .. "/dir/kg.html", "cannot write .*kg%.jsonl/dir/kg%.html: .*kg%.jsonl is a file, not a folder" },
      { "page --kg " .. kg_path .. " --input /tmp" .. " --out " .. dir .. "/other.html", "/tmp is a directory, not a regular file" },
      { "score --kg " .. kg_path .. " --gold /tmp", "/tmp is a directory, not a regular file" },
      { "score --kg " .. dir .. "/foreign.jsonl --config tiny",
        "foreign%.jsonl's relation hypernym is not in .*tiny's schema %(connected_to, .*%): is it the dataset the graph was" },
    }
    write(dir .. "/foreign.jsonl", '{"head":"liver","relation":"hypernym","tail":"organ","score":-1,"count":1}\n')
    for _, case in ipairs(cases) do
      local o, c = run(BIN .. case[1])
      assert.equal(2, c, case[1] .. "\n" .. o)
      assert.matches(case[2], o)
      assert.is_nil(o:find("traceback"), o)
    end
  end)

  describe("in headless Chromium", function()
    if not browser.path then
      pending("chromium is not installed (scripts/setup.sh installs it)")
      return
    end
    local kg = jsonl(kg_path)
    local entities, facts = tiny()

    it("draws an entity's neighbourhood: its triples' and facts' other ends", function()
      local heart = "ANAT:0007"
      local expected = { [heart] = true }
      for _, t in ipairs(kg) do
        local tail = t.tail_id or ("new:" .. t.tail)
        if t.head_id == heart then expected[tail] = true end
        if tail == heart then expected[t.head_id] = true end
      end
      for _, f in ipairs(facts) do
        if f[1] == heart then expected[f[3]] = true end
        if f[3] == heart then expected[f[1]] = true end
      end
      local r = browser.run(page_path, [[
        return { nodes: [...document.querySelectorAll("#neighbourhood g.node")].map(g => g.dataset.id),
          centre: document.querySelector("#neighbourhood g.center").dataset.id,
          edges: document.querySelectorAll("#neighbourhood path.edge").length,
          facts: document.querySelectorAll("#neighbourhood path.edge.fact").length,
          title: document.querySelector("main h2").textContent };]], "#e=" .. heart)
      assert.equal(heart, r.centre)
      assert.matches("^heart ANAT:0007", r.title)
      local drawn = {}
      for _, id in ipairs(r.nodes) do drawn[id] = true end
      local want = sorted(expected)
      if #want <= 37 then
        assert.same(want, sorted(drawn))
      else
        assert.equal(37, #r.nodes)
        for id in pairs(drawn) do assert.truthy(expected[id], id) end
      end
      assert.is_true(r.facts > 0 and r.edges > r.facts)
    end)

    it("moves to a neighbour when its node is clicked, in a history entry of its own", function()
      local r = browser.run(page_path, [[
        // (a fragment change before the load event replaces the entry: a user clicks after it)
        if (document.readyState !== "complete") await new Promise(r => addEventListener("load", r));
        await sleep(10);
        const before = history.length;
        const node = [...document.querySelectorAll("#neighbourhood g.node")].find(g => !g.classList.contains("center"));
        node.dispatchEvent(new MouseEvent("click", { bubbles: true }));
        await sleep(50);
        return { id: node.dataset.id, hash: decodeURIComponent(location.hash), entries: history.length - before,
          centre: document.querySelector("#neighbourhood g.center").dataset.id };]], "#e=ANAT:0007")
      assert.equal("#e=" .. r.id, r.hash)
      assert.equal(r.id, r.centre)
      assert.equal(1, r.entries) -- so the browser's Back returns
    end)

    it("renders to a PNG with --screenshot", function()
      local png = files.tmpname() .. ".png"
      browser.screenshot(page_path, png, { fragment = "#e=ANAT:0007", width = 1000, height = 700 })
      local bytes = read(png)
      os.remove(png)
      assert.equal("\137PNG\r\n\26\n", bytes:sub(1, 8))
      local width, height = string.unpack(">I4I4", bytes, 17)
      assert.same({ 1000, 700 }, { width, height })
      assert.is_true(#bytes > 20000, "a blank page compresses to far less")
    end)

    it("finds an entity by an alias and moves to it", function()
      local r = browser.run(page_path, [[
        const box = document.getElementById("search");
        box.value = "gastrointestinal";
        box.dispatchEvent(new Event("input"));
        const first = document.querySelector("#suggestions li");
        const found = { id: first.dataset.id, text: first.textContent };
        first.dispatchEvent(new MouseEvent("mousedown", { bubbles: true }));
        await sleep(50);
        return { found, hash: location.hash, title: document.querySelector("main h2").textContent };]])
      assert.equal("ANAT:0001", r.found.id)
      assert.matches("alias “gastrointestinal system”", r.found.text)
      assert.equal("#e=ANAT%3A0001", r.hash)
      assert.matches("^digestive system", r.title)
    end)

    it("hides the other relations when one is chosen, and keeps the view in the fragment", function()
      local r = browser.run(page_path, [[
        const before = new Set([...document.querySelectorAll("main tr[data-relation]")].map(t => t.dataset.relation)).size;
        document.querySelectorAll("#relation-menu input").forEach(b => { b.checked = b.parentElement.textContent.trim() === "part_of"; });
        document.getElementById("relation-menu").dispatchEvent(new Event("change"));
        await sleep(10);
        return { before, hash: location.hash,
          rows: [...document.querySelectorAll("main tr[data-relation]")].map(t => t.dataset.relation),
          edges: [...document.querySelectorAll("#neighbourhood path.edge")].map(p => p.dataset.relation),
          summary: document.getElementById("relations-summary").textContent };]], "#e=ANAT:0007")
      assert.is_true(r.before > 1)
      assert.equal("#e=ANAT%3A0007&r=part_of", r.hash)
      assert.equal("Relations: part_of", r.summary)
      assert.is_true(#r.rows > 0 and #r.edges > 0)
      for _, rel in ipairs(r.rows) do assert.equal("part_of", rel) end
      for _, rel in ipairs(r.edges) do assert.equal("part_of", rel) end
    end)

    it("opens a shared view: relation, minimum score, new triples only, facts hidden", function()
      local new_scores = {}
      for _, t in ipairs(kg) do if not t.seed then new_scores[#new_scores + 1] = t.score end end
      table.sort(new_scores, function(a, b) return a > b end)
      -- about the tenth best new triple's score, between two of the page's 4-decimal scores
      local min = math.floor(new_scores[math.min(10, #new_scores)] * 10) / 10 - 0.05123
      local wanted = 0
      for _, t in ipairs(kg) do if t.score >= min and not t.seed then wanted = wanted + 1 end end
      local r = browser.run(page_path, [[
        return { kind: document.getElementById("kind").value, facts: document.getElementById("facts").checked,
          min: document.getElementById("min-score").value,
          count: +document.querySelector("#summary .numbers b").textContent,
          scores: [...document.querySelectorAll("#all-triples tr.triple td:nth-child(4)")].map(td => +td.textContent),
          seedRows: document.querySelectorAll("#all-triples .badge.seed").length };]], "#min=" .. min .. "&kind=new&facts=0")
      assert.equal("new", r.kind)
      assert.is_false(r.facts)
      assert.equal(tostring(min), r.min)
      assert.equal(wanted, r.count)
      assert.equal(0, r.seedRows)
      assert.is_true(#r.scores > 0)
      for _, s in ipairs(r.scores) do assert.is_true(s >= min - 5e-4, s) end
    end)

    it("shows a triple's passages with the head's mention marked", function()
      local r = browser.run(page_path, [[
        const row = document.querySelector("#all-triples tr.triple");
        row.querySelector("button.evidence-toggle").click();
        const ev = row.nextElementSibling;
        return { evidence: ev.classList.contains("evidence"), passages: ev.querySelectorAll(".passage").length,
          count: +row.children[4].textContent, head: row.children[0].querySelector("a").title,
          marks: [...ev.querySelectorAll("mark.head")].map(m => m.textContent) };]])
      assert.is_true(r.evidence)
      assert.equal(r.count, r.passages)
      assert.equal(r.passages, #r.marks)
      for _, m in ipairs(r.marks) do assert.truthy(entities[r.head].names[m:lower()], m) end
    end)

    it("exports the decisions clicked as JSONL that graphmert score --gold reads", function()
      local r = browser.run(page_path, [[
        const rows = [...document.querySelectorAll("#all-triples tr.triple")];
        rows[0].querySelector("button.accept").click();
        rows[1].querySelector("button.reject").click();
        rows[2].querySelector("button.accept").click();
        rows[2].querySelector("button.accept").click(); // a second click takes it back
        document.getElementById("review-open").click();
        const cells = row => [...row.children].slice(0, 3).map(td => td.textContent);
        return { text: document.getElementById("review-jsonl").value, first: cells(rows[0]), second: cells(rows[1]),
          count: document.getElementById("review-count").textContent,
          download: document.getElementById("review-download").href.slice(0, 5) };]])
      assert.equal("2", r.count)
      assert.equal("blob:", r.download)
      local lines = {}
      for line in r.text:gmatch("[^\n]+") do lines[#lines + 1] = cjson.decode(line) end
      assert.equal(2, #lines)
      local by_verdict = {}
      for _, d in ipairs(lines) do by_verdict[d.verdict] = d end
      assert.same(r.first, { by_verdict.accept.head, by_verdict.accept.relation, by_verdict.accept.tail })
      assert.same(r.second, { by_verdict.reject.head, by_verdict.reject.relation, by_verdict.reject.tail })
      local review = dir .. "/review.jsonl"
      write(review, r.text)
      local o, c = run(BIN .. "score --kg " .. kg_path .. " --gold " .. review)
      assert.equal(0, c, o)
      assert.matches("| all +| +" .. #kg .. " | +2 | 0%.500 %[", o)
    end)

    it("chooses no relation, or one whose name has a comma, through the fragment", function()
      local triples = {
        { head = "heart", relation = "part,of", tail = "body", score = -1, head_id = "A", tail_id = "B" },
        { head = "heart", relation = "part", tail = "chest", score = -2, head_id = "A", tail_id = "C" },
        { head = "lung", relation = "of", tail = "body", score = -3, head_id = "D", tail_id = "B" },
        { head = "lung", relation = "part", tail = "air sac", score = -4, head_id = "D" },
      }
      local path = files.tmpname() .. ".html"
      assert(gm.kg.page.write(path, gm.kg.page.data { triples = triples }))
      local driver = [[
        return { rows: [...document.querySelectorAll("#all-triples tr.triple")].map(t => t.dataset.relation),
          summary: document.getElementById("relations-summary").textContent,
          numbers: [...document.querySelectorAll("#summary .numbers b")].map(b => b.textContent),
          missing: (document.getElementById("missing") || { textContent: "" }).textContent };]]
      local comma = browser.run(path, driver, "#r=part%2Cof")
      assert.same({ "part,of" }, comma.rows)
      local none = browser.run(path, driver, "#r=")
      assert.same({}, none.rows)
      assert.equal("Relations: none", none.summary)
      -- no seed graph: the entities extraction named by id are the seed graph's, "air sac" is new
      local all = browser.run(path, driver, "#e=NOT-THERE")
      assert.equal(4, #all.rows)
      assert.equal("1", all.numbers[5])
      assert.matches("No entity NOT%-THERE in this graph", all.missing)
      os.remove(path)
    end)

    it("orders the triples at random for a review sample, the same order on every visit", function()
      local driver = [[
        return [...document.querySelectorAll("#all-triples tr.triple")].map(t => +t.dataset.triple);]]
      local best = browser.run(page_path, driver)
      local random = browser.run(page_path, driver, "#order=random")
      local again = browser.run(page_path, driver, "#order=random")
      assert.same(random, again)
      assert.equal(#best, #random)
      assert.are_not.same(best, random)
    end)

    -- a page of the triples and passages (no graph: the page's own search and marks), a search for
    -- `query`: the entities suggested, and the head and tail marks of the first triple's evidence
    local function searched_and_marked(triples, passages, query)
      local path = files.tmpname() .. ".html"
      assert(gm.kg.page.write(path, gm.kg.page.data { triples = triples, passages = passages }))
      local r = browser.run(path, string.format([[
        const box = document.getElementById("search");
        box.value = %s; box.dispatchEvent(new Event("input"));
        const found = [...document.querySelectorAll("#suggestions li")].map(li => li.dataset.id);
        document.querySelector("#all-triples tr.triple button.evidence-toggle").click();
        const marks = cls => [...document.querySelectorAll(".passage mark." + cls)].map(m => m.textContent);
        return { found, heads: marks("head"), tails: marks("tail") };]], cjson.encode(query)))
      os.remove(path)
      return r
    end

    it("folds case and accents in search and in the marked mentions, as the linker does", function()
      local triples = { { head = "Citroën gear", relation = "part_of", tail = "gearbox", score = -1, count = 2, sources = { 1, 2 },
        head_id = "G:1", tail_id = "G:2" } }
      -- line 2 has the accent decomposed (e + U+0308): the mark still covers the whole word
      local passages = { ["1"] = "A gearbox holds a CITROEN GEAR, a citroën gear too.", ["2"] = "The Citroe\u{308}n gear." }
      local r = searched_and_marked(triples, passages, "citroen")
      assert.same({ "G:1" }, r.found)
      assert.same({ "CITROEN GEAR", "Citroe\u{308}n gear" }, r.heads)
      assert.same({ "gearbox" }, r.tails)
    end)

    it("finds and marks a name written with typographic marks, as the linker does; a name inside a word is no mention", function()
      local triples = { { head = "Crohn's disease", relation = "part_of", tail = "AD", score = -1, count = 1, sources = { 1 },
        head_id = "D:1", tail_id = "D:2" } }
      local passages = { ["1"] = "In Crohn’s disease and lung adenocarcinoma." }
      local r = searched_and_marked(triples, passages, "crohn’s")
      assert.same({ "D:1" }, r.found)
      assert.same({ "Crohn’s disease" }, r.heads)
      assert.same({}, r.tails)
    end)

    it("shows a corpus's markup as text and pages long lists", function()
      local triples, passages = {}, { ["1"] = "<img src=x onerror=\"document.title='pwned'\"> heart </script><b>bold</b>" }
      for i = 1, 250 do
        triples[i] = { head = "heart", relation = "part_of", tail = "tail " .. i, score = -i / 100, count = 1, sources = { 1 },
          head_id = "ANAT:0007" }
      end
      local path = files.tmpname() .. ".html"
      assert(gm.kg.page.write(path, gm.kg.page.data { triples = triples, passages = passages, title = "</title><b>x" }))
      local r = browser.run(path, [[
        const rows = () => document.querySelectorAll("#all-triples tr.triple").length;
        const first = rows();
        document.querySelector("#all-triples .more button").click();
        const second = rows();
        document.querySelector("#all-triples tr.triple button.evidence-toggle").click();
        return { first, second, title: document.title, ready: document.documentElement.dataset.readyMs !== undefined,
          bold: document.querySelectorAll("main b").length - document.querySelectorAll("#summary .numbers b").length,
          images: document.images.length, text: document.querySelector(".passage").textContent };]])
      os.remove(path)
      assert.same({ 100, 200 }, { r.first, r.second })
      assert.equal("</title><b>x", r.title)
      assert.is_true(r.ready)
      assert.equal(0, r.bold)
      assert.equal(0, r.images)
      assert.matches("<img src=x", r.text, 1, true)
    end)
  end)
end)
