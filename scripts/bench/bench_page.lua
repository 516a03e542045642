-- bench_page.lua — the KG page with 10⁴ and 10⁵ triples in Debian's headless Chromium: the file's
-- size, the time to build it, and what a user waits for, timed in the page (performance.now, real
-- time): opening it (reading the data, indexing, the first view), a search, an entity's view (the
-- entity with the most triples), a relation filter, the next 100 rows. The graphs are synthetic
-- (hub-heavy heads, 12 relations, each triple from 1–3 of N/2 passages of about 200 characters,
-- every entity with two aliases). Prints a Markdown table with the CPU and the date.
--   graphmert scripts/bench/bench_page.lua [sizes=10000,100000] [repeats=3]   (make bench-page)
-- Nothing else may run on the machine meanwhile.
package.path = "./?.lua;" .. package.path
local gm = require "graphmert"
local bench = require "scripts.bench.bench_common"
local browser = require "spec.browser"

local sizes = {}
for n in (arg[1] or "10000,100000"):gmatch("%d+") do sizes[#sizes + 1] = math.tointeger(tonumber(n)) end
local repeats = math.tointeger(tonumber(arg[2] or 3))
for _, n in ipairs(sizes) do
  if n < 5000 then
    io.stderr:write("bench_page: sizes of 5000 triples or more (a relation's list must have 200 rows to page)\n")
    os.exit(2)
  end
end
if not browser.path then
  io.stderr:write("bench_page: chromium is not installed (scripts/setup.sh installs it)\n")
  os.exit(2)
end

local WORDS = { "protein", "binding", "membrane", "kinase", "signal", "pathway", "receptor", "transport", "cell",
  "regulation", "activity", "complex", "nuclear", "process", "response", "metabolic" }

local function synthetic(n)
  math.randomseed(7) -- the graph's shape matters here, not its values
  local n_entities, n_passages = n // 4, n // 2
  local entities, names = {}, {}
  for i = 1, n_entities do
    local name = WORDS[i % #WORDS + 1] .. " " .. WORDS[(i // #WORDS) % #WORDS + 1] .. " " .. i
    names[i] = name
    entities["E:" .. i] = { name = name, type = "thing", seed = true, aliases = { "alias " .. i, "synonym of " .. name } }
  end
  local passages = {}
  for p = 1, n_passages do
    local words = {}
    for w = 1, 28 do words[w] = WORDS[math.random(#WORDS)] end
    passages[tostring(p)] = names[math.random(n_entities)] .. " " .. table.concat(words, " ") .. "."
  end
  local triples, seen = {}, {}
  while #triples < n do
    local h = math.min(n_entities, math.floor(n_entities ^ math.random()) ) -- hubs: small ids, often
    local r, t = "relation_" .. math.random(12), math.random(n_entities)
    local key = h .. r .. t
    if not seen[key] then
      seen[key] = true
      local sources = {}
      for s = 1, math.random(3) do sources[s] = math.random(n_passages) end
      triples[#triples + 1] = { head = names[h], head_id = "E:" .. h, relation = r, tail = names[t], tail_id = "E:" .. t,
        score = -6 * math.random(), count = #sources, sources = sources, decoding = "open", seed = math.random() < 0.2 }
    end
  end
  return triples, passages, entities
end

local DRIVER = [[
  const t = () => performance.now();
  const timed = fn => { const a = t(); fn(); return t() - a; };
  const out = { ready: +document.documentElement.dataset.readyMs };
  const box = document.getElementById("search");
  out.search = timed(() => { box.value = "kinase"; box.dispatchEvent(new Event("input")); });
  out.suggestions = document.querySelectorAll("#suggestions li").length;
  out.filter = timed(() => {
    document.querySelectorAll("#relation-menu input").forEach((b, k) => { b.checked = k === 0; });
    document.getElementById("relation-menu").dispatchEvent(new Event("change"));
  });
  out.more = timed(() => document.querySelector("#all-triples .more button").click());
  out.rows = document.querySelectorAll("#all-triples tr.triple").length;
  out.entity = timed(() => {
    history.replaceState(null, "", "#e=E%3A1");
    window.dispatchEvent(new HashChangeEvent("hashchange"));
  });
  out.nodes = document.querySelectorAll("#neighbourhood g.node").length;
  return out;
]]

print(string.format("# KG page benchmark\n\n%s, %s; Chromium `%s`; median of %d runs (times in ms, in the page)\n",
  bench.cpu(), os.date("!%Y-%m-%d %H:%M UTC"), io.popen(browser.path .. " --version 2>/dev/null"):read("l") or "?", repeats))
print("| triples | page MB | build s | open | search | entity view | relation filter | 100 more rows |")
print("|---------|---------|---------|------|--------|-------------|-----------------|---------------|")
for _, n in ipairs(sizes) do
  local triples, passages, entities = synthetic(n)
  local path = string.format("build/bench/kg_page_%d.html", n)
  os.execute("mkdir -p build/bench")
  local t0 = gm.clock()
  assert(gm.kg.page.write(path, gm.kg.page.data { triples = triples, passages = passages, entities = entities, title = "bench" }))
  local build = gm.clock() - t0
  local size = gm.stat(path).size / 1e6
  local runs = {}
  for k = 1, repeats do runs[k] = browser.run(path, DRIVER, "", { real_time = true }) end
  local function median(key)
    local xs = {}
    for k, r in ipairs(runs) do xs[k] = r[key] end
    return bench.median(xs)
  end
  assert(runs[1].suggestions > 0 and runs[1].rows == 200 and runs[1].nodes > 1, "the page did not answer the driver")
  print(string.format("| %d | %.1f | %.2f | %.0f | %.1f | %.1f | %.1f | %.1f |", n, size, build, median("ready"), median("search"),
    median("entity"), median("filter"), median("more")))
end
