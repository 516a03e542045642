-- cpu_config_spec.lua — gm.config(): the BLAS library and kernels in use and why, threads,
-- vector features, matrix-product precision; an explicit OPENBLAS_CORETYPE is respected in
-- both hosts and gives the same numbers as the kernels chosen without it.
local gm = require "graphmert"

local known_features = {}
for _, f in ipairs { "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq",
  "avx512cd", "avx512_bf16", "amx_bf16" } do known_features[f] = true end

local function has(list, x)
  for _, v in ipairs(list) do if v == x then return true end end
  return false
end

-- A child process prints its core, why that core, and a product of seeded random matrices.
local child_chunk = [[
local gm = require "graphmert"
gm.manual_seed(7)
local a, b = gm.randn(67, 129), gm.randn(129, 45)
local c = gm.config()
io.write(c.blas_core, "\n", c.blas_core_source, "\n", c.thread_wait, "\n")
for _, v in ipairs(a:matmul(b):reshape(-1):totable()) do io.write(string.format("%.9g\n", v)) end
]]

local hosts = { binary = "./build/bin/graphmert", lua = require("spec.files").lua_here }

local function run_child(host, env)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(child_chunk)
  f:close()
  local p = io.popen(env .. " " .. hosts[host] .. " " .. path .. " 2>&1")
  local lines = {}
  for line in p:lines() do lines[#lines + 1] = line end
  p:close()
  os.remove(path)
  local core, source, wait = lines[1], lines[2], lines[3]
  local values = {}
  for i = 4, #lines do values[#values + 1] = tonumber(lines[i]) end
  return core, source, values, table.concat(lines, "\n"), wait
end

describe("gm.config", function()
  it("reports the BLAS library, its kernels and why those kernels", function()
    local c = gm.config()
    assert.equals("OpenBLAS", c.blas)
    assert.truthy(c.blas_library:find("openblas", 1, true))
    assert.truthy(c.blas_config:find("OpenBLAS", 1, true))
    assert.is_string(c.blas_core)
    assert.truthy(c.blas_config:find(c.blas_core, 1, true), c.blas_config .. " / " .. c.blas_core)
    if os.getenv("OPENBLAS_CORETYPE") then
      assert.equals("OPENBLAS_CORETYPE from the environment", c.blas_core_source)
    else
      assert.is_not.equals("OPENBLAS_CORETYPE from the environment", c.blas_core_source)
    end
  end)

  it("reports threads, vector features and precision", function()
    local c = gm.config()
    assert.equals(gm.get_num_threads(), c.threads)
    for _, f in ipairs(c.cpu_features) do assert.truthy(known_features[f], f) end
    assert.equals(has(c.cpu_features, "avx512_bf16"), c.bf16_available)
    assert.equals(gm.get_float32_matmul_precision(), c.float32_matmul_precision)
  end)

  it("picks the AVX-512 kernels on an AVX-512 CPU when nobody chose", function()
    local c = gm.config()
    if os.getenv("OPENBLAS_CORETYPE") or not has(c.cpu_features, "avx512bw") then return end
    assert.equals("SkylakeX", c.blas_core)
    assert.equals("chosen by graphmert from the CPU's features", c.blas_core_source)
  end)

  it("starts in the precision GRAPHMERT_MATMUL_PRECISION names, and refuses a name it does not know", function()
    local function run(value)
      local p = io.popen("GRAPHMERT_MATMUL_PRECISION=" .. value ..
        " ./build/bin/graphmert -e 'io.write(require(\"graphmert\").get_float32_matmul_precision())' 2>&1")
      local out = p:read("a")
      p:close()
      return out
    end
    assert.equals("medium", run("medium"))
    assert.matches("GRAPHMERT_MATMUL_PRECISION must be highest, high or medium %(got 'fast'%)", run("fast"))
  end)

  it("respects an explicit OPENBLAS_CORETYPE in both hosts, with the same results", function()
    for host in pairs(hosts) do
      local core, source, forced, out = run_child(host, "OPENBLAS_CORETYPE=Haswell")
      assert.equals("Haswell", core, out)
      assert.equals("OPENBLAS_CORETYPE from the environment", source)
      local _, free_source, free = run_child(host, "env -u OPENBLAS_CORETYPE")
      assert.is_not.equals("OPENBLAS_CORETYPE from the environment", free_source)
      assert.equals(67 * 45, #forced)
      assert.tensor_near(free, forced, 1e-5, 1e-5)
    end
  end)

  it("makes the binary's threads wait with a short spin unless the environment says otherwise", function()
    local clean = "env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY"
    local _, _, _, out, wait = run_child("binary", clean)
    assert.equals("GOMP_SPINCOUNT=10000", wait, out)
    _, _, _, out, wait = run_child("binary", clean .. " GOMP_SPINCOUNT=500")
    assert.equals("GOMP_SPINCOUNT=500", wait, out)
    _, _, _, out, wait = run_child("binary", clean .. " OMP_WAIT_POLICY=passive")
    assert.equals("OMP_WAIT_POLICY=passive", wait, out)
    -- a stock lua5.4 loads libgomp before any graphmert code runs: it keeps libgomp's default
    _, _, _, out, wait = run_child("lua", clean)
    assert.equals("libgomp default (spin 300000 rounds, then sleep)", wait, out)
  end)
end)
