-- Hostile checkpoint folders (made by scripts/test/hostile_checkpoints.lua): each load, in a process of
-- its own, ends in under a second with an error naming the file and the problem (or loads, for a
-- Hugging Face cache whose links stay inside it), its peak RSS stays under 100 MB, a FIFO never
-- blocks it, and no file outside the folder is opened.
local files = require "spec.files"

local BIN = "./build/bin/graphmert"
local out = files.tmpname()
-- peak RSS is checked in ordinary builds; under `make asan` shadow memory adds its own
local MB_LIMIT = files.asan and math.huge or 100

-- runs `code` (Lua with gm and a local `dir` naming the hostile folders) in a fresh process, under
-- `timeout` and optionally strace (its trace in `trace`) → ok, message, seconds, peak MB, the output
local function probe(code, trace)
  local script = files.tmpname() .. ".lua"
  files.write(script, string.format([[
local gm = require "graphmert"
local dir = %q
local t = os.clock() -- (processor time: the work done, whatever else the machine runs meanwhile)
local ok, err = pcall(function() %s end)
local hwm = io.open("/proc/self/status"):read("a"):match("VmHWM:%%s*(%%d+)")
io.write("\n@@", tostring(ok), "\1", ok and "" or tostring(err), "\1", os.clock() - t, "\1", hwm / 1024, "\n")
]], out, code))
  -- LeakSanitizer cannot run under ptrace: leaks are not checked in a traced run
  local cmd = (trace and "ASAN_OPTIONS=detect_leaks=0 " or "") .. "timeout 10 " ..
    (trace and ("strace -f -qq -e trace=open,openat -o " .. trace .. " ") or "") .. BIN .. " " .. script
  local output = files.run(cmd)
  os.remove(script)
  local ok, msg, seconds, mb = output:match("@@(%a+)\1(.-)\1([^\1]+)\1([^\n]+)")
  assert(ok, "no result (hung or crashed?): " .. output)
  return ok == "true", msg, tonumber(seconds), tonumber(mb), output
end

local function from_pretrained(case) return string.format("gm.nn.GraphMERT.from_pretrained(dir .. '/%s')", case) end

