-- graphmert calibrate and extract end to end on the tiny dataset: a run fit with a reranker gives
-- probabilities in kg.jsonl, kg.tsv, the store and its export; a run without one still extracts,
-- saying its scores are the model's; a reranker fit for other weights is refused.
local cjson = require "cjson"
local files = require "spec.files"
local run, write, lines = files.run, files.write, files.lines

local BIN = "./build/bin/graphmert "

describe("graphmert calibrate, then extract", function()
  local dir = files.tmpname()
  local config = dir .. ".config.lua"
  -- the tiny example with a third of its entities held out: both halves have some
  write(config, string.format("return { extends = %q, heldout = 0.3, steps = 120 }",
    (os.getenv("PWD") or ".") .. "/experiments/configs/tiny.lua"))
  local out, code = run(BIN .. "train --config " .. config .. " --out " .. dir)
  assert(code == 0, "training failed: " .. out)
  local corpus = "experiments/data/tiny/corpus.txt"

  it("extracts with the model's own scores, and says so, while the run has no reranker", function()
    out, code = run(BIN .. "extract --checkpoint " .. dir .. " --input " .. corpus .. " --out " .. dir .. "/raw.jsonl --decoding constrained")
    assert.equal(0, code, out)
    assert.matches("no reranker.json in " .. dir .. ": graphmert calibrate fits one", out, 1, true)
    for _, line in ipairs(lines(dir .. "/raw.jsonl")) do
      local t = cjson.decode(line)
      assert.is_true(t.score <= 0 and t.model_score == nil and t.decoding == "constrained")
    end
  end)

  it("fits the reranker on the validation half and reports it on the test half", function()
    out, code = run(BIN .. "calibrate --checkpoint " .. dir .. " --config " .. config)
    assert.equal(0, code, out)
    assert.matches("fit on %d+ candidates of %d+ validation passages %(%d+ hold%)", out)
    assert.matches("on the %d+ test passages: expected calibration error %d%.%d+", out)
    assert.is_not_nil(io.open(dir .. "/reranker.json"))
  end)

  it("gives every output probabilities, the model's score beside them", function()
    out, code = run(BIN .. "extract --checkpoint " .. dir .. " --input " .. corpus .. " --out " .. dir .. "/kg.jsonl --min-score 0")
    assert.equal(0, code, out)
    assert.matches("scores are probabilities", out, 1, true)
    local jsonl, tsv = lines(dir .. "/kg.jsonl"), lines(dir .. "/kg.tsv")
    assert.is_true(#jsonl > 0)
    assert.equal(#jsonl + 1, #tsv)
    local some_model_score = false
    for _, line in ipairs(jsonl) do
      local t = cjson.decode(line)
      assert.is_true(t.score >= 0 and t.score <= 1, line)
      assert.equal("calibrated", t.decoding)
      assert.is_true(t.model_score == nil or t.model_score <= 0, line)
      some_model_score = some_model_score or t.model_score ~= nil
    end
    assert.is_true(some_model_score)
    -- by default only triples more likely to hold than not
    out, code = run(BIN .. "extract --checkpoint " .. dir .. " --input " .. corpus .. " --out " .. dir .. "/kept.jsonl")
    assert.equal(0, code, out)
    for _, line in ipairs(lines(dir .. "/kept.jsonl")) do assert.is_true(cjson.decode(line).score >= 0.5, line) end
    -- a store, its export and the page read them as probabilities
    os.execute("mkdir -p " .. dir .. "/store")
    out, code = run(BIN .. "extract --checkpoint " .. dir .. " --input " .. corpus .. " --out " .. dir .. "/store/kg.sqlite")
    assert.equal(0, code, out)
    out, code = run(BIN .. "export --store " .. dir .. "/store/kg.sqlite --out " .. dir .. "/store/kg.jsonl")
    assert.equal(0, code, out)
    local stored_model_score = false -- (the store keeps the model's own score too)
    for _, line in ipairs(lines(dir .. "/store/kg.jsonl")) do
      local t = cjson.decode(line)
      assert.is_true(t.score >= 0.5 and t.score <= 1 and t.decoding == "calibrated", line)
      assert.is_true(t.model_score == nil or t.model_score <= 0, line)
      stored_model_score = stored_model_score or t.model_score ~= nil
    end
    assert.is_true(stored_model_score)
    local page = io.open(dir .. "/kg.html"):read("a")
    assert.matches("calibrated", page, 1, true)
    -- score puts the mean probability beside the share the seed graph holds
    out, code = run(BIN .. "score --kg " .. dir .. "/kept.jsonl --config " .. config)
    assert.equal(0, code, out)
    assert.matches("| mean probability | held by the seed graph", out, 1, true)
    assert.matches("\n| all +| +%d+ | 0%.%d+ | ", out)
  end)

  it("says why a run whose held-out entities are too few cannot be calibrated", function()
    local small = dir .. ".small"
    write(small .. ".lua", string.format("return { extends = %q, steps = 5 }", (os.getenv("PWD") or ".") .. "/experiments/configs/tiny.lua"))
    out, code = run(BIN .. "train --config " .. small .. ".lua --out " .. small)
    assert.equal(0, code, out)
    out, code = run(BIN .. "calibrate --checkpoint " .. small .. " --config " .. small .. ".lua")
    assert.equal(2, code, out)
    assert.matches("holds too few entities out of training (heldout)", out, 1, true)
    out, code = run(BIN .. "calibrate --config " .. small .. ".lua")
    assert.equal(2, code, out)
    assert.matches("--checkpoint is required", out, 1, true)
    os.execute("rm -rf " .. small .. " " .. small .. ".lua")
  end)

  it("refuses --min-score outside 0..1 and a reranker fit for other weights", function()
    out, code = run(BIN .. "extract --checkpoint " .. dir .. " --input " .. corpus .. " --out " .. dir .. "/x.jsonl --min-score -2")
    assert.equal(2, code, out)
    assert.matches("--min-score must be from 0 to 1 (a probability", out, 1, true)
    local other = dir .. ".other"
    os.execute("rm -rf " .. other .. " && cp -r " .. dir .. " " .. other)
    -- (as if fit for other weights: the stamp it holds is not this checkpoint's)
    local text = io.open(other .. "/reranker.json"):read("a")
    write(other .. "/reranker.json", (text:gsub('"stamp":"weights [^"]*"', '"stamp":"weights 0123456789abcdef"')))
    out, code = run(BIN .. "extract --checkpoint " .. other .. " --input " .. corpus .. " --out " .. other .. "/y.jsonl")
    assert.equal(2, code, out)
    assert.matches("reranker.json was fit for another run", out, 1, true)
    -- a hand-edited file is named, not a traceback
    local good = io.open(dir .. "/reranker.json"):read("a")
    write(dir .. "/reranker.json", (good:gsub('"top":10', '"top":0')))
    out, code = run(BIN .. "extract --checkpoint " .. dir .. " --input " .. corpus .. " --out " .. dir .. "/z.jsonl")
    assert.equal(2, code, out)
    assert.matches("reranker.json: pipeline.top must be a whole number", out, 1, true)
    write(dir .. "/reranker.json", good)
    -- --model-scores goes without it
    out, code = run(BIN .. "extract --checkpoint " .. dir .. " --input " .. corpus .. " --out " .. dir .. "/m.jsonl --model-scores --decoding constrained")
    assert.equal(0, code, out)
    assert.is_true(cjson.decode(lines(dir .. "/m.jsonl")[1]).score <= 0)
    os.execute("rm -rf " .. other .. " " .. dir .. " " .. config)
  end)
end)
