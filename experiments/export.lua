-- export.lua — a knowledge-graph store (kg.sqlite, written by `graphmert extract --out kg.sqlite`)
-- as RDF for triple stores (N-Triples, Turtle: graphmert.kg.rdf says how triples, scores and
-- evidence are written) or as kg.jsonl / kg.tsv (the top triples per head and relation, the
-- fields extract writes).
--   graphmert export --store kg.sqlite --out kg.ttl [--base http://example.org/kg/]
--   graphmert export --store kg.sqlite --out kg.jsonl [--top 5]
-- The format follows --out's extension (.nt, .ttl, .jsonl, .tsv) or --format; --out's folder is
-- made when missing.
local gm = require "graphmert"
local ex = gm.experiment

local args = ex.args.parse(arg, {
  script = "export.lua", about = "A knowledge-graph store as RDF (N-Triples, Turtle) or kg.jsonl / kg.tsv.",
  { "store", nil, "a kg.sqlite store written by extract" },
  { "out", nil, "the output file: .nt, .ttl, .jsonl or .tsv" },
  { "format", "auto", "ntriples, turtle, jsonl, tsv, or auto (from --out's extension)",
    choices = { "auto", "ntriples", "turtle", "jsonl", "tsv" } },
  { "base", "http://example.org/kg/", "the base IRI of entities, relations and statements (RDF)" },
  { "top", 5, "triples kept per (head, relation) (jsonl, tsv)", type = "integer", min = 1 },
})
local function fail(msg) ex.args.fail("export.lua", msg) end
if not args.store then fail("--store is required (see --help)") end
if not args.out then fail("--out is required (see --help)") end
if args.store:match("%.jsonl$") or args.store:match("%.tsv$") then
  fail(args.store .. " is extract's JSONL or TSV, not a store: export reads a kg.sqlite, which `graphmert extract --out "
    .. "kg.sqlite` writes (the RDF is made from the store)")
end
local by_extension = { nt = "ntriples", ttl = "turtle", jsonl = "jsonl", tsv = "tsv" }
local format = args.format ~= "auto" and args.format or by_extension[args.out:match("%.(%w+)$") or ""]
if not format then fail("cannot tell the format of " .. args.out .. " (.nt, .ttl, .jsonl, .tsv, or --format)") end
ex.args.apart("export.lua", { args.out }, { args.store })
local store = ex.args.try("export.lua", gm.kg.store.open, args.store, { read_only = true })
ex.args.writable("export.lua", args.out) -- (after the store is read: a missing store makes no folder)

local t0, n = gm.clock(), 0
if format == "ntriples" or format == "turtle" then
  n = ex.args.try("export.lua", gm.kg.rdf.export, store, args.out, { format = format, base = args.base })
else
  local lines = format == "tsv" and { gm.kg.TSV_HEADER } or {}
  for _, t in ipairs(store:kg(args.top)) do
    lines[#lines + 1] = format == "jsonl" and gm.kg.jsonl_line(t) or gm.kg.tsv_line(t)
    n = n + 1
  end
  local ok, err = gm.write_atomic(args.out, lines)
  if not ok then fail(err) end
end
store:close()
print(string.format("%d %s written to %s (%s), %.1f s", n, (format == "jsonl" or format == "tsv") and "triples" or "RDF triples",
  args.out, format, gm.clock() - t0))
