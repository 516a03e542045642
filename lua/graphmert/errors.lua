-- errors.lua — errors that callers branch on carry a kind, so no caller matches message text.
--   errors.raise(kind, message)  raises {kind = kind, message = message} (tostring gives the message)
--   errors.kind(err)             the kind of a caught error, or nil
--   errors.uninterrupted(fn, ...) fn(...), with a Ctrl-C that comes meanwhile raised after it
-- Ctrl-C is the one error raised as a string by code outside this project (lua.c's hook, and the
-- graphmert binary's that does as lua.c does): kind() names it "interrupted".
local M = {}

-- known by its name, not by identity: a module loaded twice (a spec clearing package.loaded)
-- still recognises the other copy's errors
local Error = { __name = "graphmert.Error", __tostring = function(e) return e.message end }

function M.raise(kind, message) error(setmetatable({ kind = kind, message = message }, Error), 0) end

-- uninterrupted(fn, ...) → fn(...)'s results, with Ctrl-C held until fn returns and raised then
-- ("interrupted!"), so that what fn does (a training step) is never cut in half; the graphmert
-- binary holds it (graphmert.interrupts), under plain lua5.4 fn simply runs.
local hold = package.preload["graphmert.interrupts"] and require("graphmert.interrupts").hold
function M.uninterrupted(fn, ...)
  if hold then return hold(fn, ...) end
  return fn(...)
end

function M.kind(err)
  local mt = type(err) == "table" and getmetatable(err)
  if type(mt) == "table" and rawget(mt, "__name") == Error.__name then return err.kind end
  if type(err) == "string" and err:match("interrupted!$") then return "interrupted" end
end

return M
