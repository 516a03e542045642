-- WordNet 3.0 (wndb(5)) parsing: synsets, lemmas, glosses with examples, named relations, and
-- bad input reported with file:line.
local gm = require "graphmert"
local wn = gm.data.wordnet

local BREATHE = "00001740 29 v 04 breathe 0 take_a_breath 0 respire 0 suspire 3 021 * 00005041 v 0000 * 00004227 v 0000 + 03110323 a 0301 + 00831191 n 0303 + 04080833 n 0301 + 04250850 n 0105 + 00831191 n 0101 ^ 00004227 v 0103 ^ 00005041 v 0103 $ 00002325 v 0000 $ 00002573 v 0000 ~ 00002573 v 0000 ~ 00002724 v 0000 ~ 00002942 v 0000 ~ 00003826 v 0000 ~ 00004032 v 0000 ~ 00004227 v 0000 ~ 00005041 v 0000 ~ 00006697 v 0000 ~ 00007328 v 0000 ~ 00017031 v 0000 02 + 02 00 + 08 00 | draw air into, and expel out of, the lungs; \"I can breathe better when the air is clean\"; \"The patient is respiring\"  "
local SATELLITE = "00002956 00 s 02 abaxial 0 dorsal(a) 4 002 & 00002527 a 0000 ;c 06037666 n 0000 | facing away from the axis of an organ or organism; \"the abaxial surface of a leaf is the underside\"  "

describe("wordnet.parse_line", function()
  it("reads lemmas, gloss, examples and pointers of a verb line with frames", function()
    local s = assert(wn.parse_line(BREATHE))
    assert.same({ "breathe", "take a breath", "respire", "suspire" }, s.lemmas)
    assert.equal("draw air into, and expel out of, the lungs", s.gloss)
    assert.same({ "I can breathe better when the air is clean", "The patient is respiring" }, s.examples)
    assert.equal(21, #s.pointers)
    assert.same({ relation = "entailment", target = "00005041v", source = 0, dest = 0 }, s.pointers[1])
    assert.equal("derivationally_related_form", s.pointers[3].relation)
    assert.equal("03110323a", s.pointers[3].target)
    assert.equal(3, s.pointers[3].source)
    assert.equal("00001740v", wn.key(s))
  end)

  it("keys adjective satellites as adjectives and strips syntactic markers", function()
    local s = assert(wn.parse_line(SATELLITE))
    assert.same({ "abaxial", "dorsal" }, s.lemmas)
    assert.equal("00002956a", wn.key(s))
    assert.same({ "similar_to", "domain_topic" }, { s.pointers[1].relation, s.pointers[2].relation })
  end)

  it("refuses malformed lines with a reason", function()
    for _, case in ipairs {
      { "garbage", "not a wndb%(5%) synset line" },
      { "00001740 29 v 02 breathe 0 000 | x", "1 words where the count says 2" },
      { "00001740 29 v 01 breathe 0 002 @ 00001741 v 0000 | x", "1 pointers where the count says 2" },
      { "00001740 29 v 01 breathe 0 001 ?? 00001741 v 0000 | x", "unknown pointer symbol %?%?" },
      { "  1 This software and database is being provided", "license line" },
    } do
      local s, err = wn.parse_line(case[1])
      assert.is_nil(s)
      assert.matches(case[2], err)
    end
  end)
end)

describe("wordnet.load", function()
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  local f = assert(io.open(dir .. "/data.verb", "w"))
  f:write("  1 This software and database is being provided\n", BREATHE, "\n", "00009999 29 v broken\n",
    "00002325 29 v 01 respire 1 001 $ 00001740 v 0000 01 + 02 00 | undergo respiration  \n")
  f:close()

  it("counts and reports bad lines with file:line, or stops on the first", function()
    local r = wn.load { dir = dir, pos = { "verb" } }
    assert.equal(2, r.count)
    assert.equal(1, r.errors.count)
    assert.matches("data%.verb:3: not a wndb%(5%) synset line", r.errors.messages[1])
    assert.equal("respire", r.synsets["00002325v"].lemmas[1])
    assert.error_matches(function() wn.load { dir = dir, pos = { "verb" }, on_error = "stop" } end,
      "wordnet%.load: .*data%.verb:3: not a wndb")
  end)

  it("says what is missing when the files are not there", function()
    assert.error_matches(function() wn.load { dir = dir .. "/none" } end, "install Debian's wordnet%-base")
  end)

  it("parses the installed WordNet 3.0 without errors", function()
    local r = wn.load { limit = 300 }
    assert.equal(1200, r.count)
    assert.equal(0, r.errors.count)
    for _, s in pairs(r.synsets) do
      assert.is_true(#s.lemmas >= 1)
      assert.is_true(#s.gloss > 0)
    end
  end)
end)
