-- extract_eval.lua — how good is the extracted knowledge graph? On passages the model never saw
-- (the passages of the held-out entities of the run's split), extract with every relation allowed
-- for each head and score the top tail per (head, relation) against the seed graph, for
-- GraphMERT, the same budget's model without decay and H-GAT (the run's baseline/ folder, when it
-- exists) and the most frequent training tail per relation asked the same queries:
--   precision  share of extracted triples the seed graph holds (95% bootstrap interval over passages)
--   recall     share of the held-out entities' own facts (relation known, head in its passage) found
--   validity   share whose tail is an entity of a type the relation reaches
--   multi      share of the correct triples whose tail has several tokens (the issue's multi-token
--              tails: one whole-word token at the first leaf slot cannot say them), and several words
-- and precision/recall over score thresholds (pr.csv, pr.png through gnuplot); passages.txt holds
-- the held-out passages, one a line. Throughput is
-- passages per second of extraction at the machine's threads. Tails are decoded without being
-- told their length (gm.eval.decode).
--   graphmert experiments/extract_eval.lua --checkpoint out/wordnet_10min
--       --config experiments/configs/wordnet_10min.lua [--data DIR] [--passages 300]
--       [--decoding open|constrained] [--answer-all] [--out DIR (default: CHECKPOINT/extraction)]
-- The held-out passages come from the dataset the run was trained on, which the user names with
-- --config (and --data when training had it): run.json records it, but a run folder from
-- elsewhere must not choose which files are read. A config whose data differs from the run's is
-- refused.
-- A model trained with absent relations may answer "none" (gm.eval.decode's empty tail); its
-- triples are then only those it ranks above "none", unless --answer-all.
local gm = require "graphmert"
local ex = gm.experiment
local extract, stats = gm.eval.extract, gm.eval.stats

local args = ex.args.parse(arg, {
  script = "extract_eval.lua", about = "Extraction from held-out passages, scored against the seed graph.",
  { "checkpoint", nil, "a training output folder (run.json, tokenizer.txt, checkpoint.safetensors)" },
  { "passages", 300, "held-out passages to extract from", type = "integer", min = 1 },
  { "decoding", "open", "open or constrained", choices = { "open", "constrained" } },
  { "answer-all", false, "ignore a model's empty answer (trained with absent): every (head, relation) gets its best tail", flag = true },
  { "unpacked", false, "one (head, relation) query per sequence instead of a passage's heads together (slower)", flag = true },
  { "out", nil, "output folder (default CHECKPOINT/extraction)" },
  { "config", nil, "the config the run was trained with (run.json records which)" },
  { "data", nil, "the dataset folder, when the run was trained with --data" },
  ex.args.precision_option(),
})
local function fail(msg) ex.args.fail("extract_eval.lua", msg) end
if not args.checkpoint then fail("--checkpoint is required (see --help)") end
ex.args.apply_precision(args)
local run = ex.args.try("extract_eval.lua", ex.read_run, args.checkpoint)
local out_dir = args.out or args.checkpoint .. "/extraction"
if not args.config then
  fail(string.format("--config is required: the config the run was trained with (run.json records %s%s)", tostring(run.config),
    run.data.dir and (", with data " .. tostring(run.data.dir)) or ""))
end
ex.args.folder("extract_eval.lua", out_dir, true) -- once the arguments hold: a mistake leaves no folder
local cfg = ex.args.try("extract_eval.lua", ex.config.load, args.config, args.data and { data = { dir = args.data } })
if not ex.same_data(cfg.data, run.data) then
  fail(string.format("%s names data %s, but the run was trained on %s (pass --data when training had it)", args.config,
    ex.data_string(cfg.data), ex.data_string(run.data)))
end
local tok = ex.args.try("extract_eval.lua", ex.load_tokenizer, args.checkpoint, run)
gm.manual_seed(cfg.seed)
local d = ex.args.try("extract_eval.lua", ex.prepare, cfg, tok)
local graph = d.graph
if table.concat(graph.relation_names, ",") ~= table.concat(run.relations, ",") then -- every figure would be 0
  fail(string.format("the dataset's relations (%s) are not the run's (%s): is it the dataset the run was trained on?",
    table.concat(graph.relation_names, ", "), table.concat(run.relations, ", ")))
end
local relations = {}
for id, name in ipairs(run.relations) do relations[name] = id end

local passages = ex.heldout_passages(d, args.passages)
if #passages == 0 then fail(args.config .. " holds no entity out of training (heldout = 0): there is no unseen text to evaluate on") end

-- the most frequent tail of each relation in training, for the frequency baseline
local frequent = {}
do
  local ranked, totals = gm.eval.tails_by_frequency(d.train)
  for rel, list in pairs(ranked) do
    frequent[rel] = { tail = list[1][1], tokens = #tok:encode(list[1][1]), score = math.log(list[1][2] / totals[rel]) }
  end
end

local opts = gm.eval.extract.options(run, graph, relations, { mode = args.decoding, top = 1, pack = not args.unpacked,
  answer_all = args["answer-all"] })
local systems = { { name = "GraphMERT", dir = args.checkpoint } }
local baseline_dir = args.checkpoint .. "/baseline"
if gm.stat(baseline_dir .. "/run.json") then systems[2] = { name = "no decay, no H-GAT", dir = baseline_dir } end
systems[#systems + 1] = { name = "most frequent tail" }
for _, system in ipairs(systems) do -- every checkpoint loads before any work
  if system.dir then system.model = ex.args.try("extract_eval.lua", ex.load_model, system.dir) end
end

for _, system in ipairs(systems) do
  local units, t0 = {}, gm.clock()
  local progress = ex.progress.new { stream = io.stderr, total = #passages }
  local model = system.model
  if model then
    if args.decoding == "constrained" and not opts.tails then
      opts.tails = graph:known_tails(tok, relations, model.layout.leaves)
    end
  end
  -- the passages in chunks (extract.triples batches across a chunk's passages), scored one by one
  local CHUNK = 32
  for first = 1, #passages, CHUNK do
    local chunk = table.move(passages, first, math.min(#passages, first + CHUNK - 1), 1, {})
    local per = {}
    for _, p in ipairs(chunk) do per[p.id] = {} end
    if model then
      for _, t in ipairs(extract.triples(model, tok, chunk, opts)) do table.insert(per[t.source], t) end
    else
      for _, p in ipairs(chunk) do
        local _, meta = extract.queries(tok, d.layout, p, opts)
        for _, m in ipairs(meta) do
          local f = frequent[m.relation]
          if f then
            table.insert(per[p.id], { head = m.head, relation = m.relation, tail = f.tail, tokens = f.tokens, score = f.score,
              source = p.id })
          end
        end
      end
    end
    for i, p in ipairs(chunk) do
      units[first + i - 1] = extract.score_passage(graph, relations, p, extract.merge(per[p.id], { top = 1 }))
    end
    local done = first + #chunk - 1
    progress:update(done, string.format("%-20s %d/%d passages", system.name, done, #passages))
  end
  progress:finish()
  system.seconds = gm.clock() - t0
  system.units = units
end

local function sum(units, field)
  local s = 0
  for _, u in ipairs(units) do s = s + u[field] end
  return s
end
local function field_ratio(num, den) return stats.ratio(function(u) return u[num] end, function(u) return u[den] end) end

local lines = {
  string.format("# Extraction on %d held-out passages (%s decoding, top tail per head and relation%s; %s)", #passages,
    args.decoding, opts.empty and ", unless the model ranks \"none\" first" or "",
    opts.pack and "a passage's heads asked together" or "one query per sequence"), "",
  string.format("`%s`, %s; 95%% intervals: percentile bootstrap over passages (1,000 resamples).", args.checkpoint, ex.summary(d)), "",
  "| model | triples | precision [95% CI] | recall [95% CI] | validity [95% CI] | multi-token share of correct | multi-word share of correct [95% CI] | passages/s |",
  "|---|---|---|---|---|---|---|---|" }
for _, s in ipairs(systems) do
  local u = s.units
  local n, correct = sum(u, "n"), sum(u, "correct")
  s.extracted = n
  -- a share with its interval; of nothing it is "-", not 0: a system that asserts no triple has
  -- no precision
  local function cell(num, den)
    if sum(u, den) == 0 then return "-" end
    local l, h, v = stats.bootstrap(u, field_ratio(num, den))
    return string.format("%.3f [%.3f, %.3f]", v, l, h)
  end
  lines[#lines + 1] = string.format("| %s | %d | %s | %s | %s | %s | %s | %s |", s.name, n,
    n > 0 and cell("correct", "n") or "- (no triples)", cell("recalled", "gold"), cell("valid", "n"),
    correct > 0 and string.format("%.3f", sum(u, "multi_token") / correct) or "-", cell("multi", "correct"),
    s.dir and string.format("%.1f", #passages / s.seconds) or "-")
end
if #systems > 1 then
  lines[#lines + 1] = ""
  for i = 2, #systems do
    -- the same passages under both systems: pair unit k of one with unit k of the other
    if systems[1].extracted == 0 or systems[i].extracted == 0 then
      lines[#lines + 1] = string.format("GraphMERT − %s, precision: no difference to take (%s extracted no triple)",
        systems[i].name, systems[1].extracted == 0 and "GraphMERT" or systems[i].name)
      goto next_system
    end
    local pairs = {}
    for k = 1, #passages do pairs[k] = { systems[1].units[k], systems[i].units[k] } end
    local l, h, v = stats.paired(pairs,
      stats.ratio(function(p) return p[1].correct end, function(p) return p[1].n end),
      stats.ratio(function(p) return p[2].correct end, function(p) return p[2].n end))
    lines[#lines + 1] = string.format("GraphMERT − %s, precision: %+.3f [%+.3f, %+.3f]%s", systems[i].name, v, l, h,
      (l > 0 and " (better)") or (h < 0 and " (worse)") or " (the interval includes 0)")
    ::next_system::
  end
end

-- precision and recall over score thresholds (each system's own score scale)
local csv, blocks = { "system,threshold,precision,recall" }, {}
for _, s in ipairs(systems) do
  local block = {}
  local all, gold = {}, sum(s.units, "gold")
  for _, u in ipairs(s.units) do for _, e in ipairs(u.scored) do all[#all + 1] = e end end
  table.sort(all, function(a, b) return a.score > b.score end)
  local n, correct, recalled = 0, 0, 0
  for i, e in ipairs(all) do
    if e.recall then recalled = recalled + 1 else n = n + 1; if e.held then correct = correct + 1 end end
    if (i == #all or all[i + 1].score < e.score) and n > 0 then
      local p, r = correct / n, gold > 0 and recalled / gold or 0
      csv[#csv + 1] = string.format('"%s",%.6f,%.6f,%.6f', s.name, e.score, p, r)
      block[#block + 1] = string.format("%.6f %.6f", r, p)
    end
  end
  blocks[#blocks + 1] = block
end
local f = assert(io.open(out_dir .. "/pr.csv", "w"))
f:write(table.concat(csv, "\n"), "\n")
f:close()
local plot = { "set xlabel 'recall of held-out facts'", "set ylabel 'precision'", "set key bottom left" }
local series = {}
for i, s in ipairs(systems) do
  plot[#plot + 1] = string.format("$S%d << EOD\n%s\nEOD", i, #blocks[i] > 0 and table.concat(blocks[i], "\n") or "0 0")
  series[#series + 1] = string.format("$S%d using 1:2 with lines title '%s'", i, s.name)
end
plot[#plot + 1] = "plot " .. table.concat(series, ", ")
local plotted = ex.plot(out_dir .. "/pr.png", "png size 900,600", plot)
lines[#lines + 1] = ""
lines[#lines + 1] = plotted and "![precision and recall over score thresholds](pr.png)" or "(gnuplot not available: no pr.png)"
local report = table.concat(lines, "\n")
local ok, err = gm.write_atomic(out_dir .. "/extraction.md", { report, "\n" })
if not ok then error(err, 0) end
-- the held-out passages, one a line, for `graphmert extract --input` on the same text
local texts = {}
for i, p in ipairs(passages) do texts[i] = p.text:gsub("[\r\n]", " ") end
ok, err = gm.write_atomic(out_dir .. "/passages.txt", { table.concat(texts, "\n"), "\n" })
if not ok then error(err, 0) end
print(report)
print(string.format("(written to %s: extraction.md, pr.csv%s, and passages.txt, the held-out passages one a line)", out_dir,
  plotted and ", pr.png" or ""))
