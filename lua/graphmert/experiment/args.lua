-- args.lua — the command-line parser the scripts under experiments/ share.
--   local args = require("graphmert.experiment.args").parse(arg, {
--     script = "train.lua", about = "train GraphMERT on a dataset",
--     { "config", "experiments/configs/wordnet_small.lua", "the config file" },
--     { "steps", nil, "override the config's step count", type = "integer" },
--     { "resume", false, "continue from the checkpoint", flag = true },
--   })
-- Options are --name value (or --name for a flag); --help prints the usage and exits. An unknown
-- option, a missing value or a value of the wrong type is an error naming it.
local M = {}

function M.usage(spec)
  local lines = { string.format("usage: graphmert experiments/%s [options]", spec.script) }
  if spec.about then lines[#lines + 1] = spec.about end
  for _, o in ipairs(spec) do
    local value = o.flag and "" or " " .. (o.type == "integer" and "N" or "VALUE")
    local default = o[2] ~= nil and o[2] ~= false and string.format(" (default %s)", tostring(o[2])) or ""
    lines[#lines + 1] = string.format("  --%-22s %s%s", o[1] .. value, o[3], default)
  end
  lines[#lines + 1] = "  --help                   this text"
  return table.concat(lines, "\n")
end

-- The spec of a script that trains from a config: --config, --data, --out and --steps, then `extra`.
function M.training(script, about, out, extra)
  local spec = { script = script, about = about,
    { "config", "experiments/configs/wordnet_small.lua", "config file (keys: lua/graphmert/experiment/config.lua)" },
    { "data", nil, "a dataset folder to train on instead of the config's data (docs/datasets.md)" },
    { "out", out, "output folder" },
    { "steps", nil, "override the config's step count", type = "integer" } }
  for _, o in ipairs(extra or {}) do spec[#spec + 1] = o end
  return spec
end

function M.parse(argv, spec)
  local by_name, out = {}, {}
  for _, o in ipairs(spec) do
    by_name[o[1]] = o
    out[o[1]] = o[2]
  end
  local function fail(msg) error(string.format("%s: %s (see --help)", spec.script, msg), 0) end
  local i = 1
  while i <= #argv do
    local name = argv[i]:match("^%-%-(.+)$")
    if name == "help" then
      print(M.usage(spec))
      os.exit(0)
    end
    local o = by_name[name]
    if not o then fail("unknown argument " .. argv[i]) end
    if o.flag then
      out[name] = true
    else
      local v = argv[i + 1]
      if v == nil then fail("--" .. name .. " needs a value") end
      if o.type == "integer" then
        local n = math.tointeger(tonumber(v))
        if not n then fail("--" .. name .. " must be an integer, got " .. v) end
        v = n
      end
      out[name] = v
      i = i + 1
    end
    i = i + 1
  end
  return out
end

return M
