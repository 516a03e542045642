-- dataset_records.lua — reading a dataset's files (graphmert.data.dataset): their lines, the
-- records of a TSV or JSONL file, and the values of a record's fields. What each record must hold
-- is graphmert.data.dataset_parts'.
--   records.lines(path) → iterator of each non-blank, non-comment line with its number
--   records.each(ds, path, columns, fn) → fn(where, record, fields) per record (ds:skip for a line
--     that is no record)
--   records.fields(line) → a TSV line's fields, trimmed
--   records.text(v), records.list(v, sep), records.is_string_list(v) → a field's value
local cjson = require "cjson"

local M = {}

-- (gm.data.corpus.lines; a file that cannot be read is an error naming it)
function M.lines(path)
  local ok, next_line = pcall(require("graphmert.data.corpus").lines, path)
  if not ok then error("dataset: " .. next_line, 0) end
  return next_line
end

-- a TSV line's fields, each trimmed of blanks
function M.fields(line)
  local fields = {}
  for field in (line .. "\t"):gmatch("([^\t]*)\t") do fields[#fields + 1] = field:match("^%s*(.-)%s*$") end
  return fields
end

local function is_header(fields, first) return fields[1] and fields[1]:lower() == first end

-- records of a TSV or JSONL file: fn(where, record, fields) with the record's values by name and,
-- for TSV, the line's field count up to its last non-empty field (tabs a spreadsheet pads a row
-- with are no fields); `columns` names the TSV columns (a header starts with columns[1])
function M.each(ds, path, columns, fn)
  local jsonl = path:match("%.jsonl$")
  local first = true
  for n, line in M.lines(path) do
    local where = string.format("%s:%d", path, n)
    if not utf8.len(line) then
      ds:skip(where, "not UTF-8 text")
    elseif jsonl then
      local ok, rec = pcall(cjson.decode, line)
      if not ok or type(rec) ~= "table" or rec[1] ~= nil then ds:skip(where, "not a JSON object") else fn(where, rec) end
    else
      local fields = M.fields(line)
      if not (first and is_header(fields, columns[1])) then
        local rec = {}
        for i, c in ipairs(columns) do rec[c] = fields[i] end
        local count = #fields
        while count > 0 and fields[count] == "" do count = count - 1 end
        fn(where, rec, count)
      end
    end
    first = false
  end
end

-- a non-blank string, or a number as text (JSON's 7 is read as 7.0: written "7"); nil otherwise
-- (JSON null included)
M.text = require("graphmert.data.corpus").scalar_text

-- a list field's strings: a JSON list's non-blank strings, or a TSV value split at `sep`
function M.list(v, sep)
  if type(v) == "table" then
    local out = {}
    for _, x in ipairs(v) do if type(x) == "string" and x:match("%S") then out[#out + 1] = x end end
    return out
  end
  local out = {}
  for x in ((v or "") .. sep):gmatch("([^" .. sep .. "]*)" .. sep) do
    x = x:match("^%s*(.-)%s*$")
    if x ~= "" then out[#out + 1] = x end
  end
  return out
end

-- whether a JSONL list field (aliases, head_types, tail_types) is absent, a list of strings, or a
-- string (split as the TSV column is); a number there would be taken as a name, and a type list
-- of numbers as "any"
function M.is_string_list(v)
  if v == nil or v == cjson.null or type(v) == "string" then return true end
  if type(v) ~= "table" then return false end
  for k, x in pairs(v) do
    if math.type(k) ~= "integer" or type(x) ~= "string" then return false end
  end
  return true
end

return M
