-- Ranking by a system's own score (gm.eval.ranking) against a ranking computed by hand, and
-- implied precision (gm.eval.implied) on a hand-made graph whose closure is known.
local gm = require "graphmert"
local ranking = require "graphmert.eval.ranking"
local implied = require "graphmert.eval.implied"

describe("ranking by score", function()
  -- two passages, 4 facts to find; best first: 0.9 held (recalls a fact), 0.8 wrong, 0.7 held
  -- (recalls one), 0.7 wrong, 0.5 held (recalls one)
  local units = {
    { gold = 2, scored = { { score = 0.9, held = true }, { score = 0.9, recall = true }, { score = 0.7, held = false },
      { score = 0.5, held = true }, { score = 0.5, recall = true } } },
    { gold = 2, scored = { { score = 0.8, held = false }, { score = 0.7, held = true }, { score = 0.7, recall = true } } },
  }

  it("gives a point per distinct score, ties taken together", function()
    local c = ranking.curve(units)
    local got = {}
    for i, p in ipairs(c) do got[i] = string.format("%.1f %.4f %.2f", p.threshold, p.precision, p.recall) end
    assert.are.same({ "0.9 1.0000 0.25", "0.8 0.5000 0.25", "0.7 0.5000 0.50", "0.5 0.6000 0.75" }, got)
  end)

  it("takes one system's precision at a recall from another's on the same passages, paired", function()
    local l, h, v = ranking.difference_at_interval(units, units, 0.25, { samples = 100 })
    assert.are.same({ 0, 0, 0 }, { l, h, v })
    -- a system that ranks the second passage's wrong triple last: 3 of 4 held at recall 0.75, against 0.6
    local better = { units[1], { gold = 2, scored = { { score = 0.7, held = true }, { score = 0.7, recall = true },
      { score = 0.1, held = false } } } }
    l, h, v = ranking.difference_at_interval(better, units, 0.75, { samples = 100 })
    assert.are.near(0.75 - 0.6, v, 1e-12)
    assert.is_true(l <= v and v <= h)
    assert.is_nil(ranking.difference_at_interval(better, units, 0.9))
    -- and the recall each keeps at precision 0.7: 0.75 against 0.25
    l, h, v = ranking.recall_difference_interval(better, units, 0.7, { samples = 100 })
    assert.are.near(0.5, v, 1e-12)
    assert.is_true(l <= v and v <= h)
    assert.has_error(function() ranking.difference_at_interval({ units[1] }, units, 0.5) end,
      "ranking.difference_at_interval: 1 units against 2")
  end)

  it("gives the best precision among the thresholds that reach a recall, nil where none does", function()
    assert.are.equal(1.0, ranking.precision_at(units, 0.25))
    assert.are.equal(0.6, ranking.precision_at(units, 0.30)) -- (0.5 at 0.50 and 0.6 at 0.75: the best)
    assert.are.equal(0.6, ranking.precision_at(units, 0.75))
    assert.is_nil(ranking.precision_at(units, 0.80))
    assert.is_nil(ranking.precision_at({}, 0.1))
  end)

  it("gives the largest recall among the thresholds of at least a precision, 0 where none is", function()
    assert.are.equal(0.75, ranking.recall_at(units, 0.6)) -- (0.5 at 0.50 falls short; 0.6 at 0.75 does not)
    assert.are.equal(0.25, ranking.recall_at(units, 0.7))
    assert.are.equal(0.25, ranking.recall_at(units, 1.0))
    assert.are.equal(0, ranking.recall_at({ units[2] }, 0.9)) -- (its best precision is 0.5)
    local low, high, value = ranking.recall_at_interval(units, 0.7, { samples = 200 })
    assert.are.equal(0.25, value)
    -- resamples of the first passage alone keep recall 0.5 at precision 1; of the second, none
    assert.are.same({ 0, 0.5 }, { low, high })
  end)

  it("bounds it by a bootstrap over passages that counts a resample missing the recall as 0", function()
    local low, high, value = ranking.precision_at_interval(units, 0.25, { samples = 200 })
    assert.are.equal(1.0, value)
    assert.is_true(low <= value and value <= high)
    -- resamples of the second passage alone reach recall 0.25 only at precision 0.5
    assert.are.equal(0.5, low)
    -- with only the second passage's triples twice, 0.75 is out of reach in every resample
    local l2, h2, v2 = ranking.precision_at_interval(units, 0.9, { samples = 50 })
    assert.is_nil(l2); assert.is_nil(h2); assert.is_nil(v2)
    local one = { units[2] }
    local l3, h3, v3 = ranking.precision_at_interval(one, 0.5, { samples = 50 })
    assert.are.same({ 0.5, 0.5, 0.5 }, { l3, h3, v3 })
  end)
end)

describe("implied precision", function()
  -- is_a: d → c → b → a, e → b, y → z → y (a cycle); part_of: x part_of y
  local ds = gm.data.dataset.new("closure")
  for _, id in ipairs { "a", "b", "c", "d", "e", "x", "y", "z" } do ds:add_entity(id, "term " .. id, "t", {}) end
  for _, t in ipairs { { "d", "is_a", "c" }, { "c", "is_a", "b" }, { "b", "is_a", "a" }, { "e", "is_a", "b" },
      { "x", "part_of", "y" }, { "y", "is_a", "z" }, { "z", "is_a", "y" } } do
    ds:add_triple(t[1], t[2], t[3])
  end
  ds:finish()
  local graph = gm.data.seed_graph.new(ds)
  local imp = implied.new(graph, "is_a")

  it("finds every ancestor along the relation, a cycle ending the walk", function()
    local up = {}
    for id in pairs(imp:ancestors("d")) do up[#up + 1] = id end
    table.sort(up)
    assert.are.same({ "a", "b", "c" }, up)
    assert.are.same({ y = true }, imp:ancestors("z")) -- (z itself, reached again, is not its own ancestor)
    assert.are.same({}, imp:ancestors("a"))
  end)

  it("counts a tail above a true tail as implied, and nothing else", function()
    assert.is_true(imp:holds { head = "term d", relation = "is_a", tail = "term c" }) -- held
    assert.is_true(imp:holds { head = "term d", relation = "is_a", tail = "term a" }) -- implied
    assert.is_true(imp:holds { head = "term x", relation = "part_of", tail = "term z" }) -- part_of y, y is_a z
    assert.is_false(imp:holds { head = "term e", relation = "is_a", tail = "term c" }) -- a sibling's parent
    assert.is_false(imp:holds { head = "term x", relation = "is_a", tail = "term z" }) -- x has no is_a
    assert.is_false(imp:holds { head = "term x", relation = "part_of", tail = "nothing" })
  end)
end)
