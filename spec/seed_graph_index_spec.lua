-- The seed graph's index saved to a file and loaded back (seed_graph:save, seed_graph.load over
-- gm.pack_tables / gm.load_tables): the loaded graph answers exactly as the built one, a file
-- that is not one whole index is refused with its name, and a run folder without index.bin still
-- gives its graph (ex.run_graph).
local gm = require "graphmert"
local files = require "spec.files"
local cjson = require "cjson"

local seed_graph, linker = gm.data.seed_graph, gm.data.linker

-- ambiguous names (ranked candidates), shared aliases, a custom stop word and max_words
local function ambiguous()
  local ds = gm.data.dataset.new("ambiguous", { link = { max_words = 3, stopwords = { bark = true } } })
  ds:add_entity("d1", "dog", "animal", { "hound", "Canis familiaris" })
  ds:add_entity("d2", "dog", "person", { "cad" })
  ds:add_entity("d3", "Hot-Dog", "food", { "dog", "frankfurter" })
  ds:add_entity("t1", "tree", "plant", { "bark" })
  ds:add_entity("t2", "bark", "tissue", {})
  ds:add_entity("c1", "Café au lait", "food", { "hound" })
  ds:add_triple("d1", "has_part", "t2")
  ds:add_triple("d1", "eats", "d3")
  ds:add_triple("d1", "eats", "c1")
  ds:add_triple("d2", "eats", "d3")
  ds:add_triple("t1", "has_part", "t2")
  ds:finish()
  return ds
end

local function tiny() return gm.data.dataset.load { dir = "experiments/data/tiny" } end

