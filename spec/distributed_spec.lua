-- gm.distributed and data-parallel training under Open MPI (mpirun -np 2 --oversubscribe):
-- collectives in place, 2 ranks train like 1 process, resume with another number of ranks, a
-- failing rank ends the job. Skipped (pending) when the build has no MPI or mpirun is missing.
local gm = require "graphmert"
local dist = gm.distributed

local bin = "./build/bin/graphmert"
local config = "spec/fixtures/distributed_config.lua"
local files = require "spec.files"
local run, lua_host = files.run, files.lua_here
-- root in a container: Open MPI refuses to run as root without these. Under `make asan` the
-- ranks do not check for leaks (MPI_Init's are not ours).
local mpirun = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 " ..
  (files.asan and "ASAN_OPTIONS=detect_leaks=0 " or "") .. "mpirun -np "

local function losses(path)
  local out = {}
  for line in io.lines(path) do
    local step, loss = line:match("^(%d+),([^,]+),")
    if step then out[tonumber(step)] = tonumber(loss) end
  end
  return out
end

local function assert_close(want, got, first, last)
  for step = first, last do
    assert(got[step], "no loss logged at step " .. step)
    local rel = math.abs(got[step] - want[step]) / math.abs(want[step])
    assert(rel <= 1e-6, string.format("step %d: loss %.6f, one process %.6f", step, got[step], want[step]))
  end
end

local function train(ranks, out, extra)
  return run(string.format("%s%d %s experiments/train.lua --config %s --out %s %s", mpirun, ranks, bin, config, out,
    extra or ""))
end

describe("gm.distributed in one process", function()
  it("is a world of one rank whose collectives leave values as they are", function()
    assert.equal(0, dist.rank())
    assert.equal(1, dist.size())
    assert.is_true(dist.is_main())
    local t = { gm.tensor { 1, 2, 3 }, gm.tensor(4) }
    dist.allreduce(t, { op = "mean" })
    assert.same({ 1, 2, 3 }, t[1]:totable())
    dist.allreduce(t)
    assert.equal(4, t[2]:item())
    dist.broadcast(t, 0)
    assert.same({ 1, 2, 3 }, t[1]:totable())
    dist.barrier()
  end)

  it("rejects bad arguments naming them", function()
    assert.has_error(function() dist.allreduce(5) end, "bad argument #1 to 'allreduce' (a list of tensors expected, got number)")
    assert.error_matches(function() dist.allreduce({ gm.zeros(1), "x" }) end, "element 2 is a string, not a tensor")
    assert.error_matches(function() dist.allreduce({}, { op = "max" }) end, "op")
    assert.error_matches(function() dist.broadcast({}, 1) end, "root is not a rank")
  end)
end)

local have_mpi = dist.compiled() and os.execute("command -v mpirun > /dev/null 2>&1")
local describe_mpi = have_mpi and describe or function(name)
  pending(name .. ": skipped, this build has no MPI or mpirun is missing")
end

describe_mpi("gm.distributed under mpirun -np 2", function()
  local dir
  setup(function() dir = os.tmpname(); os.remove(dir); os.execute("mkdir -p " .. dir) end)
  teardown(function() os.execute("rm -rf " .. dir) end)

  -- a fixture on 2 ranks from both hosts, each rank printing "rank r of 2: <says>" → the outputs
  local function on_two_ranks(fixture, says)
    local outs = {}
    for _, host in ipairs { bin, lua_host } do
      local out, code = run(mpirun .. "2 " .. host .. " spec/fixtures/" .. fixture)
      assert.equal(0, code, out)
      assert.matches("rank 0 of 2: " .. says, out)
      assert.matches("rank 1 of 2: " .. says, out)
      outs[#outs + 1] = out
    end
    return outs
  end

  it("all-reduces and broadcasts lists in place (empty, a scalar, many shapes, larger than a bucket), from both hosts", function()
    on_two_ranks("distributed_collectives.lua", "ok")
  end)

  it("finalizes MPI at exit for a script that does not, from both hosts", function()
    for _, out in ipairs(on_two_ranks("distributed_no_finalize.lua", "done")) do assert.is_nil(out:find("improperly"), out) end
  end)

  it("trains 20 steps on 2 ranks with one process's losses, and resumes with 1 or 2 ranks", function()
    local out, code = train(1, dir .. "/one")
    assert.equal(0, code, out)
    local want = losses(dir .. "/one/log.csv")
    out, code = train(2, dir .. "/two")
    assert.equal(0, code, out)
    assert_close(want, losses(dir .. "/two/log.csv"), 1, 20)
    -- a 2-rank run stopped in step 11 by rank 0, the one that writes (so its checkpoint of step 10
    -- is done), resumed with 1 and 2 ranks
    out, code = run("GRAPHMERT_SPEC_FAIL=0:11 " .. mpirun .. "2 -x GRAPHMERT_SPEC_FAIL " .. bin ..
      " spec/fixtures/distributed_train_failing.lua --config " .. config .. " --out " .. dir .. "/stopped")
    assert.are_not.equal(0, code)
    for _, ranks in ipairs { 1, 2 } do
      local resumed = dir .. "/resumed" .. ranks
      os.execute(string.format("rm -rf %s && cp -r %s/stopped %s", resumed, dir, resumed))
      out, code = train(ranks, resumed, "--resume")
      assert.equal(0, code, out)
      assert.matches("resumed at step 11", out)
      assert_close(want, losses(resumed .. "/log.csv"), 1, 20)
    end
  end)

  it("trains through an epoch's last batch of one row, which leaves rank 0 without rows", function()
    -- the fixture's 281 training sequences in batches of 4: step 71 has one
    local text = assert(io.open(config)):read("a"):gsub("steps = 20, batch = 6,", "steps = 72, batch = 4,")
      :gsub("checkpoint_every = 2,", "checkpoint_every = 100,")
    local short = dir .. "/short_config.lua"
    assert(io.open(short, "w")):write(text):close()
    local want, got = {}, {}
    for ranks, curve in pairs { want, got } do
      local out, code = run(string.format("%s%d %s experiments/train.lua --config %s --out %s/short%d", mpirun, ranks, bin,
        short, dir, ranks))
      assert.equal(0, code, out)
      assert.matches("281 training sequences", out)
      for step, loss in pairs(losses(string.format("%s/short%d/log.csv", dir, ranks))) do curve[step] = loss end
    end
    assert_close(want, got, 1, 72)
  end)

  it("ends the job when a rank raises, naming the rank, with the last checkpoint whole", function()
    local out, code = run("GRAPHMERT_SPEC_FAIL=1:5 " .. mpirun .. "2 -x GRAPHMERT_SPEC_FAIL " .. bin ..
      " spec/fixtures/distributed_train_failing.lua --config " .. config .. " --out " .. dir .. "/failed")
    assert.are_not.equal(0, code)
    assert.matches("rank 1: [^\n]*spec failure at step 5", out)
    -- rank 0 may be ended while writing step 4's checkpoint: then step 2's is on disk
    gm.manual_seed(1)
    local cfg = gm.experiment.config.load(config)
    local d = gm.experiment.prepare(cfg, gm.data.tokenizer.load(dir .. "/failed/tokenizer.txt"))
    local model = gm.experiment.model(d, cfg)
    local opt = gm.optim.adamw(model:named_parameters(), { lr = cfg.lr })
    local step = gm.checkpoint.load(dir .. "/failed/checkpoint.safetensors", { model = model, optimizer = opt })
    assert.is_true(step == 4 or step == 2, "checkpoint of step " .. step)
  end)
end)
