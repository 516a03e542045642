-- init.lua — a training config sized for a dataset of your own: `graphmert init --data DIR`
-- reads and checks the dataset, chooses each size from it (leaf slots from its tails' lengths,
-- vocabulary, sequence length and width from its corpus, steps from a few steps timed on this
-- CPU within --minutes) and writes an editable config, each value's reason beside it
-- (gm.experiment.sizing). `graphmert train --data DIR` with no --config does the same in its run folder.
--   graphmert init --data DIR [--out NAME.lua] [--minutes 10] [--overwrite]
local gm = require "graphmert"
local ex = gm.experiment
local sizing = require "graphmert.experiment.sizing"

local args = ex.args.parse(arg, {
  script = "init.lua", about = "Write a training config sized for a dataset: each size chosen from the data, with its reason.",
  { "data", nil, "the dataset folder (docs/datasets.md)" },
  { "out", nil, "the config file to write (default: the data folder's name .lua, here)" },
  { "minutes", sizing.DEFAULT_MINUTES, "the training time the steps are sized to, on this CPU", type = "number", min = 0.1 },
  { "overwrite", false, "replace the config file if it exists", flag = true },
})
if not args.data then ex.args.fail("init.lua", "give --data DIR, the dataset folder to size a model for (see --help)") end
local info = gm.stat(args.data)
if not info or info.type ~= "directory" then
  ex.args.fail("init.lua", string.format("--data %s is not a folder (a dataset folder: docs/datasets.md)", args.data))
end
local name = (gm.realpath(args.data) or args.data):gsub("/+$", ""):match("[^/]*$")
args.out = args.out or ((name ~= "" and name or "dataset") .. ".lua")
if not args.out:find("%.lua$") then ex.args.fail("init.lua", "--out names a Lua config file (NAME.lua), got " .. args.out) end
ex.args.writable("init.lua", args.out)
if gm.stat(args.out) and not args.overwrite then
  ex.args.fail("init.lua", args.out .. " exists: --overwrite replaces it, or name another --out")
end
sizing.write("init.lua", args.data, args.out, { minutes = args.minutes })
print(string.format("wrote %s: graphmert train --config %s", args.out, args.out))
