-- journal.lua — the extraction journal: what `graphmert extract` has finished, on disk as it goes,
-- so that a run stopped by Ctrl-C, kill or a crash continues where it stopped (--resume), and a
-- run split over MPI ranks comes together in the order of its input. It serves an output
-- kg.jsonl; a kg.sqlite store needs none (graphmert.kg.store: SQLite keeps it whole).
--
-- The file: OUT.journal for one process, OUT.<rank>.journal for each process under mpirun.
--   line 1    the run's settings (journal.header): one JSON object, its keys in a fixed order —
--             the journal's version, the input and the checkpoint by path and by content (size
--             and digest), the options that decide a passage's triples, the process count.
--   then      a line per finished chunk of passages, written whole and flushed at once:
--             {"chunk":k,"passages":[{"id":..,"triples":[{head, relation, tail, tokens, score,
--             head_id, tail_id, decoding}]}],"truncated":n,"inside":n} — each passage's triples merged
--             within it and not yet filtered by --min-score (the final merge filters), and the
--             chunk's heads found but not asked (extract.queries' report).
-- Chunks are dealt round robin: rank r of K processes takes chunks r + 1, r + 1 + K, ..., so its
-- journal holds them in that order.
--
-- Resume rules. --resume continues a journal only when its header is this run's, byte for
-- byte (another version, input, checkpoint, option or process count is refused, naming what
-- differs); a line out of order, or not as extract writes it (edited by hand), is damage. A
-- process killed while writing leaves a torn last line: it is never read (a newline puts it on a
-- line of its own) and its chunk is extracted again. Without --resume a journal left behind is
-- an error; with --resume and none, the run starts from the first passage.
--
-- Locking. Each process holds a lock (gm.lock_file, flock) on its own journal from open until
-- the process ends, however it ends, so that a second run on the same output — a --resume typed
-- while the first still runs — stops before it writes a line.
--
-- Who owns what: each process writes only its own journal; rank 0 reads them all in chunk order
-- once every rank is done (journal.each_chunk) and removes them once the graph is written whole
-- (journal.remove). Every problem is the extract command's usage error, naming the file.
--
--   journal.path(out, rank, size)       the journal's file name
--   journal.header(settings)            the header line of a run's settings (a table)
--   journal.stopped(out, rank, size)    whether a stopped run's journal is there (lines in it)
--   journal.refuse_other_count(out, size)  a stopped run's journals of another process count
--                                       are refused (checked before any file is written)
--   journal.open(out, {rank, size, resume, header}) → j: locked, continued or started; j.path,
--     j.held (the chunk numbers it holds), j:add(k, passages, by_passage, report) writes chunk
--     k's line, j:close() closes the file (the lock stays to the process's end)
--   journal.each_chunk(out, size) → the chunks' records, in chunk order, from every journal
--   journal.remove(out, size)           the journals of a run that is whole
local cjson = require "cjson"
local gm = require "graphmert"
local args = require "graphmert.experiment.args"

local M = {}

local function fail(msg) args.fail("extract.lua", msg) end

-- The header's version: another one is refused. (2: a passage's triples merged per passage,
-- and the heads not asked counted; 3: no head inside an English contraction; 4: a JSONL
-- record's passage id is its "id", constrained tails of the types the head's type reaches,
-- acronyms as written; 5: each triple's decoding — a rule's name under the rule extractor —, and
-- the rules' file)
M.VERSION = 5

local HEADER_KEYS = { "journal", "input", "input_file", "checkpoint", "weights", "reranker", "rules", "format", "relations", "top", "batch",
  "decoding", "unpacked", "data", "config", "processes", "precision" }

function M.header(settings) return gm.json.object(settings, HEADER_KEYS) end

function M.path(out, rank, size) return size == 1 and out .. ".journal" or string.format("%s.%d.journal", out, rank) end

function M.stopped(out, rank, size)
  local info = gm.stat(M.path(out, rank, size))
  return info and info.size > 0
end

-- A stopped run's journals are named by its process count: a run of another count finds them by
-- the first one's header, on every rank before any writes a file, and is refused rather than
-- started over beside them.
function M.refuse_other_count(out, size)
  for _, first in ipairs { out .. ".journal", out .. ".0.journal" } do
    local info = gm.stat(first)
    local f = info and info.size > 0 and io.open(first, "r")
    if f then
      local ok, head = pcall(cjson.decode, f:read("l") or "")
      f:close()
      local count = ok and type(head) == "table" and math.tointeger(head.processes)
      if count and count ~= size then
        fail(string.format("%s is the journal of a stopped run of %d process%s, this one has %d: continue it with as many " ..
          "(%s--resume), or remove %s to start over", first, count, count == 1 and "" or "es", size,
          count == 1 and "graphmert extract ... " or "mpirun -np " .. count .. " graphmert extract ... ",
          count == 1 and first or out .. ".<rank>.journal, every rank's"))
      end
    end
  end
end

-- whether a chunk's line is as extract writes it (a line edited by hand is not)
local function whole_chunk(rec)
  if type(rec.passages) ~= "table" then return false end
  for _, p in ipairs(rec.passages) do
    if type(p) ~= "table" or type(p.triples) ~= "table" then return false end
    for _, t in ipairs(p.triples) do
      if type(t) ~= "table" or type(t.head) ~= "string" or type(t.relation) ~= "string" or type(t.tail) ~= "string"
        or type(t.score) ~= "number" then
        return false
      end
    end
  end
  return true
