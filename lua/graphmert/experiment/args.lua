-- args.lua — the command-line parser the scripts under experiments/ share.
--   local args = require("graphmert.experiment.args").parse(arg, {
--     script = "train.lua", about = "train GraphMERT on a dataset",
--     { "config", "experiments/configs/wordnet_small.lua", "the config file" },
--     { "steps", nil, "override the config's step count", type = "integer" },
--     { "resume", false, "continue from the checkpoint", flag = true },
--   })
-- Options are --name value or --name=value (or --name for a flag); --help (or -h) prints the
-- usage and exits. An option may carry type = "integer" | "number", min and max, and choices =
-- {...}. An unknown option (with the nearest known name), a missing value, a value of the wrong
-- type or range is a usage error (gm.errors kind "usage": the graphmert binary prints its one
-- line, "script: message (see --help)", with no traceback and exits with status 2; run as a
-- command, "graphmert extract: ..." names it as the user typed it). M.fail(script, msg)
-- and M.try(script, fn, ...) give scripts the same ending for what they check themselves;
-- M.writable(script, path) checks an output can be written before the work starts (its folder
-- made when missing), M.folder(script, dir, make) that an output folder can be (and makes it),
-- M.apart(script, outputs, inputs) that no output would write over an input; M.running() is the
-- script running now. M.precision_option() and M.apply_precision(args): --precision for the
-- scripts that run a trained model.
local errors = require "graphmert.errors"
local gm = require "graphmert"

local M = {}

-- the length of the prefix two strings share
local function shared_prefix(a, b)
  local n = 0
  while n < #a and n < #b and a:byte(n + 1) == b:byte(n + 1) do n = n + 1 end
  return n
end

