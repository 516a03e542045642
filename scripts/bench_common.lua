-- bench_common.lua — what the benchmark scripts share: the median of timings, and running the
-- PyTorch twin of a benchmark (/usr/bin/python3 from Debian's python3-torch).
local M = {}

function M.median(xs)
  table.sort(xs)
  return xs[(#xs + 1) // 2]
end

-- Runs scripts/<script> with the arguments and returns its whole output, or nil when python3 or
-- torch is missing (its errors are dropped: the benchmark then reports "not available").
function M.torch_output(script, ...)
  local args = {}
  for i, v in ipairs { ... } do args[i] = tostring(v) end
  local p = io.popen(string.format("/usr/bin/python3 scripts/%s %s 2>/dev/null", script, table.concat(args, " ")))
  if not p then return nil end
  local out = p:read("a")
  p:close()
  return out ~= "" and out or nil
end

-- The medians a twin prints as "torch forward <s> backward <s>", as numbers (nil, nil without torch).
function M.torch_forward_backward(script, ...)
  local out = M.torch_output(script, ...)
  local tf, tb = (out or ""):match("torch forward ([%d.]+) backward ([%d.]+)")
  return tonumber(tf), tonumber(tb)
end

return M
