-- shard.lua — a rank's share of a global batch for data-parallel training: contiguous rows, so
-- that K ranks together see exactly the batch one process would.
--   range(B, rank, size) → first, count: rank's rows of a batch of B (0-based rank; the counts
--     differ by at most one)
--   rows(batch, first, count) → the masked batch (gm.data.masking) of those rows: tensors and
--     per-row lists cut, label positions (flat into [B·N]) kept when in the rows and renumbered
local gm = require "graphmert"

local M = {}

function M.range(B, rank, size)
  local first = rank * B // size
  return first + 1, (rank + 1) * B // size - first
end

-- label fields holding flat positions into [B·N]; the first one a part has decides the row
local POSITION_FIELDS = { "positions", "left", "right" }

local function cut_labels(part, lo, hi, shift)
  local key
  for _, f in ipairs(POSITION_FIELDS) do
    if part[f] then key = key or f end
  end
  if not key then error("shard.rows: a label part has no positions (fields " .. table.concat(POSITION_FIELDS, ", ") .. ")", 3) end
  local n = #part[key]
  local out = {}
  for f, list in pairs(part) do
    if type(list) ~= "table" or #list ~= n then
      error(string.format("shard.rows: label field '%s' is not a list as long as '%s' (%d)", f, key, n), 3)
    end
    out[f] = {}
  end
  local renumber = {}
  for _, f in ipairs(POSITION_FIELDS) do renumber[f] = true end
  for i = 1, n do
    local p = part[key][i]
    if p >= lo and p <= hi then
      for f, list in pairs(part) do
        local o = out[f]
        o[#o + 1] = renumber[f] and list[i] - shift or list[i]
      end
    end
  end
  return out
end

function M.rows(batch, first, count)
  local B, N = batch.ids:size(1), batch.ids:size(2)
  local shift = (first - 1) * N
  local out = {}
  for k, v in pairs(batch) do
    if k == "labels" then
      out.labels = {}
      for name, part in pairs(v) do out.labels[name] = cut_labels(part, shift + 1, shift + count * N, shift) end
    elseif type(v) == "table" and #v == B then
      out[k] = table.move(v, first, first + count - 1, 1, {})
    elseif gm.is_tensor(v) and v:dim() >= 1 and v:size(1) == B then
      out[k] = v:narrow(1, first, count)
    else
      error(string.format("shard.rows: batch field '%s' is neither a per-row list nor a tensor of %d rows", k, B), 2)
    end
  end
  return out
end

return M
