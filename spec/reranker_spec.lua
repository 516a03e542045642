-- Scores that are probabilities: logistic regression on a synthetic problem with a known answer,
-- the relation prior and the candidates of every source on a small hand-made ontology, the
-- reranker saved and read back, the calibration error, and the validation split.
local gm = require "graphmert"
local files = require "spec.files"
local logistic = require "graphmert.optim.logistic"
local calibration = require "graphmert.eval.calibration"
local relation_prior = require "graphmert.kg.relation_prior"
local candidates = require "graphmert.kg.candidates"
local reranker = require "graphmert.kg.reranker"
local rules = require "graphmert.kg.rules"
local preparation = require "graphmert.experiment.preparation"

-- rows drawn from a known logistic model: σ(-0.3 + 1.5 x₁ − 2 x₂ + 0.5 x₃)
local TRUE_W, TRUE_B = { 1.5, -2, 0.5 }, -0.3
local function draw(n, seed)
  local state = seed
  local function uniform() -- (a generator of the spec's own: the draws do not depend on Lua's)
    state = (state * 1103515245 + 12345) % 2147483648
    return state / 2147483648
  end
  local rows, labels = {}, {}
  for i = 1, n do
    local r = { uniform() * 4 - 2, uniform() * 2, uniform() < 0.5 and 1 or 0 }
    local z = TRUE_B
    for j = 1, 3 do z = z + TRUE_W[j] * r[j] end
    rows[i], labels[i] = r, uniform() < 1 / (1 + math.exp(-z))
  end
  return rows, labels
end

describe("logistic regression (gm.optim.logistic)", function()
  it("recovers the weights of the model that drew the labels", function()
    local rows, labels = draw(20000, 7)
    local m = logistic.fit(rows, labels, { l2 = 0.01 })
    for j = 1, 3 do assert.are.near(TRUE_W[j], m.weights[j], 0.12) end
    assert.are.near(TRUE_B, m.bias, 0.12)
    assert.is_true(m.iterations < 20)
  end)

  it("gives probabilities that are calibrated on draws it was not fit on", function()
    local m = logistic.fit(draw(20000, 7))
    local rows, labels = draw(20000, 99)
    local p = logistic.probability(m, rows)
    local predictions = {}
    for i = 1, #rows do predictions[i] = { p[i], labels[i] } end
    local ece = calibration.ece(predictions)
    assert.is_true(ece < 0.02, "ece " .. ece)
  end)

  it("refuses bad input by naming it", function()
    assert.has_error(function() logistic.fit({ { 1, 2 }, { 1 } }, { 0, 1 }) end, "logistic.fit: row 2 has 1 features, not 2")
    assert.has_error(function() logistic.fit({ { 1 }, { 0 / 0 } }, { 0, 1 }) end,
      "logistic.fit: row 2, feature 1 is " .. tostring(0 / 0) .. ", not a finite number")
    assert.has_error(function() logistic.fit({ { 1 }, { 2 } }, { 0 }) end,
      "logistic.fit: labels must be a list of 2 values (one a row), got 1")
    assert.has_error(function() logistic.fit({ { 1 }, { 2 } }, { 0, 2 }) end, "logistic.fit: label 2 is 2, not 0 or 1")
  end)
end)

