-- The application's shared pieces: the config schema, the scripts' argument parser, errors with
-- a kind, and the eval-mode helper.
local gm = require "graphmert"
local config = gm.experiment.config
local files = require "spec.files"

local function minimal(extra)
  local c = { data = { dir = "experiments/data/tiny" }, vocab_size = 100, model = { roots = 4, leaves = 2 }, steps = 2,
    batch = 2, lr = 1e-3 }
  for k, v in pairs(extra or {}) do c[k] = v end
  return c
end

describe("experiment.config", function()
  it("fills every default, the model's from GraphMERT's", function()
    local c = config.check(minimal(), "test")
    assert.equal(0.15, c.leaf_rate)
    assert.equal("stop", c.on_nonfinite)
    assert.equal(4, c.model.roots)
    assert.equal(gm.nn.GraphMERT.defaults.hidden, c.model.hidden)
  end)

  it("gives the official init the tokenizer's [PAD] row (pad_id \"auto\" survives the filled defaults)", function()
    local c = config.check(minimal { model = { roots = 4, leaves = 2, hidden = 8, layers = 1, heads = 2, ffn = 8, init = "official" } }, "test")
    assert.equal("auto", c.model.pad_id)
    local d = { tok = { pad_id = 2, size = function() return 20 end }, relation_names = { "r" } }
    assert.equal(2, gm.experiment.model(d, c).config.pad_id)
    c = config.check(minimal { model = { roots = 4, leaves = 2, hidden = 8, layers = 1, heads = 2, ffn = 8 } }, "test")
    assert.is_false(gm.experiment.model(d, c).config.pad_id)
  end)

  it("rejects an unknown key, naming it", function()
    assert.error_matches(function() config.check(minimal { leaf_rte = 0.5 }, "cfg.lua") end,
      "cfg.lua: unknown key 'leaf_rte'")
    assert.error_matches(function() config.check(minimal { model = { roots = 4, hiden = 8 } }, "cfg.lua") end,
      "cfg.lua: unknown model key 'hiden'")
  end)

  it("rejects a missing required key and a value of the wrong type", function()
    local c = minimal()
    c.lr = nil
    assert.error_matches(function() config.check(c, "cfg.lua") end, "cfg.lua: 'lr' is required")
    assert.error_matches(function() config.check(minimal { steps = "10" }, "cfg.lua") end, "'steps' must be a number, got string")
    assert.error_matches(function() config.check(minimal { on_nonfinite = "ignore" }, "cfg.lua") end, "on_nonfinite must be")
  end)

  it("checks numbers' ranges and the model's values before any data is read, naming them", function()
    for _, case in ipairs {
      { { heldout = 1 }, "cfg.lua: 'heldout' must be a share in [0, 1)" },
      { { heldout = 10 }, "'heldout' must be a share in [0, 1)" },
      { { batch = 0 }, "cfg.lua: 'batch' must be a whole number >= 1, got 0" },
      { { steps = 2.5 }, "'steps' must be a whole number >= 1, got 2.5" },
      { { lr = 0 }, "'lr' must be a number > 0" },
      { { leaf_rate = 1.5 }, "'leaf_rate' must be a share in [0, 1]" },
      { { model = { roots = 4, leaves = 2, hidden = 64, heads = 3 } }, "cfg.lua: model: heads 3 does not divide hidden 64" },
      { { model = { roots = 4, leaves = 2, lambda = 2 } }, "cfg.lua: model: lambda must be a number in (0, 1]" },
      { { model = { roots = 4, leaves = 0 } }, "cfg.lua: model: leaves must be in 1..255" },
      { { model = { roots = 4, leaves = 2, dropout = 1 } }, "cfg.lua: model: dropout must be a number in [0, 1)" },
    } do
      assert.error_matches(function() config.check(minimal(case[1]), "cfg.lua") end, case[2], 1, true)
    end
    assert.equal(0, config.check(minimal { leaf_rate = 0, heldout = 0 }, "cfg.lua").leaf_rate)
  end)

  it("plots to any path: a quote or a line break in it is never gnuplot's to run", function()
    if not os.execute("command -v gnuplot > /dev/null 2>&1") then
      pending("gnuplot is not installed (scripts/setup.sh installs it)")
      return
    end
    local dir = files.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    -- gnuplot runs in the current folder: what the path would run there
    local path = dir .. "/a'; system 'touch graphmert-pwned'; set output 'b\nsystem 'touch graphmert-pwned2'\n.png"
    assert.is_true(gm.experiment.plot(path, "png size 200,100", { "plot x" }))
    assert.equal("file", gm.stat(path).type)
    assert.is_nil(gm.stat("graphmert-pwned"))
    assert.is_nil(gm.stat("graphmert-pwned2"))
    assert.is_false(gm.experiment.plot(dir .. "/bad.png", "png", { "plot nosuchfunction(x)" }))
    assert.is_nil(gm.stat(dir .. "/bad.png"))
    os.execute("rm -rf " .. dir)
  end)

  it("prints '-' in the evaluation table for a figure over nothing", function()
    local none = { n = 0, hits1 = 0, tail = { hits1 = 0, hits10 = 0, mrr = 0 } }
    local some = { n = 4, hits1 = 0.25, tail = { hits1 = 0.5, hits10 = 0.75, mrr = 0.6 } }
    local t = gm.experiment.table { { name = "GraphMERT", acc = nil, tails = { facts = none, entities = some } } }
    assert.matches("| GraphMERT                |       - |             - |       - |      - |       - |            0.500 |   0.750 |  0.600 |   0.250 |", t, 1, true)
    assert.matches("on 0 held-out facts on seen text and 4 triples", t, 1, true)
  end)

  it("loads every config under experiments/configs", function()
    for _, name in ipairs { "wordnet_small", "wordnet_10min", "wordnet_long", "official", "ablation", "ablation_official",
      "wordnet_long_extract", "wordnet_hour" } do
      local c = config.load("experiments/configs/" .. name .. ".lua")
      assert.equal(c.model.roots * (1 + c.model.leaves), gm.layout(c.model).nodes)
    end
    assert.matches("leaf_rate", config.describe())
    local official = config.load("experiments/configs/official.lua")
    assert.same({ 128, 7, 12, 512, 8, 2048, 0.6, 0.3, false },
      { official.model.roots, official.model.leaves, official.model.layers, official.model.hidden, official.model.heads,
        official.model.ffn, official.model.lambda, official.model.relation_dropout, official.model.positions })
    assert.same({ "chunk", true, 4e-4, 1e-5, 500, 0.01, 64, 0.15 }, { official.packing, official.masking_spans,
      official.lr, official.min_lr, official.warmup, official.weight_decay, official.batch, official.leaf_rate })
  end)

  it("starts a config from another with extends: tables merged key by key, other values replaced", function()
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p " .. dir .. "/sub")
    local function write(name, text)
      local f = assert(io.open(dir .. "/" .. name, "w"))
      f:write(text)
      f:close()
    end
    write("base.lua", [[return { vocab_size = 100, steps = 2, batch = 2, lr = 1e-3, max_span = 5,
      data = { source = "wordnet", pos = { "noun", "verb" }, limit = 50 }, model = { roots = 4, leaves = 2, hidden = 8 } }]])
    write("sub/variant.lua", [[return { extends = "../base.lua", max_span = false, data = { limit = 9 },
      model = { hidden = 16, positions = false } }]])
    local c = config.load(dir .. "/sub/variant.lua")
    assert.same({ false, 9, { "noun", "verb" }, 4, 16, false, 100 },
      { c.max_span, c.data.limit, c.data.pos, c.model.roots, c.model.hidden, c.model.positions, c.vocab_size })
    -- the derived configs of experiments/configs give the same settings as their bases bar the named ones
    local long, extract = config.load("experiments/configs/wordnet_long.lua"), config.load("experiments/configs/wordnet_long_extract.lua")
    extract.tail_end, extract.mentions, extract.absent = false, false, 0
    assert.same(long, extract)
    write("loop.lua", [[return { extends = "loop2.lua" }]])
    write("loop2.lua", [[return { extends = "loop.lua" }]])
    assert.error_matches(function() config.load(dir .. "/loop.lua") end, "extends itself")
    write("bad.lua", [[return { extends = 3 }]])
    assert.error_matches(function() config.load(dir .. "/bad.lua") end, "'extends' must be a file name, got number")
    -- a dataset folder relative to the config file: one that is not there is named with the config
    write("sub/mine.lua", [[return { vocab_size = 100, steps = 2, batch = 2, lr = 1e-3, data = { dir = "data/mine" },
      model = { roots = 4, leaves = 2, hidden = 8 } }]])
    assert.error_matches(function() config.load(dir .. "/sub/mine.lua") end,
      "config .*/sub/mine.lua: data.dir is .*/sub/data/mine, which is not a folder %(a relative data.dir is taken from the config file's folder")
    os.execute("mkdir -p " .. dir .. "/sub/data/mine")
    assert.is_truthy(config.load(dir .. "/sub/mine.lua").data.dir:match("/sub/data/mine$"))
    os.execute("rm -rf " .. dir)
  end)

  it("defaults packing and masking to today's behaviour and checks their values", function()
    local c = config.check(minimal(), "test")
    assert.equal("record", c.packing)
    assert.is_true(c.masking_spans)
    assert.error_matches(function() config.check(minimal { packing = "chunks" }, "cfg.lua") end,
      "cfg.lua: packing must be \"record\" or \"chunk\"")
    assert.error_matches(function() config.check(minimal { packing = "chunk", copies = 4 }, "cfg.lua") end,
      "cfg.lua: copies must be 1 with packing = \"chunk\"")
    assert.error_matches(function() config.check(minimal { masking_spans = "yes" }, "cfg.lua") end,
      "'masking_spans' must be a boolean")
    assert.error_matches(function() config.check(minimal { absent = 0.5 }, "cfg.lua") end,
      "cfg.lua: absent needs tail_end = true")
    assert.error_matches(function() config.check(minimal { absent = 1, tail_end = true }, "cfg.lua") end,
      "cfg.lua: absent must be in %[0, 1%), got 1")
    assert.error_matches(function() config.check(minimal { mentions = true, packing = "chunk" }, "cfg.lua") end,
      "cfg.lua: mentions and absent need packing = \"record\"")
    local bert = minimal { bert_vocab = "vocab.txt" }
    bert.vocab_size = nil
    assert.equal("vocab.txt", config.check(bert, "cfg.lua").bert_vocab)
    assert.is_false(config.check(minimal(), "cfg.lua").bert_vocab)
  end)
end)

