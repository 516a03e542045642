-- assets.lua — the files that Lua modules read as text (the KG page's HTML, CSS and JavaScript).
-- They live in `assets/` folders beside the modules, under lua/, so that an editor and a linter
-- see them as what they are, and they go wherever the modules go:
--   the graphmert binary  built in, as the modules are (scripts/build/embed_lua.lua writes them
--                         into the preload "graphmert.embedded_assets": path → text); with
--                         GRAPHMERT_DEV=1 the binary reads lua/ from disk, these files too
--   lua5.4                read from the first package.path folder that has them ("./lua/?.lua"
--                         → ./lua/<path>), as require finds the module beside them: the build
--                         tree, `make install`'s share/lua/5.4 or a rocks tree (the Makefile's
--                         install copies them there with the modules)
--   assets.read(path) → the text of the file at `path` under lua/ ("graphmert/kg/assets/page.css");
--     a file found nowhere is an error naming it and every place looked in
local M = {}

local embedded = package.preload["graphmert.embedded_assets"] and require "graphmert.embedded_assets" or {}

-- the package.path templates of modules as files ("./lua/?.lua"), as templates for any file
-- ("./lua/?"); "?/init.lua" ones name folders, not files, and are left out
local function file_templates()
  local templates = {}
  for template in package.path:gmatch("[^;]+") do
    if template:sub(-5) == "?.lua" then templates[#templates + 1] = template:sub(1, -5) end
  end
  return table.concat(templates, ";")
end

function M.read(path)
  if embedded[path] then return embedded[path] end
  local found, not_found = package.searchpath(path, file_templates(), "")
  if not found then error(string.format("missing %s, a file shipped with the Lua modules:\n\t%s", path, not_found), 2) end
  local f = assert(io.open(found, "rb"))
  local text = f:read("a")
  f:close()
  return text
end

return M
