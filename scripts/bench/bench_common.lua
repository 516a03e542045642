-- bench_common.lua — what the benchmark scripts share: the median of timings, the CPU a table
-- names (graphmert.machine), and running the PyTorch twin of a benchmark (/usr/bin/python3 from Debian's python3-torch).
local M = {}

-- the CPU as a result names it: model name, family and model, and its vector features
M.cpu = require("graphmert.machine").cpu


function M.median(xs)
  table.sort(xs)
  return xs[(#xs + 1) // 2]
end

-- Runs scripts/<script> with the arguments and returns its whole output, or nil when python3 or
-- torch is missing (its errors are dropped: the benchmark then reports "not available").
function M.torch_output(script, ...)
  local args = {}
  for i, v in ipairs { ... } do args[i] = tostring(v) end
  local p = io.popen(string.format("/usr/bin/python3 scripts/bench/%s %s 2>/dev/null", script, table.concat(args, " ")))
  if not p then return nil end
  local out = p:read("a")
  p:close()
  return out ~= "" and out or nil
end

-- The medians a twin prints as "torch forward <s> backward <s>", as numbers (nil, nil without torch).
function M.torch_forward_backward(script, ...)
  local out = M.torch_output(script, ...)
  local tf, tb = (out or ""):match("torch forward ([%d.]+) backward ([%d.]+)")
  return tonumber(tf), tonumber(tb)
end

-- The benchmarks' training-step setup: the 2-layer hidden-512 GraphMERT (with the single LM head,
-- no SBO and no graph token, as the PyTorch twin scripts/bench/bench_model_torch.py has it) and a
-- masked batch of 8 × 1024 nodes (128 roots × 7 leaves) with `fill` of the leaf groups filled.
-- Draws from gm's generator: seed it first.
function M.graphmert_step_setup(fill)
  local gm = require "graphmert"
  local R, L, V, B = 128, 7, 8000, 8
  local N = R * (1 + L)
  local model = gm.nn.GraphMERT { vocab = V, hidden = 512, layers = 2, heads = 8, ffn = 2048, roots = R,
    leaves = L, relations = 4, head = "single", sbo = false, graph_token = false }
  local ids, valid, relation, head_length = {}, {}, {}, {}
  local r, leaf = gm.rand(B, N):totable(), gm.rand(B, R):totable()
  for b = 1, B do
    ids[b], valid[b], relation[b], head_length[b] = {}, {}, {}, {}
    for n = 1, N do
      local root = n <= R and n or (n - R - 1) // L + 1
      local filled = n <= R or leaf[b][root] < fill
      ids[b][n], valid[b][n] = filled and (5 + math.floor(r[b][n] * (V - 5))) or 1, filled and 1 or 0
    end
    for root = 1, R do
      local has = leaf[b][root] < fill
      relation[b][root], head_length[b][root] = has and 1 + root % 4 or 0, has and 1 or 0
    end
  end
  local batch = { ids = gm.tensor(ids), valid = gm.tensor(valid), relation = relation, head_length = head_length }
  local masked = gm.data.masking.mask(batch, { vocab = V, mask_id = 4, special = { [1] = true }, sbo = false,
    layout = model.layout })
  return model, masked, batch.valid:sum():item()
end

return M