describe("the expected calibration error", function()
  it("is the share-weighted gap between the probability given and the share that holds", function()
    -- 4 at 0.25 of which 1 holds (calibrated), 4 at 0.95 of which 2 hold (0.45 off)
    local p = {}
    for i = 1, 4 do p[#p + 1] = { 0.25, i == 1 } end
    for i = 1, 4 do p[#p + 1] = { 0.95, i <= 2 } end
    local ece, bins = calibration.ece(p)
    assert.are.near(0.5 * 0.45, ece, 1e-12)
    assert.are.equal(4, bins[3].count)
    assert.are.near(0.5, bins[10].observed, 1e-12)
    assert.has_error(function() calibration.ece { { 1.5, true } } end, "calibration: prediction 1 is 1.5, not a probability")
  end)
end)

-- processes and components, as in the Gene Ontology; is_a marked as the subsumption relation
local function ontology()
  local ds = gm.data.dataset.new("hand-made")
  local entities = {
    { "P1", "cell growth", "process" }, { "P2", "regulation of cell growth", "process" },
    { "P3", "regulation of cell death", "process" }, { "P4", "cell death", "process" },
    { "P5", "growth", "process" }, { "P6", "death", "process" }, { "P7", "regulation of growth", "process" },
    { "P8", "biological regulation", "process" }, { "P9", "glucose metabolism", "process" },
    { "P10", "glucose transport", "process" }, { "P11", "transport", "process" },
    { "C1", "membrane", "component" }, { "C2", "inner membrane", "component" },
    { "C3", "mitochondrial inner membrane", "component" }, { "C4", "mitochondrion", "component" },
    { "C5", "cell", "component" }, { "C6", "organelle", "component" },
  }
  for _, e in ipairs(entities) do ds:add_entity(e[1], e[2], e[3], {}) end
  for _, t in ipairs { { "P2", "regulates", "P1" }, { "P3", "regulates", "P4" }, { "P7", "regulates", "P5" },
      { "P1", "is_a", "P5" }, { "P4", "is_a", "P6" }, { "P2", "is_a", "P8" }, { "P3", "is_a", "P8" },
      { "P7", "is_a", "P8" }, { "P10", "is_a", "P11" }, { "C2", "is_a", "C1" }, { "C3", "is_a", "C2" },
      { "C3", "part_of", "C4" }, { "C2", "part_of", "C6" }, { "C4", "is_a", "C6" }, { "C4", "part_of", "C5" } } do
    ds:add_triple(t[1], t[2], t[3])
  end
  ds:finish()
  local g = gm.data.seed_graph.new(ds)
  g.subsumption = "is_a"
  return g
end

describe("the relation prior", function()
  local graph = ontology()

  it("learns from the names' words which heads have a relation at all", function()
    local prior = relation_prior.fit(graph)
    -- every "regulation of" process regulates; no other process does
    assert.is_true(prior:probability("P2", "regulates") > 0.6)
    assert.is_true(prior:probability("P9", "regulates") < 0.35)
    -- a relation that does not take the head's type: 0
    assert.are.equal(0, prior:probability("P2", "part_of"))
  end)

  it("knows nothing of the entities it is told to leave out, and reads back as it was saved", function()
    local all, without = relation_prior.fit(graph), relation_prior.fit(graph, { P2 = true, P3 = true, P7 = true })
    assert.is_true(without:probability("P2", "regulates") < all:probability("P2", "regulates"))
    local cjson = require "cjson"
    local back = relation_prior.from_table(cjson.decode(cjson.encode(all:to_table())), graph)
    assert.are.near(all:probability("P3", "regulates"), back:probability("P3", "regulates"), 1e-12)
    assert.has_error(function() relation_prior.from_table({}, graph, "prior.json") end, "prior.json: must hold `relations`")
  end)
end)

describe("candidates from every source", function()
  local graph = ontology()
  local text = "mitochondrial inner membrane: the inner membrane of the mitochondrion, an organelle of the cell."
  local tok = gm.data.tokenizer.train({ text, "regulation of cell growth cell death glucose transport" }, { vocab_size = 300 })
  local model = gm.nn.GraphMERT { vocab = tok:size(), hidden = 8, layers = 1, heads = 2, ffn = 16, roots = 48, leaves = 4,
    relations = 3, sbo = false }
  local relations = { is_a = 1, part_of = 2, regulates = 3 }
  local list = rules.generic("is_a")
  for _, r in ipairs(list) do r.score = 0.5 end
  local function context(with_model)
    local opts = gm.eval.extract.options({ tail_end = false }, graph, relations, { mode = "constrained", top = 3 })
    opts.tails = graph:known_tails(tok, relations, 4)
    return candidates.context { graph = graph, tok = tok, layout = model.layout, relations = relations,
      prior = relation_prior.fit(graph), rules = list, model = with_model and model or nil, opts = opts, top = 3 }
  end
  local passage = { id = "p1", text = text, entity = "C3" }

  local function of(found, head, relation)
    local out = {}
    for _, c in ipairs(found) do
      if c.head_id == head and c.relation == relation then out[c.tail_id] = c end
    end
    return out
  end

  it("gives each source's tails, one candidate per tail entity, with what the reranker reads", function()
    local found = candidates.of(context(false), { passage })[1]
    local part_of = of(found, "C3", "part_of")
    assert.is_true(part_of.C4.sources.mention) -- mentioned in the passage
    assert.is_true(part_of.C5.sources.mention)
    assert.is_nil(part_of.C3) -- never the head itself
    local is_a = of(found, "C3", "is_a")
    -- the lexical subsumer "inner membrane", which both generic rules propose too, is one candidate
    assert.is_true(is_a.C2.sources.subsumer)
    assert.is_true(is_a.C2.sources.mention)
    assert.are.equal(2, is_a.C2.rules)
    assert.are.equal(0.5, is_a.C2.rule_precision)
    assert.is_true(is_a.C1.sources.subsumer) -- "membrane", a shorter suffix
    -- the subsumer's own tails of the relation: inner membrane part_of organelle
    assert.is_true(part_of.C6.sources.subsumer_tail)
    assert.is_true(part_of.C6.tail_in_passage == 1 and is_a.C2.tail_in_head == 1)
    assert.are.equal(1, is_a.C2.tail_count) -- C3 is_a C2 in the seed graph
    for _, c in ipairs(found) do
      assert.is_true(c.own == (c.head_id == "C3"))
      assert.is_true(c.seen) -- (no entity is held out of this context's training)
      assert.is_nil(c.model_score)
    end
    local ctx = context(false)
    ctx.unseen = { C3 = true }
    for _, c in ipairs(candidates.of(ctx, { passage })[1]) do assert.are.equal(c.head_id ~= "C3", c.seen) end
    local seen = {}
    for _, c in ipairs(found) do
      local key = c.head_id .. " " .. c.relation .. " " .. c.tail_id
      assert.is_nil(seen[key], "twice: " .. key)
      seen[key] = true
    end
  end)

  it("has the model score every candidate that fits the leaves, and add its own top K", function()
    local found = candidates.of(context(true), { passage })[1]
    local part_of, from_model = of(found, "C3", "part_of"), 0
    assert.is_number(part_of.C4.model_score)
    assert.is_number(part_of.C6.model_score)
    for _, c in ipairs(found) do
      if c.sources.top_k then
        from_model = from_model + 1
        assert.is_true(c.rank >= 1 and c.rank <= 3)
        assert.is_number(c.best)
        assert.is_true(c.model_score <= c.best + 1e-6)
      end
      if c.tokens <= 4 then assert.is_number(c.model_score) end
    end
    assert.is_true(from_model > 0)
  end)

  it("gives each query the model's score of \"none\" when the model was taught absent relations", function()
    local taught = gm.nn.GraphMERT { vocab = tok:size(), hidden = 8, layers = 1, heads = 2, ffn = 16, roots = 48, leaves = 4,
      relations = 3, sbo = false }
    local opts = gm.eval.extract.options({ tail_end = true, absent = 0.5 }, graph, relations, { mode = "constrained", top = 3 })
    assert.is_true(opts.empty)
    opts.tails = graph:known_tails(tok, relations, 4)
    local ctx = candidates.context { graph = graph, tok = tok, layout = taught.layout, relations = relations,
      prior = relation_prior.fit(graph), rules = list, model = taught, opts = opts, top = 3 }
    local found = candidates.of(ctx, { passage })[1]
    assert.is_true(#found > 0)
    for _, c in ipairs(found) do
      assert.is_number(c.none)
      assert.is_true(c.none <= 0)
    end
  end)

  it("does not ask what the prior finds hopeless", function()
    local ctx = context(false)
    ctx.threshold = 0.99
    assert.are.same({}, candidates.of(ctx, { passage })[1])
  end)
end)

describe("the reranker", function()
  local graph = ontology()
  local function candidate(model_score, mention, relation, held)
    return { model_score = model_score, none = -3, best = -1, rank = 1, sources = { mention = mention }, rules = 0,
      rule_precision = 0, tail_in_head = 0, tail_in_passage = mention and 1 or 0, tail_words_in_passage = 0.5, same_last_word = 0, under_subsumer = 0, tail_count = 2, prior = 0.5, own = true,
      relation = relation }, held
  end
  local list, labels = {}, {}
  for i = 1, 200 do
    local c, y = candidate(-(i % 7), i % 3 == 0, i % 2 == 0 and "is_a" or "part_of", i % 7 < 2 or i % 5 == 0)
    list[i], labels[i] = c, y
  end

  it("reads back from its file giving the same probabilities, and refuses another run's", function()
    local r = reranker.fit(list, labels, { relations = graph.relation_names, model = true })
    local path = files.tmpname()
    r:save(path, "run A")
    local back = reranker.load(path, "run A")
    for i = 1, 20 do assert.are.equal(r:probability(list[i]), back:probability(list[i])) end
    assert.has_error(function() reranker.load(path, "run B") end,
      path .. " was fit for another run (run A), not this one (run B): run graphmert calibrate again")
    files.write(path, "{}")
    assert.has_error(function() reranker.load(path) end, path .. ": not a reranker file (graphmert calibrate writes one)")
  end)

  it("without a model, has no model feature; with nothing to learn from, says so", function()
    local r = reranker.fit(list, labels, { relations = graph.relation_names, model = false })
    for _, name in ipairs(r.names) do assert.is_nil(name:match("^model") or name:match("^margin")) end
    local none = {}
    for i = 1, #labels do none[i] = false end
    assert.has_error(function() reranker.fit(list, none, { relations = graph.relation_names }) end,
      "reranker.fit: the 200 candidates are all wrong: nothing to learn from")
  end)
end)

describe("the validation split", function()
  it("halves the held-out passages by entity, the same on every call, the halves disjoint", function()
    local passages = {}
    for i = 1, 400 do passages[i] = { id = i, subject = "GO:" .. string.format("%07d", (i + 1) // 2), text = "t" .. i } end
    local validation, test = preparation.validation_split(passages)
    assert.are.equal(400, #validation + #test)
    assert.is_true(#validation > 150 and #test > 150)
    local in_validation = {}
    for _, p in ipairs(validation) do in_validation[p.subject] = true end
    for _, p in ipairs(test) do assert.is_nil(in_validation[p.subject], p.subject .. " in both halves") end
    local again = preparation.validation_split(passages)
    assert.are.equal(#validation, #again)
    for k, p in ipairs(again) do assert.are.equal(validation[k].id, p.id) end
  end)
end)
