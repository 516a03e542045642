-- bench_extract.lua — extraction at corpus scale, timed as a user runs it (whole `graphmert extract`
-- commands, each in a process of its own): passages per second on the held-out passages of a run
-- (a passage's heads asked together, and one query per sequence as before, --unpacked), on 1 and 2
-- threads and on 2 MPI ranks × 1 thread, in float32 and with --precision medium (bf16 products);
-- the start-up (a one-line corpus, end to end); the peak RSS on the held-out passages and on a
-- corpus 25 times larger (the training glosses), both with --relations hypernym so that the long
-- one stays short. Prints a Markdown table with the
-- CPU, the date and every command.
--   graphmert scripts/bench/bench_extract.lua [checkpoint=out/wordnet_long_extract]
--       [config=experiments/configs/wordnet_long_extract.lua] [passages=2000] [unpacked=500]
--       [decoding=open] [large=50000] [rows=startup,two,one,mpi,medium,unpacked,rss]  (make bench-extract)
-- The run must exist (train it with the config first). Its held-out passages and the large
-- corpus are written once under build/bench/ (building them loads the whole dataset: minutes).
-- Nothing else may run on the machine meanwhile.
local gm = require "graphmert"
local ex = gm.experiment
local bench = require "scripts.bench.bench_common"

local checkpoint = arg[1] or "out/wordnet_long_extract"
local config = arg[2] or "experiments/configs/wordnet_long_extract.lua"
local n = math.tointeger(tonumber(arg[3] or 2000))
local n_unpacked = math.tointeger(tonumber(arg[4] or 500))
local decoding = arg[5] or "open"
local n_large = math.tointeger(tonumber(arg[6] or 50000))
local wanted = {}
for key in (arg[7] or "startup,two,one,mpi,medium,unpacked,rss"):gmatch("[^,]+") do wanted[key] = true end
local BIN = "./build/bin/graphmert"
local dir = "build/bench"
os.execute("mkdir -p " .. dir)
if not gm.stat(checkpoint .. "/run.json") then
  io.stderr:write(checkpoint .. " is not a training run: train it first (see " .. config .. ")\n")
  os.exit(2)
end

-- the corpora: the run's held-out passages (the first n_large training glosses for the large one)
local held_path, large_path = string.format("%s/extract_heldout_%d.txt", dir, n), string.format("%s/extract_glosses_%d.txt", dir, n_large)
if not gm.stat(held_path) or not gm.stat(large_path) then
  io.stderr:write("writing the corpora (loads the dataset once)\n")
  local run = ex.read_run(checkpoint)
  local cfg = ex.config.load(config)
  gm.manual_seed(cfg.seed)
  local d = ex.prepare(cfg, ex.load_tokenizer(checkpoint, run))
  local function write(path, records, count)
    local lines = {}
    for i = 1, math.min(count, #records) do lines[i] = records[i].text:gsub("\n", " ") end
    if #lines < count then io.stderr:write(string.format("%s: only %d passages\n", path, #lines)) end
    assert(gm.write_atomic(path, { table.concat(lines, "\n"), "\n" }))
  end
  write(held_path, d.heldout, n)
  write(large_path, d.train, n_large)
end
local function lines_of(path)
  local c = 0
  for _ in io.lines(path) do c = c + 1 end
  return c
end
local first_path = dir .. "/extract_first.txt"
local head = io.lines(held_path)()
assert(gm.write_atomic(first_path, { head, "\n" }))
local unpacked_path = string.format("%s/extract_heldout_first_%d.txt", dir, n_unpacked)
do
  local out = {}
  for line in io.lines(held_path) do
    if #out == n_unpacked then break end
    out[#out + 1] = line
  end
  assert(gm.write_atomic(unpacked_path, { table.concat(out, "\n"), "\n" }))
end

-- one command under /usr/bin/time → wall seconds, peak RSS (MB), the extraction's own seconds
-- (from its last line: the time after start-up) and the command
local function timed(env, input, extra)
  local out = dir .. "/extract_bench.jsonl"
  -- (--no-page: the KG page has its own benchmark, make bench-page)
  local cmd = string.format("%s%s extract --checkpoint %s --input %s --out %s --decoding %s --no-page%s", env, BIN, checkpoint,
    input, out, decoding, extra or "")
  local p = assert(io.popen(string.format("/usr/bin/time -f '@@%%e %%M' sh -c '%s' 2>&1", cmd)))
  local text = p:read("a")
  p:close()
  local wall, kb = text:match("@@([%d.]+) (%d+)")
  local own = text:match("triples %(.-%) in .- and .-, ([%d.]+) s")
  if not wall or not own then error("no result from: " .. cmd .. "\n" .. text, 0) end
  os.remove(out)
  os.remove((out:gsub("%.jsonl$", ".tsv")))
  return { wall = tonumber(wall), mb = tonumber(kb) / 1024, own = tonumber(own), cmd = cmd }
end

local mpirun = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1 mpirun -np 2 "
local rows = {}
local function row(what, passages, r)
  rows[#rows + 1] = string.format("| %s | %d | %.1f | %.1f | %.2f | %.0f | `%s` |", what, passages, r.wall, r.own, passages / r.own,
    r.mb, r.cmd)
  io.stderr:write(rows[#rows], "\n")
end

local held = lines_of(held_path)
if wanted.startup then row("start-up: a one-line corpus, end to end", 1, timed("OMP_NUM_THREADS=2 ", first_path)) end
if wanted.two then row("heads together, 2 threads", held, timed("OMP_NUM_THREADS=2 ", held_path)) end
if wanted.one then row("heads together, 1 thread", held, timed("OMP_NUM_THREADS=1 ", held_path)) end
if wanted.mpi and gm.distributed.compiled() and os.execute("command -v mpirun > /dev/null") then
  row("heads together, 2 MPI ranks × 1 thread", held, timed(mpirun, held_path))
end
if wanted.medium then -- bf16 products (--precision medium): on a CPU without avx512_bf16 the same as float32
  local bf16 = gm.config().bf16_available and "" or " (no avx512_bf16 here: float32)"
  row("heads together, --precision medium, 2 threads" .. bf16, held, timed("OMP_NUM_THREADS=2 ", held_path, " --precision medium"))
  if gm.distributed.compiled() and os.execute("command -v mpirun > /dev/null") then
    row("heads together, --precision medium, 2 MPI ranks × 1 thread" .. bf16, held, timed(mpirun, held_path, " --precision medium"))
  end
end
if wanted.unpacked then
  row("one query per sequence (--unpacked), 2 threads", lines_of(unpacked_path), timed("OMP_NUM_THREADS=2 ", unpacked_path, " --unpacked"))
end
if wanted.rss then
  row("hypernym only, 2 threads (peak RSS)", held, timed("OMP_NUM_THREADS=2 ", held_path, " --relations hypernym"))
  row("hypernym only, 2 threads, the large corpus (peak RSS)", lines_of(large_path), timed("OMP_NUM_THREADS=2 ", large_path,
    " --relations hypernym"))
end

print(string.format("# Extraction benchmark (%s decoding)\n\n%s, %s; `%s`\n", decoding, bench.cpu(), os.date("!%Y-%m-%d %H:%M UTC"),
  table.concat(arg, " ", 1, #arg > 0 and #arg or 0)))
print("| run | passages | wall s | extraction s | passages/s | peak RSS MB | command |")
print("|---|---|---|---|---|---|---|")
for _, r in ipairs(rows) do print(r) end
