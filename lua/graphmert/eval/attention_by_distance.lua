-- attention_by_distance.lua — where a trained GraphMERT's roots look, by graph distance, and the
-- decay it learned.
--
-- attention_by_distance(model, batches) → per_node, mass: per_node[h + 1] is the average
--   attention weight a root gives to one real node h hops away (h = 0 is itself), mass[h + 1]
--   the weight it gives to all of them together; both averaged over the roots with text, the
--   sequences and the layers (each layer's weights averaged over its heads, as
--   GraphMERT's need_weights gives them). `batches` is a list of unmasked batches
--   ({ids, valid, relation, head_length}). The graph token, when there is one, is left out:
--   roots do not attend to it.
-- decay_by_distance(model, hops) → factors, p: factors[k][h + 1] = λ^GELU(√(h + offset) − p_k)
--   for head k and h = 0 .. hops, with the learned p_k (p[k]); nil without decay (lambda = false).
local gm = require "graphmert"

local M = {}

function M.attention_by_distance(model, batches)
  local roots, nodes = model.config.roots, model.nodes
  local hops = model.graph:distances():tensor():totable()
  local skip = model.config.graph_token and 1 or 0 -- the graph token's row and column come first
  local mass, pairs_at, rows = {}, {}, 0
  model:evaluating(function()
    for _, batch in ipairs(batches) do
      local _, _, weights = model(batch, true)
      local valid = batch.valid:totable()
      for _, w in ipairs(weights) do
        for b, per_seq in ipairs(w:totable()) do
          for r = 1, roots do
            if valid[b][r] == 1 then
              local row, dist = per_seq[r + skip], hops[r]
              for j = 1, nodes do
                local h = dist[j]
                if valid[b][j] == 1 and h < math.huge then
                  mass[h + 1] = (mass[h + 1] or 0) + row[j + skip]
                  pairs_at[h + 1] = (pairs_at[h + 1] or 0) + 1
                end
              end
              rows = rows + 1
            end
          end
        end
      end
    end
  end)
  local per_node, total = {}, {}
  for h = 1, #mass do
    total[h] = rows > 0 and (mass[h] or 0) / rows or 0
    per_node[h] = pairs_at[h] and mass[h] / pairs_at[h] or 0
  end
  return per_node, total
end

function M.decay_by_distance(model, hops)
  local decay = model.decay
  if not decay.lambda then return nil end
  local row = {}
  for h = 0, hops do row[h + 1] = h end
  local sp = {}
  for i = 1, hops + 1 do sp[i] = row end -- decay_mask takes a square table of hop counts
  local factors = decay(gm.tensor(sp)):totable() -- [heads, hops + 1, hops + 1]
  local out, p = {}, {}
  for k, per_head in ipairs(factors) do out[k] = per_head[1] end
  for k, v in ipairs(decay.sp_param:reshape(decay.heads):totable()) do p[k] = v end
  return out, p
end

return M
