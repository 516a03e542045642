-- Corpus readers and the leafy-chain sequence builder.
local gm = require "graphmert"
local corpus = gm.data.corpus

local function tmp_with(lines)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
  return path
end

describe("corpus.read_jsonl", function()
  it("reads records and reports malformed lines with file:line", function()
    local path = tmp_with {
      '{"text": "A dog is a mammal.", "triples": [{"head": "dog", "relation": "hypernym", "tail": "mammal"}]}',
      'not json',
      '{"text": ""}',
      '{"text": "Cats purr.", "triples": [{"head": "cats"}]}',
      '',
    }
    local records, report = corpus.read_jsonl(path)
    assert.equal(2, #records)
    assert.equal(3, report.errors)
    assert.matches(":2: not a JSON object", report.messages[1])
    assert.matches(":3: no text", report.messages[2])
    assert.matches(":4: triple 1 needs head, relation and tail strings", report.messages[3])
    assert.same({ head = "dog", relation = "hypernym", tail = "mammal" }, records[1].triples[1])
    local ok, err = pcall(corpus.read_jsonl, path, { on_error = "stop" })
    assert.is_false(ok)
    assert.equal(path .. ":2: not a JSON object", err)
    os.remove(path)
  end)
end)

describe("corpus.build", function()
  local records = {
    { text = "A dog is a domesticated mammal.", triples = {
      { head = "dog", relation = "hypernym", tail = "mammal" },
      { head = "cat", relation = "hypernym", tail = "feline" },
      { head = "dog", relation = "hyponym", tail = "puppy" },
      { head = "mammal", relation = "made_up", tail = "animal" },
    } },
    { text = "", triples = {} },
    { text = "Cats meow at dogs.", triples = { { head = "cats", relation = "hypernym", tail = "a very long tail phrase indeed" } } },
  }
  local tok = gm.data.tokenizer.train({ records[1].text, records[3].text, "feline puppy animal a very long tail phrase indeed" },
    { vocab_size = 200 })

  it("packs records into roots and injects tails into the first root of their head", function()
    local R, L = 32, 2
    local seqs, report = corpus.build(records, tok, { layout = gm.layout { roots = R, leaves = L }, relations = { hypernym = 1, hyponym = 2 } })
    assert.equal(1, #seqs)
    local s = corpus.unpack(seqs[1])
    assert.equal(R * (1 + L), #s.ids)
    assert.equal(tok.cls_id, s.ids[1])
    local dog = tok:encode("dog")
    local at = 3 -- [CLS] a dog ...
    assert.same(dog, { s.ids[at] })
    assert.equal(1, s.relation[at])
    assert.equal(1, s.head_length[at])
    local tail = tok:encode("mammal")
    for a, id in ipairs(tail) do assert.equal(id, s.ids[R + L * (at - 1) + a]) end
    assert.equal(1, report.injected)
    assert.same({ ["head not in text"] = 1, ["root already holds a triple"] = 1, ["unknown relation"] = 1,
      ["empty text"] = 1, ["tail longer than the leaf slots"] = 1 }, report.skipped)
    assert.matches('^".+", %d+ tokens$', report.examples["tail longer than the leaf slots"]) -- shown to the user
    -- roots after the last record and empty leaves are padding
    assert.equal(0, s.valid[R])
    assert.equal(tok.pad_id, s.ids[R])
  end)

  it("repeats a record once per usable triple with copies", function()
    local R, L = 32, 2
    local seqs, report = corpus.build(records, tok, { layout = gm.layout { roots = R, leaves = L }, relations = { hypernym = 1, hyponym = 2 }, copies = 3 })
    assert.equal(2, report.injected) -- dog → mammal and dog → puppy, each in its own copy
    assert.is_nil(report.skipped["root already holds a triple"])
    local tails = {}
    for _, packed in ipairs(seqs) do
      local s = corpus.unpack(packed)
      for r = 1, R do
        if s.relation[r] ~= 0 then tails[#tails + 1] = s.relation[r] .. ":" .. tok:decode { s.ids[R + L * (r - 1) + 1] } end
      end
    end
    table.sort(tails)
    assert.same({ "1:mammal", "2:puppy" }, tails)
  end)

  it("feeds GraphMERT", function()
    local R, L = 32, 2
    local seqs = corpus.build(records, tok, { layout = gm.layout { roots = R, leaves = L }, relations = { hypernym = 1, hyponym = 2 } })
    local batch = corpus.batch(seqs, 1, 4)
    local model = gm.nn.GraphMERT { vocab = tok:size(), hidden = 8, layers = 1, heads = 2, ffn = 16, roots = R, leaves = L, relations = 2 }
    assert.same({ 1, R * (1 + L), 8 }, model(batch):shape())
  end)

  it("counts the tokens and records that per-record packing truncates", function()
    local R, L = 6, 2
    local layout = gm.layout { roots = R, leaves = L }
    local recs = { { text = "a dog is a domesticated mammal", triples = {
      { head = "dog", relation = "hypernym", tail = "mammal" },
      { head = "mammal", relation = "hypernym", tail = "animal" } } }, { text = "cats meow", triples = {} } }
    local n = #tok:encode(recs[1].text)
    local _, report = corpus.build(recs, tok, { layout = layout, relations = { hypernym = 1 } })
    assert.equal(1, report.truncated_records)
    assert.equal(n - (R - 2), report.truncated_tokens)
    assert.same({ ["head in the truncated text"] = 1 }, report.skipped)
    assert.equal(1, report.injected)
  end)

  it("keeps every token of a 3-chunk document with chunk packing", function()
    local R, L = 16, 2
    local layout = gm.layout { roots = R, leaves = L }
    local text = "a dog is a domesticated carnivorous mammal; cats meow at dogs, and a dog barks at cats"
    local doc = tok:encode(text)
    local short = tok:encode("cats meow")
    assert.is_true(#doc + #short > 2 * (R - 2) and #doc + #short <= 3 * (R - 2))
    local recs = { { text = text, triples = {} }, { text = "", triples = {} }, { text = "cats meow", triples = {} } }
    local seqs, report = corpus.build(recs, tok, { layout = layout, packing = "chunk" })
    assert.equal(3, #seqs)
    assert.equal(2, report.records)
    assert.same({ ["empty text"] = 1 }, report.skipped)
    local stream = {}
    for c, packed in ipairs(seqs) do
      local s = corpus.unpack(packed)
      assert.equal(tok.cls_id, s.ids[1])
      local used = c < 3 and R or #doc + #short - 2 * (R - 2) + 2
      assert.equal(tok.sep_id, s.ids[used])
      for r = 2, used - 1 do stream[#stream + 1] = s.ids[r] end
      for r = 1, R do assert.equal(r <= used and 1 or 0, s.valid[r]) end -- only the last chunk has padding
    end
    local expected = {}
    for _, id in ipairs(doc) do expected[#expected + 1] = id end
    for _, id in ipairs(short) do expected[#expected + 1] = id end
    assert.same(expected, stream)
  end)

  it("injects a triple in the chunk of its head and skips heads cut by a chunk boundary", function()
    local R, L = 5, 2 -- chunks of 3 tokens
    local layout = gm.layout { roots = R, leaves = L }
    local t2 = gm.data.tokenizer.train({ "a b c d e f g h" }, { vocab_size = 40 })
    local recs = { { text = "a b c d e", triples = {
      { head = "e", relation = "r", tail = "g" },       -- token 5: chunk 2, root 3
      { head = "c d", relation = "r", tail = "h" },     -- tokens 3..4: across chunks 1 and 2
      { head = "b", relation = "r", tail = "f g" } } }, -- token 2: chunk 1, root 3
      { text = "f b", triples = { { head = "b", relation = "r", tail = "h" } } } } -- token 7: chunk 3, root 2
    local seqs, report = corpus.build(recs, t2, { layout = layout, packing = "chunk", relations = { r = 1 } })
    assert.equal(3, #seqs)
    assert.equal(3, report.injected)
    assert.same({ ["head split across chunks"] = 1 }, report.skipped)
    local function tail_at(c, root)
      local s = corpus.unpack(seqs[c])
      assert.equal(1, s.relation[root])
      local out = {}
      for a = 1, L do if s.valid[layout:leaf(root, a)] == 1 then out[#out + 1] = s.ids[layout:leaf(root, a)] end end
      return t2:decode(out)
    end
    assert.equal("g", tail_at(2, 3))
    assert.equal("f g", tail_at(1, 3))
    assert.equal("h", tail_at(3, 2))
    assert.error_matches(function() corpus.build(recs, t2, { layout = layout, packing = "chunks" }) end,
      "build: packing must be \"record\" or \"chunk\"")
  end)

  it("turns WordNet synsets into a dataset: entities, passages about them, their pointers as triples", function()
    local ds = gm.data.wordnet.dataset { pos = { "verb" }, limit = 50 }
    assert.equal(50, #ds.passages)
    assert.equal(50, #ds.entity_order)
    local with = 0
    for _, p in ipairs(ds.passages) do
      assert.is_true(#p.text > 0)
      local e = ds.entities[p.entity]
      assert.equal("verb", e.type)
      assert.equal(e.name .. ": ", p.text:sub(1, #e.name + 2)) -- "lemma: gloss; examples"
      for _, t in ipairs(p.triples) do
        assert.equal(p.entity, t.head)
        assert.is_table(ds.entities[t.tail]) -- only pointers between loaded synsets
      end
      if #p.triples > 0 then with = with + 1 end
    end
    assert.is_true(with > 0)
    assert.is_true(#ds.triples > 0 and #ds.relation_names > 0)
  end)
end)
