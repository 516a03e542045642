-- corpus.lua — training records (text + the seed-graph triples to inject, gm.experiment makes
-- them from a dataset) → leafy-chain training sequences.
--
-- read_jsonl(path, {on_error = "skip"|"stop"}) → records, report: JSONL, one record per line
--   {"text": "A dog is a domesticated mammal.", "triples": [{"head": "dog", "relation":
--   "hypernym", "tail": "canine"}]}; each record {text, triples, line = its line number}; a line
--   that is not UTF-8 or not a JSON object with a "text" string is skipped and counted (or, with
--   "stop", an error "path:line: what is wrong"); a record's "id" (a string or a number) is kept as
--   id, as text; one of another kind is an error of its line
-- scalar_text(v) → a JSON string with a non-blank character, or a number, as text; else nil (how a
--   record's ids and names are read, here and in a dataset)
-- each_jsonl(path, opts) → an iterator over the same records, a line read at a time (a corpus of
--   any size in constant memory), and the report it fills as it goes
-- each_passage(path, format) → an iterator over the passages {id, line, text} of a file extraction
--   reads: format "jsonl" (JSONL records, each_jsonl: id the record's "id", else its line number),
--   "text" (one passage per line, id its line number) or "auto" (jsonl for a .jsonl file); a bad
--   line is an error "path:line: what is wrong", and so is an id a line before had (a passage's
--   sources, store rows and page entries are keyed by it); with "text", also lines()'s count of
--   the comment lines skipped
-- lines(path) → an iterator of (line number, line) over a text file's lines that are neither
--   blank nor comments (# first), a CR before the LF and a UTF-8 byte-order mark dropped: how
--   every text input is read (a dataset's files, a corpus to extract from); and {comments = the
--   comment lines skipped so far}
-- build(records, tokenizer, {layout = gm.layout{...}, relations = {name → id}, copies = 1,
--   packing = "record"}) → sequences, report: records are tokenised and packed into roots; each
--   triple's tail tokens go into the leaf slots of the first root of its head's first occurrence
--   in its record (one triple per root, at most `leaves` tail tokens).
--   packing = "record": each record whole ([CLS] first, [SEP] after each record, [PAD] and
--   valid = 0 after the last), truncated to R − 2 tokens (report.truncated_records and
--   report.truncated_tokens count what was cut). A record whose head root is taken can be
--   repeated: with copies = k it is placed up to k times, each copy carrying the next usable
--   triple (a glossary entry has one head but many relations). A record with `placements` (a list
--   of triple lists, gm.experiment's injection plan) is placed once per list, with its triples;
--   a triple with absent = true has no tail: its root gets the relation and no leaf tokens.
--   packing = "chunk" (official): all records' tokens concatenated and cut into R − 2-token
--   chunks, each [CLS] … [SEP]; only the last chunk is padded; a head cut by a chunk boundary
--   is skipped. Every skipped triple is counted by reason in report.skipped.
--   Sequences are packed binary strings; unpack(seq) gives their lists, batch(seqs, first, n)
--   a batch for GraphMERT.
local cjson = require "cjson"
local gm = require "graphmert"

local M = {}

local function new_report()
  return { records = 0, errors = 0, messages = {}, skipped = {} }
end

-- a skipped triple counted by reason; `example` (the first one's) kept to show the user
local function note(report, key, example)
  report.skipped[key] = (report.skipped[key] or 0) + 1
  report.examples = report.examples or {}
  report.examples[key] = report.examples[key] or example
end

local function fail(report, opts, where)
  if (opts.on_error or "skip") == "stop" then error(where, 0) end
  report.errors = report.errors + 1
  if #report.messages < 20 then report.messages[#report.messages + 1] = where end
end

function M.lines(path)
  local info = gm.stat(path) -- (a FIFO is never opened, so it cannot block)
  if info and info.type ~= "file" then error(path .. " is a " .. info.type .. ", not a regular file", 0) end
  local f, err = io.open(path, "rb")
  if not f then error(err, 0) end
  local n, skipped = 0, { comments = 0 }
  return function()
    while f do
      local line = f:read("L")
      if not line then
        f:close()
        f = nil
        return nil
      end
      n = n + 1
      line = line:gsub("\r?\n$", "")
      if n == 1 then line = line:gsub("^\239\187\191", "") end -- a UTF-8 byte-order mark
      if line:match("^%s*#") then
        skipped.comments = skipped.comments + 1
      elseif line:match("%S") then
        return n, line
      end
    end
  end, skipped
end

function M.scalar_text(v)
  if type(v) == "string" then return v:match("%S") and v or nil end
  if math.type(v) then return tostring(math.tointeger(v) or v) end
end

-- what a JSONL record lacking its text has instead, to name a misspelt key
local function keys_of(rec)
  local keys = {}
  for k in pairs(rec) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  return #keys > 0 and " (its keys: " .. table.concat(keys, ", ") .. ")" or ""
end

function M.each_jsonl(path, opts)
  opts = opts or {}
  local ok_open, next_line = pcall(M.lines, path)
  if not ok_open then error("read_jsonl: " .. next_line, 2) end
  local report = new_report()
  return function()
    for n, line in next_line do
      local ok, rec = pcall(cjson.decode, line)
      local where = string.format("%s:%d: ", path, n)
      if not utf8.len(line) then
        fail(report, opts, where .. "not UTF-8 text")
      elseif not ok or type(rec) ~= "table" then
        fail(report, opts, where .. "not a JSON object")
      elseif rec.text == nil then
        fail(report, opts, where .. "no \"text\"" .. keys_of(rec))
      elseif type(rec.text) ~= "string" or not rec.text:match("%S") then
        fail(report, opts, where .. "no text")
      elseif rec.id ~= nil and rec.id ~= cjson.null and not M.scalar_text(rec.id) then
        fail(report, opts, where .. "\"id\" must be a string or a number")
      elseif math.type(rec.id) == "float" and math.abs(rec.id) >= 2^53 then -- (JSON numbers are read as doubles)
        fail(report, opts, where .. "\"id\" " .. string.format("%.17g", rec.id) .. " is too large to be read exactly as a " ..
          "number: write it as a string")
      else
        local triples = {}
        for i, t in ipairs(type(rec.triples) == "table" and rec.triples or {}) do
          if type(t) == "table" and type(t.head) == "string" and type(t.relation) == "string" and type(t.tail) == "string" then
            triples[#triples + 1] = { head = t.head, relation = t.relation, tail = t.tail }
          else
            fail(report, opts, where .. "triple " .. i .. " needs head, relation and tail strings")
          end
        end
        report.records = report.records + 1
        local id = rec.id ~= cjson.null and M.scalar_text(rec.id) or nil
        return { text = rec.text, triples = triples, line = n, id = id }
      end
    end
  end, report
end

function M.each_passage(path, format)
  if format == "jsonl" or (format == "auto" and path:match("%.jsonl$")) then
    local next_record = M.each_jsonl(path, { on_error = "stop" })
    local line_of = {} -- id as text → the line that has it (only JSONL's ids can repeat)
    return function()
      local rec = next_record()
      if not rec then return nil end
      local id = rec.id or rec.line
      local key = tostring(id)
      if line_of[key] then
        error(string.format('%s:%d: passage id "%s" again (line %d has it): a passage\'s id names it in the sources of '
          .. "its triples, so each must be one passage's", path, rec.line, key, line_of[key]), 0)
      end
      line_of[key] = rec.line
      return { id = id, line = rec.line, text = rec.text, entity = M.scalar_text(rec.entity) }
    end
  end
  local next_line, skipped = M.lines(path)
  return function()
    local n, line = next_line()
    if not n then return nil end
    if not utf8.len(line) then error(string.format("%s:%d: not UTF-8 text", path, n), 0) end
    return { id = n, line = n, text = line }
  end, skipped
end

function M.read_jsonl(path, opts)
  local records, next_record, report = {}, M.each_jsonl(path, opts)
  for rec in next_record do records[#records + 1] = rec end
  return records, report
end

-- A sequence is kept as binary strings (float32 ids and valid flags, uint16 relation and head
-- length per root): a corpus of 10⁵ sequences is then a few hundred thousand Lua objects that
-- the garbage collector never walks into, instead of tens of millions of table slots.
local formats = {}
-- the string.pack format for `count` values of `code`, made once per size
local function pack_format(code, count)
  local key = code .. count
  formats[key] = formats[key] or "<" .. string.rep(code, count)
  return formats[key]
end

local function pack(ids, valid, relation, head_length)
  local N, R = #ids, #relation
  if R > 0 and math.max(table.unpack(relation)) > 65535 then error("build: relation ids must be below 65536", 3) end
  local nodes, roots = pack_format("f", N), pack_format("I2", R)
  return { ids = string.pack(nodes, table.unpack(ids)), valid = string.pack(nodes, table.unpack(valid)),
           relation = string.pack(roots, table.unpack(relation)), head_length = string.pack(roots, table.unpack(head_length)),
           nodes = N, roots = R }
end

-- The record's triples that can be injected, each with its head's offset in `toks` (the tokens
-- placed; `all` the record's tokens before truncation, to tell a cut head from a missing one).
local function usable(rec, toks, all, tok, layout, relations, report)
  local list = {}
  for _, t in ipairs(rec.triples or {}) do
    local rel = relations[t.relation]
    local head, tail = tok:encode(t.head), t.absent and {} or tok:encode(t.tail)
    local at = #head > 0 and layout.find(toks, head)
    if not rel then note(report, "unknown relation")
    elseif not at and #head > 0 and layout.find(all, head) then note(report, "head in the truncated text")
    elseif not at then note(report, "head not in text")
    elseif #tail == 0 and not t.absent then note(report, "tail with no tokens")
    elseif #tail > layout.leaves then
      note(report, "tail longer than the leaf slots", string.format("%q, %d tokens", t.tail, #tail))
    else list[#list + 1] = { at = at, rel = rel, head_length = #head, tail = tail } end
  end
  return list
end

local function inject(layout, seq, root, t, report)
  if layout:inject(seq, root, t.rel, t.head_length, t.tail) then
    report.injected = (report.injected or 0) + 1
  else
    note(report, "root already holds a triple")
  end
end

-- Per-record packing: each record whole (truncated to R − 2 tokens) in the roots, several records
-- per sequence, trailing roots padded.
local function pack_records(records, tok, opts, report)
  local layout, copies = opts.layout, opts.copies or 1
  local sequences = { layout:sequence(tok) }
  local function place(toks, triples)
    local first = layout:append(sequences[#sequences], toks)
    if not first then
      sequences[#sequences + 1] = layout:sequence(tok)
      first = layout:append(sequences[#sequences], toks)
    end
    for _, t in ipairs(triples) do inject(layout, sequences[#sequences], first + t.at - 1, t, report) end
  end
  for _, rec in ipairs(records) do
    local all = tok:encode(rec.text)
    if #all == 0 then
      note(report, "empty text")
    else
      local toks = layout:fit(all) -- a record never spans sequences
      if #toks < #all then
        report.truncated_records = report.truncated_records + 1
        report.truncated_tokens = report.truncated_tokens + #all - #toks
      end
      report.records = report.records + 1
      if rec.placements then
        for _, triples in ipairs(rec.placements) do
          place(toks, usable({ triples = triples }, toks, all, tok, layout, opts.relations or {}, report))
        end
      else
        local list = usable(rec, toks, all, tok, layout, opts.relations or {}, report)
        for c = 1, math.max(1, math.min(copies, #list)) do
          -- the last copy also tries the triples left over, so the skip report stays complete
          place(toks, c < copies and { list[c] } or { table.unpack(list, c) })
        end
      end
    end
  end
  local out = {}
  for _, s in ipairs(sequences) do
    if s.used > 1 then out[#out + 1] = pack(s.ids, s.valid, s.relation, s.head_length) end
  end
  return out
end

-- Chunk packing (the official utils/tokenization_utils.py group_texts): every record's tokens
-- in one stream, cut into R − 2-token chunks each wrapped in [CLS] … [SEP]; only the last chunk
-- has padding (the official drops that remainder; here nothing is dropped). A triple goes to
-- the root of its head's first occurrence in its record when the head lies in one chunk.
local function pack_chunks(records, tok, opts, report)
  local layout = opts.layout
  local C = layout.roots - 2
  if C < 1 then error("build: chunk packing needs at least 3 roots, got " .. layout.roots, 3) end
  if (opts.copies or 1) > 1 then error("build: copies needs packing = \"record\"", 3) end
  local stream, by_chunk = {}, {}
  for _, rec in ipairs(records) do
    local toks = tok:encode(rec.text)
    if #toks == 0 then
      note(report, "empty text")
    else
      report.records = report.records + 1
      local base = #stream
      table.move(toks, 1, #toks, base + 1, stream)
      for _, t in ipairs(usable(rec, toks, toks, tok, layout, opts.relations or {}, report)) do
        local first, last = base + t.at, base + t.at + t.head_length - 1
        local c = (first - 1) // C + 1
        if (last - 1) // C + 1 ~= c then
          note(report, "head split across chunks")
        else
          t.root = (first - 1) % C + 2 -- after [CLS]
          by_chunk[c] = by_chunk[c] or {}
          table.insert(by_chunk[c], t)
        end
      end
    end
  end
  local out = {}
  for c = 1, (#stream + C - 1) // C do
    local s = layout:sequence(tok)
    layout:append(s, table.move(stream, (c - 1) * C + 1, math.min(#stream, c * C), 1, {}))
    for _, t in ipairs(by_chunk[c] or {}) do inject(layout, s, t.root, t, report) end
    out[c] = pack(s.ids, s.valid, s.relation, s.head_length)
  end
  return out
end

local packers = { record = pack_records, chunk = pack_chunks }

function M.build(records, tok, opts)
  local packing = opts.packing or "record"
  local packer = packers[packing]
  if not packer then error("build: packing must be \"record\" or \"chunk\", got " .. tostring(packing), 2) end
  local report = new_report()
  report.truncated_records, report.truncated_tokens = 0, 0
  return packer(records, tok, opts, report), report
end

-- the per-root values after string.unpack (which appends the next position)
local function unpack_list(fmt, bytes)
  local t = { string.unpack(fmt, bytes) }
  t[#t] = nil
  return t
end

-- Sequences as a batch for GraphMERT (ids and valid tensors, per-root tables).
function M.batch(sequences, first, count)
  local ids, valid, relation, head_length = {}, {}, {}, {}
  local fmt = pack_format("I2", sequences[first].roots)
  for i = first, math.min(#sequences, first + count - 1) do
    local s = sequences[i]
    ids[#ids + 1], valid[#valid + 1] = s.ids, s.valid
    relation[#relation + 1], head_length[#head_length + 1] = unpack_list(fmt, s.relation), unpack_list(fmt, s.head_length)
  end
  local B, N = #ids, sequences[first].nodes
  return { ids = gm.tensor_from_bytes(table.concat(ids), 0, B * N * 4, { B, N }),
           valid = gm.tensor_from_bytes(table.concat(valid), 0, B * N * 4, { B, N }),
           relation = relation, head_length = head_length }
end

-- A sequence's fields as Lua lists (for inspection): ids, valid, relation, head_length.
function M.unpack(seq)
  local nodes, roots = pack_format("f", seq.nodes), pack_format("I2", seq.roots)
  local ids, valid = unpack_list(nodes, seq.ids), unpack_list(nodes, seq.valid)
  for i = 1, seq.nodes do ids[i], valid[i] = math.tointeger(ids[i]), math.tointeger(valid[i]) end
  return { ids = ids, valid = valid, relation = unpack_list(roots, seq.relation), head_length = unpack_list(roots, seq.head_length) }
end

return M
