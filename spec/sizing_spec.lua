-- A model sized from the dataset (gm.experiment.sizing): each size read off the data, with its
-- reason; `graphmert init` and `graphmert train --data DIR` without a config; the verdict after
-- training (report.verdict).
local gm = require "graphmert"
local files = require "spec.files"
local sizing = require "graphmert.experiment.sizing"
local config = require "graphmert.experiment.config"
local report = require "graphmert.experiment.report"

local BIN = "./build/bin/graphmert "
local TINY = "experiments/data/tiny"

-- a copy of the tiny dataset whose entities and triples are replaced: `tails` names of n words
-- each, never written in the corpus (a vocabulary cannot keep them whole)
local function dataset_with_long_tails(words)
  local dir = files.tmpname()
  os.execute("mkdir -p " .. dir .. " && cp " .. TINY .. "/corpus.txt " .. dir)
  local entities, triples = { "id\tname\ttype\taliases" }, { "head\trelation\ttail" }
  for i = 1, 40 do
    local name = {}
    for w = 1, words do name[w] = string.format("zq%dx%dv", i, w) end
    entities[#entities + 1] = string.format("L:%d\t%s\tthing\t", i, table.concat(name, " "))
    triples[#triples + 1] = string.format("ANAT:0001\tnamed\tL:%d", i)
  end
  entities[#entities + 1] = "ANAT:0001\tdigestive system\tthing\t"
  files.write(dir .. "/entities.tsv", table.concat(entities, "\n") .. "\n")
  files.write(dir .. "/triples.tsv", table.concat(triples, "\n") .. "\n")
  return dir
end

describe("sizing a model from a dataset", function()
  local cfg, reasons = sizing.size(TINY, { minutes = 10 })

  it("gives leaf slots that hold the tails, tokenised with the vocabulary it chose", function()
    local ds = gm.data.dataset.load { dir = TINY }
    local texts = {}
    for _, p in ipairs(ds.passages) do texts[#texts + 1] = p.text end
    local tok = gm.data.tokenizer.train(texts, { vocab_size = cfg.vocab_size })
    local fit = 0
    for _, t in ipairs(ds.triples) do
      if #tok:encode(ds.entities[t.tail].name) <= cfg.model.leaves then fit = fit + 1 end
    end
    assert.is_true(fit / #ds.triples >= 0.98, fit .. " of " .. #ds.triples)
    -- one slot fewer would not hold them (the fewest that do)
    local fewer = 0
    for _, t in ipairs(ds.triples) do
      if #tok:encode(ds.entities[t.tail].name) <= cfg.model.leaves - 1 then fewer = fewer + 1 end
    end
    assert.is_true(cfg.model.leaves == 3 or fewer / #ds.triples < 0.98)
    assert.matches("^%d+ of the 43 triples' tails fit", reasons.leaves)
  end)

  it("turns on what extraction needs and gives every size its reason", function()
    assert.is_true(cfg.absent > 0 and cfg.mentions and cfg.tail_end)
    for _, key in ipairs { "vocab_size", "leaves", "roots", "hidden", "heldout", "steps" } do
      assert.is_string(reasons[key], key)
    end
    assert.matches("40 passes over the %d+ training sequences", reasons.steps)
    assert.matches("s a step timed on this CPU %(", reasons.steps)
    assert.equal(64, cfg.model.hidden) -- 1,216 tokens: the smallest width
    assert.matches("^%d+ of the 34 entities %([^)]+%) kept out of training", reasons.heldout) -- named
    assert.matches("%(%d+%% with 500%)$", reasons.vocab_size)
    assert.matches("%+ 15%% for text the tokenizer never saw", reasons.roots)
    local _, all = sizing.size(TINY, { minutes = 10, all_data = true })
    assert.matches("^%-%-all%-data", all.heldout)
  end)

  it("writes a config that loads and trains the same sizes, its reasons as comments", function()
    local dir = files.tmpname()
    os.execute("mkdir -p " .. dir)
    local path = dir .. "/mine.lua"
    local text = sizing.text(cfg, reasons, "a header")
    cfg.data.dir = gm.realpath(TINY)
    files.write(path, sizing.text(cfg, reasons, "a header"))
    local loaded = config.load(path)
    assert.equal(cfg.model.leaves, loaded.model.leaves)
    assert.equal(cfg.steps, loaded.steps)
    assert.equal(cfg.vocab_size, loaded.vocab_size)
    assert.is_true(loaded.mentions)
    assert.matches("\n    leaves = %d+,  %-%- %d+ of the 43 triples' tails fit", text)
    assert.matches("^%-%- a header\nreturn {", text)
    os.execute("rm -rf " .. dir)
  end)

  it("gives long tails more leaf slots, up to 12, and says which do not fit", function()
    local dir = dataset_with_long_tails(3)
    local c3, r3 = sizing.size(dir, { minutes = 10 })
    local long = dataset_with_long_tails(20)
    local c9, r9 = sizing.size(long, { minutes = 10 })
    assert.is_true(c9.model.leaves > c3.model.leaves, c3.model.leaves .. " " .. c9.model.leaves)
    assert.equal(12, c9.model.leaves)
    assert.matches("^0 of the 40 triples' tails fit", r9.leaves)
    assert.matches("^40 of the 40", r3.leaves)
    os.execute("rm -rf " .. dir .. " " .. long)
  end)

  it("sizes the steps to the time budget when the budget is short", function()
    local c, r = sizing.size(TINY, { minutes = 0.01 })
    assert.is_true(c.steps < cfg.steps, c.steps .. " vs " .. cfg.steps)
    assert.matches("^what 0.01 minutes allow at ", r.steps)
  end)
end)

describe("the verdict after training", function()
  local function metrics(facts, entities)
    return { facts = { tail = { ranks = facts } }, entities = { tail = { ranks = entities } } }
  end
  local function ranks(n, r) local t = {} for i = 1, n do t[i] = r end return t end

  it("says the model beats the most frequent tail only beyond the noise", function()
    local line = report.verdict(metrics(ranks(20, 1), ranks(20, 2)), metrics(ranks(20, 11), ranks(20, 11)), { "x" }, true)
    assert.matches("^verdict: GraphMERT beats the most frequent tail on held%-out tails beyond the noise", line)
    assert.matches("MRR@10 0.750 against 0.000", line)
    local same = {}
    for i = 1, 40 do same[i] = i % 2 == 0 and 1 or 11 end
    local other = {}
    for i = 1, 40 do other[i] = i % 2 == 1 and 1 or 11 end
    line = report.verdict(metrics(same, {}), metrics(other, {}), { "more steps (--steps 600)" }, true)
    assert.matches("does not beat, beyond the noise, the most frequent tail", line)
    assert.matches("Try more steps %(%-%-steps 600%)", line)
    line = report.verdict(metrics(ranks(40, 11), {}), metrics(ranks(40, 1), {}), { "x" }, true)
    assert.matches("does worse than the most frequent tail", line)
  end)

  it("says when there is nothing to measure, and when the triples are few", function()
    assert.matches("no held%-out tail to measure", report.verdict(metrics({}, {}), metrics({}, {}), {}, true))
    assert.matches("^verdict: none: nothing was held out", report.verdict(metrics({}, {}), metrics({}, {}), {}, false))
    assert.matches("5 triples are few", report.verdict(metrics(ranks(5, 1), {}), metrics(ranks(5, 11), {}), {}, true))
  end)
end)

describe("graphmert init and train --data without a config", function()
  it("writes a sized config, refuses to overwrite it, and trains a sized run with a verdict", function()
    local dir = files.tmpname()
    os.execute("mkdir -p " .. dir)
    local out, code = files.run(BIN .. "init --data " .. TINY .. " --out " .. dir .. "/tiny_sized.lua --minutes 1")
    assert.equal(0, code, out)
    assert.matches("model.leaves %d+: %d+ of the 43 triples' tails fit", out)
    assert.matches("wrote " .. dir:gsub("%p", "%%%0") .. "/tiny_sized.lua", out)
    local text = files.read(dir .. "/tiny_sized.lua")
    local rel = text:match('data = { dir = "([^"]+)" }')
    assert.is_truthy(rel and not rel:find("^/"), text) -- relative to the file's folder
    assert.equal(gm.realpath(TINY), gm.realpath(dir .. "/" .. rel))
    out, code = files.run(BIN .. "init --data " .. TINY .. " --out " .. dir .. "/tiny_sized.lua")
    assert.equal(2, code, out)
    assert.matches("^graphmert init: .*tiny_sized.lua exists: %-%-overwrite replaces it", out)
    out, code = files.run(BIN .. "init")
    assert.equal(2, code, out)
    assert.matches("^graphmert init: give %-%-data DIR", out)

    out, code = files.run(BIN .. "train --data " .. TINY .. " --out " .. dir .. "/run --steps 20")
    assert.equal(0, code, out)
    assert.matches("sizing a model for " .. TINY, out)
    assert.matches("\nverdict: GraphMERT ", out)
    assert.matches("\nverdict: GraphMERT ", files.read(dir .. "/run/results.md"))
    local run = require("cjson").decode(files.read(dir .. "/run/run.json"))
    assert.matches("/run/config.lua$", run.config)
    -- --resume reads the run's config again, without sizing anew
    out, code = files.run(BIN .. "train --data " .. TINY .. " --out " .. dir .. "/run --steps 30 --resume")
    assert.equal(0, code, out)
    assert.is_nil(out:find("sizing a model"), out)
    assert.matches("resumed at step 21", out)
    -- calibrate reads the sized run's own config
    out, code = files.run(BIN .. "calibrate --checkpoint " .. dir .. "/run")
    assert.is_nil(out:find("%-%-config is required"), out)
    assert.matches("run/config.lua holds too few entities out of training", out) -- (3: a half of 1 or 2)
    -- --all-data: nothing held out, said so; --steps is what the written config says
    out, code = files.run(BIN .. "train --data " .. TINY .. " --out " .. dir .. "/all --steps 20 --all-data")
    assert.equal(0, code, out)
    assert.matches("\nverdict: none: nothing was held out", out)
    text = files.read(dir .. "/all/config.lua")
    assert.matches("\n  heldout = 0,", text)
    assert.matches("\n  steps = 20,  %-%- %-%-steps %(sized: %d+", text)
    out, code = files.run(BIN .. "train --config tiny --minutes 3 --out " .. dir .. "/other")
    assert.equal(2, code, out)
    assert.matches("%-%-minutes sizes a model for %-%-data given without %-%-config", out)
    os.execute("rm -rf " .. dir)
  end)
end)
