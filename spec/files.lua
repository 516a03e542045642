-- files.lua — what specs that touch files and processes share: read and write a whole file, its
-- lines, a fresh temporary path, a shell command's output with its exit code, and the command that
-- starts a stock lua5.4.
local M = {}

-- Under `make asan` (which names the sanitizer runtimes in GRAPHMERT_ASAN_PRELOAD) a stock lua5.4
-- needs them preloaded to open core.so, and checks no leaks: the interpreter's own are not ours.
M.asan = os.getenv("GRAPHMERT_ASAN_PRELOAD")
-- a stock lua5.4, as the start of a shell command
M.lua = (M.asan and ("ASAN_OPTIONS=detect_leaks=0 LD_PRELOAD='" .. M.asan .. "' ") or "") .. "lua5.4"
-- the same with this tree's modules on its paths, as the specs' "default" host has them
M.lua_here = "env LUA_PATH='./lua/?.lua;./lua/?/init.lua;;' LUA_CPATH='./build/?.so;;' " .. M.lua

function M.read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- a file's lines, as a list
function M.lines(path)
  local out = {}
  for line in io.lines(path) do out[#out + 1] = line end
  return out
end

function M.write(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

-- a path nothing exists at yet
function M.tmpname()
  local p = os.tmpname()
  os.remove(p)
  return p
end

-- runs a shell command with stderr joined to stdout → output, exit code
function M.run(cmd)
  local p = io.popen(cmd .. " 2>&1")
  local out = p:read("a")
  local ok, _, code = p:close()
  return out, ok and 0 or code
end

return M
