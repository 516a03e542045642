-- The masking objective's inputs: root spans with their span-boundary (SBO) targets, whole tail
-- groups, and the token-level (no-span) ablation.
local gm = require "graphmert"
local masking = gm.data.masking

-- ids 1 [PAD], 2 [CLS], 3 [SEP], 4 [MASK]; ids ≥ 30 are "##" continuation pieces
local SPECIAL = { [1] = true, [2] = true, [3] = true }
local MASK, V = 4, 40
local function word_start(id) return id < 30 end

-- B sequences of R roots and L leaves: [CLS] ... [SEP] [PAD]..., tails on every other root
local function batch_of(rows, layout, tails)
  local ids, valid = {}, {}
  for b, roots in ipairs(rows) do
    ids[b], valid[b] = {}, {}
    for n = 1, layout.nodes do ids[b][n], valid[b][n] = 1, 0 end
    for r, id in ipairs(roots) do ids[b][r], valid[b][r] = id, id == 1 and 0 or 1 end
    for r, tail in pairs(tails and tails[b] or {}) do
      for a, id in ipairs(tail) do ids[b][layout:leaf(r, a)], valid[b][layout:leaf(r, a)] = id, 1 end
    end
  end
  local relation = {}
  for b = 1, #rows do relation[b] = {} for r = 1, layout.roots do relation[b][r] = 0 end end
  return { ids = gm.tensor(ids), valid = gm.tensor(valid), relation = relation, head_length = relation }
end

local function random_rows(B, R, seed)
  gm.manual_seed(seed)
  local r = gm.rand(B, R):totable()
  local rows = {}
  for b = 1, B do
    rows[b] = { 2 }
    for i = 2, R - 1 do rows[b][i] = 5 + math.floor(r[b][i] * (V - 5)) end -- some ≥ 30: continuations
    rows[b][R] = 3
  end
  return rows
end

