-- extraction_input.lua — the corpus `graphmert extract` reads: plain text (one passage per line)
-- or JSONL corpus records (gm.data.corpus.each_passage), read a line at a time and twice — once
-- to check it all and count its passages before any work, once to extract (and once more for
-- the KG page's passages) — so a corpus of any size takes the same memory. That is why it must
-- be a regular file, not a pipe; "-" is standard input, first copied whole to a temporary file
-- (so a pipe can be read: `... | graphmert extract --input - ...`), named "stdin" in messages and
-- in what the run records (a stopped run continues only the same text piped again: its digest
-- is checked, as a file's).
--   extraction_input.open(path, format, rank) → input: format is "text", "jsonl" or "auto" (jsonl
--     for a .jsonl file; standard input is text unless told); the file checked, and on rank 0 the
--     format read said on stderr
--   input.jsonl              whether it is read as JSONL records
--   input.path, input.name   the file read, and its name for people (the path as given, or "stdin")
--   input.stdin              whether it is standard input
--   input:passages()         → an iterator of passages {id, line, text} (id: a JSONL record's
--                              "id", else the line number), and the counts of lines skipped
--   input:count(rank)        → the passages, every line checked (a bad one is named now, not hours in)
--   input:close()            removes standard input's temporary copy (again: nothing)
-- Every problem is the extract command's usage error, naming the file (and line).
local gm = require "graphmert"
local args = require "graphmert.experiment.args"
local corpus = require "graphmert.data.corpus"
local plural = require("graphmert.data.dataset").plural

local M = {}

local SCRIPT = "extract.lua"
local function fail(msg) args.fail(SCRIPT, msg) end

local Input = {}
Input.__index = Input

-- standard input copied to a temporary file, block by block → its path
local function keep_stdin()
  local path = os.tmpname()
  local f = io.open(path, "wb")
  local ok, err = f ~= nil, path .. ": cannot be opened"
  while ok do
    local block = io.stdin:read(1 << 16)
    if not block then break end
    ok, err = f:write(block)
  end
  if f then
    local closed, cerr = f:close()
    if ok and not closed then ok, err = false, cerr end
  end
  if not ok then
    os.remove(path)
    fail("cannot keep standard input in a temporary file (extract reads its input twice): " .. tostring(err))
  end
  return path
end

function M.open(path, format, rank)
  local stdin = path == "-"
  local jsonl = format == "jsonl" or (format == "auto" and path:match("%.jsonl$") ~= nil)
  local name = stdin and "stdin" or path
  if not stdin then
    local info, err = gm.stat(path)
    if not info then fail(err) end
    if info.type == "directory" then fail(path .. " is a directory, not a file of passages") end
    if info.type ~= "file" then -- a pipe cannot be read twice
      fail(path .. " is a " .. info.type .. ": extract reads its input twice (checked whole, then extracted), so give a file "
        .. "(save the stream to one first, or pipe it to --input -)")
    end
  end
  if rank == 0 then
    io.stderr:write(string.format("reading %s as %s%s\n", stdin and "standard input" or path,
      jsonl and "JSONL records" or "plain text, one passage per line", format == "auto" and " (--format to choose)" or ""))
  end
  return setmetatable({ path = stdin and keep_stdin() or path, name = name, stdin = stdin, jsonl = jsonl }, Input)
end

-- a message about the file read, naming it as people know it (not standard input's temporary copy)
function Input:named(msg)
  msg = tostring(msg)
  return self.stdin and (msg:gsub(self.path:gsub("%p", "%%%0"), self.name)) or msg
end

function Input:passages()
  local next_passage, skipped = args.try(SCRIPT, function()
    local ok, iterate, skipped = pcall(corpus.each_passage, self.path, self.jsonl and "jsonl" or "text")
    if not ok then error(self:named(iterate), 0) end
    return iterate, skipped
  end)
  return function()
    local ok, p = pcall(next_passage)
    if not ok then fail(self:named(p)) end
    return p
  end, skipped
end

function Input:count(rank)
  local total = 0
  local next_passage, skipped = self:passages()
  for _ in next_passage do total = total + 1 end
  if skipped and skipped.comments > 0 and rank == 0 then
    io.stderr:write(string.format("%s: %s starting with # skipped (comments, as in a dataset's files)\n", self.name,
      plural(skipped.comments, "line")))
  end
  if total == 0 then fail(self.name .. " has no passages") end
  return total
end

function Input:close()
  if self.stdin then os.remove(self.path) end -- (a second time: no such file, nothing done)
end
Input.__close = Input.close

return M
