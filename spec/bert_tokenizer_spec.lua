-- The BERT vocab.txt tokenizer against HF's BertTokenizer algorithm (spec/fixtures/bert, made by
-- scripts/refs/gen_bert_fixtures.py with Python's unicodedata).
local gm = require "graphmert"
local fixture = require "spec.fixture"
local tk = gm.data.tokenizer
local bert_text = require "graphmert.data.bert_text"

local DIR = "spec/fixtures/bert/"
local expected = fixture.load(DIR .. "expected.json")

local function tmp_with(text)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  return path
end

describe("tokenizer.from_vocab", function()
  local tok = tk.from_vocab(DIR .. "vocab.txt")

  it("finds the five special tokens by name, ids being line numbers", function()
    local s = expected.specials
    assert.same({ s["[PAD]"], s["[UNK]"], s["[CLS]"], s["[SEP]"], s["[MASK]"] },
      { tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id })
    assert.same({ 1, 4, 5, 6, 7 }, { tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id })
    local lines = 0
    for _ in io.lines(DIR .. "vocab.txt") do lines = lines + 1 end
    assert.equal(lines, tok:size())
  end)

  it("splits text into words as BERT's BasicTokenizer does", function()
    for _, case in ipairs(expected.cases) do
      assert.same(case.words, bert_text.words(case.text, case.lower), case.text)
    end
  end)

  it("tokenises the test sentences to the reference ids", function()
    for _, case in ipairs(expected.cases) do
      local t = case.lower and tok or tk.from_vocab(DIR .. "vocab.txt", { lower = false })
      assert.same(case.ids, t:encode(case.text), case.text)
    end
  end)

  it("cleans, lower-cases, strips accents and splits punctuation code point by code point", function()
    for _, c in ipairs(expected.coverage) do
      assert.same(c.words, bert_text.words("x" .. utf8.char(c.cp) .. "y", true), string.format("U+%04X", c.cp))
    end
  end)

  it("marks ## pieces as continuations and spells long and unknown words [UNK]", function()
    local ids = tok:encode("tokenizers")
    assert.same({ "token", "##izer", "##s" }, { tok.pieces[ids[1]], tok.pieces[ids[2]], tok.pieces[ids[3]] })
    assert.is_true(tok:word_start(ids[1]))
    assert.is_false(tok:word_start(ids[2]))
    assert.same({ tok.unk_id }, tok:encode(string.rep("a", 101)))
    assert.equal(100, #tok:encode(string.rep("a", 100)))
    assert.same({ tok.unk_id }, tok:encode("øre"))
    -- invalid UTF-8 bytes are dropped as U+FFFD is
    assert.same(tok:encode("cafe dog"), tok:encode("ca\xfffe dog\xc3"))
  end)

  it("feeds the corpus builder and the masking unchanged", function()
    local layout = gm.layout { roots = 16, leaves = 2 }
    local seqs = gm.data.corpus.build({ { text = "The café: a naïve dog.", triples = {
      { head = "dog", relation = "r", tail = "cat" } } } }, tok, { layout = layout, relations = { r = 1 } })
    local s = gm.data.corpus.unpack(seqs[1])
    assert.equal(tok.cls_id, s.ids[1])
    assert.equal("the cafe : a naive dog .", tok:decode { table.unpack(s.ids, 2, 8) })
    assert.equal(tok.sep_id, s.ids[9])
    assert.equal(1, s.relation[7])
  end)

  it("saves and loads back", function()
    local path = os.tmpname()
    for _, lower in ipairs { true, false } do
      local t = tk.from_vocab(DIR .. "vocab.txt", { lower = lower })
      t:save(path)
      local back = tk.load(path)
      assert.same(t.pieces, back.pieces)
      assert.equal(lower, back.lower)
      assert.same(t:encode("Hello Café"), back:encode("Hello Café"))
    end
    os.remove(path)
  end)

  it("refuses a vocabulary missing a special token, naming it, and empty or duplicate pieces", function()
    local path = tmp_with "[PAD]\n[UNK]\n[CLS]\n[SEP]\na\n"
    assert.error_matches(function() tk.from_vocab(path) end, "tokenizer.from_vocab: .*: the vocabulary has no %[MASK%] piece")
    os.remove(path)
    path = tmp_with "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n\na\n"
    assert.error_matches(function() tk.from_vocab(path) end, ":6: a piece must be non%-empty")
    os.remove(path)
    path = tmp_with "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n\xc3\n"
    assert.error_matches(function() tk.from_vocab(path) end, ":6: a piece must be UTF%-8")
    os.remove(path)
    path = tmp_with "[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\n[MASK]\r\na\r\na\r\n"
    assert.error_matches(function() tk.from_vocab(path) end, "duplicate piece 'a' %(id 7%)")
    os.remove(path)
    assert.error_matches(function() tk.from_vocab(path) end, "tokenizer.from_vocab: ")
    assert.error_matches(function() tk.from_vocab(DIR .. "vocab.txt", { lower = "yes" }) end, "lower must be a boolean")
  end)
end)