describe("masking.mask", function()
  it("gives the single possible span its boundaries, offsets and targets", function()
    -- the only word start is root 2; its word covers roots 2..4, so every span is 2..4
    local layout = gm.layout { roots = 7, leaves = 3 }
    local rows = { { 2, 10, 31, 32, 3, 1, 1 }, { 2, 11, 33, 34, 3, 1, 1 } }
    gm.manual_seed(3)
    local m = masking.mask(batch_of(rows, layout), { vocab = V, mask_id = MASK, special = SPECIAL, layout = layout,
      word_start = word_start, leaf_rate = 0 })
    local N = layout.nodes
    assert.same({ 2, 3, 4, N + 2, N + 3, N + 4 }, m.labels.roots.positions)
    assert.same({ 10, 31, 32, 11, 33, 34 }, m.labels.roots.targets)
    assert.same({ left = { 1, 1, 1, N + 1, N + 1, N + 1 }, right = { 5, 5, 5, N + 5, N + 5, N + 5 },
      offset = { 1, 2, 3, 1, 2, 3 }, targets = { 10, 31, 32, 11, 33, 34 } }, m.labels.sbo)
  end)

  it("gives every masked root token exactly one SBO entry and leaf groups none", function()
    local R, L = 24, 4
    local layout = gm.layout { roots = R, leaves = L }
    local tails = {}
    for b = 1, 3 do tails[b] = { [3] = { 7, 8 }, [6] = { 9 }, [10] = { 11, 12, 13, 14 } } end
    local batch = batch_of(random_rows(3, R, 17), layout, tails)
    local original = batch.ids:totable()
    gm.manual_seed(19)
    local m = masking.mask(batch, { vocab = V, mask_id = MASK, special = SPECIAL, layout = layout,
      word_start = word_start, leaf_rate = 1, root_rate = 0.3 })
    local lb, sbo = m.labels, m.labels.sbo
    assert.equal(7 * 3, #lb.leaves.positions) -- leaf_rate 1: every tail token, none in the SBO entries
    assert.is_true(#lb.roots.positions >= 3 * math.floor(0.3 * R))
    assert.equal(#lb.roots.positions, #sbo.offset)
    assert.same(lb.roots.targets, sbo.targets)
    local seen = {}
    for i, p in ipairs(lb.roots.positions) do
      local b, node = (p - 1) // layout.nodes + 1, (p - 1) % layout.nodes + 1
      local left, right, k = sbo.left[i], sbo.right[i], sbo.offset[i]
      assert.is_nil(seen[p])
      seen[p] = true
      -- the entry's span: the roots strictly between its boundaries, in one sequence
      assert.equal(p, left + k)
      assert.equal(b, (right - 1) // layout.nodes + 1)
      assert.is_true(left - layout:flat(b, 0) >= 1)
      assert.is_true(right - layout:flat(b, 0) <= R) -- never past root R
      assert.is_true(right - left - 1 <= L and k >= 1 and k <= right - left - 1)
      assert.equal(original[b][node], sbo.targets[i])
      -- the span is whole: all its roots masked, with offsets 1..length
      for j = left + 1, right - 1 do
        local found = false
        for q, pp in ipairs(lb.roots.positions) do
          if pp == j then found = sbo.left[q] == left and sbo.right[q] == right and sbo.offset[q] == j - left end
        end
        assert.is_true(found)
      end
    end
  end)

  it("keeps spans within max_span, which defaults to the leaves per root", function()
    local R = 40
    local function longest(layout, opts)
      local batch = batch_of(random_rows(4, R, 23), layout)
      gm.manual_seed(29)
      local o = { vocab = V, mask_id = MASK, special = SPECIAL, layout = layout, root_rate = 0.5 }
      for k, v in pairs(opts) do o[k] = v end
      local sbo, max = masking.mask(batch, o).labels.sbo, 0
      for i = 1, #sbo.left do max = math.max(max, sbo.right[i] - sbo.left[i] - 1) end
      return max
    end
    assert.equal(2, longest(gm.layout { roots = R, leaves = 2 }, {}))
    assert.equal(1, longest(gm.layout { roots = R, leaves = 3 }, { max_span = 1.0 })) -- JSON numbers are floats
    assert.equal(3, longest(gm.layout { roots = R, leaves = 3 }, {}))
    assert.error_matches(function() longest(gm.layout { roots = R, leaves = 3 }, { max_span = 4 }) end,
      "mask: max_span must be an integer in %[1, leaves = 3%]")
    assert.error_matches(function() longest(gm.layout { roots = R, leaves = 0 }, {}) end,
      "a layout without leaves needs spans = false")
  end)

  it("keeps a boundary root on each side of a span even with nothing special", function()
    local layout = gm.layout { roots = 10, leaves = 7 }
    local batch = batch_of({ { 5, 6, 7, 8, 9, 10, 11, 12, 13, 14 } }, layout)
    gm.manual_seed(41)
    local m = masking.mask(batch, { vocab = V, mask_id = MASK, special = {}, layout = layout, root_rate = 1 })
    assert.equal(8, #m.labels.roots.positions) -- every root but the first and the last
    for i = 1, #m.labels.sbo.left do
      assert.is_true(m.labels.sbo.left[i] >= 1 and m.labels.sbo.right[i] <= 10)
    end
  end)

  it("masks tokens independently with spans = false, without SBO entries", function()
    local R, L = 64, 3
    local layout = gm.layout { roots = R, leaves = L }
    local tails = {}
    for b = 1, 8 do
      tails[b] = {}
      for r = 2, R - 1, 2 do tails[b][r] = { 7, 8, 9 } end
    end
    local batch = batch_of(random_rows(8, R, 31), layout, tails)
    gm.manual_seed(37)
    local m = masking.mask(batch, { vocab = V, mask_id = MASK, special = SPECIAL, layout = layout,
      word_start = word_start, spans = false, root_rate = 0.25, leaf_rate = 0.5 })
    assert.same({ left = {}, right = {}, offset = {}, targets = {} }, m.labels.sbo)
    local roots, leaves = 8 * (R - 2), 8 * 31 * 3
    assert.near(0.25, #m.labels.roots.positions / roots, 0.05)
    assert.near(0.5, #m.labels.leaves.positions / leaves, 0.05)
    -- token level: some tail groups are masked in part (whole-group masking never does that)
    local per_group = {}
    for _, p in ipairs(m.labels.leaves.positions) do
      local b, node = (p - 1) // layout.nodes + 1, (p - 1) % layout.nodes + 1
      assert.is_true(node > R and batch.valid:get(b, node) == 1)
      local key = b .. ":" .. (node - R - 1) // L
      per_group[key] = (per_group[key] or 0) + 1
    end
    local partial = 0
    for _, n in pairs(per_group) do if n < L then partial = partial + 1 end end
    assert.is_true(partial > 0)
    for _, p in ipairs(m.labels.roots.positions) do
      local node = (p - 1) % layout.nodes + 1
      assert.is_true(node > 1 and node < R) -- never [CLS] or [SEP]
    end
    assert.error_matches(function() masking.mask(batch, { vocab = V, mask_id = MASK, layout = layout, spans = "no" }) end,
      "mask: spans must be a boolean")
  end)

  it("refuses tail_end without the id that labels a tail's end", function()
    local l = gm.layout { roots = 4, leaves = 2 }
    local batch = { ids = gm.ones(1, l.nodes), valid = gm.ones(1, l.nodes) }
    assert.error_matches(function() masking.mask(batch, { vocab = 10, mask_id = 5, layout = l, tail_end = true }) end,
      "mask: tail_end needs end_id")
  end)
end)
