-- gm.torch_load: PyTorch checkpoints written by torch.save (scripts/refs/gen_torch_fixtures.py)
-- load to exactly the float32 values torch gives, and hostile or broken files end in an error
-- naming the file and the problem, with nothing run.
local gm = require "graphmert"
local st = require "graphmert.safetensors"

local dir = "spec/fixtures/torch/"
local MARKER = "/tmp/graphmert_torch_load_marker" -- what the hostile pickles would create

local files = require "spec.files"
local read, write = files.read, files.write

local tmpfile = files.tmpname

local function keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks)
  return ks
end

-- every tensor equal bit for bit (so -0, infinities and subnormals count) and in shape
local function assert_same_tensors(expected, got)
  assert.same(keys(expected), keys(got))
  for name, e in pairs(expected) do
    assert.same(e:shape(), got[name]:shape(), name)
    assert.is_true(e:to_bytes() == got[name]:to_bytes(), name .. " differs")
  end
end

local function fails_with(path, pattern, opts)
  local ok, err = pcall(gm.torch_load, path, opts)
  assert.is_false(ok, path .. " loaded")
  assert.matches("torch_load: " .. path:gsub("%p", "%%%0") .. ": ", err, 1)
  assert.matches(pattern, err)
  return err
end

describe("gm.torch_load", function()
  it("reads float32, float64, float16 and bfloat16 storages as the float32 values torch gives", function()
    local got = gm.torch_load(dir .. "dtypes.pt")
    assert_same_tensors(st.load(dir .. "dtypes.expected.safetensors"), got)
    assert.same({ 2, 3 }, got.f32:shape())
    local f16 = got.f16:totable()
    assert.equal(65504, f16[5])
    assert.equal(math.huge, f16[10])
    assert.equal(2 ^ -24, f16[7]) -- 6e-8 rounds to the smallest float16 subnormal
    assert.equal(-math.huge, 1 / f16[2]) -- -0 keeps its sign
  end)

  it("honours offsets and strides: transposed, shared-storage, sliced and permuted views", function()
    local got = gm.torch_load(dir .. "views.pt")
    assert_same_tensors(st.load(dir .. "views.expected.safetensors"), got)
    -- base = arange(20) / 4; head = base[2:6], tail = base[8:20].view(3, 4), every_other = base[1::2]
    assert.same({ 0.5, 0.75, 1, 1.25 }, got.shared_head:totable())
    assert.same({ { 2, 2.25, 2.5, 2.75 }, { 3, 3.25, 3.5, 3.75 }, { 4, 4.25, 4.5, 4.75 } }, got.shared_tail:totable())
    assert.same({ 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3.25, 3.75, 4.25, 4.75 }, got.every_other:totable())
    assert.same({ 5, 3 }, got.transposed:shape())
    assert.same({ 4, 2, 3 }, got.cube_permuted:shape())
    assert.same({}, got.scalar:shape())
    assert.same({ 0, 3 }, got.empty:shape())
  end)

  it("reads an archive whose directory is in ZIP64 form, as torch.save writes past 4 GiB", function()
    assert_same_tensors(gm.torch_load(dir .. "views.pt"), gm.torch_load(dir .. "views_zip64.pt"))
  end)

  it("reads a module's state_dict() (an OrderedDict with _metadata) and keeps a tied pair equal", function()
    local got = gm.torch_load(dir .. "views.pt")
    for _, name in ipairs { "proj.weight", "proj.bias", "norm.weight", "norm.bias" } do assert.is_not_nil(got[name], name) end
    assert.is_nil(got._metadata)
    assert.is_true(got.tied_a:to_bytes() == got.tied_b:to_bytes())
    -- one tensor under both names, as torch.load gives one storage: writing one writes the other
    got.tied_a:fill_(3)
    assert.same({ { 3, 3 }, { 3, 3 } }, got.tied_b:totable())
    got.shared_head:fill_(9) -- views of one storage at different offsets stay separate tensors
    assert.same({ 2, 2.25, 2.5, 2.75 }, got.shared_tail:totable()[1])
  end)

  it("reads a checkpoint with the official GraphMERT names, written as save_pretrained(safe_serialization=False)", function()
    local got = gm.torch_load(dir .. "graphmert.bin")
    assert_same_tensors(st.load(dir .. "graphmert.expected.safetensors"), got)
    assert.same({ 4, 4 }, got["graphmert.graph_encoder.layers.0.self_attn.q_proj.weight"]:shape())
    assert.same({ 11, 4 }, got["graphmert.graph_encoder.graph_node_feature.atom_encoder.weight"]:shape())
    assert.is_nil(got["lm_head.decoder.weight"]) -- tied to the embedding, left out as HF does
  end)

  it("refuses integer and bool tensors by name and dtype, or leaves them out when asked", function()
    fails_with(dir .. "ints.pt", "position_ids has dtype int64; only float32")
    local got, skipped = gm.torch_load(dir .. "ints.pt", { skip_non_float = true })
    assert_same_tensors(st.load(dir .. "ints.expected.safetensors"), got)
    assert.same({ position_ids = "int64", int32 = "int32", int16 = "int16", int8 = "int8", uint8 = "uint8",
      mask = "bool" }, skipped)
    local _, none = gm.torch_load(dir .. "dtypes.pt", { skip_non_float = false })
    assert.same({}, none)
  end)

  it("checks its arguments", function()
    assert.has_error(function() gm.torch_load() end)
    assert.error_matches(function() gm.torch_load(dir .. "dtypes.pt", { skip = true }) end, "unknown option skip")
    assert.error_matches(function() gm.torch_load(dir .. "dtypes.pt", { skip_non_float = 1 }) end,
      "skip_non_float must be a boolean")
    fails_with(dir .. "no_such_file.pt", "No such file")
    fails_with("spec/fixtures/torch", "not a regular file")
  end)
end)

