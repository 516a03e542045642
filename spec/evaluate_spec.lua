-- Tail prediction metrics and the most-frequent-tail baseline.
local gm = require "graphmert"

describe("evaluate", function()
  local train = {
    { text = "a dog barks", triples = { { head = "dog", relation = "hypernym", tail = "canine" } } },
    { text = "a wolf howls", triples = { { head = "wolf", relation = "hypernym", tail = "canine" } } },
    { text = "a cat purrs", triples = { { head = "cat", relation = "hypernym", tail = "feline" } } },
  }
  local test = {
    { text = "a fox yelps", triples = { { head = "fox", relation = "hypernym", tail = "canine" },
      { head = "fox", relation = "unknown", tail = "x" }, { head = "owl", relation = "hypernym", tail = "bird" } } },
    { text = "a lion roars", triples = { { head = "lion", relation = "hypernym", tail = "feline" } } },
  }
  local texts = {}
  for _, r in ipairs(train) do texts[#texts + 1] = r.text .. " " .. r.triples[1].tail end
  for _, r in ipairs(test) do texts[#texts + 1] = r.text end
  local tok = gm.data.tokenizer.train(texts, { vocab_size = 200 })
  local opts = { layout = gm.layout { roots = 8, leaves = 2 }, relations = { hypernym = 1 } }

  it("ranks the most frequent tail per relation first (hits@1 on canine, rank 2 on feline)", function()
    local r = gm.eval.most_frequent_tail(train, test, tok, opts)
    assert.equal(2, r.n) -- the unknown relation and the head missing from the text are skipped
    assert.near(0.5, r.hits1, 1e-9)
    assert.near(1, r.hits10, 1e-9)
    assert.near((1 + 1 / 2) / 2, r.mrr, 1e-9)
  end)

  it("scores a model's ranking of the vocabulary at the masked tail slot", function()
    local model = gm.nn.GraphMERT { vocab = tok:size(), hidden = 8, layers = 1, heads = 2, ffn = 16,
      roots = 8, leaves = 2, relations = 1 }
    local r = gm.eval.tail_prediction(model, tok, test, opts)
    assert.equal(2, r.n)
    for _, k in ipairs { "hits1", "hits10", "mrr", "exact" } do
      assert.is_true(r[k] >= 0 and r[k] <= 1, k)
    end
    assert.is_true(r.hits10 >= r.hits1)
    assert.is_true(r.mrr >= r.hits1)
  end)

  it("ranks whole tails without their length: the frequency baseline's top ten, a model's decoder", function()
    local known = { [1] = gm.data.tail_list.new({ tok:encode("canine"), tok:encode("feline"), tok:encode("bird"),
      tok:encode("a dog") }, 4, tok.pad_id) }
    local with_tails = { layout = opts.layout, relations = opts.relations, tails = known }
    local r = gm.eval.most_frequent_tail(train, test, tok, with_tails)
    -- canine (2 of 3 training tails) is first: fox → rank 1, lion's feline → rank 2
    assert.near(0.5, r.tail.hits1, 1e-9)
    assert.near(1, r.tail.hits10, 1e-9)
    assert.near(0.75, r.tail.mrr, 1e-9)
    local model = gm.nn.GraphMERT { vocab = tok:size(), hidden = 8, layers = 1, heads = 2, ffn = 16,
      roots = 8, leaves = 2, relations = 1, sbo = false }
    local m = gm.eval.tail_prediction(model, tok, test, with_tails)
    -- four known tails: every gold tail is within the top ten, so hits@10 is 1
    assert.near(1, m.tail.hits10, 1e-9)
    assert.is_true(m.tail.mrr >= 0.25 and m.tail.mrr <= 1 and m.tail.hits1 <= m.tail.mrr)
  end)
end)
