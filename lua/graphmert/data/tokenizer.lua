-- tokenizer.lua — a WordPiece tokenizer trained on a corpus, saved to and loaded from a file.
--
-- Text is lower-cased and split into words and single punctuation marks (pretokenize); each word
-- is encoded greedily, longest vocabulary piece first, continuation pieces written "##piece", as
-- BERT's WordPiece does; a word that cannot be spelled becomes [UNK]. Training keeps the special
-- tokens, every character seen (as a word start and as "##" continuation), then the substrings
-- with the highest frequency × (length − 1) score until vocab_size.
--
--   local tok = tokenizer.train(texts, {vocab_size = 8000, max_piece = 12})
--   local ids = tok:encode("A dog barks.")        -- 1-based ids, no [CLS]/[SEP]
--   tok:decode(ids)                               -- "a dog barks ."
--   tok:save(path); tokenizer.load(path)
-- Special ids: [PAD] 1, [UNK] 2, [CLS] 3, [SEP] 4, [MASK] 5.
local M = {}
M.specials = { "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]" }

local Tokenizer = {}
Tokenizer.__index = Tokenizer

-- lower-case words of letters and digits (UTF-8 bytes ≥ 128 count as letters) and single
-- punctuation marks
function M.pretokenize(text)
  local out = {}
  local i, n = 1, #text
  local lower = text:lower()
  while i <= n do
    local c = lower:sub(i, i)
    if c:match("[%w\128-\255]") then
      local j = i
      while j + 1 <= n and lower:sub(j + 1, j + 1):match("[%w\128-\255]") do j = j + 1 end
      out[#out + 1] = lower:sub(i, j)
      i = j + 1
    elseif c:match("%p") then
      out[#out + 1] = c
      i = i + 1
    else
      i = i + 1
    end
  end
  return out
end

function M.normalize(text) return table.concat(M.pretokenize(text), " ") end

local function new(pieces, opts)
  local t = setmetatable({ pieces = pieces, index = {}, max_piece = opts.max_piece or 12 }, Tokenizer)
  for id, p in ipairs(pieces) do
    if t.index[p] then error("tokenizer: duplicate piece '" .. p .. "'", 3) end
    t.index[p] = id
  end
  for i, s in ipairs(M.specials) do
    if pieces[i] ~= s then error("tokenizer: piece " .. i .. " must be " .. s, 3) end
  end
  t.pad_id, t.unk_id, t.cls_id, t.sep_id, t.mask_id = 1, 2, 3, 4, 5
  return t
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
  local chars, counts = {}, {}
  for w, f in pairs(words) do
    for i = 1, #w do
      chars[w:sub(i, i)] = true
      for j = i + 1, math.min(#w, i + max_piece - 1) do
        local p = (i == 1 and "" or "##") .. w:sub(i, j)
        counts[p] = (counts[p] or 0) + f
      end
    end
  end
  local singles = {}
  for c in pairs(chars) do singles[#singles + 1] = c end
  table.sort(singles)
  for _, c in ipairs(singles) do add(c) end
  for _, c in ipairs(singles) do add("##" .. c) end
  local ranked = {}
  for p, f in pairs(counts) do
    local len = #p - (p:sub(1, 2) == "##" and 2 or 0)
    ranked[#ranked + 1] = { p, f * (len - 1) }
  end
  table.sort(ranked, function(a, b) return a[2] > b[2] or (a[2] == b[2] and a[1] < b[1]) end)
  for _, r in ipairs(ranked) do
    if #pieces >= vocab_size then break end
    add(r[1])
  end
  return new(pieces, { max_piece = max_piece })
end

function Tokenizer:size() return #self.pieces end

-- one word → ids, longest piece first; [UNK] when it cannot be spelled
function Tokenizer:encode_word(w)
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
  for _, w in ipairs(M.pretokenize(text)) do
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

-- Whether a token id starts a word (for whole-word masking).
function Tokenizer:word_start(id)
  local p = self.pieces[id]
  return p ~= nil and p:sub(1, 2) ~= "##"
end

local HEADER = "graphmert-wordpiece 1"

function Tokenizer:save(path)
  local gm = require "graphmert"
  local body = HEADER .. "\nmax_piece " .. self.max_piece .. "\n" .. table.concat(self.pieces, "\n") .. "\n"
  local ok, err = gm.write_atomic(path, { body })
  if not ok then error("save: " .. err, 2) end
  return true
end

function M.load(path)
  local f, err = io.open(path, "r")
  if not f then error("tokenizer.load: " .. err, 2) end
  local pieces, max_piece, n = {}, nil, 0
  for line in f:lines() do
    n = n + 1
    if n == 1 then
      if line ~= HEADER then
        f:close()
        error(string.format("tokenizer.load: %s:1: not a graphmert tokenizer file", path), 2)
      end
    elseif n == 2 then
      max_piece = math.tointeger(tonumber(line:match("^max_piece (%d+)$")))
      if not max_piece or max_piece < 1 then
        f:close()
        error(string.format("tokenizer.load: %s:2: expected 'max_piece N'", path), 2)
      end
    else
      if line == "" or line:find("%s") then
        f:close()
        error(string.format("tokenizer.load: %s:%d: a piece must be non-empty without spaces", path, n), 2)
      end
      pieces[#pieces + 1] = line
    end
  end
  f:close()
  if n < 2 then error(string.format("tokenizer.load: %s: truncated", path), 2) end
  local ok, t = pcall(new, pieces, { max_piece = max_piece })
  if not ok then error("tokenizer.load: " .. path .. ": " .. tostring(t):gsub("^tokenizer: ", ""), 2) end
  return t
end

return M
