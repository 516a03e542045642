-- wordnet.lua — WordNet 3.0 data files (wndb(5): data.noun, data.verb, data.adj, data.adv, as
-- Debian's wordnet-base installs them) parsed with an LPeg grammar into synsets and relations.
--
-- parse_line(line) → synset, or nil and a message. A synset:
--   { offset = "00001740", pos = "v", lex_filenum = 29, lemmas = {"breathe", ...},
--     gloss = "draw air into, and expel out of, the lungs",
--     examples = {"I can breathe better when the air is clean", ...},
--     pointers = { {relation = "entailment", target = "00005041v", source = 0, dest = 0}, ... } }
-- key(synset) is offset .. pos ("s" satellites count as "a"), the form pointers name targets by.
-- load{dir = "/usr/share/wordnet", pos = {"noun", "verb", "adj", "adv"}, on_error = "skip" |
--   "stop", limit = n per file} → { synsets = {key → synset}, count = n, errors = {count,
--   messages = {"file:line: message", ... (the first 20)}} }
-- dataset(opts) → the same synsets as a gm.data.dataset: one entity per synset (id its key, name
--   its first lemma, the other lemmas aliases, type its part of speech: noun, verb, adjective,
--   adverb), one passage per synset ("lemma: gloss; example; ...", about that synset, carrying
--   its pointers as its own triples, in file order), the pointers between loaded synsets as the
--   seed graph, hypernym its subsumption relation; mentions are linked up to 3 words long, a
--   lemma with capitals in any case (only acronyms as written), and the split hashes ids as the
--   README's figures were measured (gm.experiment's polynomial hash).
local lpeg = require "lpeg"
local P, R, S, C, Ct, Cg = lpeg.P, lpeg.R, lpeg.S, lpeg.C, lpeg.Ct, lpeg.Cg

local M = {}

-- pointer symbols (wndb(5), wninput(5)) under readable names
M.relations = {
  ["!"] = "antonym", ["@"] = "hypernym", ["@i"] = "instance_hypernym", ["~"] = "hyponym",
  ["~i"] = "instance_hyponym", ["#m"] = "member_holonym", ["#s"] = "substance_holonym",
  ["#p"] = "part_holonym", ["%m"] = "member_meronym", ["%s"] = "substance_meronym",
  ["%p"] = "part_meronym", ["="] = "attribute", ["+"] = "derivationally_related_form",
  [";c"] = "domain_topic", ["-c"] = "member_of_domain_topic", [";r"] = "domain_region",
  ["-r"] = "member_of_domain_region", [";u"] = "domain_usage", ["-u"] = "member_of_domain_usage",
  ["*"] = "entailment", [">"] = "cause", ["^"] = "also_see", ["$"] = "verb_group",
  ["&"] = "similar_to", ["<"] = "participle", ["\\"] = "pertainym",
}

local sp = P " "
local digit, hexdigit = R "09", R("09", "af", "AF")
local function number(p) return p / tonumber end
local offset = C(digit ^ 8)
local pos = C(S "nvasr")
local word = C((1 - sp) ^ 1)
local hex2 = C(hexdigit * hexdigit) / function(h) return tonumber(h, 16) end
local dec3 = number(C(digit * digit * digit))
local pointer_symbol = C((1 - sp) ^ 1)
local pointer = Ct(Cg(pointer_symbol, "symbol") * sp * Cg(offset, "offset") * sp * Cg(pos, "pos") * sp *
  Cg(hex2, "source") * Cg(hex2, "dest"))
local frame = P "+" * sp * digit ^ 1 * sp * hexdigit ^ 1
local frames = digit * digit * (sp * frame) ^ 0
-- counts are checked after the match (LPeg cannot count repetitions by a captured number)
local line = Ct(
  Cg(offset, "offset") * sp * Cg(number(C(digit ^ 2)), "lex_filenum") * sp * Cg(pos, "pos") * sp *
  Cg(hex2, "w_cnt") * sp * Cg(Ct((word * sp * hexdigit * sp) ^ 1), "words") *
  Cg(dec3, "p_cnt") * sp * Cg(Ct((pointer * sp) ^ 0), "pointers") *
  (frames * sp) ^ -1 * P "|" * sp ^ 0 * Cg(C(P(1) ^ 0), "gloss"))

local function normalize_pos(p) return p == "s" and "a" or p end

function M.key(synset) return synset.offset .. normalize_pos(synset.pos) end

