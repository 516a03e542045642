-- repl.lua — what the graphmert interpreter's REPL adds to Lua, as torch's th did: tab
-- completion of globals, table fields (gm.nn.Li<TAB>) and methods (t:ma<TAB> on a tensor), which
-- src/main.c calls from readline's completion hook, and help(name) / ?name, which print the
-- one-line docs of graphmert.help.
local docs = require "graphmert.help"

local repl = {}

local keywords = { "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto",
  "if", "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while" }

-- obj[name] without letting an error out (indexing may run __index, which may fail)
local function try_index(obj, name)
  local ok, value = pcall(function() return obj[name] end)
  if ok then return value end
end

-- The value a dotted path of names ("gm.nn") gives from env, or nil.
local function resolve(env, path)
  local value = env
  for name in path:gmatch("[^.]+") do
    if not name:match("^[%a_][%w_]*$") then return nil end
    value = try_index(value, name)
    if value == nil then return nil end
  end
  return value
end

-- the table behind t's __index (a tensor's __index is a function over its `methods` table)
local function index_table(t)
  local mt = getmetatable(t)
  if type(mt) ~= "table" then return nil end
  local index = rawget(mt, "__index")
  if type(index) == "table" then return index end
  return rawget(mt, "methods")
end

-- Adds the identifier keys of t (and of the __index tables behind it) that start with partial;
-- only functions when methods_only.
local function add_fields(found, t, partial, methods_only)
  local seen = {}
  while type(t) == "table" and not seen[t] do
    seen[t] = true
    for k, v in pairs(t) do
      if type(k) == "string" and k:match("^[%a_][%w_]*$") and k:sub(1, #partial) == partial
          and (not methods_only or type(v) == "function") then
        found[k] = true
      end
    end
    t = index_table(t)
  end
end

-- A module table loads its submodules on first use (gm.nn): offer the ones package.preload or
-- package.loaded know, when indexing them gives a value.
local function add_submodules(found, value, partial)
  local module_name
  for name, loaded in pairs(package.loaded) do
    if loaded == value then module_name = name end
  end
  if not module_name then return end
  local prefix = module_name .. "."
  for _, source in ipairs { package.preload, package.loaded } do
    for name in pairs(source) do
      local rest = type(name) == "string" and name:sub(1, #prefix) == prefix and name:sub(#prefix + 1)
      if rest and rest:match("^[%a_][%w_]*$") and rest:sub(1, #partial) == partial
          and not found[rest] and try_index(value, rest) ~= nil then
        found[rest] = true
      end
    end
  end
end

-- The completions of word (the text before the cursor back to a space or bracket): globals and
-- keywords, fields after "path.", methods after "path:". Full words, sorted.
function repl.complete(word, env)
  env = env or _G
  local path, sep, partial = word:match("^(.-)([.:])([%w_]*)$")
  local found = {}
  if not sep then
    partial, path, sep = word, "", ""
    add_fields(found, env, partial)
    for _, k in ipairs(keywords) do
      if k:sub(1, #partial) == partial then found[k] = true end
    end
  else
    local value = path ~= "" and resolve(env, path) -- (nothing before the mark: "f(x):", a call's result)
    if value == nil or value == false then return {} end
    if sep == ":" then
      add_fields(found, type(value) == "table" and value or nil, partial, true)
      add_fields(found, index_table(value), partial, true)
    elseif type(value) == "table" then
      add_fields(found, value, partial)
      add_submodules(found, value, partial)
    end
  end
  local words = {}
  for name in pairs(found) do words[#words + 1] = path .. sep .. name end
  table.sort(words)
  return words
end

-- The methods tables of the library's object types, by the name docs use.
local function object_methods(gm)
  local g = gm.graph(1, {})
  return {
    Tensor = getmetatable(gm.ones(1)).methods,
    Graph = getmetatable(g).__index,
    Distances = getmetatable(g:distances { cache = false }).__index,
  }
end

-- Every public function the docs must cover, derived from gm itself: "gm.name" for each function
-- gm holds now, "Tensor:name" (and Graph, Distances) for each method.
function repl.public_names(gm)
  local names = {}
  for name, value in pairs(gm) do
    if type(value) == "function" then names[#names + 1] = "gm." .. name end
  end
  for kind, methods in pairs(object_methods(gm)) do
    for name, value in pairs(methods) do
      if type(value) == "function" then names[#names + 1] = kind .. ":" .. name end
    end
  end
  table.sort(names)
  return names
end

-- The doc line of a public name: its own, or for gm.name also the Tensor:name it is the
-- function form of.
function repl.doc(name)
  return docs[name] or docs[name:gsub("^gm%.", "Tensor:")]
end

-- The doc lines for what (a name such as "gm.attention", "attention", "t:matmul", or the function
-- itself), as one string; nil when there is none.
function repl.describe(what, gm)
  gm = gm or require "graphmert"
  local lines = {}
  if type(what) == "function" then
    local methods = object_methods(gm)
    for key, line in pairs(docs) do
      local kind, name = key:match("^(%a+)[.:]([%w_]+)$")
      local method = methods[kind] and methods[kind][name]
      -- a Tensor: line also documents gm.name, the op's function form
      local fn = (kind == "gm" or kind == "Tensor") and rawget(gm, name)
      if what == method or what == fn then lines[#lines + 1] = line end
    end
  elseif type(what) == "string" then
    local name = what:match("([%w_]+)$") or what
    if repl.doc(what) then
      lines[1] = repl.doc(what)
    else
      for _, key in ipairs { "gm." .. name, "Tensor:" .. name, "Graph:" .. name, "Distances:" .. name } do
        if docs[key] then lines[#lines + 1] = docs[key] end
      end
    end
  end
  table.sort(lines)
  return #lines > 0 and table.concat(lines, "\n") or nil
end

local OVERVIEW = [[
gm — graphmert: float32 tensors with autograd, attention families, GraphMERT
  tensors     gm.tensor{{1, 2}}, gm.zeros(2, 3), gm.randn(2, 3), t[1],
              t:matmul(u), t:sum(), t:backward()
  nn          gm.nn.Linear, gm.nn.MultiheadAttention,
              gm.nn.GraphMERT (.from_pretrained, :save_pretrained)
  optim       gm.optim.adamw, gm.optim.sgd
  attention   gm.attention(q, k, v, opts), gm.decay_mask, gm.graph,
              gm.leafy_chain
  files       gm.safetensors.load / save, gm.torch_load, gm.checkpoint,
              gm.write_atomic
  data        gm.data.dataset.load (your corpus and seed graph),
              gm.data.tokenizer, gm.data.linker
  eval        gm.eval.extract, gm.eval.decode, gm.eval.stats
  experiment  gm.experiment: configs, data, training (`graphmert train`)
?gm.name or ?t:name: one line of doc; TAB completes (gm.nn.Li<TAB>, t:ma<TAB>)]]

-- a tensor's help: its size and its methods
local function tensor_help(t)
  local names = {}
  for name in pairs(getmetatable(t).methods) do if not name:match("^_") then names[#names + 1] = name end end
  table.sort(names)
  local lines, line = { string.format("a graphmert.Tensor of size %s; ?t:name for one of its %d methods:", t:shape_string(), #names) }, " "
  for _, name in ipairs(names) do
    if #line + #name > 76 then lines[#lines + 1], line = line, " " end
    line = line .. " " .. name
  end
  lines[#lines + 1] = line
  return table.concat(lines, "\n")
end

-- the file of the module gm.name names ("gm.eval.extract" → lua/graphmert/eval/extract.lua), or
-- nil when that name is no module (a package with modules under it lives in its init.lua)
local function module_file(name)
  if name ~= "gm" and not name:match("^gm%.") then return nil end -- (string, table: Lua's own)
  local module = name:gsub("^gm%.", "graphmert.")
  if package.loaded[module] == nil then pcall(require, module) end -- a module's name loads it
  if type(package.loaded[module]) ~= "table" then return nil end
  local folder = false
  for loaded in pairs(package.loaded) do folder = folder or loaded:sub(1, #module + 1) == module .. "." end
  return string.format("lua/%s%s", module:gsub("%.", "/"), folder and "/init.lua" or ".lua")
end

-- Lua's own libraries (their functions are the reference manual's)
local STANDARD = { string = true, table = true, math = true, io = true, os = true, utf8 = true, coroutine = true,
  debug = true, package = true }

-- help(name or value): prints the doc lines (an overview for gm, size and methods for a
-- tensor); help() says how to use it.
function repl.help(what)
  local gm = require "graphmert"
  if what == nil then
    print("help(name) or ?name prints the signature and a line of doc, e.g. ?gm.attention or ?t:matmul;\n" ..
      "?gm gives an overview; TAB completes globals, fields (gm.nn.Li<TAB>) and methods (t:ma<TAB>).")
  elseif what == "gm" or what == gm then
    print(OVERVIEW)
  elseif gm.is_tensor(what) then
    print(tensor_help(what))
  else
    local value = type(what) == "string" and resolve(_G, what) or what
    local owner = type(what) == "string" and type(value) == "function" and what:match("^(.+)%.[%w_]+$")
    local file = owner and module_file(owner)
    print(repl.describe(what) or (type(value) == "table" and repl.table_help(type(what) == "string" and what or nil, value))
      or (file and string.format("%s: a function of %s (the comment at the top of %s documents it)", what, owner, file))
      or (owner and STANDARD[owner] and resolve(_G, owner) == package.loaded[owner]
        and string.format("%s: a function of Lua's standard library (the Lua 5.4 reference manual, §6)", what))
      or ("no help for " .. tostring(what) .. " (?gm for an overview)"))
  end
end

-- A table without a doc line of its own (a module such as gm.eval.extract, or a plain table):
-- its fields by kind, functions first, and where a module's file says more.
function repl.table_help(name, t)
  if not name then -- a table of gm's given as a value: by its name (gm.eval.extract)
    local function find(tbl, path, depth)
      for k, v in pairs(tbl) do
        if type(k) == "string" then
          if v == t then return path .. "." .. k end
          local found = depth > 0 and type(v) == "table" and getmetatable(v) == nil and find(v, path .. "." .. k, depth - 1)
          if found then return found end
        end
      end
    end
    name = find(require "graphmert", "gm", 2)
  end
  local kinds = { ["function"] = {}, table = {}, other = {} }
  for k in pairs(t) do
    if type(k) == "string" then
      local v = try_index(t, k)
      local list = kinds[type(v)] or kinds.other
      list[#list + 1] = k
    end
  end
  local lines = { (name or tostring(t)) .. ": a table" }
  for _, kind in ipairs { { "function", "functions" }, { "table", "tables" }, { "other", "values" } } do
    local list = kinds[kind[1]]
    table.sort(list)
    if #list > 0 then lines[#lines + 1] = string.format("  %s: %s", kind[2], table.concat(list, ", ")) end
  end
  local file = name and module_file(name)
  if file then lines[#lines + 1] = string.format("  (the comment at the top of %s documents them)", file) end
  return table.concat(lines, "\n")
end

-- The REPL's way of printing results: a list of numbers (t:size(), t:shape()) as {2, 3}, the
-- rest as print does.
function repl.show(...)
  local out = {}
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    out[i] = type(v) == "table" and getmetatable(v) == nil and repl.brief(v, 1) or tostring(v)
  end
  print(table.concat(out, "\t"))
end

-- A plain table on one line, as far as it is short: {2, 3}, {loss = 0.5, t = Tensor 2x3, ...}
-- (a tensor by its size, a deeper table as {...}); nil for one of more than 12 entries.
local SHOWN = 12
function repl.brief(t, depth)
  local gm = require "graphmert"
  local keys, n = {}, 0
  for k in pairs(t) do
    n = n + 1
    if n > SHOWN then return nil end
    keys[n] = k
  end
  local len, positional = #t, 0
  for _, k in ipairs(keys) do
    if math.type(k) == "integer" and k >= 1 and k <= len then positional = positional + 1 end
  end
  if positional ~= len then len = 0 end -- a list with holes: every key shown as [k] = v
  table.sort(keys, function(a, b)
    local ai, bi = math.type(a) == "integer" and a >= 1 and a <= len, math.type(b) == "integer" and b >= 1 and b <= len
    if ai ~= bi then return ai end
    if ai then return a < b end
    return tostring(a) < tostring(b)
  end)
  local parts = {}
  for _, k in ipairs(keys) do
    local v = t[k]
    local shown
    if gm.is_tensor(v) then shown = "Tensor " .. v:shape_string()
    elseif type(v) == "string" then shown = string.format("%q", v)
    elseif type(v) == "table" and getmetatable(v) == nil then shown = depth < 2 and repl.brief(v, depth + 1) or "{...}"
    else shown = tostring(v) end
    shown = shown or "{...}"
    local plain = math.type(k) == "integer" and k >= 1 and k <= len
    parts[#parts + 1] = plain and shown
      or ((type(k) == "string" and k:match("^[%a_][%w_]*$")) and k or "[" .. (type(k) == "string" and string.format("%q", k) or tostring(k)) .. "]")
      .. " = " .. shown
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end

return repl
