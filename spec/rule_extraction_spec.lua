-- graphmert extract --extractor rules end to end on the tiny dataset (its patterns.tsv and the
-- generic rules of its subsumption relation, is_a): every output, the score a rule's measured
-- precision, --min-score on that scale, and bad input named before any work.
local cjson = require "cjson"
local files = require "spec.files"
local run, write = files.run, files.write

local BIN = "./build/bin/graphmert "
local DATA = "experiments/data/tiny"

local lines = files.lines

describe("graphmert extract --extractor rules", function()
  local dir = files.tmpname()
  os.execute("mkdir -p " .. dir)
  local extract = BIN .. "extract --extractor rules --data " .. DATA .. " --input " .. DATA .. "/corpus.txt "

  it("writes kg.jsonl, kg.tsv and the page from the rules alone, each triple scored by its rule's precision", function()
    local out, code = run(extract .. "--out " .. dir .. "/kg.jsonl")
    assert.equal(0, code, out)
    assert.matches("X is a %.%.%. of the Y%s+part_of%s+proposed%s+9%s+held%s+9%s+precision 0%.909", out)
    assert.matches("subsumption%s+is_a%s+proposed%s+2%s+held%s+2%s+precision 0%.750", out)
    assert.matches("32 passages, 15 triples", out)
    local by = {}
    for _, line in ipairs(lines(dir .. "/kg.jsonl")) do
      local t = cjson.decode(line)
      by[t.head .. " " .. t.relation] = t
    end
    local t = by["thyroid gland is_a"]
    assert.equal("gland", t.tail)
    assert.equal("rule:subsumption", t.decoding)
    assert.are.near(3 / 4, t.score, 1e-9)
    assert.is_true(t.seed)
    assert.equal("circulatory system", by["heart part_of"].tail)
    assert.equal("rule:X is a ... of the Y", by["heart part_of"].decoding)
    assert.equal(16, #lines(dir .. "/kg.tsv"))
    assert.matches('"rule:X secretes Y"', files.read(dir .. "/kg.html"))
    out = run(extract .. "--out " .. dir .. "/part.jsonl --relations part_of")
    for _, line in ipairs(lines(dir .. "/part.jsonl")) do assert.equal("part_of", cjson.decode(line).relation) end
  end)

  it("keeps what --min-score asks on the precision scale, and refuses a score outside it", function()
    local out, code = run(extract .. "--out " .. dir .. "/high.jsonl --min-score 0.8")
    assert.equal(0, code, out)
    for _, line in ipairs(lines(dir .. "/high.jsonl")) do assert.is_true(cjson.decode(line).score >= 0.8) end
    assert.equal(13, #lines(dir .. "/high.jsonl")) -- (the two subsumption triples, 0.75, go)
    out, code = run(extract .. "--out " .. dir .. "/x.jsonl --min-score 2")
    assert.equal(2, code)
    assert.matches("%-%-min%-score must be from 0 to 1 with %-%-extractor rules", out)
  end)

  it("grows a store that export reads", function()
    os.execute("mkdir -p " .. dir .. "/store")
    local out, code = run(extract .. "--out " .. dir .. "/store/kg.sqlite")
    assert.equal(0, code, out)
    assert.matches("15 triples from 32 passages", out)
    out, code = run(BIN .. "export --store " .. dir .. "/store/kg.sqlite --out " .. dir .. "/store/kg.jsonl")
    assert.equal(0, code, out)
    assert.equal(15, #lines(dir .. "/store/kg.jsonl"))
  end)

  it("names a bad patterns file's lines, and what is missing, before any work", function()
    local patterns = dir .. "/rules.tsv"
    write(patterns, "part_off\tpassage\t'x' {.+}\t{1}\nproduces\tname\t'x' {.+}\t{2}\n")
    local out, code = run(extract .. "--out " .. dir .. "/bad.jsonl --patterns " .. patterns)
    assert.equal(2, code)
    assert.matches(patterns .. ":1: unknown relation 'part_off' %(did you mean 'part_of'%?%)", out)
    assert.matches(patterns .. ":2: the tail names capture {2} but the pattern has 1 capture", out)
    assert.is_nil(io.open(dir .. "/bad.jsonl"))
    out, code = run(extract .. "--out " .. dir .. "/y.jsonl --relations partof")
    assert.equal(2, code)
    assert.matches("unknown relation partof %(did you mean part_of%?", out)
    out, code = run(extract .. "--out " .. dir .. "/y.jsonl --checkpoint " .. dir)
    assert.equal(2, code)
    assert.matches("uses no model", out)
    out, code = run(BIN .. "extract --extractor rules --input " .. DATA .. "/corpus.txt --out " .. dir .. "/y.jsonl")
    assert.equal(2, code)
    assert.matches("needs the dataset: give %-%-data or %-%-config", out)
    -- a dataset with no patterns file, no subsumption relation and no affix rule in its facts has no rule
    local bare = dir .. "/bare"
    os.execute("mkdir -p " .. bare)
    write(bare .. "/triples.tsv", "liver\tproduces\tbile\n")
    write(bare .. "/corpus.txt", "The liver produces bile.\n")
    out, code = run(BIN .. "extract --extractor rules --data " .. bare .. " --input " .. bare .. "/corpus.txt --out " .. dir .. "/z.jsonl")
    assert.equal(2, code)
    assert.matches("no rules: the dataset has no patterns%.tsv", out)
    -- and one whose patterns file holds no rule (only a comment)
    write(bare .. "/patterns.tsv", "# rules to come\n")
    out, code = run(BIN .. "extract --extractor rules --data " .. bare .. " --input " .. bare .. "/corpus.txt --out " .. dir .. "/z.jsonl")
    assert.equal(2, code)
    assert.matches("no rules: .*bare/patterns%.tsv holds none, its schema marks no subsumption relation .* and its facts teach no affix rule", out)
  end)

  teardown(function() os.execute("rm -rf " .. dir) end)
end)
