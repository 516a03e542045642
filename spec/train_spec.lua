-- experiments/train.lua end to end on slices of WordNet (ablation.lua: spec/ablation_spec.lua).
local gm = require "graphmert"
local files = require "spec.files"

-- A temporary output folder and a config file holding `body`.
local function scratch(body)
  local dir = files.tmpname()
  local config = dir .. ".config.lua"
  files.write(config, body)
  return dir, config
end

-- Runs a shell command, asserting success; returns its output.
local function run(cmd)
  local out, code = files.run(cmd)
  assert.equal(0, code, out)
  return out
end
describe("experiments/train.lua", function()
  it("trains, evaluates, checkpoints and resumes", function()
    local dir, config = scratch([[return { seed = 2, data = { source = "wordnet", pos = { "verb" }, limit = 300 }, heldout = 0.1, vocab_size = 800,
      model = { roots = 16, leaves = 2, hidden = 16, layers = 1, heads = 2, ffn = 32 },
      steps = 4, batch = 4, lr = 1e-3, min_lr = 1e-5, warmup = 2, weight_decay = 0.01, clip = 1,
      eval_every = 2, checkpoint_every = 2 }]])
    local cmd = "./build/bin/graphmert experiments/train.lua --config " .. config .. " --out " .. dir
    local out = run(cmd .. " --steps 2")
    assert.matches("dataset wordnet: 300 passages %(300 about an entity%), 300 entities", out)
    assert.matches("eval at step 2: masked%-token accuracy", out)
    out = run(cmd .. " --resume")
    assert.matches("resumed at step 3", out)
    assert.matches("step 4/4", out)
    local log = io.open(dir .. "/log.csv"):read("a")
    assert.matches("^step,loss,lr,tokens_per_s\n1,", log)
    assert.matches("\n4,", log)
    os.execute("rm -rf " .. dir .. " " .. config)
  end)
end)

describe("experiments/train.lua stopped and resumed", function()
  local body = [[return { seed = 2, data = { source = "wordnet", pos = { "verb" }, limit = 300 }, heldout = 0.1, vocab_size = 800,
      model = { roots = 16, leaves = 2, hidden = 16, layers = 1, heads = 2, ffn = 32 },
      steps = %d, batch = 4, lr = 1e-3, min_lr = 1e-5, warmup = 2, weight_decay = 0.01, clip = 1,
      eval_every = 1000, checkpoint_every = %d, baseline = false }]]
  local function rows(path) -- step, loss and rate of each logged row (not the timing)
    return (files.read(path):gsub(",[^,\n]*\n", "\n"))
  end

  it("continues after Ctrl-C exactly as the uninterrupted run", function()
    -- (3,000 steps: the interrupt must come before the run ends however fast the CPU; 400 left a
    -- fast machine a tenth of a second after step 40 — a flaky race)
    local whole, config = scratch(string.format(body, 3000, 1000))
    local cmd = "./build/bin/graphmert experiments/train.lua --config " .. config .. " --out "
    run(cmd .. whole)
    local stopped = whole .. ".stopped"
    local pid = io.popen("(" .. cmd .. stopped .. " > " .. stopped .. ".log 2>&1 & echo $!)"):read("l")
    for _ = 1, 600 do -- Ctrl-C once some steps are logged: in the middle of one, most likely
      local f = io.open(stopped .. "/log.csv")
      local n = f and select(2, f:read("a"):gsub("\n", ""))
      if f then f:close() end
      if n and n > 40 then break end
      os.execute("sleep 0.02")
    end
    os.execute("kill -INT " .. pid .. "; while kill -0 " .. pid .. " 2>/dev/null; do sleep 0.05; done")
    assert.matches("interrupted: checkpoint at step %d+ written", files.read(stopped .. ".log"))
    local out = run(cmd .. stopped .. " --resume")
    assert.matches("resumed at step", out)
    assert.equal(rows(whole .. "/log.csv"), rows(stopped .. "/log.csv"))
    -- weights, optimizer state, step and generator state: byte for byte
    assert.is_true(files.read(whole .. "/checkpoint.safetensors") == files.read(stopped .. "/checkpoint.safetensors"))
    os.execute("rm -rf " .. whole .. " " .. stopped .. " " .. stopped .. ".log " .. config)
  end)

  it("logs each step once when steps after the last checkpoint were logged, and says a finished run is", function()
    local dir, config = scratch(string.format(body, 4, 2))
    local cmd = "./build/bin/graphmert experiments/train.lua --config " .. config .. " --out " .. dir
    run(cmd .. " --steps 2")
    local f = assert(io.open(dir .. "/log.csv", "a")) -- as a run killed at step 3 leaves it
    f:write("3,9.999999,0.001,1.0\n")
    f:close()
    run(cmd .. " --resume")
    local log = files.read(dir .. "/log.csv")
    assert.matches("^step,loss,lr,tokens_per_s\n1,[^\n]*\n2,[^\n]*\n3,[^\n]*\n4,[^\n]*\n$", log)
    assert.not_matches("9.999999", log, 1, true)
    assert.matches("GraphMERT: already trained to step 4 of 4", run(cmd .. " --resume"))
    -- a shorter budget, or another config, is not the run's: refused, nothing written
    local out, code = files.run(cmd .. " --resume --steps 2")
    assert.equal(2, code, out)
    assert.matches("checkpoint is at step 4, past the 2 steps asked", out, 1, true)
    local other = config .. ".other.lua"
    files.write(other, files.read(config)) -- the same config elsewhere (another checkout) is the run's
    assert.matches("already trained to step 4 of 4",
      run("./build/bin/graphmert experiments/train.lua --config " .. other .. " --out " .. dir .. " --resume"))
    files.write(other, (files.read(config):gsub("lr = 1e%-3", "lr = 2e-3"))) -- edited in place: not the run's
    out, code = files.run("./build/bin/graphmert experiments/train.lua --config " .. other .. " --out " .. dir .. " --resume")
    assert.equal(2, code, out)
    assert.matches("was trained with another config %(lr 0%.001, here 0%.002; run%.json names .*other%.lua%): resume with the " ..
      "run's config", out)
    assert.equal(log, files.read(dir .. "/log.csv"))
    os.execute("rm -rf " .. dir .. " " .. config .. " " .. other)
  end)

  it("never writes a run among the passages it reads", function()
    local data = files.tmpname()
    os.remove(data)
    os.execute("cp -r experiments/data/tiny " .. data .. " && mkdir " .. data .. "/corpus && mv " .. data .. "/corpus.txt "
      .. data .. "/corpus/a.txt")
    local out, code = files.run("./build/bin/graphmert train --config tiny --data " .. data .. " --out " .. data .. "/corpus/run")
    assert.equal(2, code, out)
    assert.matches("the output .*/corpus/run would be inside .*/corpus, an input", out)
    assert.is_nil(gm.stat(data .. "/corpus/run"))
    os.execute("rm -rf " .. data)
  end)
end)

