-- Training on what extraction asks: tails at a gloss's other entity mentions and relations a
-- lemma lacks (gm.experiment's injection plan), their masking and their decoding.
local gm = require "graphmert"
local injection = require "graphmert.experiment.injection"
local ext = gm.eval.extract

-- dog → canine (hypernym) and dog → tail (part_meronym); canine → animal; hot dog has no relation;
-- "6n", a held-out synset, gives dog a member_holonym that training never sees
local wn = { synsets = {
  ["1n"] = { lemmas = { "dog" }, pointers = { { relation = "hypernym", target = "2n" },
    { relation = "part_meronym", target = "4n" }, { relation = "member_holonym", target = "6n" } } },
  ["2n"] = { lemmas = { "canine" }, pointers = { { relation = "hypernym", target = "5n" } } },
  ["3n"] = { lemmas = { "hot dog" }, pointers = {} },
  ["4n"] = { lemmas = { "tail" }, pointers = {} },
  ["5n"] = { lemmas = { "animal" }, pointers = { { relation = "antonym", target = "2n" } } },
  ["6n"] = { lemmas = { "pack" }, pointers = {} },
} }
local names = { "antonym", "hypernym", "member_holonym", "part_meronym" }

local function training()
  return {
    { entity = "1n", head = "dog", text = "dog: a canine with a tail",
      triples = { { head = "dog", relation = "hypernym", tail = "canine" }, { head = "dog", relation = "part_meronym", tail = "tail" } } },
    { entity = "2n", head = "canine", text = "canine: an animal", triples = { { head = "canine", relation = "hypernym", tail = "animal" } } },
    { entity = "3n", head = "hot dog", text = "hot dog: a dog in a bun", triples = {} },
  }
end

describe("injection plan", function()
  local ds, graph = require "spec.toy_dataset" (wn)
  local entity_names = {}
  for id, e in pairs(ds.entities) do entity_names[id] = { e.name } end

  it("puts a training fact of each mentioned lemma at its mention, one per copy", function()
    local train = training()
    injection.plan(train, graph, entity_names, names, { seed = 1, copies = 4, mentions = true, absent = 0 })
    -- dog: two facts, two copies; each copy also carries canine's fact at "canine" ("tail" has none)
    assert.equal(2, #train[1].placements)
    for c, copy in ipairs(train[1].placements) do
      assert.same({ head = "dog", relation = "hypernym", tail = "canine" }, c == 1 and copy[1] or { head = copy[1].head,
        relation = "hypernym", tail = "canine" })
      assert.same({ head = "canine", relation = "hypernym", tail = "animal" }, copy[2])
      assert.equal(2, #copy)
    end
    assert.same({ head = "dog", relation = "part_meronym", tail = "tail" }, train[1].placements[2][1])
    -- hot dog: no fact of its own, one copy with a dog fact at "dog" (not at "hot dog": longest match)
    assert.equal(1, #train[3].placements)
    assert.equal("dog", train[3].placements[1][1].head)
  end)

  it("gives absent relations only those no synset of the lemma has, held-out ones included", function()
    local seen = {}
    for seed = 1, 40 do
      local train = training()
      injection.plan(train, graph, entity_names, names, { seed = seed, copies = 4, mentions = true, absent = 0.5 })
      for _, r in ipairs(train) do
        for _, copy in ipairs(r.placements) do
          for _, t in ipairs(copy) do
            if t.absent then
              seen[t.head .. " " .. t.relation] = true
              assert.equal("", t.tail)
            end
          end
        end
      end
    end
    -- never a relation some synset of the lemma has: dog's member_holonym is a held-out fact,
    -- never taught as absent; the lemmas without relations may lack any of the four
    local has = { dog = { hypernym = true, part_meronym = true, member_holonym = true }, canine = { hypernym = true },
      animal = { antonym = true } }
    for key in pairs(seen) do
      local head, relation = key:match("^(.-) (%S+)$")
      assert.is_nil((has[head] or {})[relation], key)
    end
    assert.is_true(seen["dog antonym"])
    assert.is_true(seen["canine part_meronym"])
    assert.is_true(seen["hot dog hypernym"])
  end)

  it("depends on the seed alone", function()
    local a, b, c = training(), training(), training()
    local cfg = { seed = 3, copies = 4, mentions = true, absent = 0.5 }
    injection.plan(a, graph, entity_names, names, cfg)
    injection.plan(b, graph, entity_names, names, cfg)
    injection.plan(c, graph, entity_names, names, { seed = 4, copies = 4, mentions = true, absent = 0.5 })
    assert.same(a[1].placements, b[1].placements)
    local differs = false
    for i = 1, 3 do differs = differs or not require("luassert.util").deepcompare(a[i].placements, c[i].placements) end
    assert.is_true(differs)
  end)
end)

describe("absent relations", function()
  it("are a relation on the head's root with no leaf tokens, masked whole as end slots", function()
    local tok = gm.data.tokenizer.train({ "dog: a canine with a tail" }, { vocab_size = 100 })
    local layout = gm.layout { roots = 20, leaves = 3 } -- both copies in one sequence
    local records = { { text = "dog: a canine with a tail", triples = {}, placements = {
      { { head = "dog", relation = "hypernym", tail = "canine" } },
      { { head = "dog", relation = "antonym", tail = "", absent = true },
        { head = "canine", relation = "hypernym", tail = "tail" } } } } }
    local seqs, report = gm.data.corpus.build(records, tok, { layout = layout, relations = { antonym = 1, hypernym = 2 } })
    assert.equal(3, report.injected)
    local s = gm.data.corpus.unpack(seqs[1])
    local at = {} -- relation id → its roots
    for r, k in ipairs(s.relation) do if k ~= 0 then at[k] = at[k] or {}; table.insert(at[k], r) end end
    assert.equal(1, #at[1])
    assert.equal(2, #at[2]) -- dog in copy 1, canine in copy 2
    local dog2 = at[1][1]
    assert.equal(tok:encode("dog")[1], s.ids[dog2])
    for a = 1, 3 do assert.equal(0, s.valid[layout:leaf(dog2, a)]) end
    local mask = { vocab = tok:size(), mask_id = tok.mask_id, layout = layout, sbo = false, root_rate = 0, leaf_rate = 1,
      replace = { 1, 0 }, special = { [tok.pad_id] = true, [tok.cls_id] = true, [tok.sep_id] = true } }
    -- without tail_end an empty group is nothing to predict
    local plain = gm.data.masking.mask(gm.data.corpus.batch(seqs, 1, 1), mask)
    mask.tail_end, mask.end_id = true, tok.pad_id
    local m = gm.data.masking.mask(gm.data.corpus.batch(seqs, 1, 1), mask)
    assert.equal(2, #plain.labels.leaves.targets) -- canine, tail
    assert.equal(2 + 3 + 2 * 2, #m.labels.leaves.targets) -- and the absent group, and two end slots per 1-token tail
    local labelled = {}
    for i, p in ipairs(m.labels.leaves.positions) do labelled[p] = m.labels.leaves.targets[i] end
    for a = 1, 3 do
      local node = layout:leaf(dog2, a)
      assert.equal(tok.pad_id, labelled[layout:flat(1, node)])
      assert.equal(1, m.valid:get(1, node))
    end
  end)

  it("teach a model to rank the empty tail first where the relation does not hold", function()
    local texts = { "the dog barks loudly at night", "a cat sleeps on the warm mat", "domestic animal", "long tail" }
    local m = require "spec.memorise" { texts = texts, relations = { hypernym = 1, part_meronym = 2 }, steps = 200,
      records = {
        { text = texts[1], triples = {}, placements = { { { head = "dog", relation = "hypernym", tail = "domestic animal" } },
          { { head = "dog", relation = "part_meronym", tail = "", absent = true } } } },
        { text = texts[2], triples = {}, placements = { { { head = "cat", relation = "hypernym", tail = "animal" } },
          { { head = "cat", relation = "part_meronym", tail = "long tail" } } } } } }
    local model, tok, query = m.model, m.tok, m.query
    local known = gm.data.tail_list.new({ tok:encode("animal"), tok:encode("domestic animal"), tok:encode("long tail") }, 3,
      tok.pad_id)
    local queries = { query(texts[1], "dog", 1), query(texts[1], "dog", 2), query(texts[2], "cat", 2) }
    for _, mode in ipairs { "constrained", "open" } do
      local out = gm.eval.decode(model, tok, queries, { mode = mode, tails = { known, known }, tail_end = true, empty = true, top = 4 })
      assert.equal("domestic animal", tok:decode(out[1][1].ids), mode)
      assert.is_true(out[2][1].empty, mode)
      assert.same({}, out[2][1].ids)
      assert.equal("long tail", tok:decode(out[3][1].ids), mode)
      assert.is_nil(out[3][1].empty)
    end
    -- without empty the empty tail is never a candidate
    local out = gm.eval.decode(model, tok, queries, { mode = "constrained", tails = { known, known }, tail_end = true, top = 4 })
    for _, list in ipairs(out) do for _, c in ipairs(list) do assert.is_true(#c.ids > 0) end end
    assert.error_matches(function() gm.eval.decode(model, tok, queries, { mode = "open", empty = true }) end,
      "decode: empty needs tail_end")
  end)
end)
