-- tokenizer.lua — WordPiece tokenizers: one trained on a corpus, or BERT's from a vocab.txt;
-- saved to and loaded from a file.
--
-- Trained: text is lower-cased and split into words and single punctuation marks (pretokenize);
-- training keeps the special tokens, every character seen (as a word start and as "##"
-- continuation), then the substrings with the highest frequency × (length − 1) score until
-- vocab_size. BERT (from_vocab): a vocab.txt, one piece a line, id = line number (1-based), text
-- split into words by BERT's BasicTokenizer (bert_text.lua: cleaning, lower-casing and accent
-- stripping with lower = true, punctuation and CJK split). Both encode each word greedily, longest
-- vocabulary piece first, continuation pieces written "##piece", as BERT's WordPiece does; a word
-- that cannot be spelled (or, for BERT, longer than 100 characters) becomes [UNK].
--
--   local tok = tokenizer.train(texts, {vocab_size = 8000, max_piece = 12})
--   local bert = tokenizer.from_vocab("vocab.txt", {lower = true})
--   local ids = tok:encode("A dog barks.")        -- 1-based ids, no [CLS]/[SEP]
--   tok:decode(ids)                               -- "a dog barks ."
--   tok:spells(ids)                               -- no [UNK] among them: decode writes them back
--   tok:first(n)                                  -- train's tokenizer with vocab_size n (n ≤ size)
--   tok:save(path); tokenizer.load(path)          -- either kind (tok:text() the file's text;
--                                                 tok:signature() what encoding depends on)
-- Special ids: pad_id, unk_id, cls_id, sep_id, mask_id — [PAD] 1, [UNK] 2, [CLS] 3, [SEP] 4,
-- [MASK] 5 in a trained tokenizer; wherever vocab.txt has them in a BERT one.
local bert_text = require "graphmert.data.bert_text"

local M = {}
M.specials = { "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]" }

local Tokenizer = {}
Tokenizer.__index = Tokenizer