-- "def; "ex 1"; "ex 2"" → def, {ex 1, ex 2}
local function split_gloss(gloss)
  gloss = gloss:gsub("%s+$", "")
  local examples = {}
  for ex in gloss:gmatch('"([^"]*)"') do examples[#examples + 1] = ex end
  local definition = gloss:gsub('%s*;?%s*"[^"]*"', ""):gsub("[;%s]+$", "")
  return definition, examples
end

function M.parse_line(text)
  if text:sub(1, 2) == "  " then return nil, "license line" end
  local t = line:match(text)
  if not t then return nil, "not a wndb(5) synset line" end
  -- words alternate: lemma, lex_id (the grammar captured only lemmas)
  if #t.words ~= t.w_cnt then
    return nil, string.format("%d words where the count says %d", #t.words, t.w_cnt)
  end
  if #t.pointers ~= t.p_cnt then
    return nil, string.format("%d pointers where the count says %d", #t.pointers, t.p_cnt)
  end
  local lemmas = {}
  for i, w in ipairs(t.words) do lemmas[i] = (w:gsub("%(%a+%)$", ""):gsub("_", " ")) end
  local pointers = {}
  for i, p in ipairs(t.pointers) do
    local name = M.relations[p.symbol]
    if not name then return nil, "unknown pointer symbol " .. p.symbol end
    pointers[i] = { relation = name, target = p.offset .. normalize_pos(p.pos), source = p.source, dest = p.dest }
  end
  local gloss, examples = split_gloss(t.gloss)
  return { offset = t.offset, pos = t.pos, lex_filenum = t.lex_filenum, lemmas = lemmas,
    gloss = gloss, examples = examples, pointers = pointers }
end

function M.load(opts)
  opts = opts or {}
  local dir = opts.dir or "/usr/share/wordnet"
  local on_error = opts.on_error or "skip"
  local result = { synsets = {}, count = 0, errors = { count = 0, messages = {} } }
  for _, name in ipairs(opts.pos or { "noun", "verb", "adj", "adv" }) do
    local path = dir .. "/data." .. name
    local f, err = io.open(path, "r")
    if not f then error("wordnet.load: " .. err .. " (install Debian's wordnet-base)", 2) end
    local n, kept = 0, 0
    for text in f:lines() do
      n = n + 1
      if text:sub(1, 2) ~= "  " then
        local synset, msg = M.parse_line(text)
        if synset then
          result.synsets[M.key(synset)] = synset
          result.count = result.count + 1
          kept = kept + 1
          if opts.limit and kept >= opts.limit then break end
        else
          local where = string.format("%s:%d: %s", path, n, msg)
          if on_error == "stop" then
            f:close()
            error("wordnet.load: " .. where, 2)
          end
          result.errors.count = result.errors.count + 1
          if #result.errors.messages < 20 then result.errors.messages[#result.errors.messages + 1] = where end
        end
      end
    end
    f:close()
  end
  return result
end

local pos_names = { n = "noun", v = "verb", a = "adjective", r = "adverb" }

function M.dataset(opts)
  local wn = M.load(opts)
  -- linked up to 3 words, lemmas with capitals in any case, split by the polynomial hash: as the
  -- README's figures were measured
  local ds = require("graphmert.data.dataset").new("wordnet", { link = { max_words = 3, proper_names = false },
    split_hash = "polynomial" })
  local keys = {}
  for key in pairs(wn.synsets) do keys[#keys + 1] = key end
  table.sort(keys) -- a fixed order: the same corpus on every run
  for _, key in ipairs(keys) do
    local s = wn.synsets[key]
    ds:add_entity(key, s.lemmas[1], pos_names[key:sub(-1)], { table.unpack(s.lemmas, 2) })
  end
  for _, key in ipairs(keys) do
    local s = wn.synsets[key]
    local parts = { s.lemmas[1] .. ": " .. s.gloss }
    for _, ex in ipairs(s.examples) do parts[#parts + 1] = ex end
    local triples = {}
    for _, p in ipairs(s.pointers) do
      if wn.synsets[p.target] then
        ds:add_triple(key, p.relation, p.target)
        triples[#triples + 1] = { head = key, relation = p.relation, tail = p.target }
      end
    end
    ds:add_passage { id = key, text = table.concat(parts, "; "), entity = key, triples = triples }
  end
  ds.subsumption = "hypernym" -- (WordNet's is-a between noun and between verb synsets)
  if wn.errors.count > 0 then -- with on_error = "skip": counted like a dataset file's bad lines
    ds.report.skipped["not a wndb(5) synset line"], ds.report.skipped_total = wn.errors.count, wn.errors.count
    ds.report.messages = wn.errors.messages
  end
  return ds:finish()
end

return M
