-- Triple extraction: finding heads, predicting tails, scoring against WordNet.
local gm = require "graphmert"
local ext = gm.eval.extract

-- a three-synset WordNet: dog → canine (hypernym), hot dog
local wn = { synsets = {
  ["1n"] = { lemmas = { "dog", "domestic dog" }, pointers = { { relation = "hypernym", target = "2n" } } },
  ["2n"] = { lemmas = { "canine" }, pointers = {} },
  ["3n"] = { lemmas = { "hot dog" }, pointers = {} },
} }

describe("extract", function()
  local lemmas = ext.index(wn)

  it("finds lemmas in text, longest first", function()
    assert.same({ "hot dog", "dog", "canine" }, ext.heads("A hot dog is not a dog, nor a canine.", lemmas))
  end)

  it("scores triples: held by WordNet, or at least with a valid tail", function()
    local s = ext.score({
      { head = "dog", relation = "hypernym", tail = "canine" },   -- held
      { head = "dog", relation = "hyponym", tail = "canine" },    -- valid tail, not held
      { head = "dog", relation = "hypernym", tail = "banana" },   -- neither
      { head = "Domestic Dog", relation = "hypernym", tail = "Canine" }, -- held, any case
    }, wn, lemmas)
    assert.equal(4, s.n)
    assert.near(0.5, s.held, 1e-9)
    assert.near(0.75, s.valid, 1e-9)
  end)

  it("ranks whole-word tails at the head's first leaf slot", function()
    local tok = gm.data.tokenizer.train({ "a dog is a canine", "a cat is a feline" }, { vocab_size = 100 })
    local model = gm.nn.GraphMERT { vocab = tok:size(), hidden = 8, layers = 1, heads = 2, ffn = 16,
      roots = 8, leaves = 2, relations = 1 }
    local tails = ext.predict(model, tok, "a dog is a canine", "dog", 1, { layout = gm.layout { roots = 8, leaves = 2 }, top = 3 })
    assert.equal(3, #tails)
    for _, t in ipairs(tails) do
      assert.is_nil(t:match("^##"))
      assert.is_nil(t:match("^%["))
    end
    assert.same({}, ext.predict(model, tok, "a cat", "dog", 1, { layout = gm.layout { roots = 8, leaves = 2 } }))
  end)
end)
