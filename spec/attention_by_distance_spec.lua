-- gm.eval.attention_by_distance and decay_by_distance against values worked out by hand.
local gm = require "graphmert"

-- 4 roots × 2 leaves: roots 1–3 hold text, root 1's two leaf slots (nodes 5, 6) a tail
local function batch()
  local ids, valid = {}, {}
  for node = 1, 12 do
    local real = node <= 3 or node == 5 or node == 6
    ids[node], valid[node] = real and 7 or 1, real and 1 or 0
  end
  return { ids = gm.tensor { ids }, valid = gm.tensor { valid }, relation = { { 1, 0, 0, 0 } }, head_length = { { 1, 0, 0, 0 } } }
end

local function model(lambda)
  gm.manual_seed(5)
  return gm.nn.GraphMERT { vocab = 20, relations = 2, roots = 4, leaves = 2, hidden = 8, layers = 1, heads = 2, ffn = 16,
    head = "single", sbo = false, graph_token = false, lambda = lambda }
end

describe("eval.attention_by_distance", function()
  it("gives 1/5 a node and the hop counts' shares when every score is 0 (uniform attention)", function()
    -- with Q = K = 0 every score is 0, and the decay (a factor on the scores) leaves 0 alone:
    -- each of the 3 roots gives 1/5 to each of the 5 real nodes. Hops to roots 1–3 and the two
    -- leaves (each joined to its root): from root 1 0 1 2 1 1, from root 2 1 0 1 2 2, from
    -- root 3 2 1 0 3 3 → pairs at 0..3 hops: 3, 6, 4, 2 of 15.
    for _, lambda in ipairs { false, 0.6 } do
      local m = model(lambda)
      gm.no_grad(function()
        for _, e in ipairs(m:named_parameters()) do
          if e[1]:match("self_attn%.in_proj") then e[2]:mul_(0) end
        end
      end)
      local per_node, mass = gm.eval.attention_by_distance(m, { batch() })
      assert.equal(4, #per_node)
      for h = 1, 4 do assert.near(0.2, per_node[h], 1e-6) end
      local want = { 3 / 15, 6 / 15, 4 / 15, 2 / 15 }
      for h = 1, 4 do assert.near(want[h], mass[h], 1e-6) end
    end
  end)

  it("gives the decay factor λ^GELU(√(h + 1) − p) per head with the model's p", function()
    assert.is_nil(gm.eval.decay_by_distance(model(false), 3))
    local m = model(0.6)
    gm.no_grad(function() m.decay.sp_param:copy_(gm.tensor { { { 1 } }, { { 2 } } }) end)
    local factors, p = gm.eval.decay_by_distance(m, 3)
    assert.same({ 1, 2 }, p)
    local function gelu(x) -- erf by its series: enough terms for |x| < 2
      local z = x / math.sqrt(2)
      local s, term, n = 0, z, 0
      while math.abs(term) > 1e-15 do
        s = s + term / (2 * n + 1)
        n = n + 1
        term = -term * z * z / n
      end
      return x * 0.5 * (1 + 2 / math.sqrt(math.pi) * s)
    end
    for k, pk in ipairs { 1, 2 } do
      for h = 0, 3 do assert.near(0.6 ^ gelu(math.sqrt(h + 1) - pk), factors[k][h + 1], 1e-6) end
    end
  end)
end)
