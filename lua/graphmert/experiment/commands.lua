-- commands.lua — the graphmert binary's subcommands: `graphmert train ...` runs the shipped
-- experiments/train.lua with the arguments that follow, wherever graphmert is installed.
--   init      experiments/init.lua         a training config sized for a dataset, with reasons
--   train     experiments/train.lua        train GraphMERT on a dataset, with a verdict
--   extract   experiments/extract.lua      a knowledge graph from text with a trained model
--   evaluate  experiments/extract_eval.lua extraction from held-out passages, scored
--   calibrate experiments/calibrate.lua    fit the reranker: extraction scores become probabilities
--   ablate    experiments/ablation.lua     the λ × H-GAT grid with seeds and intervals
--   validate  experiments/validate.lua     read and check a dataset
--   export    experiments/export.lua       a kg.sqlite store as RDF or kg.jsonl / kg.tsv
--   page      experiments/page.lua         the KG page: a kg.jsonl or kg.sqlite as one HTML file to review
--   score     experiments/score_kg.lua     a kg.sqlite or kg.jsonl scored against a dataset
--   configs   list the shipped configs (a --config value may be one of their names)
-- The shipped files are found under $GRAPHMERT_HOME, else beside the binary: <prefix>/share/
-- graphmert/ when installed (make install), the source tree when run from build/bin; else where
-- the binary was built to find them (BUILT_DATADIR: the rock's folder, with luarocks).
-- `graphmert script.lua` keeps lua(1)'s meaning; a bare word that names a command is that command
-- (./name runs a file of that name), and one that names no regular file is asked as one.
local gm = require "graphmert"
local args = require "graphmert.experiment.args"

local M = {}

M.scripts = { init = "init.lua", train = "train.lua", extract = "extract.lua", evaluate = "extract_eval.lua", ablate = "ablation.lua",
  validate = "validate.lua", export = "export.lua", score = "score_kg.lua", page = "page.lua", calibrate = "calibrate.lua" }
local ABOUT = {
  init = "write a training config sized for a dataset of your own, each size with its reason",
  train = "train GraphMERT on a dataset (sized for it with --data alone, or a config's), with a verdict",
  extract = "a knowledge graph from text with a trained model",
  evaluate = "extraction from held-out passages, scored against the seed graph",
  calibrate = "fit the reranker that makes extraction scores probabilities (reranker.json)",
  ablate = "the λ × H-GAT ablation grid with seeds and intervals",
  validate = "read and check a dataset before training on it",
  export = "a kg.sqlite store as RDF (N-Triples, Turtle) or kg.jsonl / kg.tsv",
  score = "score a kg.sqlite or kg.jsonl against a dataset's seed graph and schema, or a review",
  page = "the KG page: a kg.jsonl or kg.sqlite as one HTML file to browse, check and review",
  configs = "list the shipped configs",
}
local ORDER = { "init", "train", "calibrate", "extract", "page", "export", "score", "evaluate", "validate", "ablate", "configs" }

local function is_file(path)
  local info = gm.stat(path)
  return info ~= nil and info.type == "file"
end

-- the folder holding experiments/ (scripts, configs, example data), or nil
function M.home()
  local candidates = { os.getenv("GRAPHMERT_HOME") }
  local exe = gm.realpath("/proc/self/exe")
  local bin = exe and exe:match("^(.*)/[^/]*$")
  if bin then
    candidates[#candidates + 1] = bin .. "/../share/graphmert" -- installed: <prefix>/bin, <prefix>/share
    candidates[#candidates + 1] = bin .. "/../.." -- the source tree: build/bin
  end
  candidates[#candidates + 1] = M.installed_home -- the binary's BUILT_DATADIR (luarocks copies it out)
  candidates[#candidates + 1] = "."
  for _, dir in ipairs(candidates) do
    if dir ~= "" and is_file(dir .. "/experiments/train.lua") then return gm.realpath(dir) end
  end
end

-- a --config value: a file that exists, or the name of a shipped config ("tiny", "tiny.lua"); else
-- a usage error of the command running
function M.config_path(value)
  if is_file(value) then return value end
  local home = M.home()
  local shipped = not value:find("/") and home and (home .. "/experiments/configs/" .. value:gsub("%.lua$", "") .. ".lua")
  if shipped and is_file(shipped) then return shipped end
  local info = gm.stat(value)
  if info and info.type == "directory" then
    args.fail(args.running(), "--config: " .. value .. " is a folder: it names a config file or a shipped config " ..
      "(a dataset folder goes to --data)")
  end
  if value:find("/") then return value end
  if not info then
    args.fail(args.running(), string.format("--config: no file %s, and no shipped config of that name " ..
      "(graphmert configs lists them)", value))
  end
  return value
end

-- a config's one-line description: its leading comment (a "name.lua — " start dropped) up to
-- the first ":", ";" or sentence end, parentheses left out
local function about_of(path)
  local f = io.open(path)
  if not f then return "" end
  local parts = {}
  for line in f:lines() do
    local text = line:match("^%-%-%s?(.*)$")
    if not text or text == "" or text:match("^%s") then break end -- code, a blank, or an indented example
    parts[#parts + 1] = text
  end
  f:close()
  local s = table.concat(parts, " "):gsub("^[%w_.]+%.lua%s*[—-]+%s*", "")
  local n
  repeat s, n = s:gsub("%s*%b()", "") until n == 0
  return ((s:match("^(.-)[:;]") or s:match("^(.-)%.%s") or s):gsub("[%s.]+$", ""))
end

-- the shipped configs: name, path and the start of their leading comment
function M.configs()
  local home = M.home()
  if not home then return {} end
  local list = {}
  local p = io.popen("ls -1 -- '" .. (home .. "/experiments/configs"):gsub("'", "'\\''") .. "' 2>/dev/null")
  for file in p:lines() do
    local name = file:match("^(.+)%.lua$")
    if name then
      local path = home .. "/experiments/configs/" .. file
      list[#list + 1] = { name = name, path = path, about = about_of(path) }
    end
  end
  p:close()
  table.sort(list, function(a, b) return a.name < b.name end)
  return list
end

-- whether `word` is a command (the binary runs it as one even beside a file of that name)
function M.known(word) return M.scripts[word] ~= nil or word == "configs" or word == "help" end

function M.usage()
  local lines = { "usage: graphmert COMMAND [options]   (graphmert help COMMAND, or COMMAND --help, for its options)",
    "commands:" }
  for _, name in ipairs(ORDER) do lines[#lines + 1] = string.format("  %-10s %s", name, ABOUT[name]) end
  lines[#lines + 1] = "graphmert [script [args]] runs a Lua script with the graphmert module, as lua(1); alone, the REPL"
  return table.concat(lines, "\n")
end

-- M.home(), or a usage error saying where to point
local function shipped_home()
  return M.home() or args.fail("graphmert", "cannot find the shipped experiments/ (set GRAPHMERT_HOME to the folder that holds it)")
end

-- graphmert COMMAND args...: runs the command's script with `arg` set as if it were run directly
function M.main(command, ...)
  if command == "help" or command == "--help" or command == "-h" then
    local about = ...
    if M.scripts[about] or about == "configs" then return M.main(about, "--help") end -- graphmert help extract
    if about and about ~= "help" then return M.main(about) end -- the unknown command's error
    print(M.usage())
    return
  end
  if command == "configs" then
    local first = ...
    if first == "--help" or first == "-h" then
      print("usage: graphmert configs\n" .. ABOUT.configs .. " (a --config value may be one of their names)")
      return
    end
    if first ~= nil then args.fail("graphmert configs", "takes no arguments, got " .. tostring(first)) end
    shipped_home()
    for _, c in ipairs(M.configs()) do print(string.format("%-22s %s", c.name, c.about)) end
    return
  end
  local script = M.scripts[command]
  if not script then
    local known = {}
    for _, name in ipairs(ORDER) do known[#known + 1] = name end
    local near = args.suggest(command, known)
    args.fail("graphmert", string.format("unknown command '%s'%s (commands: %s; a script must exist as a file)", command,
      near and (" (did you mean '" .. near .. "'?)") or "", table.concat(known, ", ")))
  end
  local path = shipped_home() .. "/experiments/" .. script
  local chunk, err = loadfile(path)
  if not chunk then error(err, 0) end
  args.command = { name = command, script = script }
  _G.arg = table.pack(...)
  _G.arg.n = nil
  _G.arg[0] = path
  return chunk(...)
end

return M
