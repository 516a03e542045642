-- The Lua modules form layers, as the C core's files do (spec/c_layers_spec.lua): no module
-- depends, through a chain of others, on itself; and no file grows past the size a reader takes
-- in at once.
--
-- Read from the sources: a module depends on every "graphmert.…" module it requires, at the top
-- or inside a function (a require run late is still a dependency). The face, `require
-- "graphmert"` (lua/graphmert/init.lua), counts twice over, as it behaves:
--   * the face itself loads a few modules eagerly (its own `require "graphmert.x"` lines), so
--     a module that requires it depends on those;
--   * every other package it loads lazily, on first use of the field: `gm.eval` runs
--     `require "graphmert.eval"` (the names in its `submodules` table). That dependency belongs
--     to the module that reads the field, so a module that requires the face and reads `gm.eval`
--     depends on graphmert.eval, and through the package's init.lua on every module it loads.
-- Comments are left out and string contents are not read as code, so a help line that mentions
-- `gm.data.corpus` is no dependency. A circle fails the spec, named module by module with what
-- makes each step (a require, or the face's field).
--
-- The sizes are the limits of issue 60's "done when": a module under lua/graphmert/ of at most
-- MAX_MODULE_LINES lines, a command under experiments/ of at most MAX_COMMAND_LINES.
local files = require "spec.files"
local circle_in = require("spec.circle").find

local ROOT = "lua/graphmert/"
local MAX_MODULE_LINES = 450   -- a module under lua/graphmert/
local MAX_COMMAND_LINES = 250  -- a command under experiments/

local function paths(command)
  local list = {}
  local p = io.popen(command)
  for path in p:lines() do list[#list + 1] = path end
  p:close()
  table.sort(list)
  return list
end

-- lua/graphmert/eval/init.lua → graphmert.eval, lua/graphmert/eval/decode.lua → graphmert.eval.decode
local function module_name(path)
  return (path:gsub("^lua/", ""):gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", "."))
end

-- The source split in two: `code` without comments (strings kept: what require names), and
-- `bare` without comments or string contents (what the code reads: gm.eval.decode).
local function strip(source)
  local code, bare, i, n = {}, {}, 1, #source
  local function keep(s, as_bare) code[#code + 1] = s; bare[#bare + 1] = as_bare or s end
  while i <= n do
    local long_comment = source:match("^%-%-%[(=*)%[", i)
    if long_comment then
      local _, stop = source:find("]" .. long_comment .. "]", i, true)
      i = (stop or n) + 1
    elseif source:find("^%-%-", i) then
      i = (source:find("\n", i, true) or n + 1)
    else
      local level = source:match("^%[(=*)%[", i)
      local quote = source:sub(i, i)
      if level then
        local _, stop = source:find("]" .. level .. "]", i, true)
        stop = stop or n
        keep(source:sub(i, stop), '""')
        i = stop + 1
      elseif quote == '"' or quote == "'" then
        local j = i + 1
        while j <= n and source:sub(j, j) ~= quote do
          if source:sub(j, j) == "\\" then j = j + 1 end
          j = j + 1
        end
        keep(source:sub(i, j), '""')
        i = j + 1
      else
        local stop = (source:find("[%-%[\"']", i + 1)) or n + 1
        keep(source:sub(i, stop - 1))
        i = stop
      end
    end
  end
  return table.concat(code), table.concat(bare)
end

-- the names the face loads on first use: `local submodules = { nn = true, ... }` in its init.lua
local function lazy_packages(face_code)
  local block = assert(face_code:match("local submodules = (%b{})"),
    "lua/graphmert/init.lua: no `local submodules = { ... }` table to read the lazy packages from")
  local set = {}
  for name in block:gmatch("([%w_]+)%s*=%s*true") do set[name] = true end
  return set
end

-- module name → { [dependency] = "why" }, for every module under lua/graphmert/
local function dependency_graph()
  local sources = {}
  for _, path in ipairs(paths("find " .. ROOT .. " -name '*.lua'")) do
    local code, bare = strip(files.read(path))
    sources[module_name(path)] = { path = path, code = code, bare = bare }
  end
  local lazy = lazy_packages(sources.graphmert.code)
  local graph = {}
  for name, src in pairs(sources) do
    local uses = {}
    graph[name] = uses
    local function depend(on, why)
      if sources[on] and on ~= name and not uses[on] then uses[on] = why end
    end
    for required in src.code:gmatch("require%s*%(?%s*[\"']([%w_.]+)[\"']") do
      depend(required, "require \"" .. required .. "\"")
    end
    -- the face's fields, read by a module that holds it (local gm = require "graphmert", or
    -- require("graphmert").field at once)
    if name ~= "graphmert" then
      local aliases = {}
      for alias in src.code:gmatch("local%s+([%a_][%w_]*)%s*=%s*require%s*%(?%s*[\"']graphmert[\"']") do
        aliases[alias] = true
      end
      for alias in src.code:gmatch("\n%s*([%a_][%w_]*)%s*=%s*[%a_][%w_]*%s+or%s+require%s*%(?%s*[\"']graphmert[\"']") do
        aliases[alias] = true
      end
      local function field(package, how)
        if lazy[package] then depend("graphmert." .. package, how .. package) end
      end
      for alias in pairs(aliases) do
        for package in src.bare:gmatch("%f[%w_]" .. alias .. "%.([%a_][%w_]*)") do
          field(package, alias .. ".")
        end
      end
      for package in src.code:gmatch("require%s*%(%s*[\"']graphmert[\"']%s*%)%.([%a_][%w_]*)") do
        field(package, "require(\"graphmert\").")
      end
    end
  end
  return graph
end

local function line_count(path)
  local _, lines = files.read(path):gsub("\n", "")
  return lines
end

local function over_limit(list, limit)
  local over = {}
  for _, path in ipairs(list) do
    local lines = line_count(path)
    if lines > limit then over[#over + 1] = path .. " (" .. lines .. " lines)" end
  end
  return over
end

describe("the Lua modules", function()
  it("depend on no module that depends back on them", function()
    local graph = dependency_graph()
    assert.is_truthy(graph["graphmert.eval.decode"], "the modules were not read from " .. ROOT)
    local circle = circle_in(graph)
    assert.is_nil(circle, circle and ("a circle: " .. table.concat(circle, " -> ")))
  end)

  it("are at most " .. MAX_MODULE_LINES .. " lines each", function()
    local over = over_limit(paths("find " .. ROOT .. " -name '*.lua'"), MAX_MODULE_LINES)
    assert.are.same({}, over, "over " .. MAX_MODULE_LINES .. " lines: " .. table.concat(over, ", "))
  end)
end)

describe("docs/internals.md's layout table", function()
  it("names every folder of lua/graphmert/", function()
    local doc = io.open("docs/internals.md"):read("a")
    local layout = doc:match("## Layout\n(.-)\n## ")
    assert.is_truthy(layout, "no Layout section in docs/internals.md")
    local missing = {}
    for _, dir in ipairs(paths("find " .. ROOT .. " -mindepth 1 -type d")) do
      local rel = dir:sub(#ROOT + 1):gsub("/$", "")
      -- a folder is a row of its own ("lua/graphmert/kg/") or named in its parent's ("kg/assets/")
      local named = layout:find("lua/graphmert/" .. rel .. "/", 1, true) or layout:find("`" .. rel .. "/`", 1, true)
        or layout:find("`" .. rel:gsub("^[^/]+/", "") .. "/`", 1, true)
      if not named then
        missing[#missing + 1] = rel .. "/"
      end
    end
    assert.are.same({}, missing, "folders the layout table leaves out: " .. table.concat(missing, ", "))
  end)
end)

describe("the commands under experiments/", function()
  it("are at most " .. MAX_COMMAND_LINES .. " lines each", function()
    local commands = paths("ls experiments/*.lua")
    assert.is_true(#commands > 0)
    local over = over_limit(commands, MAX_COMMAND_LINES)
    assert.are.same({}, over, "over " .. MAX_COMMAND_LINES .. " lines: " .. table.concat(over, ", "))
  end)
end)
