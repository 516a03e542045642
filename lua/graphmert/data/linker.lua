-- linker.lua — entity linking: the mentions of a seed graph's entity names and aliases in text.
--
-- Text and names are normalised alike (normalize: BERT's basic text splitting with lower = true,
-- gm.data.bert_text — case folded, accents stripped (NFD, no combining marks), every punctuation
-- mark its own word; typographic apostrophes, quotes, hyphens and dashes (’ ‘ “ ” ‐ ‑ ‒ –) as
-- their ASCII twins, the micro sign as mu), so "Glycolytic-Process", "glycolytic - process" and
-- "Glycolytic‐process" are one name, and "Ménière’s" is "Meniere's". A mention is a run of whole
-- words equal to a name: never inside a word. Scanning left to right, the longest name starting at a word wins (multi-word
-- names first), and the scan goes on after it; a one-word match that is a stop word ("a", "in",
-- "or", ...: also the letter A, Indiana and Oregon in WordNet) is not a mention, nor is a name
-- without a letter (ASCII digits and marks only: "42", "(+)"). Nor are the parts of English
-- contractions: the s, t, m, d, re, ve or ll after a word and an apostrophe ("dog's", "I'm":
-- WordNet's letter S and metre) and the word before n't ("don't", "won't": the river Don, the
-- Korean won); "the letter 's'" is read as a contraction too.
--
-- Written case: a name the entities file writes with capitals is a mention only where the text
-- writes them. A name written as an acronym (at most 6 characters, capitals, digits and hyphens,
-- two capitals at least: "AD", "APP", "HER2", "IL-6") without lower-case letters ("AD patients",
-- not "ad libitum", nor "a smartphone app"); in any other name, each word written with a capital
-- A-Z first with one ("the Moon", "Christiaan Huygens", GO's "CCR4-NOT complex" as "the Ccr4-Not
-- complex"; not "the tiny moon Phobos"). A word the name writes in lower case, or starting
-- otherwise ("tRNA", "Émile"), takes any case. A capital the text owes to its place passes: a
-- sentence's first word ("Moon rocks are grey") and a heading in capitals ("THE MOON") link as
-- before, since they cannot be told from a name's. A passage with no capital at all (a
-- lower-cased corpus) is read as before. A phrase that several names write differently takes the
-- looser writing, word by word ("aids": AIDS and a verb, any case); an entity added with any_case
-- (its dataset's opt-out) is matched in any case, and with the option proper_names = false
-- (WordNet's) only names written as acronyms keep their case.
--
-- Ambiguity: a name may denote several entities (WordNet's "dog" names seven synsets; an alias
-- may be shared). A mention keeps all of them as candidates, ranked: entities whose preferred
-- name it is before those it is an alias of, then the entities with more seed-graph triples,
-- then by id. The first is the mention's entity; evaluation counts a triple as held when any
-- head candidate has the relation to any tail candidate.
--
--   local l = linker.new { max_words = nil, stopwords = linker.english_stopwords, proper_names = true }
--   l:add(id, name, preferred, weight[, any_case])  -- once per name or alias (weight: its triple
--                                                      count; any_case: the entity opts out of case)
--   l:freeze()                             -- then, once all are in
--   l:mentions(text[, words, surface]) → { {phrase = "glycolytic process", first = 3, words = 2},
--     ... } in text order, and the text's normalised words (or those given: the pieces' words,
--     with surface(i) the text of word i as written, for the written case; nil: any case)
--   l:as_written(phrase, first, count, surface) → whether words first.. of a passage (surface as
--     above) are written as the phrase's names write them (true for a phrase of any case)
--   linker.pieces(text) → the text's pieces {s, e, words}: where each normalised word is in it
--   linker.word_spans(text) → the text's normalised words, and each word's first byte and the
--     byte after it (what `mentions` takes, and where its mentions are in the text)
--   linker.surface(text, span) → mentions' surface for words whose bytes span(i) gives (first,
--     after): word i as written; nil when the text has no capital A–Z (any case then)
--   l:heads(text) → the distinct phrases mentioned, in order of first mention
--   l:candidates(phrase) → the ranked entity ids of a normalised phrase (or nil)
--   linker.normalize(text) → the normalised phrase ("Hot-Dog" → "hot - dog")
--   linker.split(joined) → the list of strings joined by "\0" (a frozen index's candidates)
-- The index is two flat tables of strings (phrase → candidates, word prefixes of names), not a
-- tree of tables: a 10⁵-name graph adds no objects for the collector to walk during training,
-- and once frozen the tables can be saved and read back whole (linker.restore).
local bert_text = require "graphmert.data.bert_text"
local pretokenize = require("graphmert.data.tokenizer").pretokenize

local M = {}

M.english_stopwords = {}
for w in ([[a an the this that these those some any each every no all both either neither
  in on at by for from of off to up down into onto upon out over under with within without about
  above below across after before behind beside between beyond during except inside near
  outside past since through throughout till toward towards until via per than as like
  and or but nor so yet if then else when while because although though unless whether
  i me my we us our you your he him his she her it its they them their who whom whose which what
  be am is are was were been being have has had do does did done will would shall should can
  could may might must not also only very too just more most less least such own same other
  there here where how why one]]):gmatch("%a+") do M.english_stopwords[w] = true end

-- Marks that stand for one another in names: typographic apostrophes and quotes, Unicode
-- hyphens and dashes written for them (a name typed "Ménière's disease" is the text's "Ménière’s
-- disease", "TNF-α" is "TNF–α" with an en dash); and the micro sign, which is the Greek mu
-- (µg, μg).
local SAME_MARK = { ["’"] = "'", ["‘"] = "'", ["“"] = '"', ["”"] = '"', ["‐"] = "-", ["‑"] = "-", ["‒"] = "-", ["–"] = "-" }

-- the words of text beyond printable ASCII: BERT's, with SAME_MARK's marks as their ASCII twins
local function unicode_words(text)
  local words = bert_text.words(text, true)
  for i, w in ipairs(words) do words[i] = SAME_MARK[w] or w:gsub("\194\181", "\206\188") end
  return words
end

-- Printable ASCII text (most of it) takes the trained tokenizer's splitting, which gives the
-- same words as BERT's there and is several times faster.
function M.words(text)
  if text:find("[%z\1-\8\11\12\14-\31\127-\255]") then return unicode_words(text) end
  return pretokenize(text)
end

function M.normalize(text) return table.concat(M.words(text), " ") end

-- The text cut where a trained tokenizer cuts words: runs of letters and digits (bytes >= 128
-- count as letters) and single punctuation marks, each {s = first byte, e = byte after it, words
-- = its normalised words}. Where a mention is, in the text and in its tokens (the tokens of the
-- text are those of its pieces one after the other): the pieces' words are the text's words, up
-- to control characters (here they part words, there they vanish). A piece that holds Unicode
-- punctuation ("glycolytic‐process") has several words.
function M.pieces(text)
  local out = {}
  for s, word, m, mark in text:gmatch("()([%w\128-\255]*)()(%p?)") do
    if word ~= "" then
      out[#out + 1] = { s = s, e = m, words = word:find("[\128-\255]") and unicode_words(word) or { word:lower() } }
    end
    if mark ~= "" then out[#out + 1] = { s = m, e = m + 1, words = { mark } } end
  end
  return out
end

function M.word_spans(text)
  local words, first, after = {}, {}, {}
  for _, p in ipairs(M.pieces(text)) do
    if #p.words == 1 then
      words[#words + 1], first[#words + 1], after[#words + 1] = p.words[1], p.s, p.e
    elseif #p.words > 1 then -- Unicode punctuation inside: the words' own places
      local _, s, e = bert_text.words_at(text:sub(p.s, p.e - 1), true)
      for k, w in ipairs(p.words) do
        words[#words + 1], first[#words + 1], after[#words + 1] = w, p.s + s[k] - 1, p.s + e[k] - 1
      end
    end
  end
  return words, first, after
end

-- what follows "word '" in an English contraction
local CLITICS = { s = true, t = true, m = true, d = true, re = true, ve = true, ll = true }

-- whether words[i] is part of a contraction: a clitic after "word '", or the verb of "verb ' t"
-- whose letters end in n (words are normalised: a word made of letters is %w+)
local function in_contraction(words, i)
  local w = words[i]
  if CLITICS[w] and words[i - 1] == "'" and (words[i - 2] or ""):match("^[%w\128-\255]+$") then return true end
  return w:match("^%a*n$") ~= nil and words[i + 1] == "'" and words[i + 2] == "t"
end

local Linker = {}
Linker.__index = Linker

-- opts.max_words: longest mention in words (nil: the longest name); opts.stopwords: a set of
-- one-word matches that are not mentions (default english_stopwords; {} for none);
-- opts.proper_names = false: only whole names written as acronyms keep their case
function M.new(opts)
  opts = opts or {}
  local l = M.restore { index = {}, prefix = {}, longest = 0, max_words = opts.max_words,
    stopwords = opts.stopwords or M.english_stopwords }
  l.proper_names = opts.proper_names ~= false
  l.written = {} -- phrase → how its names so far write its words (false: any case), while adding
  return l
end

-- A linker over tables a frozen one had (seed_graph.load reads them back from a file): index,
-- prefix, longest, max_words, stopwords, cased (phrase → how its words are written, one letter
-- a word: "A" without lower-case letters, "C" with a capital first, "." any case; a phrase of
-- any case is absent; an index before version 6 holds only acronyms, each `true`).
function M.restore(t)
  return setmetatable({ index = t.index, prefix = t.prefix, rank = {}, longest = t.longest, max_words = t.max_words,
    stopwords = t.stopwords, cased = t.cased or {} }, Linker)
end

local function is_acronym(name)
  return #name <= 6 and name:match("^[%u%d%-]+$") ~= nil and select(2, name:gsub("%u", "")) >= 2
end

-- How a name of `count` normalised words writes each (the letters of `cased` above), or false
-- for any case: an acronym "A" throughout; with proper names, a word with a capital first "C"
-- (an acronym's word in a longer name too), else "."
local function writing(name, count, proper_names)
  if is_acronym(name) then return ("A"):rep(count) end
  if not proper_names then return false end
  local words, first = M.word_spans(name)
  if #words ~= count then return false end
  local letters = {}
  for i = 1, count do letters[i] = name:find("^%u", first[i]) and "C" or "." end
  local s = table.concat(letters)
  return s:find("[AC]") ~= nil and s
end

-- the looser of two writings of one phrase, word by word ("A" ⊂ "C" ⊂ "."); false: any case
local STRICTNESS = { ["."] = 0, C = 1, A = 2 }
local function looser(a, b)
  if not a or not b then return false end
  local s = a:gsub("()(.)", function(i, x)
    local y = b:sub(i, i)
    return STRICTNESS[x] <= STRICTNESS[y] and x or y
  end)
  return s:find("[AC]") ~= nil and s
end

-- Adds a name (or alias) of entity `id`. Candidates are kept sorted by the ranking above:
-- rank[phrase .. "\0" .. id] holds the key they sort by.
function Linker:add(id, name, preferred, weight, any_case)
  local words = M.words(name)
  local phrase = table.concat(words, " ")
  if #words == 0 or not phrase:match("[%a\128-\255]") then return false end -- a letter of any script
  local written = not any_case and writing(name, #words, self.proper_names)
  if self.written[phrase] == nil then self.written[phrase] = written
  else self.written[phrase] = looser(self.written[phrase], written) end
  local key = phrase .. "\0" .. id
  local r = { preferred and 0 or 1, -(weight or 0), id }
  local old = self.rank[key]
  if old and (old[1] < r[1] or (old[1] == r[1] and old[2] <= r[2])) then return true end
  self.rank[key] = r
  local list = self.index[phrase]
  if not list then
    self.index[phrase] = id
    for n = 1, #words - 1 do
      local p = table.concat(words, " ", 1, n)
      if self.prefix[p] == nil then self.prefix[p] = true end
    end
    self.longest = math.max(self.longest, #words)
    return true
  end
  if type(list) == "string" then
    if list == id then return true end
    list = { list }
    self.index[phrase] = list
  end
  local found = false
  for _, x in ipairs(list) do if x == id then found = true end end
  if not found then list[#list + 1] = id end
  local rank = self.rank
  table.sort(list, function(a, b)
    local ra, rb = rank[phrase .. "\0" .. a], rank[phrase .. "\0" .. b]
    if ra[1] ~= rb[1] then return ra[1] < rb[1] end
    if ra[2] ~= rb[2] then return ra[2] < rb[2] end
    return a < b
  end)
  return true
end

-- Once every name is in (none is added after): drops the ranking keys, only needed while adding,
-- and makes each phrase's ranked candidates one string, the ids joined by "\0", so that the index
-- is a table of strings alone, as a file keeps it (seed_graph.save).
function Linker:freeze()
  for phrase, c in pairs(self.index) do
    if type(c) == "table" then self.index[phrase] = table.concat(c, "\0") end
  end
  for phrase, written in pairs(self.written or {}) do
    if written then self.cased[phrase] = written end
  end
  self.rank, self.written = {}, nil
  return self
end

-- the ids of a frozen index's entry (ids joined by "\0"), as a list
function M.split(joined)
  local ids = {}
  for id in joined:gmatch("[^%z]+") do ids[#ids + 1] = id end
  return ids
end

function Linker:candidates(phrase)
  local c = self.index[phrase]
  if type(c) ~= "string" then return c end -- nil, or a list while adding
  if not c:find("\0", 1, true) then return { c } end
  return M.split(c)
end

function M.surface(text, span)
  if not text:find("%u") then return nil end
  return function(i)
    local first, after = span(i)
    return text:sub(first, after - 1)
  end
end

-- surface(i) for text's words as M.words gives them, or nil when the text has no capital or its
-- pieces part words otherwise (control characters)
local function surface_of(text, count)
  local words, first, after = M.word_spans(text)
  if #words ~= count then return nil end
  return M.surface(text, function(i) return first[i], after[i] end)
end

function Linker:as_written(phrase, first, count, surface)
  local written = self.cased[phrase]
  if not surface or not written then return true end
  for k = 1, count do
    local s = surface(first + k - 1)
    if not s then return true end
    local letter = written == true and "A" or written:sub(k, k)
    if (letter == "A" and s:find("%l")) or (letter == "C" and not s:find("^%u")) then return false end
  end
  return true
end

function Linker:mentions(text, words, surface)
  if not words then
    words = M.words(text)
    local spans -- (the words as written, found once a cased phrase is met; false: none)
    surface = text:find("%u") and function(i)
      if spans == nil then spans = surface_of(text, #words) or false end
      return spans and spans(i)
    end
  end
  local out, i, limit = {}, 1, self.max_words or self.longest
  while i <= #words do
    local phrase, best, len = words[i], nil, 0
    for n = 1, math.min(limit, #words - i + 1) do
      if n > 1 then phrase = phrase .. " " .. words[i + n - 1] end
      if self.index[phrase] and self:as_written(phrase, i, n, surface) then best, len = phrase, n end
      if not self.prefix[phrase] then break end
    end
    if best then
      if not (len == 1 and (self.stopwords[best] or in_contraction(words, i))) then
        out[#out + 1] = { phrase = best, first = i, words = len }
      end
      i = i + len
    else
      i = i + 1
    end
  end
  return out, words
end

function Linker:heads(text)
  local found, seen = {}, {}
  for _, m in ipairs(self:mentions(text)) do
    if not seen[m.phrase] then
      seen[m.phrase] = true
      found[#found + 1] = m.phrase
    end
  end
  return found
end

return M
