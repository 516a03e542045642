-- extraction_outputs.lua — the files `graphmert extract` writes, and the checks that keep them
-- from harm before any work starts. With --out kg.jsonl: kg.jsonl and kg.tsv beside it, put in
-- place as one (both old or both new); an interrupted run's kg.partial.jsonl and .partial.tsv
-- instead (never over a complete output); the merge's scratch file kg.jsonl.merge. With --out
-- kg.sqlite: the store (graphmert.kg.store). Either way the KG page unless --no-page, kg.html or
-- kg.sqlite.html (graphmert.kg.page.path), made after the graph, so that no failure of the page's
-- loses the graph.
--   extraction_outputs.prepare(opts, storing, rank) → outputs, once every output is checked
--     writable and apart from every input (opts: the command's options out, input, checkpoint,
--     data, no-page); outputs.out, .tsv, .page (false with --no-page), .merge, .partial, .partial_tsv
--   outputs:refuse_finished(opts, size)   a finished graph (maybe hours of work) is replaced only
--     with --overwrite, or by the run whose journal --resume continues (started over it); a
--     stopped run's journals of another process count are refused (graphmert.kg.journal)
--   outputs:write(merger, graph, whole) → triples, those with multi-word tails, and the two
--     files written: the merged entries (a graphmert.kg.merge merger's) as kg.jsonl and kg.tsv,
--     or as the partial outputs when the run is not whole
--   outputs:remove_partial()               an interrupted attempt's outputs, once the run is whole
--   outputs:write_page(graph, input, triples, passages, entities, _, lines)   the KG page (its
--     arguments after the input: gm.kg.read's values), or a line on stderr saying why not
-- Every problem is the extract command's usage error, naming the file.
local gm = require "graphmert"
local args = require "graphmert.experiment.args"
local journal = require "graphmert.kg.journal"

local M = {}

local SCRIPT = "extract.lua"
local function fail(msg) args.fail(SCRIPT, msg) end

local Outputs = {}
Outputs.__index = Outputs

function M.prepare(opts, storing, rank)
  local out, stem = opts.out, opts.out:gsub("%.[^./]*$", "")
  local o = setmetatable({ out = out, storing = storing, tsv = out:gsub("%.jsonl$", "") .. ".tsv",
    page = not opts["no-page"] and gm.kg.page.path(out), merge = out .. ".merge" }, Outputs)
  o.partial, o.partial_tsv = out:gsub("%.jsonl$", "") .. ".partial.jsonl", o.tsv:gsub("%.tsv$", "") .. ".partial.tsv"
  -- the outputs' folder must take files before any work is done
  args.writable(SCRIPT, out)
  if not storing then
    args.writable(SCRIPT, o.tsv)
    local merge_info = gm.stat(o.merge) -- the merge's scratch file (a leftover one is replaced)
    if merge_info and merge_info.type ~= "file" then
      fail(o.merge .. " is a " .. merge_info.type .. ", where extract keeps its merge: move it away")
    end
  end
  if o.page then
    args.writable(SCRIPT, o.page)
    local other = gm.kg.page.page_of_other(o.page, out)
    if other then fail(string.format("%s is the page of %s: give --no-page, or another --out name", o.page, other)) end
  end
  -- nothing written over the corpus, the run's files or the dataset's
  local run, data = opts.checkpoint, opts.data
  local outputs = { out, o.page, out .. ".journal", o.merge }
  if not storing then
    for _, more in ipairs { o.tsv, stem .. ".partial.jsonl", stem .. ".partial.tsv", out .. "." .. rank .. ".journal" } do
      outputs[#outputs + 1] = more
    end
  end
  local inputs = { opts.input }
  if run then
    for _, more in ipairs { run .. "/run.json", run .. "/checkpoint.safetensors", run .. "/tokenizer.txt",
      { folder = run .. "/seed_graph" } } do
      inputs[#inputs + 1] = more
    end
  end
  if opts.patterns then inputs[#inputs + 1] = opts.patterns end
  if data then
    inputs[#inputs + 1] = { folder = data .. "/corpus" }
    inputs[#inputs + 1] = data .. "/patterns.tsv"
    for _, part in ipairs { "corpus", "triples", "entities", "relations" } do
      inputs[#inputs + 1] = data .. "/" .. part .. ".jsonl"
      inputs[#inputs + 1] = data .. "/" .. part .. (part == "corpus" and ".txt" or ".tsv")
    end
  end
  args.apart(SCRIPT, outputs, inputs)
  return o
end

function Outputs:refuse_finished(opts, size)
  if self.storing then return end -- (a store continues the same run, and refuses another)
  journal.refuse_other_count(self.out, size)
  if opts.overwrite or (opts.resume and journal.stopped(self.out, 0, size)) then return end
  if opts.resume and gm.stat(self.out) then -- (a run stopped while it made the page, after the graph)
    fail(string.format("%s is complete (its run ended: --resume has nothing to continue); `graphmert page --kg %s --input %s " ..
      "--checkpoint %s` makes its page, --overwrite extracts again", self.out, self.out,
      opts.input == "-" and "FILE (the text piped in)" or opts.input, opts.checkpoint))
  end
  for _, path in ipairs { self.out, self.tsv } do
    if gm.stat(path) then
      fail(string.format("%s exists: --overwrite replaces it and %s%s, or give another --out", path,
        path == self.out and self.tsv or self.out, self.page and " (and the page)" or ""))
    end
  end
end

-- both files streamed from the merge as it ranks the graph, and put in place as one
function Outputs:write(merger, graph, whole)
  local out_path, out_tsv = self.out, self.tsv
  if not whole then out_path, out_tsv = self.partial, self.partial_tsv end
  local writer <close> = args.try(SCRIPT, gm.atomic_writer, { out_path, out_tsv })
  writer:write(2, gm.kg.TSV_HEADER)
  local n, multi = 0, 0
  local streamed, serr = pcall(function()
    for t in merger:each() do
      t.seed = graph:holds(t)
      writer:write(1, gm.kg.jsonl_line(t))
      writer:write(2, gm.kg.tsv_line(t))
      n = n + 1
      if t.tail:find(" ") then multi = multi + 1 end
    end
  end)
  if not streamed then fail(tostring(serr)) end
  local written, werr = writer:commit()
  if not written then fail(werr) end
  return n, multi, out_path, out_tsv
end

function Outputs:remove_partial()
  os.remove(self.partial)
  os.remove(self.partial_tsv)
end

-- (the passages cited are read from the input once more, when not from a store)
function Outputs:write_page(graph, input, triples, passages, entities, _, lines)
  local written, err = pcall(function()
    if not passages then passages, lines = gm.kg.page.cited(triples, input:passages()) end
    local ok, werr = gm.kg.page.write(self.page, gm.kg.page.data { triples = triples, graph = graph, passages = passages,
      lines = lines, stored = self.storing, entities = entities, title = self.out, kg = self.out, corpus = input.name })
    if not ok then error(werr, 0) end
  end)
  if written then
    print("the KG page: " .. self.page)
    return
  end
  if gm.errors.kind(err) == "interrupted" then error(err, 0) end
  io.stderr:write(string.format("extract.lua: the KG page %s was not written (%s); `graphmert page` makes it from %s\n", self.page,
    tostring(err), self.out))
end

return M
