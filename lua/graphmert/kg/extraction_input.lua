-- extraction_input.lua — the corpus `graphmert extract` reads: plain text (one passage per line)
-- or JSONL corpus records (gm.data.corpus.each_passage), read a line at a time and twice — once
-- to check it all and count its passages before any work, once to extract (and once more for
-- the KG page's passages) — so a corpus of any size takes the same memory. That is why it must
-- be a regular file, not a pipe.
--   extraction_input.open(path, format, rank) → input: format is "text", "jsonl" or "auto" (jsonl
--     for a .jsonl file); the file checked, and on rank 0 the format read said on stderr
--   input.jsonl              whether it is read as JSONL records
--   input:passages()         → an iterator of passages {id, line, text} (id: a JSONL record's
--                              "id", else the line number), and the counts of lines skipped
--   input:count(rank)        → the passages, every line checked (a bad one is named now, not hours in)
-- Every problem is the extract command's usage error, naming the file (and line).
local gm = require "graphmert"
local args = require "graphmert.experiment.args"
local corpus = require "graphmert.data.corpus"
local plural = require("graphmert.data.dataset").plural

local M = {}

local function fail(msg) args.fail("extract.lua", msg) end

local Input = {}
Input.__index = Input

function M.open(path, format, rank)
  local jsonl = format == "jsonl" or (format == "auto" and path:match("%.jsonl$") ~= nil)
  local info, err = gm.stat(path)
  if not info then fail(err) end
  if info.type == "directory" then fail(path .. " is a directory, not a file of passages") end
  if info.type ~= "file" then -- a pipe cannot be read twice
    fail(path .. " is a " .. info.type .. ": extract reads its input twice (checked whole, then extracted), so give a file "
      .. "(save the stream to one first)")
  end
  if rank == 0 then
    io.stderr:write(string.format("reading %s as %s%s\n", path, jsonl and "JSONL records" or "plain text, one passage per line",
      format == "auto" and " (--format to choose)" or ""))
  end
  return setmetatable({ path = path, jsonl = jsonl }, Input)
end

function Input:passages()
  local next_passage, skipped = args.try("extract.lua", corpus.each_passage, self.path, self.jsonl and "jsonl" or "text")
  return function()
    local ok, p = pcall(next_passage)
    if not ok then fail(tostring(p)) end
    return p
  end, skipped
end

function Input:count(rank)
  local total = 0
  local next_passage, skipped = self:passages()
  for _ in next_passage do total = total + 1 end
  if skipped and skipped.comments > 0 and rank == 0 then
    io.stderr:write(string.format("%s: %s starting with # skipped (comments, as in a dataset's files)\n", self.path,
      plural(skipped.comments, "line")))
  end
  if total == 0 then fail(self.path .. " has no passages") end
  return total
end

return M
