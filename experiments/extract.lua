-- extract.lua — new triples from text with a trained checkpoint, scored against WordNet.
--   graphmert experiments/extract.lua --out out/wordnet_small [--config ...] --relation hypernym
--                                     [--top 5] [--text "..." | --input file.txt]
-- For each WordNet lemma found in the text (the heads), the model ranks tails for the relation;
-- the predicted triples are printed and scored: "held" = WordNet has the triple, "valid" = the
-- tail is a WordNet lemma.
local gm = require "graphmert"
local ex = gm.experiment

local args = ex.args.parse(arg, {
  script = "extract.lua", about = "New triples from text with a trained checkpoint, scored against WordNet.",
  { "out", "out/wordnet_small", "the training run's output folder (checkpoint and tokenizer)" },
  { "config", "experiments/configs/wordnet_small.lua", "the config it was trained with" },
  { "relation", "hypernym", "the relation to ask for" },
  { "top", 5, "tails per head", type = "integer" },
  { "text", nil, "a passage" },
  { "input", nil, "a file of passages, one per line" },
})
local cfg = ex.config.load(args.config)
local texts = {}
if args.text then texts[1] = args.text end
if args.input then for line in io.lines(args.input) do if line:match("%S") then texts[#texts + 1] = line end end end
if #texts == 0 then error("extract.lua: give --text or --input (see --help)", 0) end

gm.manual_seed(cfg.seed)
local d = ex.prepare(cfg, gm.data.tokenizer.load(args.out .. "/tokenizer.txt"))
local rel = d.relations[args.relation]
if not rel then error("extract.lua: unknown relation " .. args.relation .. " (known: " .. table.concat(d.relation_names, ", ") .. ")", 0) end
local model = ex.model(d, cfg)
gm.checkpoint.load(args.out .. "/checkpoint.safetensors", { model = model })
local wordnet = gm.data.wordnet.load(cfg.wordnet)
local extract = gm.eval.extract
local lemmas = extract.index(wordnet)
local triples = {}
local opts = { layout = d.layout, top = args.top }
for _, text in ipairs(texts) do
  for _, head in ipairs(extract.heads(text, lemmas)) do
    for _, tail in ipairs(extract.predict(model, d.tok, text, head, rel, opts)) do
      triples[#triples + 1] = { head = head, relation = args.relation, tail = tail }
      print(string.format("(%s, %s, %s)", head, args.relation, tail))
    end
  end
end
local s = extract.score(triples, wordnet, lemmas)
print(string.format("%d triples: %.1f%% held by WordNet, %.1f%% with a valid WordNet tail", s.n, 100 * s.held, 100 * s.valid))
