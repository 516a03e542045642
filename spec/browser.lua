-- browser.lua — drives a page in Debian's headless Chromium for the KG page specs. A driver
-- script (JavaScript, an async function body) is put after the page's own script in a copy of
-- the page; it acts as a user would (sets inputs, dispatches events, clicks buttons) and returns
-- a JSON value, which Chromium's --dump-dom hands back in a <pre id="test-result">.
--   browser.path → the chromium binary, or nil when it is not installed
--   browser.run(page, driver, fragment) → the driver's result (a Lua value), or an error
-- Virtual time (--virtual-time-budget) lets the driver's waits (await sleep(ms)) pass at once.
-- Each run has its own profile folder, so no decisions kept by one run reach another.
local cjson = require "cjson"
local files = require "spec.files"

local M = {}

for _, candidate in ipairs { "/usr/bin/chromium", "/usr/bin/chromium-browser" } do
  local f = io.open(candidate)
  if f then
    f:close()
    M.path = candidate
    break
  end
end

local HARNESS = [[
<script>
(async () => {
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const out = document.createElement("pre");
  out.id = "test-result";
  try {
    const result = await (async () => { %s })();
    out.textContent = JSON.stringify({ ok: true, result });
  } catch (e) {
    out.textContent = JSON.stringify({ ok: false, error: String(e && e.stack || e) });
  }
  document.body.appendChild(out);
})();
</script>
]]

local function unescape(s)
  return (s:gsub("&lt;", "<"):gsub("&gt;", ">"):gsub("&quot;", '"'):gsub("&#39;", "'"):gsub("&amp;", "&"))
end

function M.run(page, driver, fragment)
  assert(M.path, "chromium is not installed")
  local html = files.read(page)
  local at = html:find("</body>", 1, true)
  assert(at, page .. " has no </body>")
  local copy, profile = files.tmpname() .. ".html", files.tmpname()
  local before, after = HARNESS:match("^(.-)%%s(.*)$")
  files.write(copy, html:sub(1, at - 1) .. before .. driver .. after .. html:sub(at))
  local out, code = files.run(string.format("%s --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=%s " ..
    "--virtual-time-budget=30000 --dump-dom 'file://%s%s' 2>/dev/null", M.path, profile, copy, fragment or ""))
  os.remove(copy)
  os.execute("rm -rf '" .. profile .. "'")
  assert(code == 0, "chromium exited with " .. tostring(code))
  local text = out:match('<pre id="test%-result">(.-)</pre>')
  assert(text, "the driver left no result; the page's DOM begins: " .. out:sub(1, 300))
  local doc = cjson.decode(unescape(text))
  if not doc.ok then error("the driver failed: " .. tostring(doc.error), 2) end
  return doc.result
end

return M
