-- entity_ids.lua — how the outputs name a triple's head and tail: by its seed-graph id, or, for a
-- new entity (a tail extracted under --decoding open, which has none), by "new:" and its name.
-- One coding for the store, the KG page and its review files (kg.key); page.js writes the same.
--   entity_ids.of(t) → the head's id and the tail's id of a triple {head, head_id, tail, tail_id}
local M = {}

function M.of(t)
  return type(t.head_id) == "string" and t.head_id or ("new:" .. t.head),
    type(t.tail_id) == "string" and t.tail_id or ("new:" .. t.tail)
end

return M