end

-- the chunks a stopped run's journal holds (a torn last line is not one), checked against this
-- run's header, and whether it ends with a newline
local function held_chunks(path, header, rank, size)
  local f = io.open(path, "r")
  if not f then fail("cannot read " .. path) end
  local first = f:read("l")
  local ok, head = pcall(cjson.decode, first or "")
  if not ok or type(head) ~= "table" or head.journal == nil then
    f:close()
    fail(path .. " is not a journal of graphmert extract (damaged?): remove it to start over")
  end
  if head.journal ~= M.VERSION then
    f:close()
    fail(path .. " was written by an earlier graphmert, whose journals this one does not continue: remove it to start over")
  end
  if first ~= header then
    local differ = gm.json.differences(first, header)
    fail(string.format("%s is the journal of another run (%s): run with its settings, or remove it to start over", path,
      #differ > 0 and table.concat(differ, "; ") or "another format"))
  end
  local held, last = {}, nil
  for line in f:lines() do
    local good, rec = pcall(cjson.decode, line)
    local k = good and type(rec) == "table" and math.tointeger(rec.chunk)
    if k then
      if (k - 1) % size ~= rank or (last and k ~= last + size) or (not last and k ~= rank + 1) then
        fail(string.format("%s: chunk %d out of order: the journal is damaged; remove it to start over", path, k))
      end
      if not whole_chunk(rec) then
        fail(string.format("%s: chunk %d is not as extract writes it: the journal is damaged; remove it to start over", path, k))
      end
      held[k], last = true, k
    end
  end
  f:seek("end", -1)
  local newline = f:read(1) == "\n"
  f:close()
  return held, newline
end

local Journal = {}
Journal.__index = Journal

-- a line written whole, or the run stops at once naming the journal (a full disk): the journal
-- keeps the chunks before it, which --resume continues once there is room
function Journal:write(...)
  local ok, err = self.file:write(...)
  if ok then ok, err = self.file:flush() end
  if not ok then
    fail(string.format("%s: %s: the run stops; the journal keeps the passages before, and --resume continues once the " ..
      "problem is solved", self.path, tostring(err)))
  end
end

-- chunk k's line: each passage of the chunk with its triples (by_passage[id]), and the counts of
-- heads not asked
function Journal:add(k, passages, by_passage, report)
  local lines = {}
  for i, p in ipairs(passages) do
    local triples = {}
    for j, t in ipairs(by_passage[p.id]) do
      triples[j] = { head = t.head, relation = t.relation, tail = t.tail, tokens = t.tokens, score = t.score,
        model_score = t.model_score, head_id = t.head_id, tail_id = t.tail_id, decoding = t.decoding }
    end
    lines[i] = { id = p.id, triples = triples }
  end
  self:write(string.format('{"chunk":%d,"passages":%s,"truncated":%d,"inside":%d}\n', k, cjson.encode(lines),
    report.truncated or 0, report.inside or 0))
end

function Journal:close() self.file:close() end

function M.open(out, opts)
  local path, rank = M.path(out, opts.rank, opts.size), opts.rank
  local lock, warning = gm.lock_file(path)
  if lock == nil then fail(warning) end
  if not lock then
    fail(string.format("%s is in use by another graphmert extract, still running: let it end (or stop it), then --resume", path))
  end
  if warning and rank == 0 then io.stderr:write("extract.lua: " .. warning .. "\n") end
  local j = setmetatable({ path = path, lock = lock, held = {} }, Journal)
  if M.stopped(out, rank, opts.size) then
    if not opts.resume then fail(path .. " holds a stopped run's passages: --resume continues it (or remove it to start over)") end
    local newline
    j.held, newline = held_chunks(path, opts.header, rank, opts.size)
    j.file = assert(io.open(path, "a"))
    if not newline then j:write("\n") end -- a torn line stays a line of its own, never read
  else
    if opts.resume and rank == 0 then
      io.stderr:write(string.format("--resume: no journal %s to continue: extracting from the first passage\n", path))
    end
    j.file = io.open(path, "w")
    if not j.file then fail("cannot write " .. path) end
    j:write(opts.header, "\n")
  end
  return j
end

function M.each_chunk(out, size)
  local readers = {}
  for r = 0, size - 1 do
    local f = assert(io.open(M.path(out, r, size), "r"))
    f:read("l") -- the settings
    readers[r + 1] = f:lines()
  end
  local k = 0
  return function()
    k = k + 1
    for line in readers[(k - 1) % size + 1] do
      local good, rec = pcall(cjson.decode, line)
      if good and type(rec) == "table" then -- (a torn line of a killed run is not)
        if math.tointeger(rec.chunk) ~= k then
          fail(string.format("%s: chunk %s where %d was expected: the journal is damaged", M.path(out, (k - 1) % size, size),
            tostring(math.tointeger(rec.chunk) or rec.chunk), k))
        end
        return rec
      end
    end
  end
end

function M.remove(out, size)
  for r = 0, size - 1 do os.remove(M.path(out, r, size)) end
end

return M
