-- tail_list.lua — a list of known tails, the candidates constrained decoding ranks (the names
-- and aliases of the entities a relation reaches, as token ids): one [n, width] tensor of ids,
-- each row a tail of 1..width tokens followed by [PAD], and the tails' lengths as a string of one
-- byte each. A tensor, not a Lua table per tail, because the list is what a seed graph's index
-- stores for extraction: WordNet's 147,000 names load as a few strings, not as 270,000 tables.
--
-- tail_list.new(lists, width, pad) → a list of the id lists (each 1..width ids), in their order
-- tail_list.from_bytes(ids, lengths, width, pad, vocab) → the list whose bytes() these were;
--   anything that is not one (sizes, a length outside 1..width, an id that is not a whole number
--   in 1..vocab) is an error saying what
-- tail_list.is(x) → whether x is one
-- l.n, l.width, l.pad; l.ids ([n, width] tensor, nil when n = 0); l.lengths (string)
-- l:tail(i) → tail i's ids; l:lists() → every tail's ids, as tail_list.new took them
-- l:bytes() → ids (little-endian float32, row by row), lengths
local gm = require "graphmert"

local M = {}

local TailList = {}
TailList.__index = TailList

local function checked_width(width, fn)
  if math.type(width) ~= "integer" or width < 1 or width > 255 then
    error(fn .. ": width must be an integer in 1..255, got " .. tostring(width), 3)
  end
end

-- small integers as a string of bytes, in pieces (string.char takes its arguments on the stack)
local function bytes_of(list)
  local parts = {}
  for first = 1, #list, 4096 do
    parts[#parts + 1] = string.char(table.unpack(list, first, math.min(#list, first + 4095)))
  end
  return table.concat(parts)
end

function M.new(lists, width, pad)
  checked_width(width, "tail_list.new")
  local rows, lengths = {}, {}
  for i, ids in ipairs(lists) do
    if #ids < 1 or #ids > width then
      error(string.format("tail_list.new: tail %d has %d ids, not 1..%d", i, #ids, width), 2)
    end
    local row = {}
    for a = 1, width do row[a] = ids[a] or pad end
    rows[i], lengths[i] = row, #ids
  end
  return setmetatable({ n = #rows, width = width, pad = pad, ids = #rows > 0 and gm.tensor(rows) or nil,
    lengths = bytes_of(lengths) }, TailList)
end

-- the largest element of a [1, m] tensor
local function largest(t)
  local values, at = t:max(2)
  local v = values:item()
  values:release(); at:release()
  return v
end

-- Float32 holds every integer below 2^24; below 2^23, adding and taking away 2^23 rounds a value
-- to a whole number, so a value that comes back different was not one.
local WHOLE = 8388608

function M.from_bytes(ids, lengths, width, pad, vocab)
  checked_width(width, "tail_list.from_bytes")
  local n = #lengths
  if #ids ~= 4 * n * width then
    error(string.format("tail_list.from_bytes: %d tails of %d ids take %d bytes, not %d", n, width, 4 * n * width, #ids), 2)
  end
  for i = 1, n do
    local length = lengths:byte(i)
    if length < 1 or length > width then
      error(string.format("tail_list.from_bytes: tail %d has length %d, not 1..%d", i, length, width), 2)
    end
  end
  local l = setmetatable({ n = n, width = width, pad = pad, lengths = lengths }, TailList)
  if n > 0 then
    l.ids = gm.tensor_from_bytes(ids, 0, #ids, { n, width })
    local flat = l.ids:reshape { 1, n * width }
    local negated, shifted = flat:neg(), flat + WHOLE
    local rounded = shifted - WHOLE
    local off = rounded - flat
    local off_negated = off:neg()
    local high, low = largest(flat), -largest(negated)
    local whole = largest(off) == 0 and largest(off_negated) == 0
    for _, t in ipairs { flat, negated, shifted, rounded, off, off_negated } do t:release() end
    if low ~= low or high ~= high then error("tail_list.from_bytes: an id is not a number", 2) end
    if not (low >= 1 and high <= vocab and high < WHOLE) then
      error(string.format("tail_list.from_bytes: the ids span %.17g..%.17g, not 1..%d", low, high, vocab), 2)
    end
    if not whole then error("tail_list.from_bytes: an id is not a whole number", 2) end
  end
  return l
end

-- whether x is a tail list: by its fields, not its metatable, which a second load of this module
-- (a test that clears package.loaded) would make anew
function M.is(x)
  return type(x) == "table" and type(x.lengths) == "string" and math.type(x.width) == "integer" and type(x.tail) == "function"
end

function TailList:tail(i)
  local out, base = {}, (i - 1) * self.width
  for a = 1, self.lengths:byte(i) do out[a] = math.tointeger(self.ids:get_flat(base + a)) end
  return out
end

function TailList:lists()
  local out = {}
  for i = 1, self.n do out[i] = self:tail(i) end
  return out
end

function TailList:bytes() return self.ids and self.ids:to_bytes() or "", self.lengths end

return M
