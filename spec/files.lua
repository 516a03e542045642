-- files.lua — what specs that touch files and processes share: read and write a whole file, a
-- fresh temporary path, and a shell command's output with its exit code.
local M = {}

function M.read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
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
