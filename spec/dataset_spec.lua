-- gm.data.dataset: the product's input read and checked — the tiny example dataset, the earlier
-- JSONL format with per-passage triples, a corpus folder, and bad input (each a counted skip
-- naming file and line, or an error), and WordNet through the same interface giving the same
-- training sequences as before it existed.
local gm = require "graphmert"
local files = require "spec.files"
local dataset = gm.data.dataset

-- the message of the error fn raises (luassert's error_matches would strip a leading "file:line: ")
local function error_of(fn)
  local ok, err = pcall(fn)
  assert.is_false(ok)
  return tostring(err)
end

-- a dataset folder with the given files
local function folder(contents)
  local dir = files.tmpname()
  os.execute("mkdir -p " .. dir)
  for name, text in pairs(contents) do files.write(dir .. "/" .. name, text) end
  return dir
end

local ENTITIES = "id\tname\ttype\taliases\nE1\tliver\torgan\thepar\nE2\tbile\tsubstance\t\n" ..
  "E3\tgallbladder\torgan\tgall bladder\nE4\tpancreas\torgan\t\n"
local RELATIONS = "relation\thead_types\ttail_types\nproduces\torgan\tsubstance\nconnected_to\torgan\torgan\n"

describe("gm.data.dataset", function()
  it("reads the tiny example dataset with nothing skipped", function()
    local ds = dataset.load { dir = "experiments/data/tiny" }
    assert.equal(32, #ds.passages)
    assert.equal(34, #ds.entity_order)
    assert.equal(43, #ds.triples)
    assert.same({ "connected_to", "contains", "is_a", "part_of", "produces" }, ds.relation_names)
    assert.equal(0, ds.report.skipped_total, ds:summary())
    -- "liver<TAB>produces<TAB>bile" names its entities: resolved to their ids
    local by = {}
    for _, t in ipairs(ds.triples) do by[ds.entities[t.head].name .. " " .. t.relation] = ds.entities[t.tail].name end
    assert.equal("bile", by["liver produces"])
    assert.equal("1", ds.passages[1].id)
    assert.matches("corpus.txt:1$", ds.passages[1].source)
  end)

  it("counts each bad line by reason, naming file and line, and keeps the rest", function()
    local dir = folder {
      ["entities.tsv"] = ENTITIES .. "E5\n" .. "E1\tduplicate\torgan\t\n" .. "E6\tspleen\torgan\tlien\tmilt\n",
      ["relations.tsv"] = RELATIONS .. "stores\torgan\tsubstance\tsubsumption\textra\n" .. "contains\torgan\torgan\t\t\n", -- padded: kept
      ["triples.tsv"] = "head\trelation\ttail\n" ..
        "E1\tproduces\tE2\n" ..        -- 2: fine
        "E1\tproduces\n" ..            -- 3: two fields
        "E3\tstores\tE2\n" ..          -- 4: unknown relation
        "E1\tproduces\tE9\n" ..        -- 5: missing entity
        "E2\tproduces\tE1\n" ..        -- 6: a substance cannot produce (the schema)
        "hepar\tconnected_to\tgall bladder\n" .. -- 7: by alias: fine
        "E1\tproduces\tE2\n",          -- 8: a duplicate
      ["corpus.txt"] = "The liver produces bile.\nBile is stored in the gall\255bladder.\n\nThe pancreas.\n",
    }
    local ds = dataset.load { dir = dir }
    local s = ds.report.skipped
    assert.same({ 1, 1, 1, 1, 1, 1, 1 }, { s["fewer than 2 fields"], s["duplicate entity id"], s["fewer than 3 fields"],
      s["unknown relation"], s["unknown entity"], s["head type not allowed by the relation schema"], s["duplicate triple"] })
    assert.equal(1, s["not UTF-8 text"])
    -- tabs for |: nothing dropped unsaid (an entity's fifth column holds its properties)
    assert.same({ 1, 1 }, { s["more than 4 fields"], s["unknown property 'milt' (known: any_case)"] })
    assert.equal(2, #ds.triples)
    assert.is_not_nil(ds.schema.contains) -- a row padded with tabs is whole
    assert.equal(2, #ds.passages)
    local all = table.concat(ds.report.messages, "\n")
    for _, where in ipairs { "entities.tsv:6", "entities.tsv:8", "relations.tsv:4", "triples.tsv:3", "triples.tsv:4", "triples.tsv:5", "triples.tsv:6", "corpus.txt:2" } do
      assert.matches(dir .. "/" .. where:gsub("%.", "%%.") .. ": ", all)
    end
    assert.matches("E9", all)
    assert.matches("entities.tsv:8: unknown property 'milt' %(known: any_case%) %(E6; aliases are separated by |", all)
    assert.matches("10 lines skipped", ds:summary())
    -- on_error = "stop": the first bad line is the error
    assert.matches("entities.tsv:6: fewer than 2 fields", error_of(function() dataset.load { dir = dir, on_error = "stop" } end))
    os.execute("rm -rf " .. dir)
  end)

  it("names the relation an unknown one nearly spells, on every line that has it", function()
    local dir = folder {
      ["entities.tsv"] = ENTITIES, ["relations.tsv"] = RELATIONS, ["corpus.txt"] = "The liver produces bile.\n",
      ["triples.tsv"] = "E1\tprodcues\tE2\nE4\tprodcues\tE2\nE1\tsecretes\tE2\nE1\tproduces\tE2\n",
    }
    local ds = dataset.load { dir = dir }
    assert.equal(3, ds.report.skipped["unknown relation"])
    local all = table.concat(ds.report.messages, "\n")
    assert.matches("triples.tsv:1: unknown relation %(prodcues is not in the relation schema: did you mean produces%?%)", all)
    assert.matches("triples.tsv:2: unknown relation %(prodcues is not in the relation schema: did you mean produces%?%)", all)
    assert.matches("triples.tsv:3: unknown relation %(secretes is not in the relation schema%)", all) -- (nothing near)
    os.execute("rm -rf " .. dir)
  end)

  it("refuses a missing corpus, an empty corpus, an empty seed graph and a name that names two entities", function()
    local dir = folder { ["entities.tsv"] = ENTITIES, ["triples.tsv"] = "E1\tproduces\tE2\n" }
    assert.error_matches(function() dataset.load { dir = dir } end, "no corpus")
    files.write(dir .. "/corpus.txt", "\n   \n")
    assert.error_matches(function() dataset.load { dir = dir } end, "corpus.txt has no passages")
    files.write(dir .. "/corpus.txt", "The liver.\n")
    files.write(dir .. "/triples.tsv", "E1\tproduces\tE7\n")
    assert.matches("the seed graph has no triples .*; first skipped line: .*triples.tsv:1: unknown entity %(E7%)",
      error_of(function() dataset.load { dir = dir } end))
    files.write(dir .. "/entities.tsv", ENTITIES .. "E6\tliver\torgan\t\n")
    files.write(dir .. "/triples.tsv", "E1\tproduces\tE2\nliver\tproduces\tbile\n")
    local ds = dataset.load { dir = dir }
    assert.equal(1, ds.report.skipped["ambiguous entity name"])
    assert.matches("triples.tsv:2: ambiguous entity name %(liver names E1, E6: give the id%)", ds.report.messages[1])
    assert.error_matches(function() dataset.load { dir = dir .. "/nothing" } end, "is not a folder")
    os.execute("rm -rf " .. dir)
  end)

  it("takes the earlier JSONL format: per-passage triples by name make the entities and the seed graph", function()
    local dir = folder { ["corpus.jsonl"] = '{"text": "A dog is a canine.", "triples": [{"head": "dog", "relation": "hypernym", "tail": "canine"}]}\n' ..
      '{"id": "p2", "text": "A cat is a feline.", "triples": [{"head": "cat", "relation": "hypernym", "tail": "feline"}, {"head": "cat"}]}\n' ..
      'not json\n' }
    local ds = dataset.load { dir = dir }
    assert.equal(2, #ds.passages)
    assert.equal(2, #ds.triples)
    assert.same({ "dog", "canine", "cat", "feline" }, ds.entity_order)
    assert.same({ "1", "p2" }, { ds.passages[1].id, ds.passages[2].id })
    assert.same({ { head = "dog", relation = "hypernym", tail = "canine" } }, ds.passages[1].triples)
    assert.same({ 1, 1 }, { ds.report.skipped["not a JSON object"], ds.report.skipped["no relation"] })
    os.execute("rm -rf " .. dir)
  end)

  it("reads a corpus folder in name order, ids naming the file", function()
    local dir = folder { ["entities.tsv"] = ENTITIES, ["relations.tsv"] = RELATIONS, ["triples.tsv"] = "E1\tproduces\tE2\n" }
    os.execute("mkdir -p " .. dir .. "/corpus")
    files.write(dir .. "/corpus/b.txt", "The pancreas.\n")
    files.write(dir .. "/corpus/a.jsonl", '{"text": "The liver makes bile.", "entity": "E1"}\n{"text": "x", "entity": "E8"}\n')
    local ds = dataset.load { dir = dir }
    assert.same({ "a.jsonl:1", "b.txt:1" }, { ds.passages[1].id, ds.passages[2].id })
    assert.equal("E1", ds.passages[1].entity)
    assert.equal(1, ds.report.skipped["unknown entity"])
    os.execute("rm -rf " .. dir)
  end)
end)

describe("a relation's properties", function()
  it("mark one relation as subsumption, kept through the saved seed graph and its index", function()
    local dir = folder {
      ["entities.tsv"] = ENTITIES .. "E5\torgan\torgan\t\n",
      ["relations.tsv"] = RELATIONS .. "is_a\torgan\torgan\tsubsumption\n" .. "part_of\torgan\torgan\tsubsumption\n"
        .. "contains\torgan\torgan\ttransitive\n",
      ["triples.tsv"] = "E1\tis_a\tE5\nE3\tproduces\tE2\n",
      ["corpus.txt"] = "The liver is an organ.\n",
    }
    local ds = dataset.load { dir = dir }
    assert.equal("is_a", ds.subsumption)
    local all = table.concat(ds.report.messages, "\n")
    assert.matches("relations.tsv:5: a second subsumption relation %(is_a is one%) %(part_of%)", all)
    assert.matches("relations.tsv:6: unknown property 'transitive' %(known: subsumption%) %(contains%)", all)
    local graph = gm.data.seed_graph.new(ds)
    assert.equal("is_a", graph.subsumption)
    local saved = dir .. "/saved"
    ds:save_seed_graph(saved, graph)
    assert.equal("is_a", dataset.load_seed_graph(saved).subsumption)
    assert.equal("is_a", gm.data.seed_graph.load(saved .. "/index.bin").subsumption)
    -- none marked: none (and the index as before)
    local plain = dataset.load { dir = folder { ["relations.tsv"] = RELATIONS, ["entities.tsv"] = ENTITIES,
      ["triples.tsv"] = "E1\tproduces\tE2\n", ["corpus.txt"] = "The liver.\n" } }
    assert.is_nil(plain.subsumption)
    assert.is_nil(gm.data.seed_graph.new(plain).subsumption)
    os.execute("rm -rf " .. dir)
  end)

  it("reads a JSONL relation's subsumption flag", function()
    local dir = folder {
      ["entities.tsv"] = ENTITIES,
      ["relations.jsonl"] = '{"name": "produces", "head_types": ["organ"], "tail_types": ["substance"]}\n'
        .. '{"name": "connected_to", "head_types": ["organ"], "tail_types": ["organ"], "subsumption": true}\n'
        .. '{"name": "contains", "head_types": ["organ"], "tail_types": ["organ"], "subsumption": "yes"}\n',
      ["triples.tsv"] = "E1\tproduces\tE2\n",
      ["corpus.txt"] = "The liver.\n",
    }
    local ds = dataset.load { dir = dir }
    assert.equal("connected_to", ds.subsumption)
    assert.matches("relations.jsonl:3: subsumption not true or false %(contains%)", table.concat(ds.report.messages, "\n"))
    os.execute("rm -rf " .. dir)
  end)
end)

describe("an entity's properties", function()
  it("let an entity's names match in any case, in TSV and JSONL, kept through the saved seed graph and its index", function()
    local corpus = "The Moon and the moon; Mars and mars.\n"
    local dir = folder {
      ["entities.tsv"] = "id\tname\ttype\taliases\tproperties\nM1\tMoon\tbody\t\t\nM2\tMars\tbody\t\tany_case\n" ..
        "M3\tPhobos\tbody\t\tany_case,loud\n",
      ["triples.tsv"] = "M1\torbits\tM2\n",
      ["corpus.txt"] = corpus,
    }
    local ds = dataset.load { dir = dir }
    assert.same({ nil, true }, { ds.entities.M1.any_case, ds.entities.M2.any_case })
    assert.matches("entities.tsv:4: unknown property 'loud' %(known: any_case%)", ds.report.messages[1])
    local function mentions(graph)
      local out = {}
      for _, m in ipairs(graph.linker:mentions(corpus)) do out[#out + 1] = m.phrase .. "@" .. m.first end
      return table.concat(out, " ")
    end
    local graph = gm.data.seed_graph.new(ds)
    assert.equal("moon@2 mars@7 mars@9", mentions(graph))
    local saved = dir .. "/saved"
    ds:save_seed_graph(saved, graph)
    assert.is_true(dataset.load_seed_graph(saved).entities.M2.any_case)
    assert.equal("moon@2 mars@7 mars@9", mentions(gm.data.seed_graph.new(dataset.load_seed_graph(saved))))
    assert.equal("moon@2 mars@7 mars@9", mentions(gm.data.seed_graph.load(saved .. "/index.bin")))
    -- JSONL: "any_case": true; another value is named
    local jsonl = folder {
      ["entities.jsonl"] = '{"id": "M1", "name": "Moon", "any_case": true}\n{"id": "M2", "name": "Mars", "any_case": false}\n' ..
        '{"id": "M3", "name": "Phobos", "any_case": "yes"}\n',
      ["triples.tsv"] = "M1\torbits\tM2\n",
      ["corpus.txt"] = corpus,
    }
    ds = dataset.load { dir = jsonl }
    assert.equal("entities.jsonl:3: any_case not true or false (M3)", ds.report.messages[1]:match("[^/]*$"))
    assert.equal("moon@2 moon@5 mars@7", mentions(gm.data.seed_graph.new(ds)))
    os.execute("rm -rf " .. dir .. " " .. jsonl)
  end)
end)

describe("gm.data.dataset's other forms", function()
  it("reads JSONL entities, triples and relations, * types, a byte-order mark and CRLF lines", function()
    local dir = folder {
      ["entities.jsonl"] = '\239\187\191{"id": 1, "name": "liver", "type": "organ", "aliases": ["hepar"]}\r\n' ..
        '{"id": "S1", "name": "bile", "type": "substance"}\r\n{"id": "X", "name": "thing"}\r\n["not", "an object"]\r\n' ..
        '{"id": "N", "name": "four", "aliases": 4}\n' ..    -- would be the alias "4"
        '{"id": "B", "name": "gall", "aliases": "fel|choler"}\n',  -- a string is split as the TSV column is
      ["relations.jsonl"] = '{"name": "produces", "head_types": ["organ"], "tail_types": ["*"]}\n' ..
        '{"name": "is_a", "head_types": [], "tail_types": ["organ"]}\n' ..
        '{"name": "wide", "head_types": ["organ"], "tail_types": [1]}\n',   -- would be "any type"
      ["triples.jsonl"] = '{"head": 1, "relation": "produces", "tail": "bile"}\n' ..
        '{"head": "hepar", "relation": "produces", "tail": "X"}\n' ..   -- tail of any type: fine
        '{"head": "S1", "relation": "is_a", "tail": "X"}\n',          -- X is an "entity", not an organ
      ["corpus.jsonl"] = '{"id": 7, "text": "The liver makes bile.", "entity": "hepar"}\n' ..
        '{"id": null, "text": "Bile is bitter."}\n{"id": 7, "text": "again"}\n',
    }
    local ds = dataset.load { dir = dir }
    assert.same({ "1", "S1", "X", "B" }, ds.entity_order)
    assert.same({ "hepar" }, ds.entities["1"].aliases)
    assert.equal("entity", ds.entities.X.type)
    assert.equal(2, #ds.triples)
    assert.same({ "7", "2" }, { ds.passages[1].id, ds.passages[2].id })
    assert.equal("1", ds.passages[1].entity) -- named by its alias
    local s = ds.report.skipped
    assert.same({ 1, 1, 1 }, { s["not a JSON object"], s["tail type not allowed by the relation schema"], s["duplicate passage id"] })
    assert.equal("*", ds.schema.produces.tail)
    assert.equal("*", ds.schema.is_a.head)
    assert.same({ 1, 1 }, { s["aliases not a list of strings"], s["types not a list of strings"] })
    assert.is_nil(ds.entities.N)
    assert.same({ "fel", "choler" }, ds.entities.B.aliases)
    assert.is_nil(ds.schema.wide)
    os.execute("rm -rf " .. dir)
  end)

  it("refuses two files for one part, unknown options and a bad on_error", function()
    local dir = folder { ["corpus.txt"] = "a\n", ["corpus.jsonl"] = '{"text": "a"}\n', ["triples.tsv"] = "a\tr\tb\n" }
    assert.error_matches(function() dataset.load { dir = dir } end, "both corpus.jsonl and corpus.txt; keep one")
    assert.error_matches(function() dataset.load { dir = dir, corpora = "x" } end, "unknown option 'corpora'")
    assert.error_matches(function() dataset.load { dir = dir, on_error = "ignore" } end, "on_error must be")
    assert.error_matches(function() dataset.load { corpus = dir .. "/none.txt" } end, "corpus file .*none.txt does not exist")
    assert.error_matches(function() dataset.load(42) end, "expected a folder or a table of files, got number")
    os.execute("rm -rf " .. dir)
  end)

  it("lets per-passage triples repeat one another without a skip, and checks what a source adds", function()
    local dir = folder { ["corpus.jsonl"] = '{"text": "A dog.", "triples": [{"head": "dog", "relation": "is_a", "tail": "canine"}]}\n' ..
      '{"text": "The dog.", "triples": [{"head": "dog", "relation": "is_a", "tail": "canine"}]}\n' }
    local ds = dataset.load { dir = dir, on_error = "stop" }
    assert.equal(1, #ds.triples)
    assert.equal(1, #ds.passages[2].triples)
    assert.error_matches(function() ds:add_triple("dog", "is_a", "wolf") end, "add_triple: no entity wolf")
    assert.error_matches(function() ds:add_passage { text = "x", entity = "cat" } end, "add_passage: no entity cat")
    os.execute("rm -rf " .. dir)
  end)
end)

describe("WordNet as a dataset source", function()
  it("gives the training sequences it gave before the dataset interface", function()
    -- the count and hash below were printed by experiment.prepare of the code before
    -- gm.data.dataset existed (WordNet read by experiment.prepare itself), on this config
    local cfg = gm.experiment.config.check({ data = { source = "wordnet", pos = { "verb", "adj" }, limit = 300 },
      heldout = 0.1, heldout_triples = 0.1, vocab_size = 700, copies = 3, tail_end = true,
      model = { roots = 24, leaves = 3 }, steps = 1, batch = 1, lr = 1 }, "t")
    local d = gm.experiment.prepare(cfg)
    local parts = {}
    for _, s in ipairs(d.train_seqs) do parts[#parts + 1] = s.ids .. s.valid .. s.relation .. s.head_length end
    local bytes, h = table.concat(parts), 0
    for i = 1, #bytes do h = (h * 31 + bytes:byte(i)) % 2147483647 end
    assert.same({ 644, 1897897362 }, { #d.train_seqs, h })
  end)
end)
