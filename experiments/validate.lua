-- validate.lua — read and check a dataset before training on it: every file is read, each bad
-- line counted by reason (the first ones named as file:line), and the corpus linked against the
-- entities' names and aliases, so a user sees what training would get.
--   graphmert experiments/validate.lua --data experiments/data/tiny
--   graphmert experiments/validate.lua --config experiments/configs/tiny.lua [--strict]
-- Prints the dataset's summary, the skipped lines, how many entity mentions a passage has and
-- the share of passages with one, the ambiguous mentions, and the triples whose head no passage
-- mentions (they cannot be injected). Exits 0, or 1 with --strict when a line was skipped.
local gm = require "graphmert"
local ex = gm.experiment

local args = ex.args.parse(arg, {
  script = "validate.lua", about = "Read and check a dataset (corpus, seed graph, entities, relation schema).",
  { "data", nil, "a dataset folder (corpus, triples, entities, relations files)" },
  { "config", nil, "a training config: its data" },
  { "strict", false, "exit 1 when any line was skipped", flag = true },
})
local function fail(msg) ex.args.fail("validate.lua", msg) end
if args.data and args.config then fail("give --data DIR or --config FILE, not both") end
if not args.data and not args.config then fail("give --data DIR or --config FILE (see --help)") end

local ds = ex.args.try("validate.lua", ex.named_dataset, args)
print(ds:summary())
local r = ds.report
if r.skipped_total > 0 then
  print(string.format("skipped lines (%d; the first %d):", r.skipped_total, #r.messages))
  for _, m in ipairs(r.messages) do print("  " .. m) end
end

local graph = gm.data.seed_graph.new(ds)
local mentions, with_head, ambiguous, mentioned = 0, 0, 0, {}
for _, p in ipairs(ds.passages) do
  local found = graph.linker:mentions(p.text)
  mentions = mentions + #found
  if #found > 0 then with_head = with_head + 1 end
  for _, m in ipairs(found) do
    local c = graph:candidates(m.phrase)
    if #c > 1 then ambiguous = ambiguous + 1 end
    for _, id in ipairs(c) do mentioned[id] = true end
  end
  if p.entity then mentioned[p.entity] = true end
end
local unplaced = 0
for _, t in ipairs(ds.triples) do if not mentioned[t.head] then unplaced = unplaced + 1 end end
print(string.format("linking: %d mentions, %.2f a passage; %d of %d passages (%.1f%%) have a head; %d mentions " ..
  "ambiguous (kept with every candidate, ranked); %d of %d triples have a head no passage mentions",
  mentions, mentions / #ds.passages, with_head, #ds.passages, 100 * with_head / #ds.passages, ambiguous, unplaced, #ds.triples))
if args.strict and r.skipped_total > 0 then os.exit(1) end
