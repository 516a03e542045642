-- torch_to_safetensors.lua — a PyTorch checkpoint (pytorch_model.bin: torch.save's zip format)
-- as a safetensors file. The checkpoint is read by gm.torch_load, which runs no pickled code; the
-- output is written atomically (temporary file, fsync, rename), every tensor as F32, with the
-- metadata format = "pt" that Hugging Face's loaders expect.
--   graphmert scripts/tools/torch_to_safetensors.lua in.bin out.safetensors [--skip-non-float]
-- --skip-non-float leaves integer and bool buffers out (they are listed) instead of failing.
local gm = require "graphmert"

local usage = "usage: graphmert scripts/tools/torch_to_safetensors.lua in.bin out.safetensors [--skip-non-float]\n"
local input, output, flag = arg[1], arg[2], arg[3]
if not input or not output or (flag and flag ~= "--skip-non-float") or arg[4] then
  io.stderr:write(usage)
  os.exit(2)
end

local ok, err = pcall(function()
  local tensors, skipped = gm.torch_load(input, { skip_non_float = flag ~= nil })
  local names = {}
  for name in pairs(skipped) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do print(string.format("skipped %s (%s)", name, skipped[name])) end
  gm.safetensors.save(output, tensors, { format = "pt" })
  local count = 0
  for _ in pairs(tensors) do count = count + 1 end
  print(string.format("wrote %d tensors to %s", count, output))
end)
if not ok then
  io.stderr:write("torch_to_safetensors: ", tostring(err), "\n")
  os.exit(1)
end
