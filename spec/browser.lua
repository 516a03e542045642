-- browser.lua — drives a page in Debian's headless Chromium for the KG page specs. A driver
-- script (JavaScript, an async function body) is put after the page's own script in a copy of
-- the page; it acts as a user would (sets inputs, dispatches events, clicks buttons) and returns
-- a JSON value, which Chromium's --dump-dom hands back in a <pre id="test-result">.
--   browser.path → the chromium binary, or nil when it is not installed
--   browser.screenshot(page, png, {driver =, fragment =, width = 1280, height = 900}) → writes a PNG
--     of the page after a driver (run without waiting) acted on it
--   browser.run(page, driver, fragment, {real_time = false}) → the driver's result (a Lua value),
--     or an error
-- Virtual time (--virtual-time-budget) lets the driver's waits (await sleep(ms)) pass at once;
-- with real_time (for timings: virtual time would stop performance.now) there is none, and the
-- driver must finish without waiting (the DOM is taken at the load event).
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

-- a copy of the page with the driver after its own script
local function with_driver(page, driver)
  local html = files.read(page)
  local at = html:find("</body>", 1, true)
  assert(at, page .. " has no </body>")
  local copy = files.tmpname() .. ".html"
  local before, after = HARNESS:match("^(.-)%%s(.*)$")
  files.write(copy, html:sub(1, at - 1) .. before .. driver .. after .. html:sub(at))
  return copy
end

-- (timeout: a page that never lets Chromium finish fails its spec, in a minute, instead of
-- hanging the run)
local function chromium(profile, flags, url)
  local out, code = files.run(string.format("timeout -k 5 60 %s --headless --no-sandbox --disable-gpu --no-first-run " ..
    "--hide-scrollbars --user-data-dir=%s %s '%s' 2>/dev/null", M.path, profile, flags, url))
  if code == 124 then error("chromium did not finish in 60 s on " .. url, 3) end
  return out, code
end

function M.screenshot(page, png, opts)
  assert(M.path, "chromium is not installed")
  opts = opts or {}
  local copy, profile = with_driver(page, opts.driver or ""), files.tmpname()
  local out, code = chromium(profile, string.format("--window-size=%d,%d --screenshot=%s", opts.width or 1280,
    opts.height or 900, png), "file://" .. copy .. (opts.fragment or ""))
  os.remove(copy)
  os.execute("rm -rf '" .. profile .. "'")
  assert(code == 0, "chromium exited with " .. tostring(code) .. ": " .. out)
end

function M.run(page, driver, fragment, opts)
  assert(M.path, "chromium is not installed")
  local copy, profile = with_driver(page, driver), files.tmpname()
  local virtual = not (opts and opts.real_time) and "--virtual-time-budget=30000 " or ""
  local out, code = chromium(profile, virtual .. "--dump-dom", "file://" .. copy .. (fragment or ""))
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
