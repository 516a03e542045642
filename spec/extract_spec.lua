-- Triple extraction: the seed graph, finding heads, relations by head kind, decoding tails,
-- merging, scoring against WordNet, and experiments/extract.lua end to end.
local gm = require "graphmert"
local ext = gm.eval.extract

-- a four-synset WordNet: dog → canine (hypernym), hot dog, and a verb with its own relation
local wn = { synsets = {
  ["1n"] = { lemmas = { "dog", "domestic dog" }, pointers = { { relation = "hypernym", target = "2n" } } },
  ["2n"] = { lemmas = { "canine" }, pointers = {} },
  ["3n"] = { lemmas = { "hot dog" }, pointers = {} },
  ["4v"] = { lemmas = { "bark" }, pointers = { { relation = "entailment", target = "5v" } } },
  ["5v"] = { lemmas = { "make noise" }, pointers = {} },
} }

describe("extract", function()
  local _, graph = require "spec.toy_dataset" (wn)

  it("finds entity names in text, longest first", function()
    assert.same({ "hot dog", "dog", "canine" }, graph:heads("A hot dog is not a dog, nor a canine."))
  end)

  it("finds each head once and never a lone function word, though WordNet has one (a, in, or)", function()
    local l = gm.data.linker.new()
    for id, name in pairs { ["1n"] = "a", ["2n"] = "in", ["3n"] = "dog", ["4a"] = "in vitro" } do l:add(id, name, true) end
    assert.same({ "dog", "in vitro" }, l:heads("A dog in a dog test in vitro"))
  end)

  it("places each head at its first mention, in the passage's own tokens, whatever the linker folds", function()
    local _, g = require "spec.toy_dataset" { synsets = {
      ["1n"] = { lemmas = { "Ménière's disease", "MD" }, pointers = { { relation = "causes", target = "2n" } } },
      ["2n"] = { lemmas = { "vertigo" }, pointers = {} },
      ["3n"] = { lemmas = { "dog" }, pointers = { { relation = "causes", target = "2n" } } },
      ["4n"] = { lemmas = { "process" }, pointers = { { relation = "causes", target = "2n" } } },
    } }
    local text = "Dogma: MENIÈRE'S DISEASE (MD) brings vertigo; a dog, a glycolytic‐process, Meniere's disease."
    local tok = gm.data.tokenizer.train({ text, "ménière dogs" }, { vocab_size = 300 })
    local model = gm.nn.GraphMERT { vocab = tok:size(), hidden = 8, layers = 1, heads = 2, ffn = 16, roots = 64, leaves = 2,
      relations = 1, sbo = false }
    local report = {}
    local queries, meta = ext.queries(tok, model.layout, { text = text },
      { graph = g, relations = { causes = 1 }, report = report })
    local placed = {}
    for i, q in ipairs(queries) do
      local span = meta[i].span
      local chars = { utf8.codepoint(text, 1, -1) }
      placed[#placed + 1] = { meta[i].head, tok:decode { table.unpack(q.toks, q.at, q.at + q.head_length - 1) },
        utf8.char(table.unpack(chars, span[1] + 1, span[2])) }
    end
    assert.same({
      { "meniere ' s disease", "meniÈre ' s disease", "MENIÈRE'S DISEASE" }, -- the tokenizer folds ASCII case only
      { "md", "md", "MD" }, -- (an acronym, written in capitals: gm.data.linker)
      { "vertigo", "vertigo", "vertigo" },
      { "dog", "dog", "dog" }, -- the word, not the start of "dogma"
    }, placed)
    assert.equal(1, report.inside) -- "process" inside "glycolytic‐process", whose tokens hold more
    -- BERT's tokenizer splits that piece as the linker does: "process" has tokens of its own there
    local vocab = os.tmpname()
    local f = assert(io.open(vocab, "w"))
    f:write(table.concat({ "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "dog", "##ma", "glycolytic", "‐", "process",
      "vertigo", "md", "meniere", "'", "s", "disease", ":", "(", ")", ",", ";", ".", "a", "brings" }, "\n"), "\n")
    f:close()
    local bert = gm.data.tokenizer.from_vocab(vocab)
    os.remove(vocab)
    report = {}
    queries, meta = ext.queries(bert, model.layout, { text = text }, { graph = g, relations = { causes = 1 }, report = report })
    local heads = {}
    for i, q in ipairs(queries) do
      heads[#heads + 1] = meta[i].head .. " = " .. bert:decode { table.unpack(q.toks, q.at, q.at + q.head_length - 1) }
    end
    assert.same({ "meniere ' s disease = meniere ' s disease", "md = md", "vertigo = vertigo", "dog = dog",
      "process = process" }, heads)
    assert.is_nil(report.inside)
    local span, chars = meta[#meta].span, { utf8.codepoint(text, 1, -1) }
    assert.equal("process", utf8.char(table.unpack(chars, span[1] + 1, span[2]))) -- a part of a piece, as written
    -- a trained tokenizer keeps "liver’s" one word: "liver" is placed where its tokens end (here
    -- nearly a token a character), as written; "kidney" starts inside the word "liver–kidney"
    local liver_text = "The LIVER’s cells; the liver–kidney axis; “Liver”."
    local _, lg = require "spec.toy_dataset" { synsets = { ["1n"] = { lemmas = { "liver" }, pointers = { { relation = "causes", target = "2n" } } },
      ["2n"] = { lemmas = { "kidney" }, pointers = { { relation = "causes", target = "1n" } } } } }
    local lt = gm.data.tokenizer.train({ "the liver cells kidney axis “liver” liver’s liver–kidney;." }, { vocab_size = 50 })
    report = {}
    queries, meta = ext.queries(lt, model.layout, { text = liver_text }, { graph = lg, relations = { causes = 1 }, report = report })
    local lchars, found = { utf8.codepoint(liver_text, 1, -1) }, {}
    for i, q in ipairs(queries) do
      found[#found + 1] = string.format("%s %s [%s]", meta[i].head, lt:decode { table.unpack(q.toks, q.at, q.at + q.head_length - 1) },
        utf8.char(table.unpack(lchars, meta[i].span[1] + 1, meta[i].span[2])))
    end
    assert.same({ "liver liver [LIVER]", "kidney ##kidney [kidney]" }, found)
    assert.is_nil(report.inside)
    -- a word the tokenizer cannot spell whole (no piece for «): its words are encoded one by one
    queries, meta = ext.queries(lt, model.layout, { text = "«kidney»" }, { graph = lg, relations = { causes = 1 } })
    assert.equal(1, #queries)
    assert.equal("kidney", lt:decode { table.unpack(queries[1].toks, queries[1].at, queries[1].at + queries[1].head_length - 1) })
    assert.same({ 1, 7 }, meta[1].span)
    local short = gm.nn.GraphMERT { vocab = tok:size(), hidden = 8, layers = 1, heads = 2, ffn = 16, roots = 6, leaves = 2,
      relations = 1, sbo = false }
    report = {}
    queries = ext.queries(tok, short.layout, { text = text }, { graph = g, relations = { causes = 1 }, report = report })
    assert.equal(0, #queries) -- the first four tokens hold no whole head
    assert.equal(4, report.truncated)
    for id, name in pairs { ["1n"] = "Ménière's disease", ["3n"] = "dog" } do assert.same({ id, name }, { g:entity(name) }) end
  end)

  it("cuts a text into pieces whose words are the linker's", function()
    for _, text in ipairs { "A hot-dog, (sic) 42 times!", "Ménière's disease — TNF-α; glycolytic‐process", "naïve café\tx",
      "日本語 text", "" } do
      local words = {}
      for _, p in ipairs(gm.data.linker.pieces(text)) do
        for _, w in ipairs(p.words) do words[#words + 1] = w end
      end
      assert.same(gm.data.linker.words(text), words)
    end
  end)

  it("asks a head only the relations the seed graph has for heads of its type", function()
    assert.same({ "hypernym" }, graph:relations_for("canine", { "entailment", "hypernym" }))
    assert.same({ "entailment" }, graph:relations_for("bark", { "entailment", "hypernym" }))
  end)

  it("lists the known tails of the type each relation reaches", function()
    local tok = gm.data.tokenizer.train({ "dog canine hot dog bark make noise domestic" }, { vocab_size = 200 })
    local tails = graph:known_tails(tok, { hypernym = 1, entailment = 2 }, 2)
    local names = {}
    for _, ids in ipairs(tails[2]:lists()) do names[#names + 1] = tok:decode(ids) end
    table.sort(names)
    assert.same({ "bark", "make noise" }, names)
    assert.equal(4, tails[1].n) -- dog, domestic dog, canine, hot dog
    -- a name the tokenizer spells with [UNK] is none: its tokens would not write the name back
    local blind = gm.data.tokenizer.train({ "dog canine bark make noise domestic" }, { vocab_size = 200 })
    assert.same({ blind.unk_id }, blind:encode("hot"))
    names = {}
    for _, ids in ipairs(graph:known_tails(blind, { hypernym = 1 }, 2)[1]:lists()) do names[#names + 1] = blind:decode(ids) end
    table.sort(names)
    assert.same({ "canine", "dog", "domestic dog" }, names)
  end)

  it("merges triples across passages, drops self-loops, non-words and function words, keeps the top per (head, relation)", function()
    local kg = gm.kg.merge.merge({
      { head = "dog", relation = "hypernym", tail = "canine", score = -1, source = 1, decoding = "open" },
      { head = "dog", relation = "hypernym", tail = "canine", score = -0.5, source = 2, decoding = "open" },
      { head = "dog", relation = "hypernym", tail = "canine", score = -0.7, source = 2, decoding = "open" },
      { head = "dog", relation = "hypernym", tail = "animal", score = -2, source = 1, decoding = "open" },
      { head = "dog", relation = "hypernym", tail = "pet", score = -3, source = 1, decoding = "open" },
      { head = "dog", relation = "hypernym", tail = "Dog", score = 0, source = 1, decoding = "open" },
      { head = "dog", relation = "hypernym", tail = ", .", score = 0, source = 1, decoding = "open" },
      { head = "dog", relation = "hypernym", tail = "the", score = 0, source = 1, decoding = "open" },
      { head = "dog", relation = "hypernym", tail = "Of The", score = 0, source = 1, decoding = "open" },
    }, { top = 2 })
    assert.equal(2, #kg)
    assert.same({ "canine", -0.5, 2, { 1, 2 } }, { kg[1].tail, kg[1].score, kg[1].count, kg[1].sources })
    assert.equal("animal", kg[2].tail)
  end)

  it("scores triples: held by the seed graph, and valid when the tail is of a type the relation reaches", function()
    local s = ext.score({
      { head = "dog", relation = "hypernym", tail = "canine" },    -- held
      { head = "hot dog", relation = "hypernym", tail = "canine" }, -- valid tail, not held
      { head = "dog", relation = "hypernym", tail = "bark" },      -- a verb: not valid for hypernym
      { head = "Domestic Dog", relation = "hypernym", tail = "Canine" }, -- held, any case
    }, graph)
    assert.equal(4, s.n)
    assert.near(0.5, s.held, 1e-9)
    assert.near(0.75, s.valid, 1e-9)
  end)

  it("scores one passage: correct, valid, multi-word and multi-token correct tails, recall of its facts", function()
    local passage = { text = "dog: a domestic dog that can bark",
      gold = { { head = "dog", relation = "hypernym", tail = "canine" }, { head = "bark", relation = "entailment", tail = "make noise" },
               { head = "dog", relation = "unknown", tail = "x" } } }
    local u = ext.score_passage(graph, { hypernym = 1, entailment = 2 }, passage, {
      { head = "dog", relation = "hypernym", tail = "canine", tokens = 2, score = -0.5 },       -- held, two tokens
      { head = "bark", relation = "entailment", tail = "make noise", tokens = 2, score = -1 }, -- held, two words
      { head = "domestic dog", relation = "hypernym", tail = "bark", tokens = 1, score = -2 }, -- not held, not valid
    })
    assert.same({ 3, 2, 2, 1, 2, 2, 2 }, { u.n, u.correct, u.valid, u.multi, u.multi_token, u.gold, u.recalled })
    assert.equal(5, #u.scored) -- three triples, two recalled facts
  end)
end)

describe("gm.eval.decode", function()
  local tok = gm.data.tokenizer.train({ "the dog barks at night", "domestic animal", "a wild cat" }, { vocab_size = 200 })
  local model = gm.nn.GraphMERT { vocab = tok:size(), hidden = 8, layers = 1, heads = 2, ffn = 16, roots = 10, leaves = 3,
    relations = 1, sbo = false }
  local layout = model.layout
  local query = { toks = layout:fit(tok:encode("the dog barks at night")), at = 2, head_length = 1, relation = 1 }

  it("never leaves the known tails in constrained mode, and scores every length", function()
    local known = gm.data.tail_list.new({ tok:encode("domestic animal"), tok:encode("cat"), tok:encode("a wild cat") }, 3,
      tok.pad_id)
    local out = gm.eval.decode(model, tok, { query, query }, { mode = "constrained", tails = { known }, top = 10 })
    assert.equal(2, #out)
    assert.equal(3, #out[1])
    local allowed = { ["domestic animal"] = true, cat = true, ["a wild cat"] = true }
    for _, c in ipairs(out[1]) do
      assert.is_true(allowed[tok:decode(c.ids)], tok:decode(c.ids))
      assert.is_true(c.score <= 0)
    end
    assert.is_true(out[1][1].score >= out[1][2].score)
  end)

  it("ranks a known-tail list alike however it was used before and however wide it is", function()
    local lists = { tok:encode("domestic animal"), tok:encode("cat"), tok:encode("a wild cat"), tok:encode("night") }
    local function ranked(list, tail_end)
      local out = gm.eval.decode(model, tok, { query }, { mode = "constrained", tails = { list }, top = 10,
        tail_end = tail_end, empty = tail_end })[1]
      for i, c in ipairs(out) do out[i] = string.format("%s %.6f", tok:decode(c.ids), c.score) end
      return out
    end
    local fits = {}
    for _, ids in ipairs(lists) do if #ids <= 2 then fits[#fits + 1] = ids end end
    assert.is_true(#fits >= 2 and #fits < #lists)
    for _, tail_end in ipairs { true, false, true } do -- one list asked both ways keeps each answer
      local shared, fresh = gm.data.tail_list.new(fits, 2, tok.pad_id), nil
      fresh = ranked(gm.data.tail_list.new(fits, 2, tok.pad_id), tail_end)
      assert.same(fresh, ranked(shared, not tail_end) and ranked(shared, tail_end))
      -- a list narrower than the 3 leaves is scored as a list of the same tails 3 wide
      assert.same(ranked(gm.data.tail_list.new(fits, 3, tok.pad_id), tail_end), fresh)
    end
    assert.error_matches(function()
      gm.eval.decode(model, tok, { query }, { mode = "constrained", tails = { lists } })
    end, "decode: opts.tails must map relation ids to gm.data.tail_list lists")
  end)

  it("decodes open tails of every length, a word first and no special token", function()
    local out = gm.eval.decode(model, tok, { query }, { mode = "open", top = 5 })[1]
    assert.equal(3, #out) -- one per length
    for _, c in ipairs(out) do
      assert.is_true(tok:word_start(c.ids[1]))
      for _, id in ipairs(c.ids) do assert.is_true(id > 5) end
    end
    assert.error_matches(function() gm.eval.decode(model, tok, { query }, { mode = "beam" }) end, "mode must be")
  end)

  it("asks no more of a query whose first slot the model answers [PAD] (\"none\"), scoring the empty tail", function()
    -- the logits pushed towards [PAD] at every slot of the second query, away from it for the first
    local forwards, rows, lps = 0, 0, {}
    local second = { toks = query.toks, at = 4, head_length = 1, relation = 1 }
    model.logits = function(self, hidden, positions)
      forwards, rows = forwards + 1, rows + #positions
      local l = getmetatable(self).logits(self, hidden, positions)
      local bias = {}
      for i = 1, #positions do
        bias[i] = {}
        for v = 1, tok:size() do bias[i][v] = v == tok.pad_id and (i > 3 and 50 or -50) or 0 end
      end
      l = l + gm.tensor(bias)
      if forwards == 1 then lps = l:log_softmax(2):totable() end
      return l
    end
    local out = gm.eval.decode(model, tok, { query, second }, { mode = "open", tail_end = true, empty = true, top = 1 })
    model.logits = nil
    -- three forwards for the first query's three slots (3 + 2 + 1 masked rows), the second's three
    -- rows in the first only
    assert.same({ 3, 9 }, { forwards, rows })
    assert.is_true(#out[1][1].ids > 0)
    assert.is_true(out[2][1].empty)
    assert.near((lps[4][tok.pad_id] + lps[5][tok.pad_id] + lps[6][tok.pad_id]) / 3, out[2][1].score, 1e-5)
  end)
end)

describe("decoding with a learned tail end", function()
  it("recovers a planted two-token tail, its length chosen by the model", function()
    local texts = { "the dog barks loudly at night", "a cat sleeps on the warm mat", "domestic animal", "wild animal" }
    local m = require "spec.memorise" { texts = texts, relations = { hypernym = 1 }, steps = 150, records = {
      { text = texts[1], triples = { { head = "dog", relation = "hypernym", tail = "domestic animal" } } },
      { text = texts[2], triples = { { head = "cat", relation = "hypernym", tail = "animal" } } } } }
    local model, tok, query = m.model, m.tok, m.query
    local batch = gm.data.masking.mask(gm.data.corpus.batch(m.seqs, 1, #m.seqs), m.mask_opts)
    assert.equal(6, #batch.labels.leaves.targets) -- 2 + 1 tail tokens, 1 + 2 end slots
    local out = gm.eval.decode(model, tok, { query(texts[1], "dog"), query(texts[2], "cat") },
      { mode = "open", tail_end = true, top = 1 })
    assert.equal("domestic animal", tok:decode(out[1][1].ids))
    assert.equal("animal", tok:decode(out[2][1].ids))
    local known = { gm.data.tail_list.new({ tok:encode("animal"), tok:encode("domestic animal"), tok:encode("wild animal") },
      3, tok.pad_id) }
    out = gm.eval.decode(model, tok, { query(texts[1], "dog") }, { mode = "constrained", tails = known, tail_end = true })
    assert.equal("domestic animal", tok:decode(out[1][1].ids))
  end)
end)

describe("extraction's packed and batched queries", function()
  local _, graph = require "spec.toy_dataset" (wn)
  local texts = { "a dog and a canine bark at a hot dog", "the canine sleeps", "dog", "they bark at the dog and the canine" }
  local tok = gm.data.tokenizer.train(texts, { vocab_size = 200 })
  gm.manual_seed(1)
  local model = gm.nn.GraphMERT { vocab = tok:size(), hidden = 16, layers = 1, heads = 2, ffn = 32, roots = 16, leaves = 2,
    relations = 2, sbo = false }
  local passages = {}
  for i, t in ipairs(texts) do passages[i] = { id = i, text = t } end
  local relations = { hypernym = 1, entailment = 2 }
  local function opts(extra)
    local o = { graph = graph, relations = relations, mode = "open", top = 3, batch = 4 }
    for k, v in pairs(extra or {}) do o[k] = v end
    return o
  end
  local function key(t) return table.concat({ t.source, t.head, t.relation, t.tail }, "|") end
  -- runs fn counting the sequences the model is asked
  local function counting(fn)
    local n = 0
    model.forward = function(self, batch, ...)
      n = n + batch.ids:size(1)
      return getmetatable(self).forward(self, batch, ...)
    end
    local out = fn()
    model.forward = nil
    return out, n
  end

  it("batches across passages: the triples of passage-by-passage extraction", function()
    -- (in batches of 64 sequences, whose masked slots take several of the decoder's blocks of rows)
    local many = {}
    for i = 1, 6 * #passages do many[i] = { id = i, text = passages[(i - 1) % #passages + 1].text } end
    for _, mode in ipairs { "open", "constrained" } do
      for _, pack in ipairs { false, true } do
        local o = opts { mode = mode, pack = pack, tails = mode == "constrained" and graph:known_tails(tok, relations, 2) or nil }
        local one = {}
        for _, p in ipairs(many) do
          for _, t in ipairs(ext.triples(model, tok, { p }, o)) do one[#one + 1] = t end
        end
        local all = ext.triples(model, tok, many, opts { mode = mode, pack = pack, tails = o.tails, batch = 64 })
        assert.equal(#one, #all)
        for i = 1, #one do
          assert.equal(key(one[i]), key(all[i]))
          assert.near(one[i].score, all[i].score, 1e-5) -- (a batch's size may change the rounding)
        end
      end
    end
  end)

  it("asks a passage's heads in one sequence, and a lone head exactly as one query per sequence", function()
    local _, unpacked = counting(function() return ext.triples(model, tok, { passages[1] }, opts()) end)
    local _, packed = counting(function() return ext.triples(model, tok, { passages[1] }, opts { pack = true }) end)
    -- four heads (dog, canine, bark, hot dog), one relation each; open decoding asks a one-slot
    -- tail once and a two-slot tail twice: 4 × 3 sequences unpacked, 2 + 1 packed (a sequence per
    -- tail length, all four heads in it)
    assert.same({ 12, 3 }, { unpacked, packed })
    assert.same(ext.triples(model, tok, { passages[3] }, opts()), ext.triples(model, tok, { passages[3] }, opts { pack = true }))
  end)
end)