describe("experiments/train.lua with a diverging run", function()
  local body = [[return { seed = 2, data = { source = "wordnet", pos = { "verb" }, limit = 300 }, heldout = 0.1, vocab_size = 800,
      model = { roots = 16, leaves = 2, hidden = 16, layers = 1, heads = 2, ffn = 32 },
      steps = 4, batch = 4, lr = 1e30, min_lr = 1e30, warmup = 0, weight_decay = 0, clip = 1e38,
      eval_every = 100, checkpoint_every = 1, baseline = false %s }]]

  it("stops at a non-finite loss, naming the step, and keeps the last good checkpoint", function()
    local dir, config = scratch(string.format(body, ""))
    local p = io.popen("./build/bin/graphmert experiments/train.lua --config " .. config .. " --out " .. dir .. " 2>&1")
    local out = p:read("a")
    assert.is_falsy(p:close())
    assert.matches("non%-finite loss [-%a]+ at step 2: training stopped", out)
    local _, meta = gm.safetensors.load(dir .. "/checkpoint.safetensors")
    assert.equals("1", meta.step)
    os.execute("rm -rf " .. dir .. " " .. config)
  end)

  it("ends in one line when the seed graph or a checkpoint cannot be written (a full disk)", function()
    local dir, config = scratch([[return { seed = 2, data = { source = "wordnet", pos = { "verb" }, limit = 300 }, heldout = 0.1,
      vocab_size = 800, model = { roots = 16, leaves = 2, hidden = 16, layers = 1, heads = 2, ffn = 32 },
      steps = 4, batch = 4, lr = 1e-3, warmup = 1, checkpoint_every = 2, baseline = false }]])
    local cmd = "./build/bin/graphmert experiments/train.lua --config " .. config .. " --out " .. dir
    -- (a file-size limit below the checkpoint's size, whose writes fail with EFBIG)
    local out, code = files.run("sh -c \"trap '' XFSZ; ulimit -f 40; " .. cmd .. "\"") -- (below the seed graph's files)
    assert.equal(2, code, out)
    assert.matches("train%.lua: save_seed_graph: .*File too large", out)
    assert.is_nil(out:find("traceback"), out)
    out, code = files.run("sh -c \"trap '' XFSZ; ulimit -f 200; " .. cmd .. " --overwrite\"") -- (below the checkpoint's size)
    assert.equal(2, code, out)
    assert.matches("train%.lua: save: .*checkpoint%.safetensors%.tmp%.%d+: File too large; no checkpoint was written " ..
      "before it: train again with %-%-overwrite once the problem is solved", out)
    assert.is_nil(out:find("traceback"), out)
    assert.is_nil(gm.stat(dir .. "/checkpoint.safetensors"))
    run(cmd .. " --overwrite") -- with room
    local _, meta = gm.safetensors.load(dir .. "/checkpoint.safetensors")
    assert.equals("4", meta.step)
    os.execute("rm -rf " .. dir .. " " .. config)
  end)

  it("skips non-finite steps with on_nonfinite = \"skip\"", function()
    local dir, config = scratch(string.format(body, ', on_nonfinite = "skip"'))
    local out = run("./build/bin/graphmert experiments/train.lua --config " .. config .. " --out " .. dir)
    assert.matches("step 2 skipped: non%-finite loss or gradient", out)
    assert.matches("step 4/4", out)
    os.execute("rm -rf " .. dir .. " " .. config)
  end)
end)

describe("experiment.prepare's split", function()
  it("keeps held-out entities and held-out facts (both directions) out of training", function()
    local cfg = { seed = 1, data = { source = "wordnet", pos = { "verb" }, limit = 400 }, heldout = 0.1, heldout_triples = 0.2,
      vocab_size = 600, model = { roots = 16, leaves = 2 }, copies = 2 }
    local d = gm.experiment.prepare(cfg)
    local held, trained, pairs_in_training = {}, {}, {}
    local function pair(t) return t.head < t.tail and t.head .. "|" .. t.tail or t.tail .. "|" .. t.head end
    for _, r in ipairs(d.heldout) do held[r.entity] = true end
    for _, r in ipairs(d.train) do
      trained[r.entity] = true
      for _, t in ipairs(r.triples) do
        pairs_in_training[pair(t)] = true
        assert.is_nil(held[t.tail_id], "a training triple points into a held-out entity")
        assert.is_nil(held[t.head_id], "a training triple starts at a held-out entity")
      end
    end
    assert.is_true(#d.heldout > 10 and #d.heldout_facts > 10)
    for key in pairs(held) do assert.is_nil(trained[key]) end
    local facts = 0
    for _, r in ipairs(d.heldout_facts) do
      assert.is_true(trained[r.entity]) -- a held-out fact's text is seen in training
      for _, t in ipairs(r.triples) do
        assert.is_nil(pairs_in_training[pair(t)], "held-out fact in training: " .. pair(t))
        facts = facts + 1
      end
    end
    assert.is_true(facts > 10)
  end)
end)

describe("experiment.prepare's split of a dataset with sequential ids", function()
  it("holds out about the share of entities asked (ANAT:0001..0034 are not clustered by the hash)", function()
    local counts = {}
    for _, share in ipairs { 0.1, 0.5 } do
      local cfg = gm.experiment.config.check({ data = { dir = "experiments/data/tiny" }, heldout = share, vocab_size = 300,
        model = { roots = 64, leaves = 4 }, steps = 1, batch = 1, lr = 1 }, "t")
      local d = gm.experiment.prepare(cfg)
      counts[#counts + 1] = d.heldout_entities
      for _, r in ipairs(d.heldout) do
        for _, t in ipairs(r.triples) do assert.is_true(t.head_id ~= nil and t.tail_id ~= nil) end
      end
    end
    assert.is_true(counts[1] >= 2 and counts[1] <= 6, "10%: " .. counts[1] .. " of 34")
    assert.is_true(counts[2] >= 12 and counts[2] <= 22, "50%: " .. counts[2] .. " of 34")
  end)
end)

describe("experiment.prepare with the official text pipeline", function()
  it("tokenises with a BERT vocab.txt, packs chunks and masks them with SBO targets", function()
    local cfg = gm.experiment.config.check({ data = { source = "wordnet", pos = { "verb" }, limit = 200 }, heldout = 0.1,
      bert_vocab = "spec/fixtures/bert/vocab.txt", packing = "chunk", model = { roots = 16, leaves = 3 },
      steps = 1, batch = 4, lr = 1e-3 }, "test")
    local d = gm.experiment.prepare(cfg)
    assert.is_true(d.tok.bert)
    assert.equal(d.tok:size(), d.mask_opts.vocab)
    assert.is_true(#d.train_seqs > 4)
    local full = 0
    for _, packed in ipairs(d.train_seqs) do
      local s = gm.data.corpus.unpack(packed)
      local used = 0
      for r = 1, 16 do used = used + s.valid[r] end
      if used == 16 then full = full + 1 end
    end
    assert.equal(#d.train_seqs - 1, full) -- only the last chunk is padded
    gm.manual_seed(1)
    local b = gm.data.masking.mask(gm.data.corpus.batch(d.train_seqs, 1, 4), d.mask_opts)
    assert.is_true(#b.labels.sbo.offset > 0)
    assert.equal(#b.labels.roots.positions, #b.labels.sbo.offset)
  end)
end)
