-- page_template.lua — the KG page's template: assets/page.html with assets/page.css and
-- assets/page.js put inline where it says {{STYLE}} and {{SCRIPT}}, for graphmert.kg.page to
-- fill in {{TITLE}} and {{DATA}}. The three are files of their own so that an editor and a linter
-- read them; graphmert.assets finds them however graphmert runs (built in, or beside the modules).
-- Plain DOM and SVG, no library, so the page works offline and from disk.
-- The state a view needs lives in the URL's fragment: #e=<entity id>&r=<relation>&r=<relation>
-- (no r: all; one empty r: none)&min=<score>&kind=all|new|seed&facts=0|1&order=score|random.
-- Review decisions are kept in the browser's localStorage (per kg file, by triple, so a page made
-- again keeps them) and exported as JSONL, one decision per line: {"head", "head_id",
-- "relation", "tail", "tail_id", "verdict": "accept"|"reject", "score", "reviewed"}; a triple is
-- named by head id, relation and tail id, a new entity's id being "new:" and its name (kg.key).
-- Long lists show 100 rows and a button for more, so 10⁵ triples stay responsive.
local assets = require "graphmert.assets"

local function asset(name) return assets.read("graphmert/kg/assets/" .. name) end

-- inside its tag, a file's text without its final newline (the tag's line ends it), so the page
-- is the same whether or not an editor ended the file with one
local function inline(name) return (asset(name):gsub("\n$", "")) end

return (asset("page.html"):gsub("{{(%u+)}}", { STYLE = inline("page.css"), SCRIPT = inline("page.js") }))
