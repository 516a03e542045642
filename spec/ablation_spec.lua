-- experiments/ablation.lua end to end on a 2 × 2 × 2 grid of a few steps: every file written,
-- a stopped grid resumed (finished cells kept, the missing ones trained), bad grid keys refused.
local cjson = require "cjson"
local files = require "spec.files"
local run, write, read = files.run, files.write, files.read

local BIN = "GRAPHMERT_NUM_THREADS=1 ./build/bin/graphmert experiments/ablation.lua "

describe("experiments/ablation.lua", function()
  local dir = files.tmpname()
  local config = dir .. ".config.lua"
  write(config, [[return { seed = 3, data = { source = "wordnet", pos = { "verb" }, limit = 300 }, heldout = 0.1, heldout_triples = 0.1,
    vocab_size = 800, max_span = 3,
    model = { roots = 16, leaves = 2, hidden = 16, layers = 1, heads = 2, ffn = 32, head = "single", sbo = false,
              graph_token = false },
    steps = 3, batch = 4, lr = 1e-3, warmup = 1,
    grid = { lambdas = { false, 0.6 }, hgat = { true, false }, seeds = { 1, 2 }, passages = 6, probe_sequences = 8 } }]])
  local cmd = BIN .. "--config " .. config .. " --out " .. dir
  local names = {}
  for _, l in ipairs { "none", "0.6" } do
    for _, h in ipairs { "on", "off" } do
      for _, s in ipairs { 1, 2 } do names[#names + 1] = string.format("lambda-%s_hgat-%s_seed-%d", l, h, s) end
    end
  end
  local first_out, first_code = run(cmd)

  teardown(function() os.execute("rm -rf " .. dir .. " " .. config) end)

  it("trains every cell and writes the cells, the tables, summary.json and the pictures", function()
    assert.equal(0, first_code, first_out)
    for _, name in ipairs(names) do
      local cell = cjson.decode(read(dir .. "/cells/" .. name .. ".json"))
      assert.equal(name, cell.name)
      assert.equal(3, #cell.losses)
      assert.is_true(#cell.facts > 0 and #cell.entities > 0 and #cell.extraction == 6)
      -- the attention weights of a root sum to 1 over the distances (one layer, no graph token)
      local total = 0
      for _, m in ipairs(cell.attention_mass) do total = total + m end
      assert.near(1, total, 1e-5)
      if name:match("none") then assert.equal(cjson.null, cell.decay) else assert.equal(2, #cell.decay.p) end
    end
    local results = read(dir .. "/results.md")
    assert.matches("## Mean over seeds", results, 1, true)
    assert.matches("## Paired difference against λ=0.6, H-GAT on", results, 1, true)
    assert.matches("| λ=none, H-GAT off |", results, 1, true)
    assert.matches("| most frequent tail |", results, 1, true)
    local summary = cjson.decode(read(dir .. "/summary.json"))
    assert.equal(4, #summary.variants)
    for _, v in ipairs(summary.variants) do
      local m = v.metrics.mlm_acc
      assert.is_true(m.low <= m.value + 1e-12 and m.value <= m.high + 1e-12)
      if not (v.lambda == 0.6 and v.hgat) then assert.is_table(v.differences.precision) end
    end
    if os.execute("command -v gnuplot > /dev/null") then
      for _, png in ipairs { "loss.png", "metrics_by_lambda.png", "attention_by_distance.png", "p_by_head.png" } do
        assert.equal("\137PNG", read(dir .. "/" .. png):sub(1, 4), png)
        assert.matches("(" .. png .. ")", results, 1, true)
      end
    end
  end)

  it("resumes a stopped grid: finished cells are kept, missing ones are trained, the results agree", function()
    local kept = read(dir .. "/cells/" .. names[1] .. ".json")
    local before = read(dir .. "/summary.json")
    os.remove(dir .. "/cells/" .. names[8] .. ".json")
    os.remove(dir .. "/cells/" .. names[3] .. ".json")
    os.remove(dir .. "/summary.json")
    local out, code = run(cmd)
    assert.equal(0, code, out)
    assert.matches("cell 1/8 " .. names[1] .. ": kept from an earlier run", out, 1, true)
    assert.equal(kept, read(dir .. "/cells/" .. names[1] .. ".json"))
    -- the retrained cells are the same computation: the tables come out the same
    assert.same(cjson.decode(before), cjson.decode(read(dir .. "/summary.json")))
    -- cells of other settings are never kept as this grid's
    out, code = run(cmd .. " --steps 2")
    assert.equal(2, code, out)
    assert.matches("was run with other settings %(steps 3, here 2%): give another %-%-out", out)
    assert.equal(kept, read(dir .. "/cells/" .. names[1] .. ".json"))
  end)

  it("stops on Ctrl-C keeping the finished cells, and goes on from them", function()
    local other = dir .. "/interrupted"
    local p = io.popen("(" .. BIN .. "--config " .. config .. " --out " .. other .. " --steps 400 > " .. other ..
      ".log 2>&1 & echo $!)")
    local pid = p:read("l")
    p:close()
    -- wait for the first cell to be written, then interrupt the second
    for _ = 1, 600 do
      if io.open(other .. "/cells/" .. names[1] .. ".json") then break end
      os.execute("sleep 0.05")
    end
    os.execute("kill -INT " .. pid .. "; while kill -0 " .. pid .. " 2>/dev/null; do sleep 0.05; done")
    local log = read(other .. ".log")
    assert.matches("interrupted: the finished cells are kept", log, 1, true)
    assert.is_truthy(io.open(other .. "/cells/" .. names[1] .. ".json"))
    assert.is_nil(io.open(other .. "/summary.json"))
    local out, code = run(BIN .. "--config " .. config .. " --out " .. other .. " --steps 400")
    assert.equal(0, code, out)
    assert.matches(names[1] .. ": kept from an earlier run", out, 1, true)
    assert.is_truthy(io.open(other .. "/summary.json"))
  end)

  it("refuses a grid key it does not know and a bad λ, naming them", function()
    local bad = dir .. ".bad.lua"
    write(bad, (read(config):gsub("passages = 6", "pasages = 6")))
    local out, code = run(BIN .. "--config " .. bad .. " --out " .. dir .. "/bad")
    assert.is_not.equal(0, code)
    assert.matches("unknown grid key 'pasages'", out, 1, true)
    write(bad, (read(config):gsub("lambdas = { false, 0.6 }", "lambdas = { false, 1.6 }")))
    out = run(BIN .. "--config " .. bad .. " --out " .. dir .. "/bad")
    assert.matches("grid.lambdas[2] must be a number in (0, 1] or false (no decay), got 1.6", out, 1, true)
    os.remove(bad)
  end)

  it("writes '-' and null for a metric without units (no held-out facts) instead of failing", function()
    local one = dir .. ".one.lua"
    write(one, (read(config):gsub("heldout_triples = 0.1", "heldout_triples = 0")
      :gsub("lambdas = { false, 0.6 }, hgat = { true, false }, seeds = { 1, 2 }", "lambdas = { 0.6 }, hgat = { true }, seeds = { 1 }")))
    local out, code = run(BIN .. "--config " .. one .. " --out " .. dir .. "/one --steps 2")
    os.remove(one)
    assert.equal(0, code, out)
    local summary = cjson.decode(read(dir .. "/one/summary.json"))
    assert.is_nil(summary.variants[1].metrics.facts_tail1)
    assert.is_table(summary.variants[1].metrics.entities_tail1)
    assert.matches("| λ=0.6, H%-GAT on | %d%.%d+ %[[^|]+%] | %- | %- | %- |", read(dir .. "/one/results.md"))
  end)
end)
