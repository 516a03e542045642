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
local gm = require "graphmert"

local M = {}

function M.member(dir, name, who)
  local path = dir .. "/" .. name
  local info = gm.stat(path)
  if not info then return nil end
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

return M