describe("hostile checkpoint folders", function()
  setup(function()
    local output, code = files.run(BIN .. " scripts/test/hostile_checkpoints.lua " .. out)
    assert(code == 0, output)
  end)
  teardown(function() os.execute("rm -rf " .. out) end)

  local refused = {
    -- 1, 2: the tied-view table and stride-0 views
    { "stride0_1e9", "gm.torch_load(dir .. '/stride0_1e9/pytorch_model.bin')",
      "stride0_1e9/pytorch_model.bin: w: size %[1000000000%] %(1000000000 float32 elements%) is more than a file of %d+ bytes justifies" },
    { "stride0_16g", "gm.torch_load(dir .. '/stride0_16g/pytorch_model.bin')", "size %[32768, 32768, 4%] .* is more than a file" },
    -- 3: the config checked before the model is built
    { "config_only", from_pretrained "config_only", "config_only has no model.safetensors, pytorch_model.bin or sharded index" },
    { "heads_1e9", from_pretrained "heads_1e9", "num_attention_heads 1000000000 does not divide hidden_size 8" },
    { "declares_more", from_pretrained "declares_more", "declares a model of more than %d+ parameters, which the %d+ bytes of .*model.safetensors cannot hold" },
    { "layers_wrap", from_pretrained "layers_wrap", "layers_wrap/config.json declares a model of more than %d+ parameters" },
    { "ffn_wrap", from_pretrained "ffn_wrap", "ffn_wrap/config.json declares a model of more than %d+ parameters" },
    { "dropout_string", from_pretrained "dropout_string", "config.json: dropout must be a number in %[0, 1%), got \"x\"" },
    { "dropout_5", from_pretrained "dropout_5", "dropout must be a number in %[0, 1%), got 5" },
    { "sbo_string", from_pretrained "sbo_string", "mlm_sbo must be true or false, got \"no\"" },
    { "bin_not_zip", from_pretrained "bin_not_zip", "bin_not_zip/pytorch_model.bin: not a zip archive" },
    -- 4: special files
    { "loop config.json", from_pretrained "loop_config_json", "loop_config_json/config.json: Too many levels of symbolic links" },
    { "loop model.safetensors", from_pretrained "loop_model_safetensors", "loop_model_safetensors/model.safetensors: Too many levels of symbolic links" },
    { "dev_zero", from_pretrained "dev_zero", "dev_zero/model.safetensors is a device, not a regular file" },
    { "fifo config.json", from_pretrained "fifo_config_json", "fifo_config_json/config.json is a fifo, not a regular file" },
    { "fifo model.safetensors", from_pretrained "fifo_model_safetensors", "model.safetensors is a fifo, not a regular file" },
    { "fifo pytorch_model.bin", from_pretrained "fifo_pytorch_model_bin", "pytorch_model.bin is a fifo, not a regular file" },
    { "torch_load of a fifo", "gm.torch_load(dir .. '/fifo_pytorch_model_bin/pytorch_model.bin')", "a FIFO, not a regular file" },
    { "safetensors.load of a fifo", "gm.safetensors.load(dir .. '/fifo_model_safetensors/model.safetensors')", "a FIFO, not a regular file" },
    { "safetensors.load of /dev/zero", "gm.safetensors.load(dir .. '/dev_zero/model.safetensors')", "a device, not a regular file" },
    -- 5: lengths and shapes that once loaded wrong data or failed inside Lua
    { "negative_length", "gm.safetensors.load(dir .. '/negative_length/model.safetensors')",
      "negative_length/model.safetensors: the header length %(its first 8 bytes%) does not fit a file of %d+ bytes" },
    { "shape_1e30", "gm.safetensors.load(dir .. '/shape_1e30/model.safetensors')", "shape_1e30/model.safetensors: x: shape is not a list of sizes" },
    -- 7: shard names that leave the folder or name nothing
    { "shard ..", from_pretrained "shard_dotdot", "the shard of 'lm_head.bias' is not a file name in the folder" },
    { "shard .", from_pretrained "shard_dot", "the shard of 'lm_head.bias' is not a file name in the folder" },
    { "shard \"\"", from_pretrained "shard_empty", "the shard of 'lm_head.bias' is not a file name in the folder" },
  }
  for _, c in ipairs(refused) do
    it("refuses " .. c[1] .. " at once, with a clear error and little memory", function()
      local ok, msg, seconds, mb, output = probe(c[2])
      assert.is_false(ok, output)
      assert.matches(c[3], msg)
      assert.is_nil(msg:find("stack traceback"), msg)
      assert.is_true(seconds < 1, string.format("%.2f s", seconds))
      assert.is_true(mb < MB_LIMIT, string.format("%.0f MB", mb))
    end)
  end

  it("finds tied views among 40k entries crafted for one hash chain in under a second", function()
    local ok, msg, seconds, mb = probe([[
      local t = gm.torch_load(dir .. '/probe_chain/pytorch_model.bin')
      local n = 0
      for _, x in pairs(t) do n = n + 1; assert(x:item() == 1.5) end
      assert(n == 40000, n)]])
    assert.is_true(ok, msg)
    assert.is_true(seconds < 1, string.format("%.2f s", seconds))
    assert.is_true(mb < MB_LIMIT, string.format("%.0f MB", mb))
  end)

  it("never opens a linked file outside the folder", function()
    local trace = files.tmpname()
    local ok, msg = probe(from_pretrained "link_outside", trace)
    assert.is_false(ok)
    assert.matches("link_outside/model.safetensors links to a file outside .*link_outside %(copy the file into the folder", msg)
    local opened = files.read(trace)
    os.remove(trace)
    assert.matches("link_outside/config.json", opened) -- the trace does see the folder's own files
    assert.is_nil(opened:find("outside/model.safetensors\"", 1, true), "the linked file was opened")
    assert.is_nil(opened:find("link_outside/model.safetensors\"", 1, true), "the link was opened")
  end)

  it("loads a Hugging Face cache snapshot whose files link into its blobs", function()
    local ok, msg = probe([[
      local a = gm.nn.GraphMERT.from_pretrained(dir .. '/hf_cache/models--org--tiny/snapshots/0123abc')
      local b = gm.nn.GraphMERT.from_pretrained(dir .. '/outside')
      for name, t in pairs(a:state_dict()) do assert(t:to_bytes() == b:state_dict()[name]:to_bytes(), name) end]])
    assert.is_true(ok, msg)
  end)
end)
