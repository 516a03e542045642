-- folder.lua — files of a folder that came from elsewhere (a model downloaded, a run folder
-- copied): what is opened must be a regular file of that folder.
--
--   folder.member(dir, name, who) → path, size, or nil when there is no such file. A FIFO, a
--     device or a directory is an error, found without opening it (a FIFO would block, /dev/zero
--     would never end). A symbolic link is followed only to a file inside `dir` or, for a
--     Hugging Face cache snapshot (…/models--org--name/snapshots/<rev>/, whose files link to
--     ../../blobs/<hash>), inside that repository's blobs: a folder must not make us read
--     /etc/passwd. Errors start with `who`.
--   folder.need(dir, name, who) → path, size; a missing file is an error too.
--   folder.make(dir[, who]) → dir, made with its parents when missing; an error (starting with
--     `who`, if given) when something else has that name or a parent's (a file in the way), or it
--     cannot be made, saying why.
local gm = require "graphmert"

local M = {}

function M.member(dir, name, who)
  local path = dir .. "/" .. name
  local info, err = gm.stat(path)
  if not info then -- missing; a link that loops or a folder that cannot be read is not "missing"
    if err and not err:find("No such file or directory", 1, true) and not err:find("Not a directory", 1, true) then
      error(who .. ": " .. err, 0)
    end
    return nil
  end
  if info.type ~= "file" then error(string.format("%s: %s is a %s, not a regular file", who, path, info.type), 0) end
  local root, real = gm.realpath(dir), gm.realpath(path)
  local cache = root and root:match("^(.*/models%-%-[^/]+)/snapshots/[^/]+$")
  local function under(prefix) return prefix and real and real:sub(1, #prefix + 1) == prefix .. "/" end
  if not (under(root) or (cache and under(cache .. "/blobs"))) then
    error(string.format("%s: %s links to a file outside %s (copy the file into the folder to use it)", who, path, dir), 0)
  end
  return path, info.size
end

function M.need(dir, name, who)
  local path, size = M.member(dir, name, who)
  if not path then error(string.format("%s: %s/%s: No such file or directory", who, dir, name), 0) end
  return path, size
end

function M.make(dir, who)
  who = who and who .. ": " or ""
  local info = gm.stat(dir)
  if info and info.type ~= "directory" then error(string.format("%s%s is a %s, not a folder", who, dir, info.type), 0) end
  if not info then
    -- a file where a parent folder should be is named, not left to mkdir's "Not a directory"
    local up = dir:match("^(.+)/[^/]*$")
    while up do
      local above = gm.stat(up)
      if above then
        if above.type ~= "directory" then error(string.format("%s%s is a %s, not a folder", who, up, above.type), 0) end
        break
      end
      up = up:match("^(.+)/[^/]*$")
    end
    local p = io.popen("mkdir -p -- '" .. dir:gsub("'", "'\\''") .. "' 2>&1")
    local said = p:read("a")
    p:close()
    info = gm.stat(dir)
    if not info or info.type ~= "directory" then
      local why = said:match(": ([^:\n]+)\n?$")
      error(string.format("%scannot make the folder %s%s", who, dir, why and ": " .. why or ""), 0)
    end
  end
  return dir
end

return M
