-- The WordPiece tokenizer: training, the round trip, save/load, bad files.
local gm = require "graphmert"
local tk = gm.data.tokenizer

local corpus = {
  "A dog is a domesticated carnivorous mammal.",
  "Dogs bark; cats meow, and birds sing (mostly at dawn).",
  "The barking of dogs woke the sleeping cats.",
  "Mammals nurse their young with milk.",
}

describe("tokenizer", function()
  local tok = tk.train(corpus, { vocab_size = 120, max_piece = 8 })

  it("keeps the special tokens first and stays within the vocabulary size", function()
    for i, s in ipairs(tk.specials) do assert.equal(s, tok.pieces[i]) end
    assert.is_true(tok:size() <= 120)
    assert.equal(5, tok.mask_id)
  end)

  it("round-trips text through ids", function()
    local extra = { "cats and dogs", "a sleeping mammal barks at birds", "young dogs; old cats." }
    for _, texts in ipairs { corpus, extra } do
      for _, t in ipairs(texts) do assert.equal(tk.normalize(t), tok:decode(tok:encode(t))) end
    end
  end)

  it("makes pieces of whole characters, so that any ids decode to UTF-8 text", function()
    local greek = tk.train({ "TNF-α signalling, γ-secretase and Ménière's disease", "αβγ ααα γγγ éé" },
      { vocab_size = 200, max_piece = 5 })
    for _, p in ipairs(greek.pieces) do assert.is_truthy(utf8.len(p), string.format("%q is not UTF-8", p)) end
    assert.truthy(greek.index["α"] and greek.index["##γ"] and greek.index["##ni"])
    for id = 1, greek:size() do assert.is_truthy(utf8.len(greek:decode { id, id })) end
    local t = "tnf-α signalling and ménière's disease"
    assert.equal(tk.normalize(t), greek:decode(greek:encode(t)))
    -- ASCII text gives the pieces it always gave: every substring of up to max_piece bytes
    local ascii = tk.train({ "abcdef abcd" }, { vocab_size = 100, max_piece = 3 })
    assert.truthy(ascii.index["abc"] and ascii.index["##def"])
    assert.is_nil(ascii.index["abcd"])
  end)

  it("marks word starts and gives [UNK] for words it cannot spell", function()
    local ids = tok:encode("dogs zebra")
    assert.equal(tok.unk_id, ids[#ids])
    assert.is_true(tok:word_start(ids[1]))
    local barking = tok:encode("barking")
    for i = 2, #barking do assert.is_false(tok:word_start(barking[i])) end
  end)

  it("saves to and loads from a file", function()
    local path = os.tmpname()
    tok:save(path)
    local back = tk.load(path)
    assert.same(tok.pieces, back.pieces)
    assert.same(tok:encode(corpus[2]), back:encode(corpus[2]))
    os.remove(path)
  end)

  it("refuses damaged files with file:line", function()
    local path = os.tmpname()
    local function write(s) local f = assert(io.open(path, "w")); f:write(s); f:close() end
    write("something else\n")
    assert.error_matches(function() tk.load(path) end, ":1: not a graphmert tokenizer file")
    write("graphmert-wordpiece 1\nmax_piece x\n")
    assert.error_matches(function() tk.load(path) end, ":2: expected 'max_piece N'")
    write("graphmert-wordpiece 1\nmax_piece 4\n[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na b\n")
    assert.error_matches(function() tk.load(path) end, ":8: a piece must be non%-empty")
    write("graphmert-wordpiece 1\nmax_piece 4\n[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\na\n")
    assert.error_matches(function() tk.load(path) end, "duplicate piece 'a'")
    write("graphmert-wordpiece 1\nmax_piece 4\n[UNK]\n")
    assert.error_matches(function() tk.load(path) end, "piece 1 must be %[PAD%]")
    os.remove(path)
    assert.error_matches(function() tk.load(path) end, "tokenizer.load: ")
  end)
end)