-- lower-case words of letters and digits (UTF-8 bytes ≥ 128 count as letters) and single
-- punctuation marks
function M.pretokenize(text)
  local out = {}
  for word, mark in text:lower():gmatch("([%w\128-\255]*)(%p?)") do
    if word ~= "" then out[#out + 1] = word end
    if mark ~= "" then out[#out + 1] = mark end
  end
  return out
end

function M.normalize(text) return table.concat(M.pretokenize(text), " ") end

-- opts.bert: BERT's text splitting and word length limit, specials found by name; otherwise
-- the trained tokenizer's, specials first
local function new(pieces, opts)
  local t = setmetatable({ pieces = pieces, index = {}, max_piece = opts.max_piece or 12 }, Tokenizer)
  for id, p in ipairs(pieces) do
    if t.index[p] then error("tokenizer: duplicate piece '" .. p .. "' (id " .. id .. ")", 0) end
    t.index[p] = id
  end
  if opts.bert then
    local lower = opts.lower ~= false
    t.bert, t.lower, t.max_word_chars = true, lower, 100
    t.split = function(text) return bert_text.words(text, lower) end
    t.max_piece = 1
    for _, p in ipairs(pieces) do t.max_piece = math.max(t.max_piece, #p - (p:sub(1, 2) == "##" and 2 or 0)) end
    for _, s in ipairs(M.specials) do
      if not t.index[s] then error("tokenizer: the vocabulary has no " .. s .. " piece", 0) end
    end
  else
    t.split = M.pretokenize
    for i, s in ipairs(M.specials) do
      if pieces[i] ~= s then error("tokenizer: piece " .. i .. " must be " .. s, 0) end
    end
  end
  t.pad_id, t.unk_id, t.cls_id, t.sep_id, t.mask_id =
    t.index["[PAD]"], t.index["[UNK]"], t.index["[CLS]"], t.index["[SEP]"], t.index["[MASK]"]
  return t
end

-- the byte offsets where w's characters start, then #w + 1 (bytes, when w is not UTF-8)
local function character_starts(w)
  local at = {}
  if w:find("[\128-\255]") and utf8.len(w) then
    for p in utf8.codes(w) do at[#at + 1] = p end
  else
    for i = 1, #w do at[i] = i end
  end
  at[#at + 1] = #w + 1
  return at
end

function M.train(texts, opts)
  opts = opts or {}
  local vocab_size, max_piece = opts.vocab_size or 8000, opts.max_piece or 12
  local words = {}
  for _, text in ipairs(texts) do
    for _, w in ipairs(M.pretokenize(text)) do words[w] = (words[w] or 0) + 1 end
  end
  local pieces, seen = {}, {}
  local function add(p)
    if not seen[p] then
      seen[p] = true
      pieces[#pieces + 1] = p
    end
  end
  for _, s in ipairs(M.specials) do add(s) end
  -- pieces are whole characters (a piece cut inside a UTF-8 character would decode to bytes that
  -- are no text), of at most max_piece bytes
  local chars, counts = {}, {}
  for w, f in pairs(words) do
    local at = character_starts(w)
    for a = 1, #at - 1 do
      chars[w:sub(at[a], at[a + 1] - 1)] = true
      for b = a + 2, #at do
        if at[b] - at[a] > max_piece then break end
        local p = (a == 1 and "" or "##") .. w:sub(at[a], at[b] - 1)
        counts[p] = (counts[p] or 0) + f
      end
    end
  end
  local singles = {}
  for c in pairs(chars) do singles[#singles + 1] = c end
  table.sort(singles)
  for _, c in ipairs(singles) do add(c) end
  for _, c in ipairs(singles) do add("##" .. c) end
  local base = #pieces -- kept whatever vocab_size says
  local ranked = {}
  for p, f in pairs(counts) do
    local len = (utf8.len(p) or #p) - (p:sub(1, 2) == "##" and 2 or 0) -- in characters
    ranked[#ranked + 1] = { p, f * (len - 1) }
  end
  table.sort(ranked, function(a, b) return a[2] > b[2] or (a[2] == b[2] and a[1] < b[1]) end)
  for _, r in ipairs(ranked) do
    if #pieces >= vocab_size then break end
    add(r[1])
  end
  local t = new(pieces, { max_piece = max_piece })
  t.base = base
  return t
end

function Tokenizer:size() return #self.pieces end

-- The tokenizer train gives with vocab_size n, from one train made with a larger vocab_size: it
-- adds pieces best first, so vocabulary sizes can be compared with one count of the corpus.
function Tokenizer:first(n)
  if not self.base then error("tokenizer:first: only for a tokenizer train made (its pieces best first)", 2) end
  local pieces = table.move(self.pieces, 1, math.min(math.max(n, self.base), #self.pieces), 1, {})
  local t = new(pieces, { max_piece = self.max_piece })
  t.base = self.base
  return t
end

-- one word → ids, longest piece first; [UNK] when it cannot be spelled. Byte substrings suffice:
-- a piece is valid UTF-8, so only substrings on character boundaries can match one.
function Tokenizer:encode_word(w)
  if self.max_word_chars and (utf8.len(w) or #w) > self.max_word_chars then return { self.unk_id } end
  local ids, i = {}, 1
  while i <= #w do
    local found
    for j = math.min(#w, i + self.max_piece - 1), i, -1 do
      local p = (i == 1 and "" or "##") .. w:sub(i, j)
      local id = self.index[p]
      if id then
        found = id
        ids[#ids + 1] = id
        i = j + 1
        break
      end
    end
    if not found then return { self.unk_id } end
  end
  return ids
end

function Tokenizer:encode(text)
  local ids = {}
  for _, w in ipairs(self.split(text)) do
    for _, id in ipairs(self:encode_word(w)) do ids[#ids + 1] = id end
  end
  return ids
end

function Tokenizer:decode(ids)
  local out = {}
  for _, id in ipairs(ids) do
    local p = self.pieces[id]
    if not p then error("decode: id " .. tostring(id) .. " is not in [1, " .. #self.pieces .. "]", 2) end
    if p:sub(1, 2) == "##" and #out > 0 then out[#out] = out[#out] .. p:sub(3) else out[#out + 1] = p end
  end
  return table.concat(out, " ")
end

-- Whether ids hold no [UNK] (a character the vocabulary lacks): then decode writes their text.
function Tokenizer:spells(ids)
  for _, id in ipairs(ids) do if id == self.unk_id then return false end end
  return true
end

-- Whether a token id starts a word (for whole-word masking).
function Tokenizer:word_start(id)
  local p = self.pieces[id]
  return p ~= nil and p:sub(1, 2) ~= "##"
end

local HEADER, BERT_HEADER = "graphmert-wordpiece 1", "graphmert-bert-vocab 1"

-- The file's text, all that encoding depends on. A trained tokenizer: its header, max_piece and
-- pieces; a BERT one: its header, whether it lower-cases, and vocab.txt's lines.
function Tokenizer:text()
  local head = self.bert and BERT_HEADER .. "\nlower " .. tostring(self.lower) or HEADER .. "\nmax_piece " .. self.max_piece
  return head .. "\n" .. table.concat(self.pieces, "\n") .. "\n"
end

-- What a tokenization depends on: the file's text and the version of the encoding code, raised
-- whenever encode gives another result for some text, so that stored tokenizations (the seed
-- graph index's known tails) made by an earlier encoder are not taken for this one's.
M.ENCODING = 1

function Tokenizer:signature() return string.format("encoding %d\n%s", M.ENCODING, self:text()) end

function Tokenizer:save(path)
  local gm = require "graphmert"
  local ok, err = gm.write_atomic(path, { self:text() })
  if not ok then error("save: " .. err, 2) end
  return true
end

-- The lines of a file (a trailing \r dropped, as Python's universal newlines read vocab.txt).
local function read_lines(fn, path)
  local f, err = io.open(path, "r")
  if not f then error(fn .. ": " .. err, 3) end
  local lines = {}
  for line in f:lines() do lines[#lines + 1] = line:gsub("\r$", "") end
  f:close()
  return lines
end

-- pieces from lines[first..]; empty ones refused by line, and for a trained tokenizer ones with
-- spaces, for a BERT one (whose pieces match whole characters) ones that are not UTF-8
local function read_pieces(fn, path, lines, first, bert)
  local pieces = {}
  for n = first, #lines do
    local line = lines[n]
    if line == "" or (not bert and line:find("%s")) then
      error(string.format("%s: %s:%d: a piece must be non-empty%s", fn, path, n, bert and "" or " without spaces"), 3)
    end
    if bert and not utf8.len(line) then error(string.format("%s: %s:%d: a piece must be UTF-8", fn, path, n), 3) end
    pieces[#pieces + 1] = line
  end
  return pieces
end

local function construct(fn, path, pieces, opts)
  local ok, t = pcall(new, pieces, opts)
  if not ok then error(fn .. ": " .. path .. ": " .. tostring(t):gsub("^tokenizer: ", ""), 3) end
  return t
end

-- A BERT vocab.txt: one piece a line, id = line number; opts.lower = true (uncased BERT).
function M.from_vocab(path, opts)
  opts = opts or {}
  if opts.lower ~= nil and type(opts.lower) ~= "boolean" then
    error("tokenizer.from_vocab: lower must be a boolean, got " .. type(opts.lower), 2)
  end
  local pieces = read_pieces("tokenizer.from_vocab", path, read_lines("tokenizer.from_vocab", path), 1, true)
  return construct("tokenizer.from_vocab", path, pieces, { bert = true, lower = opts.lower })
end

function M.load(path)
  local fn = "tokenizer.load"
  local lines = read_lines(fn, path)
  if lines[1] == BERT_HEADER then
    local lower = (lines[2] or ""):match("^lower (%a+)$")
    if lower ~= "true" and lower ~= "false" then error(string.format("%s: %s:2: expected 'lower true|false'", fn, path), 2) end
    return construct(fn, path, read_pieces(fn, path, lines, 3, true), { bert = true, lower = lower == "true" })
  end
  if lines[1] ~= HEADER then error(string.format("%s: %s:1: not a graphmert tokenizer file", fn, path), 2) end
  if #lines < 2 then error(string.format("%s: %s: truncated", fn, path), 2) end
  local max_piece = math.tointeger(tonumber((lines[2]):match("^max_piece (%d+)$")))
  if not max_piece or max_piece < 1 then error(string.format("%s: %s:2: expected 'max_piece N'", fn, path), 2) end
  return construct(fn, path, read_pieces(fn, path, lines, 3, false), { max_piece = max_piece })
end

return M