-- the relations present for a phrase, in the graph's order
local function present(g, phrase)
  local set, out = g:present(phrase), {}
  for _, name in ipairs(g.relation_names) do if set[name] then out[#out + 1] = name end end
  return out
end

-- every question the graph answers, on every phrase and name, each triple and each triple with
-- another relation and tail: the answers as one JSON text
local function answers(g, ds)
  local out = {}
  local function say(...) out[#out + 1] = cjson.encode { ... } end
  local texts = {}
  for _, id in ipairs(ds.entity_order) do
    local e = ds.entities[id]
    texts[#texts + 1] = e.name
    for _, a in ipairs(e.aliases) do texts[#texts + 1] = a end
  end
  for _, p in ipairs(ds.passages) do texts[#texts + 1] = p.text end
  texts[#texts + 1] = "The dog ate a hot-dog under the tree's bark, with a café au lait and a hound."
  for _, text in ipairs(texts) do
    local phrase = linker.normalize(text)
    say(text, g:heads(text), g:candidates(phrase) or false, { g:entity(text) }, g:relations_for(phrase, g.relation_names),
      present(g, phrase))
  end
  for i, t in ipairs(ds.triples) do
    local other = ds.triples[i % #ds.triples + 1]
    for _, x in ipairs { { head = ds.entities[t.head].name, relation = t.relation, tail = ds.entities[t.tail].name },
      { head = ds.entities[t.head].name, relation = other.relation, tail = ds.entities[other.tail].name },
      { head = "nothing", relation = t.relation, tail = ds.entities[t.tail].name } } do
      say(x, g:holds(x), g:valid(x))
    end
  end
  local names, relations = {}, {}
  for _, text in ipairs(texts) do names[#names + 1] = text end
  for id, name in ipairs(g.relation_names) do relations[name] = id end
  local tok = gm.data.tokenizer.train(names, { vocab_size = 120 })
  say(g:known_tails(tok, relations, 4))
  say(g.dataset, g.relation_names)
  return table.concat(out, "\n")
end

describe("seed_graph:save and seed_graph.load", function()
  local dir = files.tmpname()
  os.execute("mkdir -p " .. dir)
  teardown(function() os.execute("rm -rf " .. dir) end)

  for name, make in pairs { tiny = tiny, ambiguous = ambiguous } do
    it("answer exactly as the built graph (" .. name .. " dataset)", function()
      local ds = make()
      local built = seed_graph.new(ds)
      local path = dir .. "/" .. name .. ".bin"
      built:save(path)
      local loaded = seed_graph.load(path)
      assert.equal(answers(built, ds), answers(loaded, ds))
      assert.equal(files.read(path), loaded:encode()) -- every table, byte for byte
    end)
  end

  it("keeps a name's ranked candidates in their order", function()
    local path = dir .. "/ranked.bin"
    seed_graph.new(ambiguous()):save(path)
    local g = seed_graph.load(path)
    assert.same({ "d1", "d2", "d3" }, g:candidates("dog")) -- preferred names first, then by triples
    assert.same({ "d1", "c1" }, g:candidates("hound"))
    assert.same({ "d1", "dog" }, { g:entity("DOG") })
    assert.same({ "dog", "hound" }, g:heads("A bark: the dog, a hound.")) -- "bark" is a stop word here
  end)

  it("refuse a file that is not a whole index, naming it", function()
    local path = dir .. "/index.bin"
    seed_graph.new(tiny()):save(path)
    local whole = files.read(path)
    local bad = dir .. "/bad.bin"
    local function refused(bytes, pattern)
      files.write(bad, bytes)
      local ok, err = pcall(seed_graph.load, bad)
      assert.is_false(ok)
      assert.matches(bad, err, 1, true)
      if pattern then assert.matches(pattern, err) end
    end
    for n = 0, #whole - 1, math.max(1, #whole // 200) do refused(whole:sub(1, n)) end -- truncated anywhere
    refused("XXTABLES" .. whole:sub(9), "no GMTABLES mark")
    refused(whole .. "x", "1 bytes after the last table")
    refused(whole:sub(1, 8) .. string.pack("<I4", 2) .. whole:sub(13), "format version 2")
    refused("GMTABLES" .. string.pack("<I4I4", 1, 0xFFFFFFFF), "4294967295 tables in 0 bytes")
    refused("GMTABLES" .. string.pack("<I4I4s4I4I4", 1, 1, "facts", 1, 0xFFFFFFFF), "table 'facts': 4294967295 entries in 0 bytes")
    refused("GMTABLES" .. string.pack("<I4I4s4I4I4I4", 1, 1, "facts", 1, 1, 0x7FFFFFFF), "a key of 2147483647 bytes with 0 left")
    refused("GMTABLES" .. string.pack("<I4I4s4I4I4s4s4", 1, 1, "facts", 1, 2, "b", "a"), "a key out of order or given twice")
    refused("GMTABLES" .. string.pack("<I4I4s4I4I4", 1, 1, "facts", 3, 0), "kind 3")
    refused(gm.pack_tables { facts = {} }, "not a seed graph index")
    -- an index whose phrases are a set, not a map of ids
    local t = gm.load_tables(path)
    t.phrases = { dog = true }
    refused(gm.pack_tables(t), "phrases table is not a map of strings")
    t = gm.load_tables(path)
    t.meta.longest = "many"
    refused(gm.pack_tables(t), "lacks dataset, relations or longest")
    -- a byte changed anywhere: refused or read, never a crash
    for i = 1, #whole, math.max(1, #whole // 300) do
      files.write(bad, whole:sub(1, i - 1) .. string.char((whole:byte(i) + 0x55) % 256) .. whole:sub(i + 1))
      local ok, err = pcall(seed_graph.load, bad)
      if not ok then assert.matches(bad, err, 1, true) end
    end
  end)

  it("refuse a device or a directory as gm.read_file does", function()
    local ok, err = pcall(seed_graph.load, "/dev/zero")
    assert.is_false(ok)
    assert.matches("/dev/zero: a device, not a regular file", err, 1, true)
    ok, err = pcall(seed_graph.load, dir)
    assert.matches(dir .. ": a directory, not a regular file", err, 1, true)
  end)
end)

describe("a run folder's seed graph (ex.run_graph)", function()
  local ex = require "graphmert.experiment"
  local run = files.tmpname()
  teardown(function() os.execute("rm -rf " .. run) end)

  it("is read from seed_graph/index.bin, which save_seed_graph writes with the JSONL", function()
    local ds = ambiguous()
    ds:save_seed_graph(run .. "/seed_graph")
    assert.equal(seed_graph.new(ds):encode(), files.read(run .. "/seed_graph/index.bin"))
    assert.equal(answers(seed_graph.new(ds), ds), answers(ex.run_graph(run), ds))
  end)

  it("is built from the JSONL when there is no index.bin, saying so on stderr", function()
    local ds = ambiguous()
    ds:save_seed_graph(run .. "/seed_graph")
    os.remove(run .. "/seed_graph/index.bin")
    local said, stderr = {}, io.stderr
    io.stderr = { write = function(_, s) said[#said + 1] = s end }
    local ok, g = pcall(ex.run_graph, run)
    io.stderr = stderr
    assert.is_true(ok, g)
    assert.equal(answers(seed_graph.new(ds), ds), answers(g, ds))
    assert.equal(run .. "/seed_graph has no index.bin: the seed graph's index was built from its JSONL\n", table.concat(said))
  end)

  it("refuses an index.bin that links outside the run folder", function()
    os.execute("mkdir -p " .. run .. "/seed_graph && ln -sf /etc/hostname " .. run .. "/seed_graph/index.bin")
    local ok, err = pcall(ex.run_graph, run)
    assert.is_false(ok)
    assert.matches("links to a file outside", err)
  end)
end)

describe("gm.load_tables with lazy = true", function()
  it("reads every table as a read-only map over the file, answering as the tables do", function()
    local path = files.tmpname()
    local tables = { names = { b = "2", a = "1", ["long key " .. string.rep("x", 100)] = "3", ["\0odd"] = "" },
      set = { z = true, y = true }, empty = {} }
    assert(gm.write_atomic(path, { gm.pack_tables(tables) }))
    local eager, lazy = gm.load_tables(path), gm.load_tables(path, { lazy = true })
    local maps = {}
    for name, map in pairs(lazy) do maps[name] = map end
    lazy = nil
    collectgarbage()
    collectgarbage() -- the maps keep the file's bytes alive without the table that held them
    for name, t in pairs(eager) do
      local map, n, order = maps[name], 0, {}
      for k, v in pairs(t) do
        n = n + 1
        assert.equal(v, map[k])
      end
      assert.equal(n, #map)
      for k, v in pairs(map) do
        order[#order + 1] = k
        assert.equal(t[k], v)
      end
      local sorted = {}
      for k in pairs(t) do sorted[#sorted + 1] = k end
      table.sort(sorted)
      assert.same(sorted, order)
    end
    assert.is_nil(maps.names.c)
    assert.is_nil(maps.names[1])
    assert.is_nil(maps.set[false])
    assert.error_matches(function() maps.names.c = "3" end, "read%-only")
    assert.matches("graphmert.TableMap %(4 entries, map%)", tostring(maps.names))
    assert.equal(gm.pack_tables(eager), gm.pack_tables(maps)) -- maps pack as their tables do
    assert.error_matches(function() gm.load_tables(path, "lazy") end, "table expected")
    os.remove(path)
  end)
end)
