-- experiments/extract.lua end to end: a tiny training run, then a corpus in and kg.jsonl/kg.tsv
-- out; an interrupted run; bad input.
local gm = require "graphmert"
local cjson = require "cjson"

local BIN = "./build/bin/graphmert "

local files = require "spec.files"
local run, write = files.run, files.write

local lines = files.lines

describe("experiments/extract.lua", function()
  local dir = files.tmpname()
  local config = dir .. ".config.lua"
  write(config, [[return { seed = 3, data = { source = "wordnet", pos = { "verb" }, limit = 300 }, heldout = 0.1, vocab_size = 800,
    tail_end = true, max_span = 3,
    model = { roots = 16, leaves = 2, hidden = 16, layers = 1, heads = 2, ffn = 32, head = "single", sbo = false },
    steps = 3, batch = 4, lr = 1e-3, warmup = 1, baseline = false }]])
  local _, code = run(BIN .. "experiments/train.lua --config " .. config .. " --out " .. dir)
  assert(code == 0, "training the checkpoint failed")
  local passages = dir .. "/passages.txt"
  local text = "to breathe is to draw air into the lungs and to exhale it\n" ..
    "they run and walk and talk while they eat\n\n" .. "sleep after you eat\n"
  write(passages, text)
  local extract = BIN .. "experiments/extract.lua --checkpoint " .. dir .. " --input "

  it("writes kg.jsonl and kg.tsv that agree, with multi-token tails allowed", function()
    local out, code = run(extract .. passages .. " --out " .. dir .. "/kg.jsonl --top 2 --decoding open")
    assert.equal(0, code, out)
    assert.matches("3 passages, %d+ triples", out)
    local jsonl, tsv = lines(dir .. "/kg.jsonl"), lines(dir .. "/kg.tsv")
    assert.is_true(#jsonl > 0)
    assert.equal(#jsonl + 1, #tsv)
    assert.equal("head\trelation\ttail\tscore\tcount\tdecoding\thead_id\ttail_id\tseed", tsv[1])
    local per_pair, before = {}, nil
    for i, line in ipairs(jsonl) do
      local t = cjson.decode(line)
      -- best first: by score, then count (then first seen)
      assert.is_true(not before or before.score > t.score or (before.score == t.score and before.count >= t.count), line)
      before = t
      assert.is_true(t.score <= 0 and t.count >= 1 and #t.sources == t.count)
      -- a known tail of a type the schema forbids is flagged, not dropped
      assert.is_true(t.decoding == "open" or (t.decoding == gm.kg.OUTSIDE_SCHEMA and t.tail_id ~= nil), t.decoding)
      assert.is_truthy(t.tail:match("%a"))
      local cells = {}
      for cell in (tsv[i + 1] .. "\t"):gmatch("([^\t]*)\t") do cells[#cells + 1] = cell end
      assert.same({ t.head, t.relation, t.tail, t.head_id, t.tail_id or "", tostring(t.seed) },
        { cells[1], cells[2], cells[3], cells[7], cells[8], cells[9] })
      assert.matches("^%d+[nvar]$", t.head_id) -- a synset key: the head is a seed-graph entity
      local key = t.head .. "/" .. t.relation
      per_pair[key] = (per_pair[key] or 0) + 1
      assert.is_true(per_pair[key] <= 2)
    end
  end)

  it("constrained decoding, the default, gives only seed-graph entity names", function()
    local out, code = run(extract .. passages .. " --out " .. dir .. "/kgc.jsonl --relations entailment")
    assert.equal(0, code, out)
    local graph = gm.data.seed_graph.new(gm.data.wordnet.dataset { pos = { "verb" }, limit = 300 })
    for _, line in ipairs(lines(dir .. "/kgc.jsonl")) do
      local t = cjson.decode(line)
      assert.equal("entailment", t.relation)
      assert.equal("constrained", t.decoding)
      assert.is_truthy(graph:candidates(gm.data.linker.normalize(t.tail)), t.tail)
      assert.equal(graph.name[t.tail_id], t.tail) -- named by the entity's preferred name, with its id
      assert.is_boolean(t.seed)
    end
  end)

  -- a corpus of n numbered passages, the three test passages over and over
  local function corpus(path, n)
    local base, lines = { "to breathe is to draw air into the lungs and to exhale it", "they run and walk and talk while they eat",
      "sleep after you eat" }, {}
    for i = 1, n do lines[i] = base[(i - 1) % 3 + 1] .. " " .. i end
    write(path, table.concat(lines, "\n") .. "\n")
  end

  it("lets one run at a time write an output, finds a stopped run of another process count, and stops at a journal "
    .. "it cannot write", function()
    corpus(dir .. "/mid.txt", 600)
    local cmd = extract .. dir .. "/mid.txt --top 2 --no-page --out "
    -- a lock is held by one open file at a time, and goes with its release
    local lock = assert(gm.lock_file(dir .. "/busy.jsonl.journal"))
    assert.is_false(gm.lock_file(dir .. "/busy.jsonl.journal"))
    local out, code = run(cmd .. dir .. "/busy.jsonl --resume") -- (another process still writing it)
    assert.equal(2, code, out)
    assert.matches("busy.jsonl.journal is in use by another graphmert extract, still running: let it end", out)
    assert.equal(0, gm.stat(dir .. "/busy.jsonl.journal").size)
    lock:release()
    lock:release() -- (once)
    assert.truthy(gm.lock_file(dir .. "/busy.jsonl.journal")) -- (collected at once: released)
    local held, err = gm.lock_file(dir)
    assert.is_nil(held)
    assert.matches("Is a directory", err)
    -- a stopped run of two processes is not started over by one
    write(dir .. "/ranks.jsonl.0.journal", '{"journal":4,"processes":2}\n')
    out, code = run(cmd .. dir .. "/ranks.jsonl --resume")
    assert.equal(2, code, out)
    assert.matches("ranks%.jsonl%.0%.journal is the journal of a stopped run of 2 processes, this one has 1: continue it with " ..
      "as many %(mpirun %-np 2 graphmert extract %.%.%. %-%-resume%)", out)
    assert.is_nil(gm.stat(dir .. "/ranks.jsonl.journal")) -- (refused before any file is made)
    -- a file-size limit (a full disk) stops the run at the first journal line it cannot write, in
    -- one line; the journal keeps whole chunks, and --resume gives the uninterrupted output
    out, code = run(cmd .. dir .. "/whole_mid.jsonl")
    assert.equal(0, code, out)
    out, code = run("(trap '' XFSZ; ulimit -f 100; " .. cmd .. dir .. "/full.jsonl)")
    assert.equal(2, code, out)
    assert.matches("full.jsonl.journal: .*: the run stops; the journal keeps the passages before, and %-%-resume continues", out)
    assert.is_nil(out:find("traceback"), out)
    assert.is_nil(gm.stat(dir .. "/full.jsonl"))
    out, code = run(cmd .. dir .. "/full.jsonl --resume")
    assert.equal(0, code, out)
    assert.matches("continued .*full.jsonl.journal: %d+ passages were done before", out)
    assert.equal(files.read(dir .. "/whole_mid.jsonl"), files.read(dir .. "/full.jsonl"))
    assert.equal(files.read(dir .. "/whole_mid.tsv"), files.read(dir .. "/full.tsv"))
  end)

  it("continues a run killed midway with --resume to the uninterrupted output, and refuses another run's journal", function()
    corpus(dir .. "/long.txt", 2000)
    local cmd = extract .. dir .. "/long.txt --top 2 --out "
    local out, code = run(cmd .. dir .. "/whole.jsonl")
    assert.equal(0, code, out)
    assert.is_nil(io.open(dir .. "/whole.jsonl.journal"), "the journal outlived a complete run")
    -- kill -9 once the journal holds two chunks
    local journal = dir .. "/killed.jsonl.journal"
    run("(" .. cmd .. dir .. "/killed.jsonl > /dev/null 2>&1 & pid=$!; while kill -0 $pid 2> /dev/null && " ..
      "[ $(cat " .. journal .. " 2> /dev/null | wc -l) -lt 3 ]; do sleep 0.02; done; kill -9 $pid; wait $pid)")
    assert.is_nil(io.open(dir .. "/killed.jsonl"), "the run ended before it was killed")
    local f = assert(io.open(journal, "a"))
    f:write('{"chunk":3,"passages":[{"id":65,"tri') -- a line torn by a kill is never read
    f:close()
    out, code = run(cmd .. dir .. "/killed.jsonl")
    assert.equal(2, code, out)
    assert.matches("killed.jsonl.journal holds a stopped run's passages: %-%-resume continues it", out)
    out, code = run(cmd .. dir .. "/killed.jsonl --resume --decoding open")
    assert.equal(2, code, out)
    assert.matches("killed.jsonl.journal is the journal of another run %(decoding constrained, here open%): run with its "
      .. "settings, or remove it to start over", out)
    out, code = run(cmd .. dir .. "/killed.jsonl --resume --unpacked") -- named by the option
    assert.equal(2, code, out)
    assert.matches("journal of another run %(unpacked false, here true%)", out)
    if gm.config().bf16_available then -- bf16 products give other scores (float32 without avx512_bf16: the same run)
      out, code = run(cmd .. dir .. "/killed.jsonl --resume --precision medium")
      assert.equal(2, code, out)
      assert.matches("journal of another run %(precision [^,]*, here medium%)", out)
    end
    -- a corpus rewritten under the same name is another input (its lines are other passages)
    os.execute("cp -p " .. dir .. "/long.txt " .. dir .. "/long.bak && echo 'one more passage' >> " .. dir .. "/long.txt")
    out, code = run(cmd .. dir .. "/killed.jsonl --resume")
    assert.equal(2, code, out)
    assert.matches("is the journal of another run %(input_file %d+ bytes, digest %x+, here %d+ bytes, digest %x+%)", out)
    -- the same bytes again, only newer (as a checkout or an editor's save leaves them): the same input
    os.execute("cp " .. dir .. "/long.bak " .. dir .. "/long.txt && touch -d '+1 minute' " .. dir .. "/long.txt")
    write(dir .. "/garbage.jsonl.journal", "not a journal\n")
    out, code = run(cmd .. dir .. "/garbage.jsonl --resume")
    assert.equal(2, code, out)
    assert.matches("garbage.jsonl.journal is not a journal of graphmert extract %(damaged%?%): remove it to start over", out)
    local header = io.open(journal):read("l") -- a journal of an earlier version: its lines mean other things
    write(dir .. "/old.jsonl.journal", header:gsub('"journal":%d+', '"journal":1') .. "\n")
    out, code = run(cmd .. dir .. "/old.jsonl --resume")
    assert.equal(2, code, out)
    assert.matches("old.jsonl.journal was written by an earlier graphmert, whose journals this one does not continue", out)
    -- the journal keeps every triple, so another --min-score continues it (one that drops none here)
    out, code = run(cmd .. dir .. "/killed.jsonl --resume --min-score -1000")
    assert.equal(0, code, out)
    assert.matches("continued .*killed.jsonl.journal: %d+ passages were done before", out)
    assert.equal(files.read(dir .. "/whole.jsonl"), files.read(dir .. "/killed.jsonl"))
    assert.equal(files.read(dir .. "/whole.tsv"), files.read(dir .. "/killed.tsv"))
    assert.is_nil(io.open(journal), "the journal outlived the resumed run")
    out, code = run(cmd .. dir .. "/killed.jsonl --resume") -- nothing left to continue, and a finished graph is kept
    assert.equal(2, code, out)
    assert.matches("killed%.jsonl is complete %(its run ended: %-%-resume has nothing to continue%); `graphmert page %-%-kg " ..
      ".*killed%.jsonl %-%-input .*long%.txt %-%-checkpoint .*` makes its page, %-%-overwrite extracts again", out)
    out, code = run(cmd .. dir .. "/killed.jsonl") -- a finished graph is kept
    assert.equal(2, code, out)
    assert.matches("killed%.jsonl exists: %-%-overwrite replaces it and .*killed%.tsv %(and the page%), or give another %-%-out", out)
    out, code = run(cmd .. dir .. "/killed.jsonl --resume --overwrite") -- extracted again, and said
    assert.equal(0, code, out)
    assert.matches("%-%-resume: no journal .*killed%.jsonl%.journal to continue: extracting from the first passage", out)
    assert.equal(files.read(dir .. "/whole.jsonl"), files.read(dir .. "/killed.jsonl"))
  end)

  it("reads standard input with --input -, and continues a stopped run of it only from the same text piped again", function()
    corpus(dir .. "/piped.txt", 2000)
    local cmd = extract .. "- --top 2 --out "
    local out, code = run("cat " .. dir .. "/piped.txt | " .. cmd .. dir .. "/piped.jsonl")
    assert.equal(0, code, out)
    assert.matches("reading standard input as plain text", out)
    out, code = run(extract .. dir .. "/piped.txt --top 2 --no-page --out " .. dir .. "/from_file.jsonl")
    assert.equal(0, code, out)
    assert.equal(files.read(dir .. "/from_file.jsonl"), files.read(dir .. "/piped.jsonl"))
    -- kill -9 once the journal holds two chunks
    local killed = dir .. "/piped_killed.jsonl"
    run("(cat " .. dir .. "/piped.txt | " .. cmd .. killed .. " > /dev/null 2>&1 & pid=$!; while kill -0 $pid 2> /dev/null && " ..
      "[ $(cat " .. killed .. ".journal 2> /dev/null | wc -l) -lt 3 ]; do sleep 0.02; done; kill -9 $pid; wait $pid)")
    assert.is_nil(io.open(killed), "the run ended before it was killed")
    out, code = run("head -100 " .. dir .. "/piped.txt | " .. cmd .. killed .. " --resume")
    assert.equal(2, code, out)
    assert.matches("is the journal of another run %(input_file %d+ bytes, digest %x+, here %d+ bytes, digest %x+%)", out)
    out, code = run("cat " .. dir .. "/piped.txt | " .. cmd .. killed .. " --resume")
    assert.equal(0, code, out)
    assert.matches("continued .*piped_killed.jsonl.journal: %d+ passages were done before", out)
    assert.equal(files.read(dir .. "/piped.jsonl"), files.read(killed))
    -- bad input is named as standard input, not by its temporary copy
    out, code = run("printf 'they eat\\ncaf\\351\\n' | " .. cmd .. dir .. "/bad_piped.jsonl")
    assert.equal(2, code, out)
    assert.matches("extract.lua: stdin:2: not UTF%-8 text", out)
  end)

  it("splits the passages over mpirun's ranks into one process's output", function()
    if not run(BIN .. "-e 'io.write(tostring(require(\"graphmert\").distributed.compiled()))'"):match("true")
      or not os.execute("command -v mpirun > /dev/null") then
      pending("no MPI in this build or no mpirun")
      return
    end
    corpus(dir .. "/mpi.txt", 300)
    -- the same threads per process: a thread count changes the rounding of the scores
    local out, code = run("OMP_NUM_THREADS=1 " .. extract .. dir .. "/mpi.txt --out " .. dir .. "/one.jsonl")
    assert.equal(0, code, out)
    out, code = run("OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " ..
      "OMPI_MCA_rmaps_base_oversubscribe=1 " .. (files.asan and "ASAN_OPTIONS=detect_leaks=0 " or "") .. "mpirun -np 2 " ..
      extract .. dir .. "/mpi.txt --out " .. dir .. "/two.jsonl")
    assert.equal(0, code, out)
    assert.matches("300 passages, %d+ triples", out)
    assert.equal(files.read(dir .. "/one.jsonl"), files.read(dir .. "/two.jsonl"))
    assert.is_nil(io.open(dir .. "/two.jsonl.0.journal"))
    assert.is_nil(io.open(dir .. "/two.jsonl.1.journal"))
    -- Ctrl-C to one rank ends the job (the other would wait for it at the end), and --resume
    -- under as many ranks gives one process's output
    corpus(dir .. "/mpi_long.txt", 3000)
    out, code = run("OMP_NUM_THREADS=1 " .. extract .. dir .. "/mpi_long.txt --no-page --out " .. dir .. "/one_long.jsonl")
    assert.equal(0, code, out)
    local mpirun = "OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 " ..
      (files.asan and "ASAN_OPTIONS=detect_leaks=0 " or "") .. "timeout 120 mpirun -np 2 " .. extract .. dir ..
      "/mpi_long.txt --no-page --out " .. dir .. "/int.jsonl"
    local journal = dir .. "/int.jsonl.1.journal"
    out, code = run("(" .. mpirun .. " > " .. dir .. "/int.log 2>&1 & job=$!; while kill -0 $job 2> /dev/null && " ..
      "[ $(cat " .. journal .. " 2> /dev/null | wc -l) -lt 3 ]; do sleep 0.02; done; " ..
      "for p in $(pgrep -f int.jsonl); do tr '\\0' '\\n' < /proc/$p/environ 2> /dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 " ..
      "&& kill -INT $p; done; wait $job; echo status $?)")
    local status = tonumber(out:match("status (%d+)"))
    assert.is_true(status ~= 0 and status ~= 124, out .. files.read(dir .. "/int.log")) -- (124: timeout's, a hang)
    assert.matches("rank 1 interrupted: the job stops; %-%-resume continues", files.read(dir .. "/int.log"))
    assert.is_nil(io.open(dir .. "/int.jsonl"), "the run ended before it was interrupted")
    out, code = run(mpirun .. " --resume")
    assert.equal(0, code, out)
    assert.equal(files.read(dir .. "/one_long.jsonl"), files.read(dir .. "/int.jsonl"))
  end)

  it("streams the corpus: its peak memory grows by far less than the corpus", function()
    -- every tenth line a passage with heads, the others 250 bytes of words naming no entity (read,
    -- linked and skipped quickly): a corpus held in memory would show in the peak RSS
    local filler = ("qzxv wpqk "):rep(25)
    local function peak(n)
      local lines = {}
      for i = 1, n do lines[i] = i % 10 == 0 and ("they run and walk and talk while they eat " .. i) or filler .. i end
      write(dir .. "/rss.txt", table.concat(lines, "\n") .. "\n")
      local script = dir .. "/rss.lua"
      write(script, string.format([[arg = { [0] = "experiments/extract.lua", "--checkpoint", %q, "--input", %q, "--out", %q, "--overwrite" }
dofile("experiments/extract.lua")
io.write("@@", io.open("/proc/self/status"):read("a"):match("VmHWM:%%s*(%%d+)"), "\n")]], dir, dir .. "/rss.txt", dir .. "/rss.jsonl"))
      local out, code = run(BIN .. script)
      assert.equal(0, code, out)
      return assert(tonumber(out:match("@@(%d+)")), out), #table.concat(lines, "\n") // 1024
    end
    local small = peak(2000)
    local large, corpus_kb = peak(40000)
    if not files.asan then -- (shadow memory has its own growth)
      assert.is_true(large - small < corpus_kb / 4,
        string.format("peak RSS %d kB at 2,000 lines, %d kB at 40,000 (a corpus of %d kB)", small, large, corpus_kb))
    end
  end)

  it("an interrupted run writes its triples beside a complete output, whole even after a second Ctrl-C", function()
    local many = {}
    for i = 1, 20000 do many[i] = "to breathe is to draw air into the lungs and to exhale it " .. i end
    write(dir .. "/many.txt", table.concat(many, "\n"))
    write(dir .. "/kgi.jsonl", "complete\n")
    write(dir .. "/kgi.tsv", "complete\n")
    -- one Ctrl-C, then (second case) another right after it
    for _, second in ipairs { "", "sleep 0.02; kill -INT $pid; " } do
      os.remove(dir .. "/kgi.partial.jsonl")
      os.remove(dir .. "/kgi.jsonl.journal") -- (what --resume would continue)
      -- Ctrl-C once the journal holds a chunk (a fixed wait lost the race on a loaded machine)
      local journal = dir .. "/kgi.jsonl.journal"
      local out, code = run("(" .. extract .. dir .. "/many.txt --overwrite --out " .. dir .. "/kgi.jsonl & pid=$!; " ..
        "while kill -0 $pid 2> /dev/null && [ $(cat " .. journal .. " 2> /dev/null | wc -l) -lt 2 ]; do sleep 0.05; done; " ..
        "kill -INT $pid; " .. second .. "wait $pid)")
      assert.is_true(code == 130 or code == 2 or code == 0, out) -- 2: the shell's report of SIGINT
      assert.equal("complete\n", files.read(dir .. "/kgi.jsonl"), "a complete output was replaced")
      assert.equal("complete\n", files.read(dir .. "/kgi.tsv"))
      local partial = lines(dir .. "/kgi.partial.jsonl")
      assert.is_true(#partial > 0, out)
      assert.matches("interrupted: %d+ passages.*; %-%-resume continues the run", out)
      assert.is_not_nil(io.open(dir .. "/kgi.jsonl.journal"), "no journal to resume from")
      for _, line in ipairs(partial) do assert.is_true(pcall(cjson.decode, line), line) end
      assert.equal(#partial + 1, #lines(dir .. "/kgi.partial.tsv"), "the pair disagrees")
    end
  end)

  it("removes an interrupted attempt's partial outputs once the run is whole", function()
    write(dir .. "/kgw.partial.jsonl", "old\n")
    write(dir .. "/kgw.partial.tsv", "old\n")
    local out, code = run(extract .. passages .. " --out " .. dir .. "/kgw.jsonl")
    assert.equal(0, code, out)
    assert.is_not_nil(io.open(dir .. "/kgw.jsonl"))
    assert.is_nil(io.open(dir .. "/kgw.partial.jsonl"))
    assert.is_nil(io.open(dir .. "/kgw.partial.tsv"))
    out, code = run(extract .. passages .. " --out " .. dir .. "/kg.txt")
    assert.equal(2, code, out)
    assert.matches("%-%-out names a kg%.jsonl file %(a %.tsv is written beside it%) or a kg%.sqlite store, got .*/kg%.txt", out)
  end)

  it("names the file and line of bad input, and refuses a missing or mismatched checkpoint", function()
    write(dir .. "/bad.jsonl", '{"text": "they eat"}\nnot json\n')
    write(dir .. "/latin1.txt", "they eat\ncaf\233\n")
    write(dir .. "/empty.txt", "\n  \n")
    local cases = {
      { extract .. dir .. "/bad.jsonl", "bad.jsonl:2: not a JSON object" },
      { extract .. dir .. "/latin1.txt", "latin1.txt:2: not UTF%-8 text" },
      { extract .. dir .. "/empty.txt", "empty.txt has no passages" },
      { extract .. passages .. " --relations hypernym,nonsense", "unknown relation nonsense" },
      { BIN .. "experiments/extract.lua --checkpoint " .. dir .. "/nowhere --input " .. passages, "nowhere: no such folder" },
      { BIN .. "experiments/extract.lua --checkpoint " .. dir .. "/seed_graph --input " .. passages,
        "is not a training run's folder: it has no run%.json" },
      { BIN .. "experiments/extract.lua --checkpoint " .. passages .. " --input " .. passages,
        "passages%.txt is a file, not a training run's folder" },
      { extract .. dir .. "/missing.txt", "missing.txt" },
      { extract .. dir, "is a directory, not a file of passages" },
      { "mkfifo " .. dir .. "/fifo && " .. extract .. dir .. "/fifo", "fifo is a fifo: extract reads its input twice" },
    }
    for _, c in ipairs(cases) do
      local out, code = run(c[1] .. " --out " .. dir .. "/x.jsonl")
      assert.equal(2, code, out)
      assert.matches(c[2], out)
    end
  end)

  it("never writes over its corpus or the run's files", function()
    write(dir .. "/self.jsonl", '{"text": "they eat"}\n')
    write(dir .. "/c.tsv", "they eat\n")
    for _, c in ipairs {
      { extract .. dir .. "/self.jsonl --out " .. dir .. "/self.jsonl", "the output .*/self%.jsonl would replace the input" },
      { extract .. dir .. "/c.tsv --format text --out " .. dir .. "/c.jsonl", "the output .*/c%.tsv would replace the input" },
      { extract .. dir .. "/c.tsv --format text --out " .. dir .. "/seed_graph/kg.jsonl", "would be inside .*/seed_graph, an input" },
      { extract .. dir .. "/c.tsv --format text --out " .. dir .. "/./../" .. dir:match("[^/]+$") .. "/c.jsonl", "would replace the input" },
    } do
      local out, code = run(c[1])
      assert.equal(2, code, out)
      assert.matches(c[2], out)
    end
    assert.equal('{"text": "they eat"}\n', files.read(dir .. "/self.jsonl"))
    assert.equal("they eat\n", files.read(dir .. "/c.tsv"))
  end)

  it("reads nothing outside the run folder unless told to, and checks what run.json declares", function()
    local other, canary = dir .. ".hostile", dir .. ".canary"
    os.execute("rm -rf " .. other .. " " .. canary .. " && cp -r " .. dir .. " " .. other .. " && mkdir " .. canary)
    local run_json = cjson.decode(files.read(dir .. "/run.json"))
    local function with_run(edit)
      local r = cjson.decode(cjson.encode(run_json))
      edit(r)
      write(other .. "/run.json", cjson.encode(r))
    end
    local cmd = BIN .. "experiments/extract.lua --checkpoint " .. other .. " --input " .. passages .. " --out " .. other .. "/x.jsonl --overwrite"
    -- its own seed graph is used; run.json's data (here a folder elsewhere) is never followed
    with_run(function(r) r.data = { dir = canary } end)
    local trace = dir .. ".trace"
    -- (LeakSanitizer cannot run under ptrace: leaks are not checked in this traced run)
    local out, code = run("ASAN_OPTIONS=detect_leaks=0 strace -f -qq -e trace=open,openat,stat,newfstatat -o " .. trace .. " " .. cmd)
    assert.equal(0, code, out)
    assert.is_nil(files.read(trace):find(canary, 1, true), "the data run.json names was looked at")
    -- without seed_graph/, the user names the dataset
    os.execute("rm -rf " .. other .. "/seed_graph")
    out, code = run(cmd)
    assert.equal(2, code, out)
    assert.matches("has no seed_graph/ %(train.lua writes it%); name the run's dataset with %-%-data DIR or %-%-config FILE", out)
    out, code = run(cmd .. " --config " .. config)
    assert.equal(0, code, out)
    -- a model far larger than the checkpoint is refused before it is built
    with_run(function(r) r.model.hidden, r.model.ffn, r.model.heads = 65536, 65536, 2 end)
    out, code = run(cmd .. " --config " .. config)
    assert.equal(2, code, out)
    assert.matches("run.json declares a model of more than %d+ parameters, which the %d+ bytes of .*checkpoint.safetensors cannot hold", out)
    with_run(function(r) r.model.dropout = "x" end)
    out, code = run(cmd .. " --config " .. config)
    assert.equal(2, code, out)
    assert.matches("run.json: GraphMERT: dropout must be a number in %[0, 1%), got x", out)
    -- a tokenizer linked from outside the folder is refused
    with_run(function() end)
    os.execute("mv " .. other .. "/tokenizer.txt " .. canary .. "/ && ln -s " .. canary .. "/tokenizer.txt " .. other .. "/tokenizer.txt")
    out, code = run(cmd .. " --config " .. config)
    assert.equal(2, code, out)
    assert.matches("tokenizer.txt links to a file outside", out)
    os.execute("rm -rf " .. other .. " " .. canary .. " " .. trace)
  end)

  it("checks the output folder before any work (making a missing one), and leaves no temporary file behind", function()
    local t0 = os.time()
    local out, code = run(extract .. passages .. " --out " .. passages .. "/no/such/folder/kg.jsonl")
    assert.equal(2, code, out)
    assert.matches("cannot write .*no/such/folder/kg.jsonl: .*passages%.txt is a file, not a folder", out)
    assert.is_nil(out:find("passages/s"), "passages were processed first")
    out, code = run(extract .. passages .. " --out " .. dir .. "/made/for/it/kg.jsonl")
    assert.equal(0, code, out)
    assert.is_not_nil(io.open(dir .. "/made/for/it/kg.tsv"))
    out, code = run(extract .. passages .. " --out " .. dir)
    assert.equal(2, code, out)
    assert.matches("is a directory; %-%-out names the output file", out)
    assert.is_true(os.time() - t0 < 30)
    -- a temporary file of a writer that was killed (its process gone) is removed by the next write
    local dead = files.run("sh -c 'echo $$'"):match("%d+")
    write(dir .. "/kgt.jsonl.tmp." .. dead, "half a file")
    out, code = run(extract .. passages .. " --out " .. dir .. "/kgt.jsonl")
    assert.equal(0, code, out)
    assert.is_nil(io.open(dir .. "/kgt.jsonl.tmp." .. dead), "the dead writer's temporary file is still there")
    assert.is_not_nil(io.open(dir .. "/kgt.tsv"))
  end)

  it("refuses a tokenizer that is not the checkpoint's", function()
    local other = dir .. ".other"
    os.execute("rm -rf " .. other .. " && cp -r " .. dir .. " " .. other)
    local tok = gm.data.tokenizer.train({ "a tiny other vocabulary" }, { vocab_size = 40 })
    tok:save(other .. "/tokenizer.txt")
    local out, code = run(BIN .. "experiments/extract.lua --checkpoint " .. other .. " --input " .. passages .. " --out " .. other .. "/x.jsonl --overwrite")
    assert.equal(2, code, out)
    assert.matches("not from one run", out)
    os.execute("rm -rf " .. other .. " " .. dir .. " " .. config)
  end)
end)

describe("experiments/extract_eval.lua", function()
  it("scores a model trained with mentions and absent relations against its baselines", function()
    local dir = files.tmpname()
    local config = dir .. ".config.lua"
    write(config, [[return { seed = 3, data = { source = "wordnet", pos = { "noun" }, limit = 400 }, heldout = 0.1, vocab_size = 800,
      tail_end = true, mentions = true, absent = 0.5, max_span = 3, copies = 2,
      model = { roots = 16, leaves = 2, hidden = 16, layers = 1, heads = 2, ffn = 32, head = "single", sbo = false },
      steps = 3, batch = 4, lr = 1e-3, warmup = 1, eval_triples = 20 }]])
    local out, code = run(BIN .. "experiments/train.lua --config " .. config .. " --out " .. dir)
    assert.equal(0, code, out)
    assert.is_true(require("graphmert").json.read(dir .. "/run.json").absent == 0.5)
    out, code = run(BIN .. "experiments/extract_eval.lua --checkpoint " .. dir .. " --config " .. config .. " --passages 6 --decoding constrained")
    assert.equal(0, code, out)
    local report = io.open(dir .. "/extraction/extraction.md"):read("a")
    for _, system in ipairs { "GraphMERT", "no decay, no H%-GAT", "most frequent tail" } do
      assert.matches("| " .. system .. " | %d+ | ", report)
    end
    -- every system's precision is a figure with its interval, or "-" when it asserted nothing (the
    -- main table, before the sections that follow it)
    for row in (report:match("^(.-)\n## ") or report):gmatch("\n(| [^\n]+ |)") do
      if not row:match("^| model") and not row:match("^|%-") then
        assert.is_truthy(row:match("| %d+ | %d%.%d+ %[") or row:match("| 0 | %- %(no triples%)"), row)
      end
    end
    assert.matches("GraphMERT − most frequent tail, precision: ", report)
    assert.matches("## Precision by each system's own ranking, and implied precision", report, 1, true)
    assert.matches("| GraphMERT | %d+ | [-%d]", report:match("## Precision by each system's own ranking.-\n\n(.*)"))
    assert.matches("## By relation, and by head", report, 1, true)
    -- the pipelines, fit on the validation half, with their calibration (or the reason there is none)
    for _, system in ipairs { "pipeline", "pipeline without model" } do assert.matches("\n| " .. system .. " | ", report, 1, true) end
    assert.matches("## Calibration of the pipelines' probabilities", report, 1, true)
    assert.matches("\n| pipeline | [%d,]+ %d+ | %d+ | %d%.%d+ |", report)
    assert.matches("own heads: precision at recall 0.20", report, 1, true)
    -- the recall kept at precision 0.70, with its interval, for every system (0 where none reaches it):
    -- the ranking table's last column
    assert.matches("| precision at recall 0.30 [95% CI] | recall at precision 0.70 [95% CI] |", report, 1, true)
    assert.matches("own heads: recall at precision 0.70", report, 1, true)
    assert.matches("\n| rules | %d+ | [^\n]* | [%d.-]+ [^|]*| %d%.%d+ %[%d%.%d+, %d%.%d+%] |\n", report)
    os.execute("rm -rf " .. dir .. " " .. config)
  end)
end)
