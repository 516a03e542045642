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
    local typed = {}
    for _, name in ipairs(g.relation_names) do typed[#typed + 1] = { g:entity(text, name, "head"), g:entity(text, name, "tail") } end
    say(text, g:heads(text), g:candidates(phrase) or false, { g:entity(text) }, typed, g:relations_for(phrase, g.relation_names),
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
  local known = {}
  for id, list in pairs(g:known_tails(tok, relations, 4)) do known[id] = list:lists() end
  say(known)
  for _, id in ipairs(ds.entity_order) do say(id, g.name[id], g.type[id], g.aliases[id] or false) end
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
    -- a relation picks the first candidate its schema allows: "eats" joins animals and people to food
    assert.same({ "d3", "Hot-Dog" }, { g:entity("dog", "eats", "tail") })
    assert.same({ "c1", "Café au lait" }, { g:entity("Hound", "eats", "tail") })
    assert.same({ "d1", "dog" }, { g:entity("hound", "eats", "head") })
    assert.same({ "d1", "dog" }, { g:entity("dog", "has_part", "tail") }) -- no candidate is tissue: the first
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

  it("hold constrained decoding's known tails for the tokenizer and leaf count they were saved with", function()
    local ds, path = ambiguous(), dir .. "/known.bin"
    local tok = gm.data.tokenizer.train({ "dog hound canis familiaris cad hot frankfurter tree bark café au lait" },
      { vocab_size = 150 })
    local relations = { has_part = 1, eats = 2 }
    local built = seed_graph.new(ds)
    built:save(path, { tok = tok, leaves = 3 })
    local loaded = seed_graph.load(path)
    assert.equal(answers(built, ds), answers(loaded, ds))
    assert.equal(files.read(path), loaded:encode { tok = tok, leaves = 3 })
    local stored, how = loaded:known_tails(tok, relations, 3)
    assert.equal("stored", how)
    local expected = built:known_tails(tok, relations, 3)
    for id = 1, 2 do assert.same(expected[id]:lists(), stored[id]:lists()) end
    assert.is_true(stored[1].n > 0 and stored[2].n > 0)
    -- another leaf count or tokenizer: built, as without them
    local other = gm.data.tokenizer.train({ "dog hound tree bark" }, { vocab_size = 60 })
    for _, ask in ipairs { { tok, 2 }, { other, 3 } } do
      local tails, built_how = loaded:known_tails(ask[1], relations, ask[2])
      assert.equal("built", built_how)
      local fresh = seed_graph.new(ds):known_tails(ask[1], relations, ask[2])
      for id = 1, 2 do assert.same(fresh[id]:lists(), tails[id]:lists()) end
    end
    -- known tails stored before names spelled with [UNK] were left out: built again
    local t = gm.load_tables(path)
    t.meta.tails_spelled = nil
    files.write(path, gm.pack_tables(t))
    assert.equal("built", select(2, seed_graph.load(path):known_tails(tok, relations, 3)))
    -- an index of version 1 (no known tails) still loads
    t.known_tails, t.meta.version, t.meta.tails_tokenizer, t.meta.tails_leaves = nil, "1", nil, nil
    files.write(path, gm.pack_tables(t))
    local _, old_how = seed_graph.load(path):known_tails(tok, relations, 3)
    assert.equal("built", old_how)
  end)

  it("refuse known tails that are not whole, naming the file", function()
    local ds, path, bad = ambiguous(), dir .. "/known.bin", dir .. "/bad_known.bin"
    local tok = gm.data.tokenizer.train({ "dog hound canis familiaris cad hot frankfurter tree bark café au lait" },
      { vocab_size = 150 })
    seed_graph.new(ds):save(path, { tok = tok, leaves = 3 })
    local function refused(change, pattern, on_load)
      local t = gm.load_tables(path)
      change(t)
      files.write(bad, gm.pack_tables(t))
      local ok, err = pcall(function() seed_graph.load(bad):known_tails(tok, { has_part = 1, eats = 2 }, 3) end)
      assert.is_false(ok)
      assert.matches(bad, err, 1, true)
      assert.matches(pattern, err, 1, true)
    end
    local key = "food" -- what eats reaches
    refused(function(t) t.known_tails["lengths:" .. key] = t.known_tails["lengths:" .. key] .. "\1" end, "take")
    refused(function(t) t.known_tails["lengths:" .. key] = "\4" .. t.known_tails["lengths:" .. key]:sub(2) end,
      "tail 1 has length 4, not 1..3")
    refused(function(t) t.known_tails["lengths:" .. key] = "\0" .. t.known_tails["lengths:" .. key]:sub(2) end,
      "tail 1 has length 0")
    refused(function(t) t.known_tails["ids:" .. key] = string.pack("<f", 9999) .. t.known_tails["ids:" .. key]:sub(5) end,
      "the ids span")
    refused(function(t) t.known_tails["ids:" .. key] = string.pack("<f", 0 / 0) .. t.known_tails["ids:" .. key]:sub(5) end,
      "an id is not a number")
    refused(function(t)
      local ids = t.known_tails["ids:" .. key]
      t.known_tails["ids:" .. key] = string.pack("<f", string.unpack("<f", ids) + 0.25) .. ids:sub(5)
    end, "an id is not a whole number")
    refused(function(t) t.known_tails["ids:" .. key], t.known_tails["lengths:" .. key] = nil, nil end,
      "known tails lack the types \"food\"")
    refused(function(t) t.meta.tails_leaves = nil end, "lacks their tokenizer or leaf count")
    refused(function(t) t.meta.version = "7" end, "version 7, this build reads versions 1 to 6")
  end)

  it("refuse a device or a directory as gm.read_file does", function()
    local ok, err = pcall(seed_graph.load, "/dev/zero")
    assert.is_false(ok)
    assert.matches("/dev/zero: a device, not a regular file", err, 1, true)
    ok, err = pcall(seed_graph.load, dir)
    assert.matches(dir .. ": a directory, not a regular file", err, 1, true)
  end)
end)

describe("gm.data.tail_list", function()
  local tail_list = gm.data.tail_list

  it("holds tails of 1..width ids, padded, and gives them back", function()
    local lists = { { 7 }, { 3, 4, 5 }, { 9, 2 } }
    local l = tail_list.new(lists, 3, 1)
    assert.same({ 3, 3 }, l.ids:shape())
    assert.same({ { 7, 1, 1 }, { 3, 4, 5 }, { 9, 2, 1 } }, l.ids:totable())
    assert.same(lists, l:lists())
    assert.same({ 9, 2 }, l:tail(3))
    local back = tail_list.from_bytes(select(1, l:bytes()), select(2, l:bytes()), 3, 1, 9)
    assert.same(lists, back:lists())
    local empty = tail_list.new({}, 2, 1)
    assert.equal(0, empty.n)
    assert.same({}, tail_list.from_bytes("", "", 2, 1, 9):lists())
  end)

  it("refuses what is not a list of tails", function()
    assert.error_matches(function() tail_list.new({ { 1, 2, 3 } }, 2, 1) end, "tail 1 has 3 ids, not 1..2")
    assert.error_matches(function() tail_list.new({ {} }, 2, 1) end, "tail 1 has 0 ids")
    assert.error_matches(function() tail_list.new({}, 0, 1) end, "width must be an integer in 1..255, got 0")
    assert.error_matches(function() tail_list.new({}, 2.5, 1) end, "width must be an integer")
    local ids, lengths = tail_list.new({ { 4, 5 } }, 2, 1):bytes()
    assert.error_matches(function() tail_list.from_bytes(ids, lengths, 2, 1, 4) end, "the ids span 4..5, not 1..4")
    assert.error_matches(function() tail_list.from_bytes(ids:sub(2), lengths, 2, 1, 9) end, "take 8 bytes, not 7")
    assert.error_matches(function() tail_list.from_bytes(ids, "\3", 2, 1, 9) end, "tail 1 has length 3, not 1..2")
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

  -- what fn says on stderr, and its results
  local function heard(fn, ...)
    local said, stderr = {}, io.stderr
    io.stderr = { write = function(_, s) said[#said + 1] = s end }
    local out = table.pack(pcall(fn, ...))
    io.stderr = stderr
    assert.is_true(out[1], out[2])
    return table.concat(said), table.unpack(out, 2, out.n)
  end

  it("is built from the JSONL when there is no index.bin, and stored there when asked, saying so on stderr", function()
    local ds = ambiguous()
    ds:save_seed_graph(run .. "/seed_graph")
    os.remove(run .. "/seed_graph/index.bin")
    local said, g = heard(ex.run_graph, run)
    assert.equal(answers(seed_graph.new(ds), ds), answers(g, ds))
    assert.equal(run .. "/seed_graph has no index.bin: the seed graph's index was built\n", said)
    assert.is_nil(gm.stat(run .. "/seed_graph/index.bin")) -- a reading tool (the KG page) writes nothing
    said, g = heard(ex.run_graph, run, true)
    assert.equal(answers(seed_graph.new(ds), ds), answers(g, ds))
    assert.equal(run .. ": the seed graph's index was built once and stored in " .. run .. "/seed_graph/index.bin\n", said)
    assert.equal(seed_graph.new(ds):encode(), files.read(run .. "/seed_graph/index.bin"))
    said = heard(ex.run_graph, run, true)
    assert.equal("", said)
  end)

  it("is built again when its index.bin is of an earlier version (its phrases folded otherwise)", function()
    local ds = ambiguous()
    ds:save_seed_graph(run .. "/seed_graph")
    local path = run .. "/seed_graph/index.bin"
    local t = gm.load_tables(path)
    t.meta.version = "4"
    files.write(path, gm.pack_tables(t))
    local said, g = heard(ex.run_graph, run)
    assert.equal(path .. " is of version 4, this graphmert's is " .. seed_graph.VERSION .. ": the seed graph's index was built\n", said)
    assert.equal(answers(seed_graph.new(ds), ds), answers(g, ds))
    said = heard(ex.run_graph, run, true)
    assert.equal(run .. ": the seed graph's index was built once and stored in " .. path .. "\n", said)
    assert.equal(seed_graph.VERSION, seed_graph.load(path).version)
  end)

  it("is not stored through a seed_graph/ that links outside the run folder", function()
    local ds, shared, other = ambiguous(), files.tmpname(), files.tmpname()
    ds:save_seed_graph(shared .. "/seed_graph")
    os.remove(shared .. "/seed_graph/index.bin")
    os.execute("mkdir -p " .. other .. " && ln -s " .. shared .. "/seed_graph " .. other .. "/seed_graph")
    local said, g = heard(ex.run_graph, other, true)
    assert.equal(answers(seed_graph.new(ds), ds), answers(g, ds))
    assert.equal(other .. ": the seed graph's index was built (at each start: " .. other .. "/seed_graph/index.bin could " ..
      "not be written: seed_graph/ links outside the run folder)\n", said)
    assert.is_nil(gm.stat(shared .. "/seed_graph/index.bin"))
    os.execute("rm -rf " .. shared .. " " .. other)
  end)

  it("gives constrained decoding's known tails from the index, storing them there once when it lacks them", function()
    local ds = ambiguous()
    ds:save_seed_graph(run .. "/seed_graph") -- an index without known tails, as before they were stored
    local tok = gm.data.tokenizer.train({ "dog hound canis familiaris cad hot frankfurter tree bark café au lait" },
      { vocab_size = 150 })
    local relations = { has_part = 1, eats = 2 }
    local said, tails = heard(ex.run_known_tails, run, ex.run_graph(run), tok, relations, 3)
    local path = run .. "/seed_graph/index.bin"
    assert.equal(run .. ": constrained decoding's known tails were built once and stored in " .. path .. "\n", said)
    local built = seed_graph.new(ds):known_tails(tok, relations, 3)
    local again
    said, again = heard(ex.run_known_tails, run, ex.run_graph(run), tok, relations, 3)
    assert.equal("", said)
    for id = 1, 2 do
      assert.same(built[id]:lists(), tails[id]:lists())
      assert.same(built[id]:lists(), again[id]:lists())
    end
    -- a folder that takes no file: built at each start, and said so
    local g = ex.run_graph(run)
    g.known = nil
    g.save = function() error("seed_graph:save: " .. path .. ": Read-only file system", 0) end
    said = heard(ex.run_known_tails, run, g, tok, relations, 3)
    assert.equal(run .. ": constrained decoding's known tails were built (at each start: " .. path ..
      " could not be written: " .. path .. ": Read-only file system)\n", said)
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
