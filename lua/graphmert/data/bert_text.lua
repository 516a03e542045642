-- bert_text.lua — BERT's BasicTokenizer (HF transformers tokenization_bert.py): text → words for
-- WordPiece. Cleans the text (drops \0, U+FFFD and control/format characters; whitespace becomes
-- a space), puts spaces around CJK ideographs, splits on whitespace, lower-cases and strips
-- accents (NFD, then no combining marks) when `lower`, and splits off every punctuation mark.
--   words(text, lower) → list of UTF-8 words
--   words_at(text, lower) → the words, and for each its first byte and the byte after its last
-- Python's str.lower and unicodedata are the reference (spec/fixtures/bert, checked code point by
-- code point for the blocks below). Covered: ASCII, Latin-1 Supplement, Latin Extended-A and the
-- fullwidth Latin letters (case and accents); combining marks U+0300–036F, U+20D0–20F0,
-- U+302A–302D, U+FE00–FE2F; punctuation of ASCII, Latin-1, General Punctuation, CJK Symbols and
-- Punctuation, Vertical Forms, Halfwidth and Fullwidth Forms; every Zs space and U+2028/2029;
-- control, format and unassigned characters of those blocks, Arabic's and Syriac's format marks
-- and private use U+E000–F8FF. Not covered: case and accents of other scripts (Greek, Cyrillic,
-- Latin Extended-B and Additional, …: kept as written), punctuation of other blocks (Supplemental
-- Punctuation, Arabic, …: kept inside words), unassigned code points elsewhere (HF drops them,
-- here they stay), and HF's NFC step: CJK compatibility ideographs (U+F900–FAFF, U+2F800–2FA1F)
-- stay as written instead of becoming their unified ideograph, and lower = false keeps combining
-- marks uncomposed.
local M = {}

local function ranges(list)
  return function(cp)
    for i = 1, #list, 2 do
      if cp >= list[i] and cp <= list[i + 1] then return true end
    end
    return false
  end
end

local is_space = ranges { 9, 10, 13, 13, 32, 32, 0xA0, 0xA0, 0x1680, 0x1680, 0x2000, 0x200A, 0x2028, 0x2029,
  0x202F, 0x202F, 0x205F, 0x205F, 0x3000, 0x3000 }
-- C* categories (\t \n \r are spaces): Cc, the Cf format marks, Cn gaps of the covered blocks, Co
local is_control = ranges { 0, 8, 11, 12, 14, 31, 0x7F, 0x9F, 0xAD, 0xAD, 0x600, 0x605, 0x61C, 0x61C,
  0x6DD, 0x6DD, 0x70F, 0x70F, 0x8E2, 0x8E2, 0x180E, 0x180E, 0x200B, 0x200F, 0x202A, 0x202E, 0x2060, 0x206F,
  0xE000, 0xF8FF, 0xFE1A, 0xFE1F, 0xFEFF, 0xFEFF, 0xFF00, 0xFF00, 0xFFF0, 0xFFFB, 0xFFFD, 0xFFFD }
-- ASCII ranges as HF (33–47, 58–64, 91–96, 123–126, which include symbols) and P* elsewhere
local is_punctuation = ranges { 33, 47, 58, 64, 91, 96, 123, 126, 0xA1, 0xA1, 0xA7, 0xA7, 0xAB, 0xAB,
  0xB6, 0xB7, 0xBB, 0xBB, 0xBF, 0xBF, 0x2010, 0x2027, 0x2030, 0x2043, 0x2045, 0x2051, 0x2053, 0x205E,
  0x3001, 0x3003, 0x3008, 0x3011, 0x3014, 0x301F, 0x3030, 0x3030, 0x303D, 0x303D, 0x30FB, 0x30FB,
  0xFE10, 0xFE19, 0xFF01, 0xFF03, 0xFF05, 0xFF0A, 0xFF0C, 0xFF0F, 0xFF1A, 0xFF1B, 0xFF1F, 0xFF20, 0xFF3B, 0xFF3D,
  0xFF3F, 0xFF3F, 0xFF5B, 0xFF5B, 0xFF5D, 0xFF5D, 0xFF5F, 0xFF65 }
local is_combining = ranges { 0x300, 0x36F, 0x302A, 0x302D, 0x20D0, 0x20DC, 0x20E1, 0x20E1, 0x20E5, 0x20F0, 0xFE00, 0xFE0F,
  0xFE20, 0xFE2F }
