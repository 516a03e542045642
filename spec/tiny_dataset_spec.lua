-- Your own data in five commands, as the README's walkthrough runs them on the tiny example
-- dataset (experiments/data/tiny): validate, train a few steps, extract a knowledge graph; and
-- a dataset with bad lines that training reports before it starts.
local cjson = require "cjson"
local files = require "spec.files"
local gm = require "graphmert"
local run, write = files.run, files.write

local BIN = "./build/bin/graphmert "

describe("the tiny example dataset end to end", function()
  local out = files.tmpname()

  it("validates, trains, extracts a kg.jsonl whose heads are the dataset's entities", function()
    local text, code = run(BIN .. "experiments/validate.lua --config experiments/configs/tiny.lua --strict")
    assert.equal(0, code, text)
    assert.matches("32 passages", text)
    assert.matches("34 entities %(%d+ aliases%), 43 triples in 5 relations", text)
    assert.matches("32 of 32 passages %(100%.0%%%) have a head", text)

    text, code = run(BIN .. "experiments/train.lua --config experiments/configs/tiny.lua --out " .. out .. " --steps 6")
    assert.equal(0, code, text)
    assert.matches("dataset .*tiny: 32 passages", text)
    assert.matches("triples injected", text)
    -- tiny.lua's 4 leaf slots are too few for some tails: the note says how many would do
    assert.matches("note: %d+ tails to inject .* model.leaves = %d+ holds 98%% of the training triples' tails, %d+ all", text)
    local runfile = cjson.decode(files.read(out .. "/run.json"))
    assert.matches("^/.*/experiments/data/tiny$", runfile.data.dir) -- absolute: usable from anywhere

    local kg = out .. "/kg.jsonl"
    text, code = run("cd / && " .. os.getenv("PWD") .. "/build/bin/graphmert " .. os.getenv("PWD") .. "/experiments/extract.lua --checkpoint " ..
      out .. " --input " .. os.getenv("PWD") .. "/experiments/data/tiny/corpus.txt --out " .. kg .. " --decoding constrained")
    assert.equal(0, code, text)
    assert.is_nil(text:find("built", 1, true), text) -- training stored the index with the known tails
    local ds = require("graphmert").data.dataset.load { dir = "experiments/data/tiny" }
    local graph = require("graphmert").data.seed_graph.new(ds)
    local n = 0
    for line in io.lines(kg) do
      local t = cjson.decode(line)
      local normalize = require("graphmert").data.linker.normalize
      assert.is_table(graph:candidates(normalize(t.head)), t.head) -- a linked entity name
      assert.is_table(graph:candidates(normalize(t.tail)), t.tail) -- constrained: an entity name
      assert.is_true(ds.schema[t.relation] ~= nil, t.relation)
      n = n + 1
    end
    assert.is_true(n > 0)
    os.execute("rm -rf " .. out)
  end)

  it("flags an open-decoded tail of a type the schema forbids, and names new tails by no entity", function()
    local gm = require "graphmert"
    local graph = gm.data.seed_graph.new(gm.data.dataset.load { dir = "experiments/data/tiny" })
    local name = require("graphmert.kg.extraction_run").name_entities
    -- is_a joins organs and cells; blood is a tissue
    local t = name(graph, { head = "Heart", relation = "is_a", tail = "blood", decoding = "open" })
    assert.same({ "heart", "ANAT:0007", "ANAT:0022", gm.kg.OUTSIDE_SCHEMA }, { t.head, t.head_id, t.tail_id, t.decoding })
    t = name(graph, { head = "heart", relation = "part_of", tail = "circulatory system", decoding = "open" })
    assert.same({ "ANAT:0002", "open" }, { t.tail_id, t.decoding })
    t = name(graph, { head = "heart", relation = "part_of", tail = "hiiiiii", decoding = "open" })
    assert.same({ "hiiiiii", "open" }, { t.tail, t.decoding })
    assert.is_nil(t.tail_id)
  end)

  it("refuses a resume that is not the run's and a rerun over a trained one, before writing anything, and an --out that cannot be a folder", function()
    local dir = files.tmpname()
    local train = BIN .. "experiments/train.lua --config experiments/configs/tiny.lua --steps 2 --out " .. dir .. "/run"
    local text, code = run(train)
    assert.equal(0, code, text)
    local before = { files.read(dir .. "/run/run.json"), files.read(dir .. "/run/seed_graph/entities.jsonl"),
      files.read(dir .. "/run/checkpoint.safetensors") }
    os.execute("cp -r experiments/data/tiny " .. dir .. "/other && mkdir " .. dir .. "/nockpt && cp " .. dir .. "/run/run.json "
      .. dir .. "/nockpt/")
    local small = dir .. "/small.lua"
    write(small, 'return { extends = "' .. os.getenv("PWD") .. '/experiments/configs/tiny.lua", model = { hidden = 16 } }')
    -- a copy of the run whose run.json names small.lua and records no settings (as a run trained before they
    -- were): the config passes, the checkpoint does not fit its model
    os.execute("cp -r " .. dir .. "/run " .. dir .. "/edited")
    local edited = require("cjson").decode(files.read(dir .. "/run/run.json"))
    edited.config, edited.settings = small, nil
    write(dir .. "/edited/run.json", require("cjson").encode(edited))
    for _, case in ipairs {
      { train .. " --resume --data " .. dir .. "/other", "^train%.lua: " .. dir:gsub("%p", "%%%0") ..
        "/run was trained with /[^ ]*/experiments/configs/tiny%.lua on data {\"dir\":\"/[^\"]*/experiments/data/tiny\"}, " ..
        "and experiments/configs/tiny%.lua with %-%-data names {\"dir\":\"[^\"]*/other\"}: resume with the run's config " ..
        "and data\n$" },
      { train:gsub("/run$", "/nockpt") .. " --resume", "/nockpt has no checkpoint yet %(stopped before the first%): train " ..
        "again without %-%-resume" },
      { train:gsub("experiments/configs/tiny%.lua", small) .. " --resume", "^train%.lua: .*/run was trained with another " ..
        "config %(model%.hidden 64, here 16; run%.json names /[^ ]*/experiments/configs/tiny%.lua%): resume with the run's config\n$" },
      { train:gsub("experiments/configs/tiny%.lua", small):gsub("/run$", "/edited") .. " --resume", "^train%.lua: cannot " ..
        "resume .*/edited: load_state_dict: 'hgat_weight' has size 5x64x64, the module expects 5x16x16 %(the config is not the run's%?%)\n" },
      { train:gsub("/run$", "/none") .. " --resume", "/none holds no run to resume %(no run%.json%)" },
      { train:gsub("/run$", "/run/run.json"), "run%.json is a file; %-%-out names the output folder" },
      { train:gsub("/run$", "/new") .. " --data " .. dir .. "/missing", "missing is not a folder" },
      { train, "/run holds a run, whole or stopped %(checkpoint%.safetensors%): %-%-resume continues it, %-%-overwrite trains anew" },
      { train .. " --resume --overwrite", "give %-%-resume or %-%-overwrite, not both" },
    } do
      text, code = run(case[1])
      assert.equal(2, code, case[1] .. "\n" .. text)
      assert.matches(case[2], text)
      assert.is_nil(text:find("traceback"), text)
    end
    assert.is_nil(require("graphmert").stat(dir .. "/none")) -- no folder left by a refusal
    assert.is_nil(require("graphmert").stat(dir .. "/new"))
    assert.same(before, { files.read(dir .. "/run/run.json"), files.read(dir .. "/run/seed_graph/entities.jsonl"),
      files.read(dir .. "/run/checkpoint.safetensors") })
    text, code = run(train:gsub("%-%-steps 2", "--steps 3") .. " --resume --data experiments/data/tiny/") -- the same folder, typed otherwise
    assert.equal(0, code, text)
    assert.matches("resumed at step 3", text)
    text, code = run(train .. " --overwrite")
    assert.equal(0, code, text)
    assert.is_nil(text:find("resumed"), text)
    os.execute("rm -rf " .. dir)
  end)

  it("reports bad lines by file and line before training, and stops with on_error = \"stop\"", function()
    local dir = files.tmpname()
    os.execute("cp -r experiments/data/tiny " .. dir)
    local f = assert(io.open(dir .. "/triples.tsv", "a"))
    f:write("ANAT:0001\tpart_of\n", "ANAT:0001\tdigests\tANAT:0002\n", "ANAT:0099\tpart_of\tANAT:0002\n")
    f:close()
    local text, code = run(BIN .. "experiments/validate.lua --data " .. dir)
    assert.equal(0, code, text)
    assert.matches("3 lines skipped: 1 fewer than 3 fields, 1 unknown entity, 1 unknown relation", text)
    assert.matches("triples.tsv:45: fewer than 3 fields", text)
    text, code = run(BIN .. "experiments/validate.lua --data " .. dir .. " --strict")
    assert.equal(1, code, text)
    local config = dir .. "/stop.lua"
    write(config, 'return { data = { dir = ".", on_error = "stop" }, vocab_size = 300, model = { roots = 8, leaves = 2 }, ' ..
      'steps = 1, batch = 1, lr = 1e-3 }')
    text, code = run(BIN .. "experiments/train.lua --config " .. config .. " --out " .. dir .. "/out")
    assert.is_true(code ~= 0)
    assert.matches("triples.tsv:45: fewer than 3 fields", text)
    text, code = run(BIN .. "experiments/validate.lua --data " .. dir .. "/missing")
    assert.equal(2, code)
    assert.matches("validate.lua: dataset: .*missing is not a folder", text)
    -- train --data without --config sizes a model for the data: a missing folder is named first
    text, code = run(BIN .. "train --data " .. dir .. "/missing --out " .. dir .. "/run_missing")
    assert.equal(2, code)
    assert.matches("^graphmert train: dataset: .*missing is not a folder", text)
    assert.is_nil(gm.stat(dir .. "/run_missing"), "no run folder is left behind")
    os.execute("rm -rf " .. dir)
  end)

  it("lists the names with capitals that the corpus mostly writes in lower case, with counts", function()
    local dir = files.tmpname()
    os.execute("mkdir -p " .. dir)
    write(dir .. "/entities.tsv", "id\tname\ttype\taliases\tproperties\nB1\tMoon\tbody\t\t\nB2\tPhobos\tbody\t\t\n" ..
      "B3\tMars\tbody\t\t\nB4\tSun\tbody\t\t\n")
    write(dir .. "/triples.tsv", "B2\torbits\tB3\nB1\torbits\tB3\n")
    write(dir .. "/corpus.txt", "The tiny moon Phobos orbits Mars.\nMoon rocks. The Moon, a moon.\nEach moon of Mars; the Sun.\n" ..
      "the sun, the moon and mars in a lower-case passage.\n")
    local text, code = run(BIN .. "experiments/validate.lua --data " .. dir)
    assert.equal(0, code, text)
    assert.matches("linking: 9 mentions", text) -- the lower-case passage's three, Phobos, Mars twice, Moon twice, Sun
    assert.matches("\n1 name with capitals mostly written in lower case in the corpus %(common words%?%), linked only where " ..
      "written as named; the entity property any_case links a name in any case", text)
    assert.matches("\n  Moon: 3 in lower case, 2 as named %(1 at a sentence's start%)\n", text)
    assert.is_nil(text:find("Mars:"), text)
    -- opted out: linked in any case, not listed
    os.execute("sed -i 's/^B1\tMoon\tbody\t\t$/B1\tMoon\tbody\t\tany_case/' " .. dir .. "/entities.tsv")
    text, code = run(BIN .. "experiments/validate.lua --data " .. dir)
    assert.equal(0, code, text)
    assert.matches("linking: 12 mentions", text)
    assert.is_nil(text:find("lower case in the corpus"), text)
    os.execute("rm -rf " .. dir)
  end)

  it("names a type of the relation schema no entity has, with its line, before the triples it skips", function()
    local dir = files.tmpname()
    os.execute("cp -r experiments/data/tiny " .. dir .. " && sed -i 's/^produces\torgan,cell/produces\torgans,cell/' " .. dir ..
      "/relations.tsv && printf 'X:1\tmystery\t\t\n' >> " .. dir .. "/entities.tsv")
    local text, code = run(BIN .. "experiments/validate.lua --data " .. dir)
    assert.equal(0, code, text)
    local said = text:find("the relation schema names the type organs, which no entity has %(.*relations%.tsv:3%): did you mean organ%?")
    assert.truthy(said, text)
    assert.truthy(text:find("no relation takes entities of type entity: 1 entity %(X:1%); an entity with an empty type is of type entity"), text)
    local skipped = text:find("head type not allowed by the relation schema %(ANAT:%d+ is an organ; produces at .*relations%.tsv:3%)")
    assert.truthy(skipped and skipped > said, text)
    os.execute("rm -rf " .. dir)
  end)
end)
