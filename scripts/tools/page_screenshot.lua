-- page_screenshot.lua — the README's picture of the KG page: an entity's view in headless
-- Chromium, one triple's evidence open, one triple accepted and one rejected.
--   graphmert scripts/tools/page_screenshot.lua out/tiny/kg.html docs/kg_page.png [entity=ANAT:0009] [height=1150]
package.path = "./?.lua;" .. package.path
local browser = require "spec.browser"

local page, png = arg[1], arg[2]
if not page or not png then
  io.stderr:write("usage: graphmert scripts/tools/page_screenshot.lua PAGE.html OUT.png [entity id] [height]\n")
  os.exit(2)
end
browser.screenshot(page, png, { fragment = "#e=" .. (arg[3] or "ANAT:0009"), height = tonumber(arg[4] or 1150), driver = [[
  const rows = [...document.querySelectorAll("#entity-triples tr.triple")];
  if (rows.length > 1) {
    rows[0].querySelector("button.accept").click();
    rows[1].querySelector("button.reject").click();
    rows[0].querySelector("button.evidence-toggle").click();
  }]] })
print(png)
