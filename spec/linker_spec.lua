-- gm.data.linker: entity mentions — longest match, aliases, whole words only, case and accent
-- folding, stop words, and the ranking of an ambiguous name's candidates.
local gm = require "graphmert"
local linker = require("graphmert.data.linker")

local function with(names)
  local l = linker.new()
  for _, n in ipairs(names) do l:add(n[1], n[2], n[3] ~= false, n[4]) end
  return l:freeze()
end

describe("gm.data.linker", function()
  it("takes the longest name at each word, multi-word first, and goes on after it", function()
    local l = with { { "A", "gall bladder" }, { "B", "bladder" }, { "C", "beta cell" }, { "D", "pancreatic beta cell" } }
    local m = l:mentions("The gall bladder and the bladder; a pancreatic beta cell, a beta cell.")
    local got = {}
    for _, x in ipairs(m) do got[#got + 1] = x.phrase end
    assert.same({ "gall bladder", "bladder", "pancreatic beta cell", "beta cell" }, got)
    assert.same({ 2, 2 }, { m[1].first, m[1].words })
  end)

  it("finds aliases, on word boundaries only", function()
    local l = with { { "E1", "cat" }, { "E1", "feline", false }, { "E2", "red blood cell" }, { "E2", "erythrocyte", false } }
    assert.same({ "feline", "erythrocyte" }, l:heads("Concatenate the felines? No: a feline, an erythrocyte."))
    assert.same({ "E2" }, l:candidates("erythrocyte"))
    assert.same({}, l:heads("a red blood-cell")) -- "blood - cell" is not "blood cell"
  end)

  it("folds case and accents alike in names and text", function()
    local l = with { { "E1", "Café au lait spot" }, { "E2", "Naïve T cell" } }
    assert.same({ "cafe au lait spot", "naive t cell" }, l:heads("CAFE AU LAIT SPOT; and a NAÏVE T CELL"))
    assert.same({ "E2" }, l:candidates("naive t cell"))
    assert.equal("cafe au lait spot", linker.normalize("Café  au Lait Spot"))
    assert.equal("e1", linker.normalize("E1"))
    -- typographic apostrophes, quotes and hyphens are their ASCII twins, in names and in text
    local m = with { { "M1", "Ménière’s disease" }, { "T1", "TNF-α" }, { "Q1", '"open" reading frame' } }
    assert.same({ "meniere ' s disease", "tnf - α", '" open " reading frame' },
      m:heads("Meniere's disease, TNF‑α and the “open” reading frame"))
    assert.equal("glycolytic - process", linker.normalize("Glycolytic‐process"))
    -- en and figure dashes are written for hyphens; the micro sign is the Greek mu
    assert.same({ "tnf - α" }, m:heads("TNF–α rises"))
    assert.same({ "tnf - α" }, m:heads("TNF‒α rises"))
    assert.equal("5 μg", linker.normalize("5 µg"))
    assert.equal(linker.normalize("5 μg"), linker.normalize("5 µg"))
  end)

  it("never takes a lone stop word, nor a name without a letter", function()
    local l = with { { "1", "a" }, { "2", "in" }, { "3", "dog" }, { "4", "in vitro" }, { "5", "42" } }
    assert.same({ "dog", "in vitro" }, l:heads("A dog in a dog test in vitro, 42 times"))
    local k = linker.new { stopwords = {} } -- a dataset whose names are short words can turn them off
    k:add("1", "a", true)
    k:add("3", "dog", true)
    assert.same({ "a", "dog" }, k:heads("a dog"))
  end)

  it("takes no part of an English contraction for a mention, but names that hold one whole", function()
    local l = with { { "S", "S" }, { "M", "m" }, { "D", "D" }, { "DON", "Don" }, { "WON", "won" }, { "T", "tail" },
      { "C", "Crohn's disease" }, { "R", "Re" } }
    assert.same({ "tail", "crohn ' s disease", "d" },
      l:heads("The dog's tail; I'm sure we're not; don't, won't; Crohn's disease; vitamin D's role"))
    -- the same words alone are mentions
    assert.same({ "s", "m", "don", "won", "re" }, l:heads("S, m, the Don: won (Re)"))
  end)

  it("takes an acronym only where the text writes it in capitals, unless the passage has none", function()
    local l = with { { "D1", "AD" }, { "P1", "APP" }, { "R1", "RA" }, { "H1", "HER2" }, { "I1", "IL-6" }, { "X1", "aids" },
      { "X2", "AIDS" } }
    local function found(text)
      local out = {}
      for _, m in ipairs(l:mentions(text)) do out[#out + 1] = m.phrase .. "@" .. m.first end
      return out
    end
    assert.same({ "ad@7" }, found("Mice were fed ad libitum; AD patients"))
    assert.same({ "app@6" }, found("A smartphone app; the APP gene"))
    assert.same({ "ra@8" }, found("the ra of the tau lepton and RA"))
    assert.same({ "her2@3", "il - 6@4" }, found("her2 and HER2 IL-6 il-6"))
    assert.same({ "aids@1", "aids@3" }, found("AIDS and aids")) -- an ordinary name too: any case
    assert.same({ "ad@4", "app@6", "ra@8" }, found("all lower case ad and app or ra")) -- no capital in the passage
    -- a loaded index keeps the rule
    local g = gm.data.seed_graph
    local ds = gm.data.dataset.new("acronyms", {})
    ds:add_entity("P1", "amyloid precursor protein", "protein", { "APP" })
    ds:add_entity("Q1", "tau", "protein", {})
    ds:add_triple("P1", "binds", "Q1")
    ds:finish()
    local path = os.tmpname()
    g.new(ds):save(path)
    for _, graph in ipairs { g.new(ds), g.load(path) } do
      assert.same({ "tau" }, graph:heads("A smartphone app tracks tau"))
      assert.same({ "app", "tau" }, graph:heads("The APP binds tau"))
    end
    os.remove(path)
  end)

  it("keeps every entity an ambiguous name denotes, preferred names first, then by triple count, then id", function()
    local l = with { { "R", "cortex", false, 9 }, { "C", "cortex", false, 2 }, { "X", "cortex", true, 0 },
      { "Z", "cortex", false, 2 } }
    assert.same({ "X", "R", "C", "Z" }, l:candidates("cortex"))
    assert.same({ "cortex" }, l:heads("In the brain, the Cortex contains neurons."))
  end)

  it("keeps mentions to max_words words when asked", function()
    local l = linker.new { max_words = 2 }
    l:add("1", "a b c", true); l:add("2", "b c", true)
    assert.same({ "b c" }, l:heads("x a b c"))
  end)
end)
