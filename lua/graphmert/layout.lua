-- layout.lua — the leafy chain graph's node layout (GRAPHMERT_SPEC §1), the one place that knows
-- where roots and leaves sit in a sequence of N = roots·(1 + leaves) nodes.
--
--   local layout = gm.layout { roots = 128, leaves = 7 }
--   layout.roots, layout.leaves, layout.nodes
--   layout:leaf(r, a)          → node of leaf slot a (1..leaves) of root r: roots + leaves·(r − 1) + a
--   layout:flat(b, node)       → 1-based position of (sequence b, node) in a [B·N] batch
--   layout.find(list, run)     → the first index at which the token run `run` stands in `list`
--   layout:fit(tokens)         → the tokens that fit between [CLS] and [SEP] (roots − 2)
--   layout:sequence(tok)       → a new sequence: [CLS] at node 1, padding (valid = 0) elsewhere
--   layout:append(seq, tokens) → writes tokens and [SEP] after what the roots hold; returns the
--                                root of tokens[1], or nil when they do not fit
--   layout:inject(seq, root, relation, head_length, tail) → writes a triple at a root: its
--                                relation id, its head's token count and the tail ids in the
--                                root's leaf slots; false when the root already holds one
--   layout:batch(seqs)         → {ids [B, N], valid [B, N], relation, head_length} for GraphMERT
-- A sequence is a plain table {ids, valid (node lists), relation, head_length (root lists), used}.
local class = require "graphmert.class"
local gm = require "graphmert"
local check = require "graphmert.check"

local Layout = class("graphmert.layout")

function Layout:__init(opts)
  self.roots = check.positive_integer("layout", "roots", opts.roots)
  self.leaves = check.integer("layout", "leaves", opts.leaves, 0)
  self.nodes = self.roots * (1 + self.leaves)
end

function Layout:leaf(r, a) return self.roots + self.leaves * (r - 1) + a end

function Layout:flat(b, node) return (b - 1) * self.nodes + node end

function Layout.find(list, run)
  for i = 1, #list - #run + 1 do
    local ok = true
    for j = 1, #run do
      if list[i + j - 1] ~= run[j] then ok = false break end
    end
    if ok then return i end
  end
end

function Layout:fit(tokens)
  return { table.unpack(tokens, 1, math.min(#tokens, self.roots - 2)) }
end

function Layout:sequence(tok)
  local s = { ids = {}, valid = {}, relation = {}, head_length = {}, used = 1, sep = tok.sep_id }
  for n = 1, self.nodes do s.ids[n], s.valid[n] = tok.pad_id, 0 end
  for r = 1, self.roots do s.relation[r], s.head_length[r] = 0, 0 end
  s.ids[1], s.valid[1] = tok.cls_id, 1
  return s
end

function Layout:append(s, tokens)
  if s.used + #tokens + 1 > self.roots then return nil end
  local first = s.used + 1
  for i, id in ipairs(tokens) do s.ids[s.used + i], s.valid[s.used + i] = id, 1 end
  s.used = s.used + #tokens + 1
  s.ids[s.used], s.valid[s.used] = s.sep, 1
  return first
end

function Layout:inject(s, root, relation, head_length, tail)
  if s.relation[root] ~= 0 then return false end
  s.relation[root], s.head_length[root] = relation, head_length
  for a, id in ipairs(tail) do
    local node = self:leaf(root, a)
    s.ids[node], s.valid[node] = id, 1
  end
  return true
end

function Layout:batch(seqs)
  local ids, valid, relation, head_length = {}, {}, {}, {}
  for b, s in ipairs(seqs) do
    ids[b], valid[b], relation[b], head_length[b] = s.ids, s.valid, s.relation, s.head_length
  end
  return { ids = gm.tensor(ids), valid = gm.tensor(valid), relation = relation, head_length = head_length }
end

return Layout