-- the known name nearest `name` by edit distance, when it is close enough to be a typo; of names
-- as near, the one sharing the longest prefix (--ouput is --out, not --input)
function M.suggest(name, known)
  local best, best_d = nil, math.max(2, #name // 3) + 1
  for _, k in ipairs(known) do
    local prev = {}
    for j = 0, #k do prev[j] = j end
    for i = 1, #name do
      local cur = { [0] = i }
      for j = 1, #k do
        local cost = name:byte(i) == k:byte(j) and 0 or 1
        cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
      end
      prev = cur
    end
    if prev[#k] < best_d or (prev[#k] == best_d and best and shared_prefix(name, k) > shared_prefix(name, best)) then
      best, best_d = k, prev[#k]
    end
  end
  return best
end

-- How the user ran `script`: "graphmert extract" when graphmert.experiment.commands ran it for
-- that command (it sets M.command = {name, script}), else the script's file name.
function M.invoked(script)
  local c = M.command
  return c and c.script == script and "graphmert " .. c.name or script
end

-- a usage error: one line, exit status 2
function M.fail(script, msg) errors.raise("usage", M.invoked(script) .. ": " .. tostring(msg)) end

-- the script running now (the command's, else arg[0]'s file name), for a usage error raised by
-- code that several scripts share: M.fail(M.running(), msg) names the command as the user typed it
function M.running()
  if M.command then return M.command.script end
  return type(arg) == "table" and type(arg[0]) == "string" and arg[0]:match("[^/]*$") or "graphmert"
end

-- fn(...)'s results, or a usage error with its message (a "file:line: " prefix dropped: the
-- message is for the user, not a traceback); Ctrl-C passes through
function M.try(script, fn, ...)
  local res = table.pack(pcall(fn, ...))
  if not res[1] then
    local kind = errors.kind(res[2])
    if kind == "usage" or kind == "interrupted" then error(res[2], 0) end
    M.fail(script, (tostring(res[2]):gsub("^[%w_./-]+%.lua:%d+: ", "")))
  end
  return table.unpack(res, 2, res.n)
end

-- the output file `path` can be written — checked before the work starts, so that hours of it are
-- never lost to a full disk or a directory in the way — else a usage error; its folder is made
-- with its parents when missing, as train makes its --out (not where a file is in the way)
function M.writable(script, path)
  local gm = require "graphmert"
  local info = gm.stat(path)
  if info and info.type ~= "file" then M.fail(script, path .. " is a " .. info.type .. "; --out names the output file") end
  local dir = path:match("^(.*)/[^/]*$") or "."
  if dir == "" then dir = "/" end
  local made, why = pcall(require("graphmert.folder").make, dir)
  if not made then M.fail(script, string.format("cannot write %s: %s", path, tostring(why))) end
  local probe = string.format("%s/.graphmert-probe.%d.%d", dir, math.random(1 << 30), os.time())
  local ok, err = gm.write_atomic(probe, { "" })
  if not ok then M.fail(script, "cannot write " .. path .. ": " .. err:gsub("^" .. probe:gsub("%p", "%%%0") .. "[^:]*: ", "")) end
  os.remove(probe)
end

-- where a path leads, links resolved (for a file not made yet, or gone, its folder's; with no
-- folder either, the path as typed; a trailing "/" dropped): two names of one file give one
-- place; a value that is no path is itself
function M.place(path)
  if type(path) ~= "string" then return path end -- an output not written, an input not given
  local gm = require "graphmert"
  path = path:gsub("(.)/+$", "%1")
  local real = gm.realpath(path)
  if real then return real end
  local dir, name = path:match("^(.*)/([^/]*)$")
  local folder = gm.realpath(dir == "" and "/" or dir or ".")
  return folder and (folder:gsub("/$", "")) .. "/" .. (name or path) or path
end

-- no output is an input, or inside an input folder (given as {folder = path}); entries that are
-- not paths are skipped — checked before any work, so that an extraction never writes over its
-- corpus, nor a page over the file it shows
function M.apart(script, outputs, inputs)
  for _, o in pairs(outputs) do
    local op = M.place(o)
    for _, i in pairs(inputs) do
      local folder = type(i) == "table"
      if folder then i = i.folder end
      local ip = M.place(i)
      if op and ip and op == ip then M.fail(script, string.format("the output %s would replace the input %s: choose another --out", o, i)) end
      if op and ip and folder and op:sub(1, #ip + 1) == ip .. "/" then
        M.fail(script, string.format("the output %s would be inside %s, an input: choose another --out", o, i))
      end
    end
  end
end

-- the output folder `dir` can be one (nothing else by that name) and, when it exists, be written
-- in; with make it is made with its parents when missing — else a usage error naming it and why
function M.folder(script, dir, make)
  local gm = require "graphmert"
  local info = gm.stat(dir)
  if info and info.type ~= "directory" then M.fail(script, dir .. " is a " .. info.type .. "; --out names the output folder") end
  if make and not info then
    local ok, err = pcall(require("graphmert.folder").make, dir)
    if not ok then M.fail(script, tostring(err)) end
    info = gm.stat(dir)
  end
  if info then
    local probe = string.format("%s/.graphmert-probe.%d.%d", dir, math.random(1 << 30), os.time())
    local ok, err = require("graphmert").write_atomic(probe, { "" })
    if not ok then M.fail(script, "cannot write in the folder " .. dir .. ": " .. (tostring(err):match("[^:]+$") or tostring(err)):gsub("^%s+", "")) end
    os.remove(probe)
  end
end

function M.usage(spec)
  local invoked = M.invoked(spec.script)
  local lines = { string.format("usage: %s [options]", invoked == spec.script and "graphmert experiments/" .. spec.script or invoked) }
  if spec.about then lines[#lines + 1] = spec.about end
  for _, o in ipairs(spec) do
    local value = o.flag and "" or " " .. ((o.type == "integer" or o.type == "number") and "N" or "VALUE")
    local default = o[2] ~= nil and o[2] ~= false and string.format(" (default %s)", tostring(o[2])) or ""
    lines[#lines + 1] = string.format("  --%-22s %s%s", o[1] .. value, o[3], default)
  end
  lines[#lines + 1] = "  --help                   this text"
  return table.concat(lines, "\n")
end

M.DEFAULT_CONFIG = "wordnet_small"

-- --precision for the scripts that run a trained model (extract, evaluate): the matrix products'
-- precision, as gm.set_float32_matmul_precision names it (a training config's `precision` key)
function M.precision_option()
  return { "precision", nil, "matrix products: highest (float32, the default) or medium (bf16 inputs and float32 sums where " ..
    "the CPU has avx512_bf16: faster, scores move by rounding)", choices = { "highest", "high", "medium" } }
end

-- applies --precision when given → "medium" when the products run in bf16, nil when in float32
-- ("high" is "highest" on a CPU, and "medium" too without avx512_bf16): what a run records of it
function M.apply_precision(args)
  if args.precision then gm.set_float32_matmul_precision(args.precision) end
  return gm.get_float32_matmul_precision() == "medium" and gm.config().bf16_available and "medium" or nil
end

-- The spec of a script that trains from a config: --config, --data, --out and --steps, then `extra`.
-- (--config has no default here: M.training_config gives it, and says so when --data is given)
function M.training(script, about, out, extra)
  local spec = { script = script, about = about,
    { "config", nil, "config file, or a shipped config's name (graphmert configs; default " .. M.DEFAULT_CONFIG .. ")" },
    { "data", nil, "a dataset folder to train on instead of the config's data (docs/datasets.md)" },
    { "out", out, out and "output folder" or "output folder (default: out/ and the name of the --data folder, else of the config)" },
    { "steps", nil, "override the config's step count", type = "integer", min = 1 } }
  for _, o in ipairs(extra or {}) do spec[#spec + 1] = o end
  return spec
end

-- the config a training script runs: --config's, else the default, which is sized for WordNet: a
-- user training on a dataset of their own without a config is told what model they get
function M.training_config(script, args)
  if args.config then return args.config end
  if args.data and require("graphmert.distributed").is_main() then
    io.stderr:write(string.format("%s: no --config: training %s with the model and steps of %s, sized for WordNet " ..
      "(for a dataset of your own, copy experiments/configs/tiny.lua and size it: docs/training.md)\n", script, args.data,
      M.DEFAULT_CONFIG))
  end
  return M.DEFAULT_CONFIG
end

local function check_value(o, v, fail)
  local name = "--" .. o[1]
  if o.type == "integer" or o.type == "number" then
    local n = tonumber(v)
    if o.type == "integer" then n = n and math.tointeger(n) end
    if not n or n ~= n then fail(string.format("%s must be %s, got %s", name, o.type == "integer" and "an integer" or "a number", v)) end
    if o.min and n < o.min then fail(string.format("%s must be at least %s, got %s", name, tostring(o.min), v)) end
    if o.max and n > o.max then fail(string.format("%s must be at most %s, got %s", name, tostring(o.max), v)) end
    return n
  end
  if o.choices then
    for _, c in ipairs(o.choices) do if c == v then return v end end
    fail(string.format("%s must be %s, got %s", name, table.concat(o.choices, " or "), v))
  end
  return v
end

function M.parse(argv, spec)
  local by_name, out, names = {}, {}, {}
  for _, o in ipairs(spec) do
    by_name[o[1]] = o
    out[o[1]] = o[2]
    names[#names + 1] = o[1]
  end
  local function fail(msg) M.fail(spec.script, msg .. " (see --help)") end
  local given = {} -- an option given twice is a mistake (which one was meant?), not the last one
  local i = 1
  while i <= #argv do
    local name, inline = argv[i]:match("^%-%-([^=]+)=(.*)$")
    name = name or argv[i]:match("^%-%-(.+)$")
    if name == "help" or argv[i] == "-h" then
      print(M.usage(spec))
      os.exit(0)
    end
    local o = by_name[name]
    if not o then
      local near = name and M.suggest(name, names)
      fail("unknown argument " .. argv[i] .. (near and (" (did you mean --" .. near .. "?)") or ""))
    end
    if given[name] then fail("--" .. name .. " is given twice") end
    given[name] = true
    if o.flag then
      if inline then fail("--" .. name .. " takes no value") end
      out[name] = true
    else
      local v = inline
      if v == nil then
        v = argv[i + 1]
        if v == nil then fail("--" .. name .. " needs a value") end
        i = i + 1
      end
      out[name] = check_value(o, v, fail)
    end
    i = i + 1
  end
  return out
end

return M
