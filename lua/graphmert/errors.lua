-- errors.lua — errors that callers branch on carry a kind, so no caller matches message text.
--   errors.raise(kind, message)  raises {kind = kind, message = message} (tostring gives the message)
--   errors.kind(err)             the kind of a caught error, or nil
-- Ctrl-C is the one error raised as a string by code outside this project (lua.c's hook, and the
-- graphmert binary's that does as lua.c does): kind() names it "interrupted".
local M = {}

-- known by its name, not by identity: a module loaded twice (a spec clearing package.loaded)
-- still recognises the other copy's errors
local Error = { __name = "graphmert.Error", __tostring = function(e) return e.message end }

function M.raise(kind, message) error(setmetatable({ kind = kind, message = message }, Error), 0) end

function M.kind(err)
  local mt = type(err) == "table" and getmetatable(err)
  if type(mt) == "table" and rawget(mt, "__name") == Error.__name then return err.kind end
  if type(err) == "string" and err:match("interrupted!$") then return "interrupted" end
end

return M
