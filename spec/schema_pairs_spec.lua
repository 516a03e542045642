-- A relation schema of several rows: each row a pair of head and tail types the relation allows
-- (the Gene Ontology's is_a joins a process to a process and a function to a function, never a
-- process to a function). The dataset checks triples against the pairs, the seed graph's
-- validity and constrained decoding's tails follow the head's type, the index keeps the pairs,
-- and a schema derived from the triples pairs the types they join.
local gm = require "graphmert"
local files = require "spec.files"

local seed_graph = gm.data.seed_graph

local function folder()
  local dir = files.tmpname()
  os.execute("mkdir -p " .. dir)
  files.write(dir .. "/entities.tsv", table.concat({ "id\tname\ttype\taliases",
    "P1\tglycolysis\tprocess\t", "P2\tmetabolic process\tprocess\t", "P3\tcatabolic process\tprocess\t",
    "F1\tkinase activity\tfunction\t", "F2\tcatalytic activity\tfunction\t", "C1\tnucleus\tcomponent\t",
    "F4\ttransport\tfunction\t", "P4\ttransport\tprocess\t" }, "\n") .. "\n")
  files.write(dir .. "/relations.tsv", table.concat({ "relation\thead_types\ttail_types",
    "is_a\tprocess\tprocess", "is_a\tfunction\tfunction", "part_of\t*\tprocess", "part_of\tfunction\tfunction",
    "is_a\tprocess\tprocess" }, "\n") .. "\n")
  files.write(dir .. "/triples.tsv", table.concat({ "head\trelation\ttail",
    "P1\tis_a\tP2", "P3\tis_a\tP2", "F1\tis_a\tF2", "F1\tis_a\tP2", "C1\tpart_of\tP1", "F1\tpart_of\tF2", "C1\tpart_of\tF2" },
    "\n") .. "\n")
  files.write(dir .. "/corpus.txt", "Glycolysis is a metabolic process.\nKinase activity is a catalytic activity.\n")
  return dir
end

describe("a relation schema of several rows (pairs of types)", function()
  local dir = folder()
  local ds = gm.data.dataset.load { dir = dir }

  it("keeps a triple a row allows, and skips one no row pairs, naming the rows its head's type has", function()
    assert.equal(5, #ds.triples)
    local messages = table.concat(ds.report.messages, "\n")
    assert.matches("triples%.tsv:5: tail type not allowed by the relation schema %(P2 is a process; is_a of a function at "
      .. ".*relations%.tsv:3%)", messages)
    assert.matches("triples%.tsv:8: tail type not allowed by the relation schema %(F2 is a function; part_of of a component at "
      .. ".*relations%.tsv:4%)", messages)
    assert.matches("relations%.tsv:6: duplicate relation row %(is_a as at .*relations%.tsv:2%)", messages)
    assert.same({ process = true, ["function"] = true }, ds.schema.is_a.head) -- the relation's sets: its rows' union
    assert.same({ process = true, ["function"] = true }, ds.schema.is_a.tail)
  end)

  it("judges validity by the head's type, in a built graph and in its index loaded back", function()
    local path = dir .. "/index.bin"
    seed_graph.new(ds):save(path)
    for _, g in ipairs { seed_graph.new(ds), seed_graph.load(path) } do
      assert.is_true(g:valid { head = "glycolysis", relation = "is_a", tail = "catabolic process" })
      assert.is_false(g:valid { head = "glycolysis", relation = "is_a", tail = "catalytic activity" })
      assert.is_true(g:valid { head = "kinase activity", relation = "is_a", tail = "catalytic activity" })
      assert.is_false(g:valid { head = "kinase activity", relation = "is_a", tail = "glycolysis" })
      -- part_of: any head reaches a process (the * row), a function also a function
      assert.is_true(g:valid { head = "nucleus", relation = "part_of", tail = "glycolysis" })
      assert.is_false(g:valid { head = "nucleus", relation = "part_of", tail = "kinase activity" })
      assert.is_true(g:valid { head = "kinase activity", relation = "part_of", tail = "catalytic activity" })
      assert.is_true(g:valid { head = "kinase activity", relation = "part_of", tail = "glycolysis" })
      assert.same({ process = true }, g:tail_types_of("is_a", "process"))
      assert.same({ process = true, ["function"] = true }, g:tail_types_of("part_of", "function"))
      assert.same({ process = true }, g:tail_types_of("part_of", "component"))
      -- a tail's name shared by entities of two types names the one the head's type reaches
      assert.equal("P4", (g:entity("transport", "is_a", "tail", "P1")))
      assert.equal("F4", (g:entity("transport", "is_a", "tail", "F1")))
      assert.equal("F4", (g:entity("transport", "is_a", "tail"))) -- (without the head: the first of the relation's types)
    end
  end)

  it("gives constrained decoding the tails of the types the head's type reaches", function()
    local tok = gm.data.tokenizer.train({ "glycolysis metabolic process catabolic kinase activity catalytic nucleus" },
      { vocab_size = 120 })
    local relations = { is_a = 1, part_of = 2 }
    local path = dir .. "/known.bin"
    seed_graph.new(ds):save(path, { tok = tok, leaves = 3 })
    for _, g in ipairs { seed_graph.new(ds), seed_graph.load(path) } do
      local known = g:known_tails(tok, relations, 3)
      local function names(list)
        local out = {}
        for _, ids in ipairs(list:lists()) do out[#out + 1] = tok:decode(ids) end
        table.sort(out)
        return out
      end
      assert.same({ "catabolic process", "glycolysis", "metabolic process" }, names(g:head_tails(known, "is_a", "glycolysis")))
      assert.same({ "catalytic activity", "kinase activity" }, names(g:head_tails(known, "is_a", "kinase activity")))
      assert.same({ "catabolic process", "glycolysis", "metabolic process" }, names(g:head_tails(known, "part_of", "nucleus")))
      assert.equal(5, #names(known[1])) -- the relation's own list: every type it reaches
      local n = 0
      for _ in pairs(known) do n = n + 1 end
      assert.equal(2, n) -- (pairs gives the relations' lists only)
    end
    -- a relation of one row, or whose rows all reach the same types, narrows nothing
    local g = seed_graph.new(ds)
    assert.is_nil(g:head_tails(g:known_tails(tok, relations, 3), "missing", "glycolysis"))
  end)

  it("writes the rows to a run's seed graph and reads them back", function()
    local run = dir .. "/run_seed_graph"
    ds:save_seed_graph(run)
    local back = gm.data.dataset.load_seed_graph(run)
    assert.equal(2, #back.schema.is_a.rows)
    assert.equal(2, #back.schema.part_of.rows)
    assert.is_false(seed_graph.new(back):valid { head = "glycolysis", relation = "is_a", tail = "kinase activity" })
  end)

  it("derives pairs from the triples when there is no schema file", function()
    os.remove(dir .. "/relations.tsv")
    local derived = gm.data.dataset.load { dir = dir }
    local g = seed_graph.new(derived)
    -- is_a: process → process, function → function, as the triples join them (F1 is_a P2 too, now allowed)
    assert.is_true(g:valid { head = "kinase activity", relation = "is_a", tail = "glycolysis" })
    assert.is_true(g:valid { head = "glycolysis", relation = "is_a", tail = "metabolic process" })
    assert.is_false(g:valid { head = "glycolysis", relation = "is_a", tail = "kinase activity" })
  end)
end)