describe("experiment.args", function()
  local spec = { script = "x.lua", { "out", "out/x", "folder" }, { "steps", nil, "steps", type = "integer" },
    { "resume", false, "resume", flag = true } }

  it("parses values, integers and flags over the defaults", function()
    local a = gm.experiment.args.parse({ "--steps", "7", "--resume" }, spec)
    assert.same({ out = "out/x", steps = 7, resume = true }, a)
  end)

  it("names an unknown argument, a missing value and a bad integer", function()
    local parse = gm.experiment.args.parse
    assert.error_matches(function() parse({ "--stpes", "7" }, spec) end, "x.lua: unknown argument %-%-stpes %(did you mean %-%-steps%?%)")
    assert.error_matches(function() parse({ "--out" }, spec) end, "x.lua: %-%-out needs a value")
    assert.error_matches(function() parse({ "--steps", "many" }, spec) end, "%-%-steps must be an integer, got many")
  end)

  it("takes --name=value, checks ranges and choices, and raises usage errors", function()
    local parse, errors = gm.experiment.args.parse, gm.errors
    local ranged = { script = "y.lua", { "top", 5, "k", type = "integer", min = 1 }, { "score", nil, "s", type = "number", max = 0 },
      { "mode", "open", "m", choices = { "open", "constrained" } }, { "all", false, "a", flag = true } }
    assert.same({ top = 3, score = -0.5, mode = "constrained", all = true },
      parse({ "--top=3", "--score=-0.5", "--mode", "constrained", "--all" }, ranged))
    for _, c in ipairs {
      { { "--top", "0" }, "%-%-top must be at least 1, got 0" },
      { { "--top=-3" }, "%-%-top must be at least 1, got %-3" },
      { { "--score", "5" }, "%-%-score must be at most 0, got 5" },
      { { "--score", "nan" }, "%-%-score must be a number, got nan" },
      { { "--mode=closed" }, "%-%-mode must be open or constrained, got closed" },
      { { "--all=yes" }, "%-%-all takes no value" },
      { { "--zzzzzz" }, "unknown argument %-%-zzzzzz %(see" }, -- nothing near: no suggestion
      { { "--scroe" }, "unknown argument %-%-scroe %(did you mean %-%-score%?%)" },
    } do
      local ok, err = pcall(parse, c[1], ranged)
      assert.is_false(ok)
      assert.equal("usage", errors.kind(err))
      assert.matches("^y.lua: " .. c[2], tostring(err))
    end
  end)

  it("suggests, of names as near, the one sharing the longest prefix", function()
    local args = require "graphmert.experiment.args"
    assert.equal("out", args.suggest("ouput", { "input", "out" }))
    assert.equal("input", args.suggest("inptu", { "out", "input" }))
    assert.is_nil(args.suggest("zzzzzz", { "out", "input" }))
  end)

  it("suggests the config key a typo meant", function()
    local ok, err = pcall(config.check, { data = { dir = "x" }, leaf_rte = 0.5 }, "cfg.lua")
    assert.is_false(ok)
    assert.equal("usage", gm.errors.kind(err))
    assert.matches("cfg.lua: unknown key 'leaf_rte' %(did you mean 'leaf_rate'%?; known: ", tostring(err))
  end)

  it("writes a plain progress line at each tenth of the work in a log, and a live one on a terminal", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    local p = gm.experiment.progress.new { stream = f, total = 1000, tty = false }
    for i = 1, 1000 do p:update(i, "step " .. i) end
    p:say("a message")
    p:finish()
    f:close()
    local text = files.read(path)
    assert.is_nil(text:find("\r", 1, true))
    local count = select(2, text:gsub("\n", ""))
    assert.is_true(count >= 11 and count <= 12, text)
    assert.matches("^step 1\nstep 100\nstep 200\n", text)
    assert.matches("step 1000\na message\n$", text)
    f = assert(io.open(path, "w"))
    p = gm.experiment.progress.new { stream = f, total = 3, tty = true }
    for i = 1, 3 do p:update(i, "step " .. i) end
    p:say("done")
    f:close()
    assert.equal("\rstep 1   \rstep 3   \ndone\n", files.read(path))
    os.remove(path)
  end)

  it("prints the usage for --help in every script", function()
    for _, script in ipairs { "train", "ablation", "extract", "toy_regression" } do
      local p = io.popen("./build/bin/graphmert experiments/" .. script .. ".lua --help 2>&1")
      local out = p:read("a")
      assert.is_true(p:close(), out)
      assert.matches("usage: graphmert experiments/" .. script .. ".lua", out)
      if script ~= "toy_regression" then assert.matches(script == "extract" and "%-%-checkpoint" or "%-%-config", out) end
    end
  end)
end)