describe("gm.torch_load on hostile files", function()
  -- each pickle is a real state dict with one more entry whose unpickling runs a command
  -- (the generator checks that torch.load does run it); here nothing may run
  for file, callee in pairs {
    ["os_system.pt"] = "posix%.system", -- how pickle spells os.system on Linux
    ["os_system_by_hand.pt"] = "os%.system",
    -- protocol 2 writes Python 2's module names, which Python 3 maps back on loading
    ["builtins_eval.pt"] = "__builtin__%.eval",
    ["subprocess_popen.pt"] = "commands%.Popen",
  } do
    it("refuses " .. file .. " by the global's name and runs nothing", function()
      os.remove(MARKER)
      fails_with(dir .. "bad/" .. file, "refusing to load: pickle calls " .. callee)
      assert.is_nil(io.open(MARKER), "the payload ran")
    end)
  end

  for file, pattern in pairs {
    ["truncated.pt"] = "not a zip archive %(no end%-of%-directory record; truncated%?%)",
    ["directory_past_end.pt"] = "central directory %(%d+ bytes at offset %d+%) runs past the end of the %d+%-byte file",
    ["short_storage.pt"] = "w: storage archive/data/0 holds 16 bytes, but its 16 float32 elements need 64",
    ["view_past_storage.pt"] = "w: size %[3%], stride %[1%] from offset 2 reach element 4 of a storage of 4",
    ["missing_storage.pt"] = "w: its storage archive/data/7 is missing",
    ["negative_stride.pt"] = "w: negative stride in %[%-1%]",
    ["huge_size.pt"] = "w: size %[1099511627776, 1048576%], stride %[1048576, 1%] from offset 0 reach element",
    ["huge_stride.pt"] = "w: size %[4%] with stride %[4611686018427387904%] overflows",
    ["deep_nesting.pt"] = "archive/data%.pkl: marks nested more than 64 deep",
    ["huge_memo.pt"] = "memo index 4294967280 past the limit",
    ["no_data_pkl.pt"] = "no <name>/data%.pkl in the zip archive",
    ["compressed.pt"] = "entry views/data%.pkl is compressed %(method 8%)",
    ["big_endian.pt"] = "byte order \"big\": only little%-endian",
    ["legacy.pt"] = "the format torch%.save wrote before PyTorch 1%.6",
    ["not_a_dict.pt"] = "the pickle holds a list, not a state dict",
  } do
    it("explains what is wrong with " .. file, function() fails_with(dir .. "bad/" .. file, pattern) end)
  end

  it("fails cleanly on every truncation of a good checkpoint", function()
    local data, path = read(dir .. "views.pt"), tmpfile()
    for len = 0, #data - 1, 61 do
      write(path, data:sub(1, len))
      fails_with(path, ".")
    end
    os.remove(path)
  end)

  it("refuses a global one letter away from the allowlist", function()
    -- the stored data.pkl patched in place (same length; the CRC is not checked)
    local data = read(dir .. "views.pt")
    local at = data:find("collections\nOrderedDict\n", 1, true)
    assert.is_not_nil(at)
    local path = tmpfile()
    write(path, data:sub(1, at - 1) .. "collections\nOrderedDicx\n" .. data:sub(at + 24))
    fails_with(path, "refusing to load: pickle calls collections%.OrderedDicx")
    os.remove(path)
  end)
end)

describe("safetensors F16 and BF16", function()
  it("load as the float32 values torch gives", function()
    local expected = st.load(dir .. "dtypes.expected.safetensors")
    local half = st.load(dir .. "half.safetensors")
    assert.same({ "bf16", "bf16_matrix", "f16", "f16_matrix" }, keys(half))
    for name, t in pairs(half) do
      assert.same(expected[name]:shape(), t:shape())
      assert.is_true(expected[name]:to_bytes() == t:to_bytes(), name)
    end
  end)
end)

describe("scripts/tools/torch_to_safetensors.lua", function()
  local function run(args)
    local p = io.popen("./build/bin/graphmert scripts/tools/torch_to_safetensors.lua " .. args .. " 2>&1")
    local out = p:read("a")
    local ok = p:close()
    return out, ok
  end

  it("converts a checkpoint to safetensors with the same values", function()
    local out_path = tmpfile()
    local out, ok = run(dir .. "graphmert.bin " .. out_path)
    assert.is_true(ok, out)
    assert.matches("wrote 40 tensors to", out)
    local tensors, meta = st.load(out_path)
    assert.equal("pt", meta.format)
    assert_same_tensors(st.load(dir .. "graphmert.expected.safetensors"), tensors)
    os.remove(out_path)
  end)

  it("fails without writing on a hostile file, and lists what it skips", function()
    local out_path = tmpfile()
    local out, ok = run(dir .. "bad/os_system.pt " .. out_path)
    assert.is_falsy(ok)
    assert.matches("refusing to load: pickle calls posix%.system", out)
    assert.is_nil(io.open(out_path))
    out, ok = run(dir .. "ints.pt " .. out_path .. " --skip-non-float")
    assert.is_true(ok, out)
    assert.matches("skipped position_ids %(int64%)", out)
    os.remove(out_path)
  end)
end)
