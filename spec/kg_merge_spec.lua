-- graphmert.kg.merge: the merge of extracted triples, in memory and on disk (the same entries,
-- ties in the order first seen), and the disk merge's memory flat in the size of the graph.
local merge = require "graphmert.kg.merge"
local files = require "spec.files"

local function both(triples, opts)
  local memory = merge.merge(triples, opts)
  local disk_opts = {}
  for k, v in pairs(opts) do disk_opts[k] = v end
  disk_opts.disk = files.tmpname()
  local disk = merge.merge(triples, disk_opts)
  assert.is_nil(io.open(disk_opts.disk), "the scratch file is removed")
  return memory, disk
end

describe("graphmert.kg.merge", function()
  it("keeps the best `top` per (head, relation): score, then count, then first seen", function()
    local function t(tail, score, source) return { head = "dog", relation = "hypernym", tail = tail, score = score, source = source } end
    local triples = { t("b", -1, 1), t("a", -1, 1), t("c", -1, 1), t("c", -2, 2), t("d", -0.5, 1), t("dog", 0, 1), t("Dog", 0, 1),
      t("42", 0, 1), { head = "cat", relation = "hypernym", tail = "feline", score = -3, source = 3 } }
    for _, kg in ipairs { both(triples, { top = 3 }) } do
      local got = {}
      for _, e in ipairs(kg) do got[#got + 1] = e.head .. ">" .. e.tail .. ":" .. e.count end
      -- d is best; c has two passages; a and b tie on score and count: b came first
      assert.same({ "dog>d:1", "dog>c:2", "dog>b:1", "cat>feline:1" }, got)
    end
  end)

  it("lists the graph best first: score, then count, then first seen, across (head, relation) groups", function()
    local function t(head, tail, score, source) return { head = head, relation = "hypernym", tail = tail, score = score, source = source } end
    local triples = { t("cat", "feline", -1, 1), t("dog", "canine", -0.5, 1), t("cat", "pet", -0.5, 2), t("dog", "animal", -1, 2),
      t("dog", "animal", -1, 3) }
    for _, kg in ipairs { both(triples, { top = 5 }) } do
      local got = {}
      for _, e in ipairs(kg) do got[#got + 1] = e.head .. ">" .. e.tail end
      assert.same({ "dog>canine", "cat>pet", "dog>animal", "cat>feline" }, got)
    end
  end)

  it("tells two entities of one name apart by id, as a store does", function()
    local function t(head_id, tail_id, source)
      return { head = "mercury", head_id = head_id, relation = "is_a", tail = "body", tail_id = tail_id, score = -1, source = source }
    end
    local triples = { t("planet", "b1", 1), t("element", "b1", 2), t("planet", "b2", 3), t("planet", "b1", 4),
      { head = "mercury", head_id = "planet", relation = "is_a", tail = "body", score = -1, source = 5 } } -- (a new tail)
    for _, kg in ipairs { both(triples, { top = 5 }) } do
      local got = {}
      for _, e in ipairs(kg) do got[#got + 1] = e.head_id .. ">" .. (e.tail_id or "new") .. ":" .. e.count end
      assert.same({ "planet>b1:2", "element>b1:1", "planet>b2:1", "planet>new:1" }, got)
    end
  end)

  it("gives the same entries in memory and on disk, on triples with ties, repeats and drops", function()
    local triples, rand = {}, math.random
    math.randomseed(17)
    local tails = { "canine", "animal", "pet", "wolf", "hound", "x", "1", "dog", "caf\u{e9} au lait", "a \"quoted\" tail" }
    for i = 1, 3000 do
      triples[i] = { head = ({ "dog", "cat", "caf\u{e9}" })[rand(3)], relation = ({ "hypernym", "part" })[rand(2)],
        tail = tails[rand(#tails)], score = -rand(8) / 4, source = rand(400), tokens = rand(3), decoding = "open",
        head_id = "h" .. rand(3), tail_id = rand(2) == 1 and ("t" .. rand(5)) or nil }
    end
    for _, opts in ipairs { { top = 5 }, { top = 2, min_score = -1 }, { top = 100 } } do
      local memory, disk = both(triples, opts)
      assert.is_true(#memory > 3)
      assert.same(memory, disk)
    end
  end)

  it("removes its scratch file when closed, collected or left by an error, and is read once", function()
    local path = files.tmpname()
    assert.error_matches(function()
      local m <close> = merge.merger { disk = path }
      m:add { head = "dog", relation = "hypernym", tail = "canine", score = -1, source = 1 }
      assert.is_not_nil(io.open(path))
      for _ in m:each() do end
      m:each()
    end, "a disk merge is read once")
    assert.is_nil(io.open(path))
    merge.merger { disk = path } -- dropped without close
    collectgarbage()
    collectgarbage()
    assert.is_nil(io.open(path))
  end)

  it("merges on disk in a memory that does not grow with the graph", function()
    if files.asan then return end -- (shadow memory has its own growth)
    local script = files.tmpname() .. ".lua"
    files.write(script, [[
local merge = require "graphmert.kg.merge"
local n, scratch = tonumber(arg[1]), arg[2]
local m = merge.merger { top = 5, disk = scratch }
for i = 1, n do
  m:add { head = "head " .. i // 4, relation = "r" .. i % 3, tail = "a tail named " .. i, score = -(i % 97) / 10,
    source = i // 4, tokens = 2, decoding = "open", head_id = "h" .. i }
end
local k = 0
for _ in m:each() do k = k + 1 end
m:close()
io.write(k, " ", io.open("/proc/self/status"):read("a"):match("VmHWM:%s*(%d+)"), "\n")]])
    local function peak(n)
      local out, code = files.run(files.lua_here .. " " .. script .. " " .. n .. " " .. files.tmpname())
      assert.equal(0, code, out)
      local k, kb = out:match("^(%d+) (%d+)")
      return tonumber(k), assert(tonumber(kb), out)
    end
    local k1, small = peak(20000)
    local k2, large = peak(200000)
    assert.is_true(k2 > 5 * k1) -- the graph ten times larger
    -- 200,000 distinct triples held in Lua take about 300 MB; the scratch database's cache is 8 MB
    assert.is_true(large - small < 24 * 1024, string.format("peak RSS %d kB at 20,000 triples, %d kB at 200,000", small, large))
    os.remove(script)
  end)
end)
