-- safetensors checkpoints: round trip, an independent reader, a PyTorch-written file, atomic
-- writes and every kind of damage.
local gm = require "graphmert"
local st = require "graphmert.safetensors"
local fixture = require "spec.fixture"
local cjson = require "cjson"

local function tmpfile()
  local p = os.tmpname()
  os.remove(p)
  return p
end

local files = require "spec.files"
local read, write = files.read, files.write

-- a new empty folder (the caller removes it)
local function scratch_dir()
  local dir = tmpfile()
  os.execute("mkdir -p " .. dir)
  return dir
end

describe("safetensors", function()
  it("round-trips tensors of every rank and the metadata", function()
    local path = tmpfile()
    local t = { ["a.weight"] = gm.randn(3, 4), ["a.bias"] = gm.randn(4), scalar = gm.tensor(2.5),
      empty = gm.zeros(0, 3), cube = gm.randn(2, 2, 2) }
    st.save(path, t, { step = "7", note = 'quotes " and \\ survive' })
    local back, meta = st.load(path)
    for name, x in pairs(t) do
      assert.same(x:shape(), back[name]:shape())
      assert.tensor_near(x, back[name], 0, 0)
    end
    assert.same({ step = "7", note = 'quotes " and \\ survive' }, meta)
    os.remove(path)
  end)

  it("is read by an independent reader (header length, JSON, offsets, little-endian floats)", function()
    local path = tmpfile()
    st.save(path, { w = gm.tensor { { 1, 2 }, { 3, 4.5 } } })
    local data = read(path)
    local n = string.unpack("<I8", data)
    assert.equal(0, n % 8)
    local header = cjson.decode(data:sub(9, 8 + n))
    assert.same({ 2, 2 }, header.w.shape)
    assert.equal("F32", header.w.dtype)
    local b = header.w.data_offsets[1]
    local values = { string.unpack("<ffff", data, 9 + n + b) }
    assert.same({ 1, 2, 3, 4.5 }, { values[1], values[2], values[3], values[4] })
    os.remove(path)
  end)

  it("loads a state dict written from PyTorch into a module", function()
    local tensors, meta = st.load("spec/fixtures/torch_state_dict.safetensors")
    local expected = fixture.load("spec/fixtures/torch_state_dict.json")
    assert.equal("pt", meta.format)
    local model = gm.nn.Sequential { gm.nn.Linear(3, 2) }
    model:load_state_dict({ ["0.weight"] = tensors["0.weight"], ["0.bias"] = tensors["0.bias"] })
    assert.tensor_near(expected["0.weight"].data, model["0"].weight, 0, 0)
    assert.tensor_near(expected["1.weight"].data, tensors["1.weight"], 0, 0)
  end)

  it("writes atomically: a failed save leaves the old file whole", function()
    local path = tmpfile()
    st.save(path, { x = gm.ones(4) })
    local before = read(path)
    assert.error_matches(function() st.save("/nonexistent-dir/x.safetensors", { x = gm.ones(1) }) end, "save:")
    local ok = gm.write_atomic(path .. "/impossible", { "x" })
    assert.is_nil(ok)
    assert.equal(before, read(path))
    os.remove(path)
  end)

  it("raises clear errors on truncation and on every kind of bad header", function()
    local path = tmpfile()
    st.save(path, { x = gm.ones(4), y = gm.ones(2) })
    local good = read(path)
    local n = string.unpack("<I8", good)
    local header = good:sub(9, 8 + n)
    local body = good:sub(9 + n)
    local function with_header(h)
      h = h .. string.rep(" ", (8 - #h % 8) % 8)
      return string.pack("<I8", #h) .. h .. body
    end
    local cases = {
      { good:sub(1, 5), "truncated: no header length" },
      { good:sub(1, #good - 3), "y: data_offsets %[16, 24%] outside the 21 data bytes" },
      { string.pack("<I8", 1e12) .. header, "header length" },
      { with_header("[1, 2]"), "not a JSON object" },
      { with_header("{not json"), "not a JSON object" },
      { with_header(header:gsub("F32", "I8", 1)), "dtype I8 is not supported" },
      { with_header(header:gsub('"shape":%[4%]', '"shape":[5]', 1)), "bytes for shape %[5%]" },
      { with_header(header:gsub('"shape":%[4%]', '"shape":[-4]', 1)), "shape is not a list of sizes" },
      { with_header(header:gsub('"data_offsets":%[0,16%]', '"data_offsets":[8,24]', 1)), "overlap" },
      { with_header('{"x":{"dtype":"F32","shape":[1]}}'), "no data_offsets" },
    }
    for _, c in ipairs(cases) do
      write(path, c[1])
      assert.error_matches(function() st.load(path) end, c[2])
    end
    os.remove(path)
    assert.error_matches(function() st.load(path) end, "load: .*No such file")
  end)
end)

describe("gm.write_atomic", function()
  it("writes several files as one: a failure leaves every old file whole and no temporary file", function()
    local dir = scratch_dir()
    write(dir .. "/a.jsonl", "old a")
    write(dir .. "/a.tsv", "old tsv")
    assert.is_true(gm.write_atomic { { dir .. "/a.jsonl", { "new ", "a" } }, { dir .. "/a.tsv", { "new tsv" } } })
    assert.equal("new a", read(dir .. "/a.jsonl"))
    assert.equal("new tsv", read(dir .. "/a.tsv"))
    -- the second file cannot be written: the first is not replaced either
    local ok, err = gm.write_atomic { { dir .. "/a.jsonl", { "newer" } }, { dir .. "/missing/a.tsv", { "x" } } }
    assert.is_nil(ok)
    assert.matches("missing/a.tsv.tmp.%d+: No such file or directory", err)
    assert.equal("new a", read(dir .. "/a.jsonl"))
    local listing = files.run("ls -A " .. dir)
    assert.equal("a.jsonl\na.tsv\n", listing)
    os.execute("rm -rf " .. dir)
  end)

  it("lets SIGTERM take effect only once the files are complete, wherever it lands", function()
    local dir = scratch_dir()
    write(dir .. "/w.lua", [[
local gm = require "graphmert"
local t = gm.ones(32 * 2 ^ 20)
io.write("ready\n") io.flush()
gm.write_atomic { { arg[1] .. "/big", { t } }, { arg[1] .. "/small", { "done" } } }
io.write("finished\n")
]])
    for _, delay in ipairs { "0", "0.05", "0.15", "0.3" } do
      os.execute("rm -f " .. dir .. "/big " .. dir .. "/small " .. dir .. "/log")
      files.run(string.format("./build/bin/graphmert %s/w.lua %s > %s/log & pid=$!; " ..
        "while ! grep -q ready %s/log 2>/dev/null; do sleep 0.01; done; sleep %s; kill -TERM $pid; wait $pid",
        dir, dir, dir, dir, delay))
      local listing = files.run("ls -A " .. dir)
      assert.is_nil(listing:find(".tmp.", 1, true), "a temporary file is left: " .. listing)
      local big = io.open(dir .. "/big", "rb")
      if big then -- written: whole, and its pair too
        assert.equal(128 * 2 ^ 20, big:seek("end"))
        big:close()
        assert.equal("done", read(dir .. "/small"))
      else
        assert.is_nil(io.open(dir .. "/small"), "half the pair")
      end
    end
    os.execute("rm -rf " .. dir)
  end)
end)

describe("gm.atomic_writer", function()
  it("writes files in steps and puts them in place as one at commit; a writer closed uncommitted leaves the old files", function()
    local dir = scratch_dir()
    write(dir .. "/a.jsonl", "old a")
    local big = ("0123456789abcdef"):rep(10000) -- past the writer's buffer
    do
      local w <close> = gm.atomic_writer { dir .. "/a.jsonl", dir .. "/a.tsv" }
      for i = 1, 3 do w:write(1, "line ", tostring(i), "\n") end
      w:write(2, big)
      w:write(2, "end")
      assert.equal("old a", read(dir .. "/a.jsonl")) -- nothing replaced before the commit
      assert.is_nil(io.open(dir .. "/a.tsv"))
      assert.is_true(w:commit())
    end
    assert.equal("line 1\nline 2\nline 3\n", read(dir .. "/a.jsonl"))
    assert.equal(big .. "end", read(dir .. "/a.tsv"))
    do -- an error while writing: the <close> removes the temporary files
      local ok = pcall(function()
        local w <close> = gm.atomic_writer { dir .. "/a.jsonl", dir .. "/a.tsv" }
        w:write(1, "half")
        error("stopped")
      end)
      assert.is_false(ok)
    end
    assert.equal("line 1\nline 2\nline 3\n", read(dir .. "/a.jsonl"))
    -- a file that cannot be made: the ones made before it are removed too
    assert.error_matches(function() gm.atomic_writer { dir .. "/b", dir .. "/missing/c" } end, "missing/c.tmp.%d+: No such file")
    assert.equal("a.jsonl\na.tsv\n", files.run("ls -A " .. dir))
    os.execute("rm -rf " .. dir)
  end)

  it("refuses to commit a file a write to failed (a file size limit), and leaves nothing", function()
    local dir = scratch_dir()
    write(dir .. "/w.lua", [[
local gm = require "graphmert"
local w = gm.atomic_writer { arg[1] .. "/out" }
print(pcall(w.write, w, 1, ("x"):rep(300000)))
print(pcall(w.write, w, 1, "y"))
print(w:commit())
]])
    -- (the shell ignores SIGXFSZ, so that the write past the limit fails with EFBIG instead)
    local out = files.run(string.format("sh -c \"trap '' XFSZ; ulimit -f 64; ./build/bin/graphmert %s/w.lua %s\"", dir, dir))
    assert.matches("false\t[^\n]*out%.tmp%.%d+: File too large\n", out)
    assert.matches("false\t[^\n]*an earlier write failed\n", out)
    assert.matches("nil\t[^\n]*out: not committed: a write to it failed\n", out)
    assert.equal("w.lua\n", files.run("ls -A " .. dir))
    os.execute("rm -rf " .. dir)
  end)
end)
