-- The knowledge-graph store (kg.sqlite) and its RDF export: extraction from the tiny example
-- dataset into a store, the sqlite3 command line answering the README's queries as the Lua
-- reader does, a kill -9 midway leaving a valid store that a re-run completes to the content of
-- an uninterrupted run, rapper parsing the exports, and bad stores refused with the old one
-- intact.
local gm = require "graphmert"
local cjson = require "cjson"
local files = require "spec.files"
local run, write = files.run, files.write

local BIN = "./build/bin/graphmert "

-- the sqlite3 command line's answer, as lines of |-separated fields
local function sqlite(path, sql)
  local out, code = run("sqlite3 -batch " .. path .. " " .. string.format("%q", sql))
  assert(code == 0, out)
  return out
end

describe("kg.sqlite", function()
  local dir = files.tmpname()
  os.execute("mkdir -p " .. dir)
  local out, code = run(BIN .. "train --config tiny --steps 30 --out " .. dir .. "/run")
  assert(code == 0, "training the tiny model failed: " .. out)
  -- a corpus of 1,280 distinct passages: the tiny one, forty times over
  local corpus = {}
  for i = 1, 40 do
    for line in io.lines("experiments/data/tiny/corpus.txt") do corpus[#corpus + 1] = line .. " (copy " .. i .. ")" end
  end
  write(dir .. "/corpus.txt", table.concat(corpus, "\n") .. "\n")
  local extract = BIN .. "extract --checkpoint " .. dir .. "/run --decoding constrained --input "
  local function dump(path)
    return sqlite(path, "SELECT head, relation, tail, score, count, decoding, seed FROM triples ORDER BY head, relation, tail;" ..
      "SELECT t.head, t.relation, t.tail, v.passage, v.score, v.head_start, v.head_end FROM evidence v " ..
      "JOIN triples t ON t.id = v.triple ORDER BY 1, 2, 3, 4; SELECT id, source, line, text FROM passages ORDER BY id;")
  end

  it("answers the README's queries from the sqlite3 command line as the Lua reader does", function()
    local path = dir .. "/tiny.sqlite"
    out, code = run(extract .. "experiments/data/tiny/corpus.txt --out " .. path)
    assert.equal(0, code, out)
    assert.equal("ok\n", sqlite(path, "PRAGMA integrity_check;"))
    local store = gm.kg.store.open(path, { read_only = true })
    -- 1. the triples of an entity, by name
    local rows = {}
    for _, r in ipairs(store:triples_of("heart")) do
      if r.head == "heart" then rows[#rows + 1] = string.format("%s|%s|%s|%d", r.head, r.relation, r.tail, r.count) end
    end
    assert.is_true(#rows > 0)
    local q1 = sqlite(path, "SELECT h.name, t.relation, e.name, t.count FROM triples t JOIN entities h ON h.id = t.head " ..
      "JOIN entities e ON e.id = t.tail WHERE h.name = 'heart' ORDER BY t.score DESC, t.count DESC;")
    assert.equal(table.concat(rows, "\n") .. "\n", q1)
    -- 2. the best triples of a relation the seed graph does not hold
    local top = store:rows("SELECT h.name AS head, e.name AS tail FROM triples t JOIN entities h ON h.id = t.head " ..
      "JOIN entities e ON e.id = t.tail WHERE t.relation = 'part_of' AND t.seed = 0 ORDER BY t.score DESC LIMIT 5")
    local q2 = sqlite(path, "SELECT h.name, e.name FROM triples t JOIN entities h ON h.id = t.head JOIN entities e ON " ..
      "e.id = t.tail WHERE t.relation = 'part_of' AND t.seed = 0 ORDER BY t.score DESC LIMIT 5;")
    local expected = {}
    for _, r in ipairs(top) do expected[#expected + 1] = r.head .. "|" .. r.tail end
    assert.equal(table.concat(expected, "\n") .. (#expected > 0 and "\n" or ""), q2)
    -- 3. the evidence of a triple: the passages, and the head as the text has it
    local best = store:rows("SELECT head, relation, tail FROM triples ORDER BY count DESC, score DESC LIMIT 1")[1]
    local evidence = store:evidence(best.head, best.relation, best.tail)
    assert.is_true(#evidence >= 1)
    local q3 = sqlite(path, string.format("SELECT p.line, substr(p.text, v.head_start + 1, v.head_end - v.head_start) " ..
      "FROM evidence v JOIN passages p ON p.id = v.passage JOIN triples t ON t.id = v.triple WHERE t.head = '%s' " ..
      "AND t.relation = '%s' AND t.tail = '%s' ORDER BY v.score DESC;", best.head, best.relation, best.tail))
    local lines = {}
    for _, e in ipairs(evidence) do
      lines[#lines + 1] = math.tointeger(e.line) .. "|" .. (e.head_start and e.text:sub(e.head_start + 1, e.head_end) or "")
    end
    assert.equal(table.concat(lines, "\n") .. "\n", q3)
    store:close()
  end)

  it("is scored against the seed graph (the dataset's, or the run's) as the kg.jsonl exported from it is", function()
    local path = dir .. "/tiny.sqlite"
    out, code = run(BIN .. "export --store " .. path .. " --out " .. dir .. "/tiny.jsonl --top 3")
    assert.equal(0, code, out)
    local from_store, c1 = run(BIN .. "score --kg " .. path .. " --top 3 --data experiments/data/tiny")
    local from_jsonl, c2 = run(BIN .. "score --kg " .. dir .. "/tiny.jsonl --config tiny")
    assert.equal(0, c1, from_store)
    assert.equal(0, c2, from_jsonl)
    assert.matches("| all +| +%d+ | %d%.%d+ %[%d%.%d+, %d%.%d+%] | 1%.000 |", from_store)
    assert.equal(from_store, from_jsonl)
    -- the run's own seed graph, the dataset it was trained on
    assert.equal(from_store, (run(BIN .. "score --kg " .. path .. " --top 3 --checkpoint " .. dir .. "/run")))
    out, code = run(BIN .. "score --kg " .. path .. " --checkpoint " .. dir .. "/run --config tiny")
    assert.equal(2, code, out)
    assert.matches("^graphmert score: give one of %-%-checkpoint, %-%-data and %-%-config", out)
    os.execute("tac " .. dir .. "/tiny.jsonl > " .. dir .. "/reversed.jsonl")
    assert.equal(from_jsonl, (run(BIN .. "score --kg " .. dir .. "/reversed.jsonl --config tiny")))
    -- as extract writes them: sources are line numbers
    local first = cjson.decode(files.read(dir .. "/tiny.jsonl"):match("^[^\n]+"))
    assert.equal("number", type(first.sources[1]))
    assert.equal(first.sources[1], math.tointeger(first.sources[1]))
  end)

  it("counts its triples as a kg.jsonl of the same run does: the top per head and relation", function()
    local corpus = "experiments/data/tiny/corpus.txt --top 2 --no-page --out " .. dir
    local jsonl_out, c1 = run(extract .. corpus .. "/counted.jsonl")
    local store_out, c2 = run(extract .. corpus .. "/counted.sqlite")
    assert.equal(0, c1, jsonl_out)
    assert.equal(0, c2, store_out)
    local n = math.tointeger(tonumber(jsonl_out:match("32 passages, (%d+) triples")))
    assert.equal(#files.lines(dir .. "/counted.jsonl"), n)
    assert.matches(": " .. n .. " triples from 32 passages in all %(the top 2 per head and relation; %d+ stored%)", store_out)
    assert.is_true(tonumber(store_out:match("(%d+) stored")) > n) -- (every passage's top 2, as the store keeps them)
    assert.equal(n, #gm.kg.read(dir .. "/counted.sqlite", { top = 2 }))
  end)

  it("exports the kg.jsonl and kg.tsv extract writes for the same run, line for line (best first)", function()
    for _, ext in ipairs { "jsonl", "tsv" } do
      out, code = run(BIN .. "export --store " .. dir .. "/counted.sqlite --top 2 --out " .. dir .. "/exported." .. ext)
      assert.equal(0, code, out)
      assert.equal(files.read(dir .. "/counted." .. ext), files.read(dir .. "/exported." .. ext))
    end
  end)

  it("survives kill -9 midway: a valid store that a re-run completes to the uninterrupted content", function()
    local whole, killed = dir .. "/whole.sqlite", dir .. "/killed.sqlite"
    out, code = run(extract .. dir .. "/corpus.txt --out " .. whole)
    assert.equal(0, code, out)
    -- killed once the store holds passages (its first commit, after about a second of work):
    -- whatever the CPU's speed, mid-run (a fixed sleep let a fast machine finish first)
    out = run("(" .. extract .. dir .. "/corpus.txt --out " .. killed .. " & pid=$!; while kill -0 $pid 2> /dev/null; do " ..
      "n=$(sqlite3 -readonly -batch " .. killed .. " 'SELECT count(*) FROM passages;' 2> /dev/null); " ..
      "[ \"${n:-0}\" -ge 1 ] 2> /dev/null && break; sleep 0.02; done; kill -9 $pid; wait $pid)")
    assert.equal("ok\n", sqlite(killed, "PRAGMA integrity_check;"))
    local partial = tonumber(sqlite(killed, "SELECT count(*) FROM passages;"))
    assert.is_true(partial > 0 and partial < 1280, "passages at the kill: " .. partial)
    out, code = run(extract .. dir .. "/corpus.txt --out " .. killed)
    assert.equal(0, code, out)
    assert.matches("continued .*killed.sqlite: " .. partial .. " passages were done before", out)
    assert.equal(dump(whole), dump(killed))
  end)

  it("exports RDF that rapper parses, with IRIs for any name", function()
    local path = dir .. "/odd.sqlite"
    local ds = gm.data.dataset.new("odd")
    for _, id in ipairs { "GO:0006096", "a b", 'say "hi"', "x#y", "café", "<tag>" } do ds:add_entity(id, id .. " name", "t y p e") end
    ds:add_triple("GO:0006096", "is a", "a b")
    ds:finish()
    local store = gm.kg.store.open(path, { create = true })
    store:begin_run { checkpoint = "/x", model = "{}" }
    store:add_seed_graph(ds)
    store:add_passage({ id = "p 1", source = "in.txt", line = 1, text = "t" }, {
      { head_id = "a b", relation = "is a", tail_id = 'say "hi"', score = -0.5, decoding = "open", seed = false },
      { head_id = "GO:0006096", relation = "is a", tail_id = "a b", score = -0.1, decoding = "open", seed = true },
      { head_id = "x#y", relation = "is a", tail_id = "café", score = -1, decoding = "open", seed = false },
      { head_id = "<tag>", relation = "is a", tail = "new \"one\" #1", score = -2, decoding = "open", seed = false } })
    store:close()
    for _, f in ipairs { { "odd.nt", "ntriples" }, { "odd.ttl", "turtle" } } do
      out, code = run(BIN .. "export --store " .. path .. " --out " .. dir .. "/" .. f[1] .. " --base https://kg.example/x/")
      assert.equal(0, code, out)
      local n = tonumber(out:match("^(%d+) RDF triples"))
      local parsed = run("rapper -i " .. f[2] .. " -c " .. dir .. "/" .. f[1])
      assert.matches("Parsing returned " .. n .. " triples", parsed)
      assert.is_nil(parsed:find("rapper: Error"), parsed)
    end
    local nt = files.read(dir .. "/odd.nt")
    assert.matches("<https://kg.example/x/entity/GO:0006096>", nt, 1, true)
    assert.matches("<https://kg.example/x/entity/a%20b>", nt, 1, true)
    assert.matches("<https://kg.example/x/entity/x%23y>", nt, 1, true)
    assert.matches("<https://kg.example/x/entity/café>", nt, 1, true)
    assert.matches("<https://kg.example/x/entity/%3Ctag%3E>", nt, 1, true)
    assert.matches('"say \\"hi\\" name"', nt, 1, true)
    out, code = run(BIN .. "export --store " .. path .. " --out " .. dir .. "/urn.nt --base urn:kg:")
    assert.equal(0, code, out)
    assert.matches("<urn:kg:entity/GO:0006096>", files.read(dir .. "/urn.nt"), 1, true)
    out, code = run(BIN .. "export --store " .. path .. " --out " .. dir .. "/hash.nt --base http://kg.example/x#")
    assert.equal(2, code, out)
    assert.matches("base cannot hold '#'", out, 1, true)
    assert.is_nil(gm.stat(dir .. "/hash.nt"))
  end)

  it("continues only the same run and extraction: its passages are not asked again", function()
    local path = dir .. "/runs.sqlite"
    local extraction = gm.json.object({ input = "/a.txt", top = 5 }, { "input", "top" })
    local store = gm.kg.store.open(path, { create = true })
    store:begin_run { checkpoint = "/x", model = "{}" } -- a store from before the extraction was recorded
    store:begin_run { checkpoint = "/x", model = "{}", extraction = extraction } -- takes this one's
    store:begin_run { checkpoint = "/x", model = "{}", extraction = extraction }
    for _, case in ipairs {
      { { checkpoint = "/y", model = "{}", extraction = extraction }, "holds the extraction of another run %(checkpoint /x%)" },
      { { checkpoint = "/x", model = "{}", extraction = gm.json.object({ input = "/b.txt", top = 3 }, { "input", "top" }) },
        "other input or options %(input /a%.txt, here /b%.txt; top 5, here 3%): its passages would not be asked again" },
      { { checkpoint = "/x", model = "{}", extraction = gm.json.object({ input = "/a.txt", top = 5, min_score = -1 },
        { "input", "top", "min_score" }) }, "%(min_score none, here %-1%)" },
      { { checkpoint = "/x", model = "{}", extraction = gm.json.object({ extractor = 2, input = "/a.txt", top = 5 },
        { "extractor", "input", "top" }) }, "holds passages extracted by an earlier graphmert, which found or placed heads otherwise" },
    } do
      assert.error_matches(function() store:begin_run(case[1]) end, case[2])
    end
    store:close()
  end)

  it("refuses a store of another schema, a file that is no store, and a full disk, keeping the old store", function()
    local path = dir .. "/tiny.sqlite"
    local copy = dir .. "/v3.sqlite"
    os.execute("cp " .. path .. " " .. copy)
    sqlite(copy, "UPDATE meta SET value = '3' WHERE key = 'schema_version';")
    out, code = run(extract .. "experiments/data/tiny/corpus.txt --out " .. copy)
    assert.equal(2, code, out)
    assert.matches("store .*v3.sqlite: a store of schema version 3; this graphmert reads version 2", out)
    write(dir .. "/text.sqlite", "not a database\n")
    out, code = run(extract .. "experiments/data/tiny/corpus.txt --out " .. dir .. "/text.sqlite")
    assert.equal(2, code, out)
    assert.matches("text.sqlite: not a SQLite database", out)
    assert.equal("not a database\n", files.read(dir .. "/text.sqlite"))
    -- a read-only place (/proc: the specs run as root, whom file modes do not stop)
    out, code = run(extract .. "experiments/data/tiny/corpus.txt --out /proc/graphmert-kg.sqlite")
    assert.equal(2, code, out)
    assert.matches("cannot write /proc/graphmert%-kg.sqlite: ", out)
    out, code = run(BIN .. "export --store " .. dir .. "/missing.sqlite --out " .. dir .. "/x.nt")
    assert.equal(2, code, out)
    assert.matches("missing.sqlite: No such file or directory", out)
    out, code = run(BIN .. "export --store " .. dir .. "/kg.jsonl --out " .. dir .. "/x.nt")
    assert.equal(2, code, out)
    assert.matches("kg.jsonl is extract's JSONL or TSV, not a store: export reads a kg.sqlite", out)
    -- a full disk (a file-size limit): the new passages fail with an error, the store stays valid
    local before = dump(path)
    out, code = run("(trap '' XFSZ; ulimit -f 200; " .. extract .. dir .. "/corpus.txt --out " .. path .. ")")
    assert.are_not.equal(0, code, out)
    assert.matches("store .*tiny.sqlite: ", out)
    assert.is_nil(out:find("stack traceback"), out)
    assert.equal("ok\n", sqlite(path, "PRAGMA integrity_check;"))
    local after = tonumber(sqlite(path, "SELECT count(*) FROM passages;"))
    assert.is_true(after >= 32, after)
    assert.is_truthy(dump(path):find(before:match("^[^\n]*\n"), 1, true), "the old triples are gone")
  end)

  it("reads a version-1 store (no model_score) as it is, and upgrades it in place when it writes to it", function()
    local path, old = dir .. "/tiny.sqlite", dir .. "/v1.sqlite"
    os.execute("cp " .. path .. " " .. old)
    sqlite(old, "ALTER TABLE triples DROP COLUMN model_score; ALTER TABLE evidence DROP COLUMN model_score; " ..
      "UPDATE meta SET value = '1' WHERE key = 'schema_version';")
    local bytes = files.read(old)
    out, code = run(BIN .. "export --store " .. old .. " --out " .. dir .. "/v1.jsonl --top 3")
    assert.equal(0, code, out)
    out, code = run(BIN .. "export --store " .. path .. " --out " .. dir .. "/v2.jsonl --top 3")
    assert.equal(0, code, out)
    assert.equal(files.read(dir .. "/v2.jsonl"), files.read(dir .. "/v1.jsonl"))
    assert.equal(bytes, files.read(old)) -- (read: the file as it was)
    local store = gm.kg.store.open(old)
    assert.is_true(store:count("passages") > 0)
    store:close()
    assert.equal("2\n", sqlite(old, "SELECT value FROM meta WHERE key = 'schema_version';"))
    assert.equal("0\n", sqlite(old, "SELECT count(model_score) FROM triples;"))
    assert.equal("ok\n", sqlite(old, "PRAGMA integrity_check;"))
  end)

  it("names a passage another run added meanwhile, not a UNIQUE constraint", function()
    local path = dir .. "/twice.sqlite"
    local store = gm.kg.store.open(path, { create = true })
    store:add_passage({ id = 7, source = "x.txt", line = 7, text = "a passage" }, {})
    local ok, err = pcall(store.add_passage, store, { id = 7, source = "x.txt", line = 7, text = "a passage" }, {})
    assert.is_false(ok)
    assert.matches("passage 7 was added meanwhile: another graphmert extract is writing this store", tostring(err))
    store:close()
  end)

  teardown(function() os.execute("rm -rf " .. dir) end)
end)
