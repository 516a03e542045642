-- gm.data.linker: entity mentions — longest match, aliases, whole words only, case and accent
-- folding, stop words, and the ranking of an ambiguous name's candidates.
local gm = require "graphmert"
local linker = require("graphmert.data.linker")

local function with(names, opts)
  local l = linker.new(opts)
  for _, n in ipairs(names) do l:add(n[1], n[2], n[3] ~= false, n[4], n[5]) end
  return l:freeze()
end

-- the mentions of text as "phrase@first word"
local function found(l, text)
  local out = {}
  for _, m in ipairs(l:mentions(text)) do out[#out + 1] = m.phrase .. "@" .. m.first end
  return out
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
    for _, k in ipairs { l, with({ { "D1", "AD" }, { "P1", "APP" }, { "R1", "RA" }, { "H1", "HER2" }, { "I1", "IL-6" },
      { "X1", "aids" }, { "X2", "AIDS" } }, { proper_names = false }) } do -- (acronyms as written either way)
      assert.same({ "ad@7" }, found(k, "Mice were fed ad libitum; AD patients"))
      assert.same({ "app@6" }, found(k, "A smartphone app; the APP gene"))
      assert.same({ "ra@8" }, found(k, "the ra of the tau lepton and RA"))
      assert.same({ "her2@3", "il - 6@4" }, found(k, "her2 and HER2 IL-6 il-6"))
      assert.same({ "aids@1", "aids@3" }, found(k, "AIDS and aids")) -- an ordinary name too: any case
      assert.same({ "ad@4", "app@6", "ra@8" }, found(k, "all lower case ad and app or ra")) -- no capital in the passage
      assert.same({ "ad@1" }, found(k, "AD. Ad hoc")) -- a capital owed to the sentence is no acronym's
    end
    -- a loaded index keeps the rule
    local g = gm.data.seed_graph
    local ds = gm.data.dataset.new("acronyms", {})
    ds:add_entity("P1", "amyloid precursor protein", "protein", { "APP" })
    ds:add_entity("Q1", "tau", "protein", {})
    ds:add_triple("P1", "binds", "Q1")
    ds:finish()
    local path, old = os.tmpname(), os.tmpname()
    g.new(ds):save(path)
    -- an index of version 5 held the acronyms as a set
    local t = gm.load_tables(path)
    t.meta.version, t.cased = "5", { app = true }
    require("spec.files").write(old, gm.pack_tables(t))
    for _, graph in ipairs { g.new(ds), g.load(path), g.load(old) } do
      assert.same({ "tau" }, graph:heads("A smartphone app tracks tau"))
      assert.same({ "app", "tau" }, graph:heads("The APP binds tau"))
    end
    os.remove(path)
    os.remove(old)
  end)

  it("takes a name written with capitals only where the text writes them, word by word", function()
    local l = with { { "M", "Moon" }, { "P", "Phobos" }, { "H", "Christiaan Huygens" }, { "G", "glycolytic process" },
      { "D", "DNA repair" }, { "T", "tRNA" } }
    assert.same({ "phobos@4" }, found(l, "The tiny moon Phobos"))
    assert.same({ "moon@2", "phobos@6" }, found(l, "The Moon and its moon Phobos"))
    assert.same({ "christiaan huygens@1" }, found(l, "Christiaan Huygens saw it, not christiaan huygens nor Christiaan huygens"))
    assert.same({ "glycolytic process@2" }, found(l, "The Glycolytic Process")) -- written in lower case: any case
    -- an acronym's word in a longer name asks a capital first (GO's "CCR4-NOT complex", "the Ccr4-Not complex")
    assert.same({ "dna repair@1", "dna repair@4" }, found(l, "DNA repair; Dna Repair; dna repair"))
    assert.same({ "trna@1", "trna@3" }, found(l, "tRNA and TRNA")) -- a lower-case first letter: any case
    -- a capital owed to the place passes: a sentence's first word, a heading in capitals
    assert.same({ "moon@1", "moon@5" }, found(l, "Moon rocks. THE MOON AND ITS MOONS"))
    -- a passage with no capital at all is read as before
    assert.same({ "moon@3", "phobos@4", "christiaan huygens@7" }, found(l, "the tiny moon phobos, by christiaan huygens"))
    -- another name of the phrase in lower case (an alias, another entity's name) or any_case: any case
    for _, other in ipairs { { "M", "moon", false }, { "S", "moon" }, { "M", "Moon", true, 0, true } } do
      assert.same({ "moon@3", "phobos@4" }, found(with { { "M", "Moon" }, other, { "P", "Phobos" } }, "The tiny moon Phobos"))
    end
    -- the dataset's opt-out (WordNet's): names with capitals in any case
    assert.same({ "moon@3", "phobos@4" }, found(with({ { "M", "Moon" }, { "P", "Phobos" } }, { proper_names = false }),
      "The tiny moon Phobos"))
    -- the writing a name asks is that of its looser names, word by word
    local k = with { { "J", "Jupiter Moon" }, { "J2", "Jupiter moon" }, { "A", "SAR" }, { "A2", "Sar" } }
    assert.same({ "jupiter moon@1", "sar@4" }, found(k, "Jupiter moon; Sar. jupiter Moon sar"))
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
