-- docs_links_spec.lua — the documentation holds together: every relative link and picture in
-- README.md and docs/*.md ([text](path), ![alt](path)) names a file that exists (relative to the
-- Markdown file's folder), and every #anchor names a heading of its file (GitHub's slug); the
-- README stays a short guide (at most 260 lines) that names no commit. Plain Lua that reads
-- files: no graphmert module, no build. Run from the repository's root, as busted is.

local README_MAX_LINES = 260

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  return text
end

local function exists(path) -- a file or a folder (fopen opens a folder for reading on Linux)
  local f = io.open(path, "rb")
  if f then f:close() return true end
  return false
end

local function lines_of(text)
  local lines = {}
  for line in (text:gsub("\r\n", "\n") .. (text:sub(-1) == "\n" and "" or "\n")):gmatch("(.-)\n") do
    lines[#lines + 1] = line
  end
  return lines
end

-- The lines with fenced and indented code blocks blanked (line numbers kept): links and
-- headings inside code are not Markdown.
local function without_code_blocks(lines)
  local out, fence, previous_blank, in_indented = {}, nil, true, false
  for i, line in ipairs(lines) do
    local marker = line:match("^ ? ? ?(```+)") or line:match("^ ? ? ?(~~~+)")
    if fence then
      out[i] = ""
      if marker and marker:sub(1, 1) == fence:sub(1, 1) and #marker >= #fence and line:match("^%s*[`~]+%s*$") then
        fence = nil
      end
    elseif marker then
      fence, out[i] = marker, ""
    elseif (previous_blank or in_indented) and (line:match("^    ") or line:match("^\t")) and line:match("%S") then
      out[i], in_indented = "", true
    else
      out[i] = line
      if line:match("%S") then in_indented = false end
    end
    previous_blank = not line:match("%S")
  end
  return out
end

-- GitHub's anchor for a heading: lower case, punctuation other than '-' and '_' removed,
-- spaces to '-'; letters beyond ASCII stay, common non-ASCII punctuation goes.
local UNICODE_PUNCTUATION = { "—", "–", "×", "→", "←", "’", "‘", "“", "”", "…", "·", "≤", "≥", "±", "°", "÷", "▲", "▼", "✓", "✗" }
local function slug(heading)
  local s = heading:gsub("!?%[([^%]]*)%]%([^%)]*%)", "%1") -- a link in a heading counts by its text
  s = s:lower()
  for _, p in ipairs(UNICODE_PUNCTUATION) do s = s:gsub(p, "") end
  s = s:gsub("[%c!\"#$%%&'()*+,./:;<=>?@%[\\%]^`{|}~]", "")
  s = s:gsub(" ", "-")
  return s
end

-- The anchors of a Markdown text: ATX (# ...) and setext (=== / ---) headings outside code,
-- with GitHub's -1, -2, ... for repeated ones.
local function anchors(text)
  local lines = without_code_blocks(lines_of(text))
  local set, seen = {}, {}
  local function add(heading)
    local base = slug(heading)
    local s = base
    if seen[base] then s = base .. "-" .. seen[base] end
    seen[base] = (seen[base] or 0) + 1
    set[s] = true
  end
  for i, line in ipairs(lines) do
    local hashes, title = line:match("^ ? ? ?(#+)%s+(.-)%s*$")
    if not hashes then hashes, title = line:match("^ ? ? ?(#+)()$"), "" end
    if hashes and #hashes <= 6 then
      title = tostring(title):gsub("%s+#+$", "")
      add(title)
    elseif i > 1 and (line:match("^=+%s*$") or line:match("^%-+%s*$")) and lines[i - 1]:match("%S")
        and not lines[i - 1]:match("^%s*[-*+|>#]") then
      add((lines[i - 1]:gsub("^%s+", ""):gsub("%s+$", "")))
    end
  end
  return set
end

local anchor_cache = {}
local function anchors_of(path)
  if anchor_cache[path] == nil then
    local text = read(path)
    anchor_cache[path] = text and anchors(text) or false
  end
  return anchor_cache[path]
end

local function folder_of(path) return path:match("^(.*)/[^/]*$") or "." end

local function percent_decode(s)
  return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

-- The links and pictures of a Markdown text outside code: { line, target } in order.
local function links(text)
  local lines = without_code_blocks(lines_of(text))
  local body = table.concat(lines, "\n")
  -- inline code spans go (they may wrap across lines), keeping the line breaks
  body = body:gsub("((`+).-%2)", function(span) return (span:gsub("[^\n]", " ")) end)
  local found = {}
  local pos = 1
  while true do
    local s, e, target = body:find("%]%(([^%)]*)%)", pos)
    if not s then break end
    local _, newlines = body:sub(1, s):gsub("\n", "")
    found[#found + 1] = { line = newlines + 1, target = target }
    pos = e + 1
  end
  return found
end

-- The problems of one Markdown file's links, as "file:line: message" strings.
local function check_links(md_path, text)
  local problems = {}
  local function problem(line, msg) problems[#problems + 1] = string.format("%s:%d: %s", md_path, line, msg) end
  for _, link in ipairs(links(text)) do
    local target = link.target:match("^%s*(.-)%s*$")
    target = target:match("^<(.-)>") or target:match("^(%S*)")
    if target == "" then
      problem(link.line, "an empty link target")
    elseif not (target:match("^https?:") or target:match("^mailto:")) then
      local path, anchor = target:match("^([^#]*)#?(.*)$")
      path = percent_decode(path)
      local file
      if path == "" then
        file = md_path
      elseif path:sub(1, 1) == "/" then
        file = "." .. path -- GitHub reads a leading / as the repository's root
      else
        file = folder_of(md_path) .. "/" .. path
      end
      if not exists(file) then
        problem(link.line, string.format("%s: no such file (%s)", target, file))
      elseif anchor ~= "" and (path == "" or file:match("%.md$")) then
        local set = path == "" and anchors(text) or anchors_of(file)
        if not (set and set[percent_decode(anchor)]) then
          problem(link.line, string.format("%s: no heading of %s has the anchor #%s", target, file, anchor))
        end
      end
    end
  end
  return problems
end

local function markdown_files()
  local files = { "README.md" }
  local p = assert(io.popen("ls -1 docs 2>/dev/null"))
  for name in p:lines() do
    if name:match("%.md$") then files[#files + 1] = "docs/" .. name end
  end
  p:close()
  return files
end

-- Commit hashes: a run of 7 to 40 hex digits after the word "commit(s)", or a whole word of 7 to
-- 40 hex digits (with a digit and a letter, as hashes have and plain numbers and words have not)
-- inside backticks.
local function commit_hashes(text)
  local found = {}
  local lower = text:lower()
  for hex in lower:gmatch("%f[%w]commits?[%s`:]+(%x+)%f[%W]") do
    if #hex >= 7 and #hex <= 40 then found[#found + 1] = "commit " .. hex end
  end
  for _, span in text:gmatch("(`+)(.-)%1") do
    for hex in span:gmatch("%f[%w](%x+)%f[%W]") do
      if #hex >= 7 and #hex <= 40 and hex:match("%d") and hex:match("%a") then found[#found + 1] = "`" .. span .. "`" end
    end
  end
  return found
end

describe("the documentation", function()
  it("makes GitHub's anchors from headings", function()
    assert.equal("the-wordnet-demo-make-demo", slug("The WordNet demo (`make demo`)"))
    assert.equal("graphmert-conventions-the-official-code-default-and-the-design-notes",
      slug("GraphMERT conventions: the official code (default) and the design notes"))
    assert.equal("the-λ--h-gat-grids", slug("The λ × H-GAT grids"))
    assert.equal("all-of-wordnet-wordnet_longlua", slug("All of WordNet (`wordnet_long.lua`)"))
    local set = anchors("# Title\n\n```\n# not a heading\n```\n\n## Usage\n\n## Usage\n\nSetext\n---\n")
    assert.is_true(set["title"] and set["usage"] and set["usage-1"] and set["setext"])
    assert.is_nil(set["not-a-heading"])
  end)

  it("finds links outside code and reports missing files and anchors", function()
    local text = table.concat({
      "See [the results](docs/results.md#no-such-heading), [a page](docs/no_such_page.md),",
      "[the web](https://example.org/x), [mail](mailto:a@b.c), `[code](not/checked.md)`,",
      "[here](#top) and [there](#nowhere).",
      "",
      "    [indented code](not/checked/either.md)",
      "",
      "# Top",
    }, "\n")
    local problems = check_links("README.md", text)
    assert.equal(3, #problems, table.concat(problems, "\n"))
    assert.matches("README.md:1: docs/results.md#no%-such%-heading: no heading", problems[1])
    assert.matches("README.md:1: docs/no_such_page.md: no such file", problems[2])
    assert.matches("README.md:3: #nowhere: no heading", problems[3])
  end)

  for _, path in ipairs(markdown_files()) do
    it("resolves every relative link and picture of " .. path, function()
      local text = assert(read(path), path)
      local problems = check_links(path, text)
      assert.equal(0, #problems, "\n" .. table.concat(problems, "\n"))
    end)
  end

  it("keeps README.md at most " .. README_MAX_LINES .. " lines", function()
    local n = #lines_of(assert(read("README.md")))
    assert.is_true(n <= README_MAX_LINES, string.format("README.md has %d lines (at most %d)", n, README_MAX_LINES))
  end)

  it("names no commit hash in README.md", function()
    local found = commit_hashes(assert(read("README.md")))
    assert.equal(0, #found, "README.md names commits: " .. table.concat(found, ", "))
    assert.equal(2, #commit_hashes("at commit 0f728e7, and `git checkout 9be780c`; not `GO:0000049` or `decade`"))
  end)
end)
