-- machine.lua — the CPU a figure was measured on, as a result or a printed reason names it:
-- graphmert's figures depend on the CPU, which changes between machines, so each one says which.
--   machine.cpu() → "AMD EPYC (family 26, model 2; avx2, fma, avx512f, avx512_bf16)"
--   machine.cpu_name() → "AMD EPYC" (the model name alone; "unknown CPU" off Linux)
local M = {}

local FEATURES = { "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile" }

local function read_cpuinfo()
  local info = { name = "unknown CPU", flags = "", family = "?", model = "?" }
  local f = io.open("/proc/cpuinfo")
  if not f then return info end
  for line in f:lines() do
    if line == "" then break end -- the first processor is enough
    info.name = line:match("^model name%s*:%s*(.-)%s*$") or info.name
    info.family = line:match("^cpu family%s*:%s*(%d+)") or info.family
    info.model = line:match("^model%s*:%s*(%d+)") or info.model
    info.flags = line:match("^flags%s*:%s*(.*)$") or info.flags
  end
  f:close()
  return info
end

function M.cpu_name() return read_cpuinfo().name end

function M.cpu()
  local info, simd = read_cpuinfo(), {}
  for _, feature in ipairs(FEATURES) do
    if (" " .. info.flags .. " "):find(" " .. feature .. " ", 1, true) then simd[#simd + 1] = feature end
  end
  return string.format("%s (family %s, model %s; %s)", info.name, info.family, info.model, table.concat(simd, ", "))
end

return M