describe("gm.errors", function()
  it("gives a caught error's kind, and tostring its message", function()
    local ok, err = pcall(gm.errors.raise, "nonfinite", "loss nan at step 3")
    assert.is_false(ok)
    assert.equal("nonfinite", gm.errors.kind(err))
    assert.equal("loss nan at step 3", tostring(err))
    assert.equal("interrupted", gm.errors.kind("interrupted!"))
    assert.is_nil(gm.errors.kind("some other error"))
  end)
end)

describe("Module:evaluating", function()
  it("runs in eval mode without gradients and restores the previous mode, also after an error", function()
    local m = gm.nn.Sequential { gm.nn.Linear(2, 2) }
    local x = gm.ones(1, 2)
    local training, y = m:evaluating(function() return m.training, m(x) end)
    assert.is_false(training)
    assert.is_false(y:requires_grad())
    assert.is_true(m.training)
    m:eval()
    assert.has_error(function() m:evaluating(function() error("boom") end) end)
    assert.is_false(m.training)
  end)

  it("GraphMERT rejects an unknown option and takes integral floats from JSON", function()
    assert.error_matches(function() gm.nn.GraphMERT { vocab = 10, hiden = 8 } end, "GraphMERT: unknown option 'hiden'")
    local m = gm.nn.GraphMERT { vocab = 40.0, hidden = 8, layers = 1, heads = 2, ffn = 16, roots = 4, leaves = 1 }
    assert.equal(8, m.layout.nodes)
  end)
end)

describe("experiment.config precision", function()
  it("takes precision, default highest", function()
    local c = config.check({ data = { dir = "d" }, vocab_size = 10, model = {}, steps = 1, batch = 1, lr = 1, precision = "medium" }, "t")
    assert.equal("medium", c.precision)
    assert.equal("highest", config.check({ data = { dir = "d" }, vocab_size = 10, model = {}, steps = 1, batch = 1, lr = 1 }, "t").precision)
  end)

  it("takes attention_keep_scores, default false, and applies it", function()
    local base = { data = { dir = "d" }, vocab_size = 10, model = {}, steps = 1, batch = 1, lr = 1 }
    assert.is_false(config.check(base, "t").attention_keep_scores)
    base.attention_keep_scores = true
    local c = config.check(base, "t")
    require("graphmert.experiment").apply_settings(c)
    local on = gm.get_attention_keep_scores()
    gm.set_attention_keep_scores(false)
    assert.is_true(on)
    base.attention_keep_scores = "yes"
    assert.has_error(function() config.check(base, "t") end)
  end)
end)
