-- The REPL's helpers (lua/graphmert/repl.lua): tab completion as readline gets it from
-- src/main.c, and the help lines of lua/graphmert/help.lua, one for every public function.
local gm = require "graphmert"
local repl = require "graphmert.repl"
local docs = require "graphmert.help"

local env = setmetatable({ gm = gm, t = gm.ones(2, 2), g = gm.graph(2, { { 1, 2 } }) }, { __index = _G })

describe("tab completion", function()
  it("completes globals and keywords", function()
    assert.same({ "print" }, repl.complete("pri", env))
    assert.same({ "return", "require", "select" }, { repl.complete("ret", env)[1], repl.complete("req", env)[1],
      repl.complete("sel", env)[1] })
  end)

  it("completes dotted fields, loading a submodule on the way", function()
    assert.same({ "gm.nn.Linear" }, repl.complete("gm.nn.Li", env))
    -- inside the binary every submodule is preloaded, so it is offered before its first use
    if package.preload["graphmert.optim"] then assert.same({ "gm.optim" }, repl.complete("gm.op", env)) end
    assert.same({ "gm.softmax" }, repl.complete("gm.softm", env))
    local all = repl.complete("gm.", env)
    assert.truthy(#all > 60)
    for _, word in ipairs(all) do assert.matches("^gm%.[%a_][%w_]*$", word) end
  end)

  it("completes the methods of a tensor and of a graph", function()
    assert.same({ "t:matmul", "t:max" }, repl.complete("t:ma", env))
    assert.same({ "g:num_edges", "g:num_nodes" }, repl.complete("g:num", env))
  end)

  it("gives nothing for unknown paths and non-tables", function()
    assert.same({}, repl.complete("nosuch.x", env))
    assert.same({}, repl.complete("gm.attention.x", env))
    assert.same({}, repl.complete("t.", env))
    assert.same({}, repl.complete(":", env)) -- after a call, "gm.ones(2):": its result is not known
    assert.same({}, repl.complete(".ma", env))
  end)
end)

describe("help", function()
  it("has a line for every public function and method, and none for names that are gone", function()
    local missing, stale = {}, {}
    for _, name in ipairs(repl.public_names(gm)) do
      if not repl.doc(name) then missing[#missing + 1] = name end
    end
    local methods = {
      Tensor = getmetatable(gm.ones(1)).methods,
      Graph = getmetatable(env.g).__index,
      Distances = getmetatable(env.g:distances()).__index,
    }
    for key in pairs(docs) do
      local kind, name = key:match("^(%a+)[.:]([%w_]+)$")
      local target = kind == "gm" and gm[name] or methods[kind] and methods[kind][name]
      if type(target) ~= "function" then stale[#stale + 1] = key end
    end
    table.sort(stale)
    assert.same({}, missing)
    assert.same({}, stale)
  end)

  it("finds a line by full name, short name, method form or the function itself", function()
    assert.matches("^gm%.attention%(q, k, v", repl.describe("gm.attention"))
    assert.equal(repl.describe("gm.attention"), repl.describe("attention"))
    assert.matches("^t:matmul%(", repl.describe("t:matmul"))
    assert.equal(repl.describe("t:matmul"), repl.describe("gm.matmul"))
    assert.equal(repl.describe("t:exp"), repl.describe(gm.exp))
    assert.equal(repl.describe("gm.decay_mask"), repl.describe(gm.decay_mask))
    assert.equal(2, select(2, repl.describe("num_nodes"):gsub("\n", "")) + 1)
    assert.is_nil(repl.describe("no_such_function"))
  end)

  local function printed(fn, ...)
    local lines, print0 = {}, _G.print
    _G.print = function(...) lines[#lines + 1] = table.concat({ ... }, "\t") end
    local ok, err = pcall(fn, ...)
    _G.print = print0
    assert(ok, err)
    return table.concat(lines, "\n")
  end

  it("gives an overview for ?gm whose every name exists, and a tensor's size and methods", function()
    local overview = printed(repl.help, "gm")
    assert.matches("^gm — graphmert", overview)
    for name in overview:gsub("\n[^ ][^\n]*", ""):gmatch("gm%.([%w_.]+)") do -- the section lines' names
      local v = gm
      for part in name:gmatch("[^.]+") do v = v[part] end
      assert.is_not_nil(v, "gm." .. name)
    end
    assert.equal(overview, printed(repl.help, gm))
    local help_t = printed(repl.help, gm.ones(2, 3))
    assert.matches("^a graphmert.Tensor of size 2x3; %?t:name for one of its %d+ methods:", help_t)
    assert.matches(" matmul ", help_t)
    assert.matches("%(%?gm for an overview%)", printed(repl.help, "no_such_thing"))
    -- a module with no line of its own: its fields, and the file whose opening comment documents them
    local module = printed(repl.help, gm.eval.extract)
    assert.matches("^gm%.eval%.extract: a table\n  functions: [%w_, ]*queries", module)
    assert.matches("lua/graphmert/eval/extract%.lua documents them", module)
    assert.matches("lua/graphmert/eval/init%.lua documents them", printed(repl.help, gm.eval))
    local had = rawget(_G, "gm")
    rawset(_G, "gm", gm) -- as the REPL has it
    assert.matches("^gm%.eval%.extract%.triples: a function of gm%.eval%.extract %(the comment at the top of "
      .. "lua/graphmert/eval/extract%.lua documents it%)", printed(repl.help, "gm.eval.extract.triples"))
    assert.matches("^string%.format: a function of Lua's standard library", printed(repl.help, "string.format"))
    assert.is_nil(printed(repl.help, "cjson.encode"):find("standard library", 1, true)) -- a library of its own
    rawset(_G, "gm", had)
    assert.matches("^{x = 1}?: ?a table", printed(repl.help, { x = 1 }):gsub("table: 0x%x+", "{x = 1}"))
  end)

  it("prints a size as a list, and indexes a tensor by its first dimension", function()
    local t = gm.tensor { { 1, 2, 3 }, { 4, 5, 6 } }
    assert.equal("{2, 3}\tx\t3\tnil", printed(repl.show, t:size(), "x", 3, nil))
    -- a short plain table on one line: tensors by their size, keys in order
    assert.equal('{Tensor 2x3, "a", loss = 0.5, nested = {1, {...}}, ["two words"] = true}',
      printed(repl.show, { t, "a", loss = 0.5, nested = { 1, { 2 } }, ["two words"] = true }))
    assert.equal("{[1] = 1, [3] = 3}", printed(repl.show, { 1, nil, 3 }))
    local long = {}
    for i = 1, 13 do long[i] = i end
    assert.matches("^table: ", printed(repl.show, long))
    assert.same({ 4, 5, 6 }, t[2]:totable())
    assert.equal(6, t[-1][3]:item())
    assert.same({}, t[1][1]:shape())
    assert.error_matches(function() return t[3] end, "index 3 out of range for a tensor of size 2x3 %(dimension 1 has 2%)")
    assert.error_matches(function() return gm.tensor(1)[1] end, "a 0%-dimensional tensor has no slices")
    assert.is_nil(t.no_such_method)
  end)
end)
