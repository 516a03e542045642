-- Graphs, leafy chains, shortest paths (closed form = BFS = Floyd–Warshall) and the cache.
local gm = require "graphmert"

-- Floyd–Warshall over the adjacency: the test reference, never used by the library.
local function floyd_warshall(g)
  local n = g:num_nodes()
  local adj = g:adjacency():totable()
  local d = {}
  for i = 1, n do
    d[i] = {}
    for j = 1, n do d[i][j] = (i == j) and 0 or (adj[i][j] == 1 and 1 or math.huge) end
  end
  for k = 1, n do
    local dk = d[k]
    for i = 1, n do
      local di, dik = d[i], d[i][k]
      if dik < math.huge then
        for j = 1, n do
          local v = dik + dk[j]
          if v < di[j] then di[j] = v end
        end
      end
    end
  end
  return d
end

describe("graphs", function()
  it("builds from an edge list with 1-based nodes", function()
    local g = gm.graph(4, { { 1, 2 }, { 2, 3 } })
    assert.equal(4, g:num_nodes())
    assert.equal(2, g:num_edges())
    assert.is_false(g:is_directed())
    assert.same({ { 1, 2 }, { 2, 3 } }, g:edges())
    assert.same({ 1, 3 }, g:neighbors(2))
    assert.same({ 0, 1, 0, 0 }, g:adjacency():totable()[1])
    assert.same({ 1, 1, 0, 0 }, g:adjacency { self_loops = true }:totable()[1])
  end)

  it("follows edge direction in directed graphs and marks unreachable pairs inf", function()
    local g = gm.graph(3, { { 1, 2 }, { 2, 3 } }, { directed = true })
    local d = g:shortest_paths():totable()
    assert.same({ 0, 1, 2 }, d[1])
    assert.equal(math.huge, d[3][1])
    assert.same({}, g:neighbors(3))
    local dist = g:distances()
    assert.equal(math.huge, dist:get(3, 1))
    assert.equal(2, dist:get(1, 3))
  end)

  it("numbers a leafy chain as the official code: roots, then leaf a of root r", function()
    local g = gm.leafy_chain { roots = 3, leaves = 2 }
    assert.equal(9, g:num_nodes())
    -- root 1's leaves are nodes 4 and 5, root 2's are 6 and 7
    assert.same({ 2, 4, 5 }, g:neighbors(1))
    assert.same({ 1, 5 }, g:neighbors(4))
    local c = g:config()
    assert.same({ "leafy_chain", 3, 2, "path" }, { c.kind, c.roots, c.leaves, c.leaf_edges })
  end)

  it("gives the official distances of the spec's table (R = 128, L = 7)", function()
    local d = gm.leafy_chain { roots = 128, leaves = 7 }:distances()
    local R, L = 128, 7
    local function leaf(r, a) return R + L * (r - 1) + a end -- 1-based root r, leaf a in 1..L
    assert.equal(5, d:get(3, 8))                  -- root–root |i−j|
    assert.equal(6, d:get(3, leaf(8, 4)))         -- root–leaf |i−j| + 1
    assert.equal(7, d:get(leaf(3, 1), leaf(8, 7))) -- leaf–leaf, other roots: |i−j| + 2
    assert.equal(1, d:get(leaf(5, 2), leaf(5, 3))) -- path neighbours
    assert.equal(2, d:get(leaf(5, 2), leaf(5, 6))) -- through the root
    assert.equal(129, d:max_hops())
    assert.equal(1024 * 1024 * 2, d:bytes())
  end)

  for _, cfg in ipairs {
    { roots = 1, leaves = 0, leaf_edges = "path" },
    { roots = 1, leaves = 4, leaf_edges = "clique" },
    { roots = 5, leaves = 0, leaf_edges = "none" },
    { roots = 6, leaves = 3, leaf_edges = "path" },
    { roots = 4, leaves = 5, leaf_edges = "clique" },
    { roots = 7, leaves = 2, leaf_edges = "none" },
    { roots = 9, leaves = 7, leaf_edges = "path" },
  } do
    local name = string.format("R=%d L=%d %s", cfg.roots, cfg.leaves, cfg.leaf_edges)
    it("closed form = BFS = Floyd–Warshall for " .. name, function()
      local g = gm.leafy_chain(cfg)
      local closed = g:shortest_paths { method = "closed_form", cache = false }:totable()
      local bfs = g:shortest_paths { method = "bfs", cache = false }:totable()
      assert.same(bfs, closed)
      assert.same(floyd_warshall(g), closed)
    end)
  end

  it("BFS agrees with Floyd–Warshall on a random graph with several components", function()
    gm.manual_seed(11)
    local edges = {}
    local r = gm.rand(60, 2):totable()
    for i = 1, 60 do edges[i] = { 1 + math.floor(r[i][1] * 40), 1 + math.floor(r[i][2] * 40) } end
    local g = gm.graph(45, edges) -- nodes 41..45 are isolated
    assert.same(floyd_warshall(g), g:shortest_paths { cache = false }:totable())
  end)

  it("refuses the closed form for graphs that are not leafy chains", function()
    assert.error_matches(function() gm.graph(2, { { 1, 2 } }):shortest_paths { method = "closed_form" } end,
      "only for leafy chains")
  end)
end)

describe("the shared distance cache", function()
  before_each(function() gm.graph_cache_clear() end)

  it("returns the same object for the same configuration and a new one for another", function()
    local a = gm.leafy_chain { roots = 16, leaves = 3 }:distances()
    local b = gm.leafy_chain { roots = 16, leaves = 3 }:distances()
    local c = gm.leafy_chain { roots = 16, leaves = 3, leaf_edges = "clique" }:distances()
    assert.equal(a, b)
    assert.are_not.equal(a, c)
    local s = gm.graph_cache_stats()
    assert.same({ 1, 2, 2 }, { s.hits, s.misses, s.entries })
    assert.equal(2 * 64 * 64 * 2, s.bytes)
  end)

  it("keys general graphs by their exact edge set", function()
    local a = gm.graph(3, { { 1, 2 } }):distances()
    local b = gm.graph(3, { { 2, 1 } }):distances() -- the same undirected edge
    local c = gm.graph(3, { { 2, 3 } }):distances()
    assert.equal(a, b)
    assert.are_not.equal(a, c)
    assert.equal(1, gm.graph_cache_stats().hits)
  end)

  it("does not touch the cache when asked not to", function()
    gm.leafy_chain { roots = 4, leaves = 1 }:shortest_paths { cache = false }
    local s = gm.graph_cache_stats()
    assert.same({ 0, 0, 0 }, { s.hits, s.misses, s.entries })
  end)

  it("keeps distances valid after the cache is cleared", function()
    local d = gm.leafy_chain { roots = 4, leaves = 1 }:distances()
    gm.graph_cache_clear()
    collectgarbage()
    assert.equal(3, d:get(1, 4))
    assert.same({ 8, 8 }, d:tensor():shape())
  end)
end)
