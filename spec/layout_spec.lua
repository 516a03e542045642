-- gm.layout: where roots and leaves sit, building one sequence, and the batch it gives.
local gm = require "graphmert"

local tok = { pad_id = 1, cls_id = 2, sep_id = 3, mask_id = 5 }

describe("gm.layout", function()
  it("numbers leaves after the roots, leaves of one root together", function()
    local l = gm.layout { roots = 4, leaves = 3 }
    assert.equal(16, l.nodes)
    assert.equal(5, l:leaf(1, 1))
    assert.equal(7, l:leaf(1, 3))
    assert.equal(14, l:leaf(4, 1))
    assert.equal(16 + 7, l:flat(2, 7))
  end)

  it("finds token runs and keeps what fits between [CLS] and [SEP]", function()
    local l = gm.layout { roots = 5, leaves = 1 }
    assert.equal(3, l.find({ 9, 8, 7, 6 }, { 7, 6 }))
    assert.is_nil(l.find({ 9, 8, 7 }, { 8, 9 }))
    assert.same({ 9, 8, 7 }, l:fit { 9, 8, 7, 6, 5 })
  end)

  it("appends texts with [SEP] and injects a triple into one root's leaves", function()
    local l = gm.layout { roots = 6, leaves = 2 }
    local s = l:sequence(tok)
    assert.equal(2, l:append(s, { 10, 11 }))
    assert.equal(5, l:append(s, { 12 }))
    assert.is_nil(l:append(s, { 13 })) -- [CLS] a b [SEP] c [SEP] is full
    assert.is_true(l:inject(s, 2, 4, 1, { 20, 21 }))
    assert.is_false(l:inject(s, 2, 1, 1, { 22 }))
    assert.same({ 2, 10, 11, 3, 12, 3, 1, 1, 20, 21, 1, 1, 1, 1, 1, 1, 1, 1 }, s.ids)
    assert.same({ 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0 }, s.valid)
    assert.same({ 0, 4, 0, 0, 0, 0 }, s.relation)
    assert.same({ 0, 1, 0, 0, 0, 0 }, s.head_length)
    local batch = l:batch { s, l:sequence(tok) }
    assert.same({ 2, 18 }, batch.ids:shape())
    assert.equal(1, batch.valid:get(2, 1))
    assert.equal(0, batch.valid:get(2, 2))
  end)

  it("takes integral floats (JSON numbers) and refuses the rest, naming the option", function()
    assert.equal(3, gm.layout { roots = 3.0, leaves = 0 }.roots)
    assert.error_matches(function() gm.layout { roots = 0, leaves = 1 } end, "layout: roots must be a positive integer")
    assert.error_matches(function() gm.layout { roots = 2, leaves = -1 } end, "layout: leaves must be an integer >= 0")
    assert.error_matches(function() gm.layout { roots = 2.5, leaves = 1 } end, "layout: roots must be a positive integer")
    assert.error_matches(function() gm.layout { roots = "2", leaves = 1 } end, "layout: roots must be a positive integer")
  end)
end)
