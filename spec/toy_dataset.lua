-- A dataset from a toy table of synset-like entries, for specs: { synsets = { [id] = { lemmas =
-- {name, aliases...}, pointers = { {relation, target}, ... } } } } → gm.data.dataset (type: the
-- id's last letter, as in WordNet keys "1n", "4v"), and the seed graph index over it.
local gm = require "graphmert"

return function(toy)
  local ds = gm.data.dataset.new("toy")
  local ids = {}
  for id in pairs(toy.synsets) do ids[#ids + 1] = id end
  table.sort(ids)
  for _, id in ipairs(ids) do
    local s = toy.synsets[id]
    ds:add_entity(id, s.lemmas[1], id:sub(-1), { table.unpack(s.lemmas, 2) })
  end
  for _, id in ipairs(ids) do
    for _, p in ipairs(toy.synsets[id].pointers) do ds:add_triple(id, p.relation, p.target) end
  end
  ds:finish()
  return ds, gm.data.seed_graph.new(ds)
end