-- HF's _is_chinese_char
local is_cjk = ranges { 0x4E00, 0x9FFF, 0x3400, 0x4DBF, 0x20000, 0x2A6DF, 0x2A700, 0x2B73F, 0x2B740, 0x2B81F,
  0x2B820, 0x2CEAF, 0xF900, 0xFAFF, 0x2F800, 0x2FA1F }

-- The base letter of each precomposed letter of U+00C0–U+017F after NFD without combining marks
-- ("." = no canonical decomposition: Æ, Ð, Ø, Þ, ß, Đ, Ħ, ı, Ĳ, Ł, Œ, Ŧ, ſ, ... stay).
local BASE = "AAAAAA.CEEEEIIII.NOOOOO..UUUUY..aaaaaa.ceeeeiiii.nooooo..uuuuy.y" ..
  "AaAaAaCcCcCcCcDd..EeEeEeEeEeGgGgGgGgHh..IiIiIiIiI...JjKk.LlLlLl." ..
  "...NnNnNn...OoOoOo..RrRrRrSsSsSsSsTtTt..UuUuUuUuUuUuWwYyYZzZzZz."

local function base_of(cp)
  if cp >= 0xC0 and cp <= 0x17F then
    local c = BASE:byte(cp - 0xC0 + 1)
    if c ~= 46 then return c end
  end
  return cp
end

-- Python's str.lower for the covered letters; İ becomes i + U+0307 (whose mark NFD then drops)
local function lower(cp, out)
  if (cp >= 65 and cp <= 90) or (cp >= 0xC0 and cp <= 0xDE and cp ~= 0xD7) or (cp >= 0xFF21 and cp <= 0xFF3A) then
    cp = cp + 32
  elseif cp == 0x130 then
    out[#out + 1] = 0x69
    cp = 0x307
  elseif cp == 0x178 then
    cp = 0xFF
  elseif (cp >= 0x100 and cp <= 0x137) or (cp >= 0x14A and cp <= 0x177) then
    if cp % 2 == 0 then cp = cp + 1 end
  elseif (cp >= 0x139 and cp <= 0x148) or (cp >= 0x179 and cp <= 0x17E) then
    if cp % 2 == 1 then cp = cp + 1 end
  end
  out[#out + 1] = cp
end

-- UTF-8 → code points and the byte each starts at (then #text + 1); a byte that starts no valid
-- sequence counts as U+FFFD (then dropped)
local function codepoints(text)
  local cps, at, i, n = {}, {}, 1, #text
  while i <= n do
    local b = text:byte(i)
    local len = b < 0x80 and 1 or b < 0xC2 and 0 or b < 0xE0 and 2 or b < 0xF0 and 3 or b < 0xF5 and 4 or 0
    -- utf8.len is strict: it refuses overlong forms, surrogates and code points past U+10FFFF
    local cp = len > 0 and i + len - 1 <= n and utf8.len(text, i, i + len - 1) == 1 and utf8.codepoint(text, i)
    at[#cps + 1] = i
    if cp then
      cps[#cps + 1] = cp
      i = i + len
    else
      cps[#cps + 1] = 0xFFFD
      i = i + 1
    end
  end
  at[#cps + 1] = n + 1
  return cps, at
end

-- the words, and where each is in the text: its first byte and the byte after its last
function M.words_at(text, lower_case)
  local words, first, after = {}, {}, {}
  local word, from, to
  local function flush()
    if word and #word > 0 then
      words[#words + 1] = utf8.char(table.unpack(word))
      first[#words], after[#words] = from, to
    end
    word = nil
  end
  local cps, at = codepoints(text)
  local folded = {}
  for i, source in ipairs(cps) do
    local s, e = at[i], at[i + 1]
    folded[1], folded[2] = nil, nil
    if lower_case then lower(source, folded) else folded[1] = source end
    for _, cp in ipairs(folded) do
      if cp == 0 or cp == 0xFFFD or is_control(cp) or (lower_case and is_combining(cp)) then
        if word then to = e end -- dropped, but inside the word as written
      elseif is_space(cp) then
        flush()
      elseif is_cjk(cp) or is_punctuation(cp) then
        flush()
        words[#words + 1] = utf8.char(cp)
        first[#words], after[#words] = s, e
      else
        if not word then word, from = {}, s end
        word[#word + 1] = lower_case and base_of(cp) or cp
        to = e
      end
    end
  end
  flush()
  return words, first, after
end

function M.words(text, lower_case) return (M.words_at(text, lower_case)) end

return M
