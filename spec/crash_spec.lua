-- Crash safety: a training run killed with SIGKILL at random moments (checkpoints are written
-- every step, so many kills land inside a write) always leaves a complete checkpoint — the old
-- one or the new one — and resumes from it.
local gm = require "graphmert"

local function sh(cmd)
  local p = io.popen(cmd .. " 2>&1")
  local out = p:read("a")
  return p:close(), out
end

local function sleep(seconds) os.execute(string.format("sleep %.3f", seconds)) end

-- the tensor names of a checkpoint, sorted, after a full structural load
local function contents(path)
  local tensors, meta = gm.safetensors.load(path)
  local names = {}
  for name in pairs(tensors) do names[#names + 1] = name end
  table.sort(names)
  return table.concat(names, ","), tonumber(meta.step)
end

describe("a training run killed with SIGKILL", function()
  it("leaves the old or the new complete checkpoint, 20 times, and resumes from it", function()
    local dir = os.tmpname()
    os.remove(dir)
    local config = dir .. ".config.lua"
    local f = assert(io.open(config, "w"))
    f:write([[return { seed = 4, data = { source = "wordnet", pos = { "verb" }, limit = 200 }, heldout = 0.1, vocab_size = 600,
      model = { roots = 16, leaves = 2, hidden = 32, layers = 1, heads = 2, ffn = 64 },
      steps = 100000, batch = 4, lr = 1e-3, min_lr = 1e-5, warmup = 2, weight_decay = 0.01, clip = 1,
      eval_every = 1000000, checkpoint_every = 1, baseline = false }]])
    f:close()
    local ckpt = dir .. "/checkpoint.safetensors"
    local cmd = "GRAPHMERT_NUM_THREADS=1 ./build/bin/graphmert experiments/train.lua --config " .. config .. " --out " .. dir
    math.randomseed(20261122)
    local names, last_step, kills_with_checkpoint = nil, 0, 0
    for _ = 1, 20 do
      local have = io.open(ckpt) ~= nil
      local p = io.popen("(" .. cmd .. (have and " --resume" or "") .. " >/dev/null 2>&1 & echo $!)")
      local pid = p:read("l")
      p:close()
      sleep(0.3 + math.random() * 0.6)
      os.execute("kill -9 " .. pid .. " 2>/dev/null; while kill -0 " .. pid .. " 2>/dev/null; do sleep 0.01; done")
      if io.open(ckpt) then
        local ok, got, step = pcall(contents, ckpt)
        assert.is_true(ok, tostring(got))
        names = names or got
        assert.equals(names, got) -- complete: every tensor of the model and the optimizer
        assert.is_true(step >= last_step, "the checkpoint went back from step " .. last_step .. " to " .. step)
        last_step = step
        kills_with_checkpoint = kills_with_checkpoint + 1
      end
    end
    assert.is_true(kills_with_checkpoint >= 15, "only " .. kills_with_checkpoint .. " kills came after a first checkpoint")
    local ok, out = sh(cmd .. " --resume --steps " .. (last_step + 3))
    assert.is_true(ok, out)
    assert.matches("resumed at step " .. (last_step + 1), out)
    os.execute("rm -rf " .. dir .. " " .. config)
  end)
end)
