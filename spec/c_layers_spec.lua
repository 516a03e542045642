-- The C core's files form layers: no file calls (through a chain of others) back into itself.
-- Read from the built objects with nm: a file depends on the file that defines a symbol it
-- leaves undefined. A circle would mean a lower file (gm_tensor.c, say) needs a higher one
-- (gm_autograd.c), as the op table once made it; the spec names the circle and the symbols.
local files = require "spec.files"
local circle_in = require("spec.circle").find

local function objects()
  local list = {}
  local p = io.popen("ls build/obj/gm_*.o 2>/dev/null")
  for path in p:lines() do list[#list + 1] = path end
  p:close()
  return list
end

describe("the C core's files", function()
  local objs = objects()
  local nm_out, code = files.run("nm --version")

  it("call no file that calls back into them", function()
    if #objs == 0 or code ~= 0 then
      pending("no build/obj objects or no nm: " .. nm_out)
      return
    end
    local owner, uses = {}, {}
    for _, path in ipairs(objs) do
      local name = path:match("([%w_]+)%.o$")
      uses[name] = {}
      local out = files.run("nm " .. path)
      for line in out:gmatch("[^\n]+") do
        local kind, symbol = line:match("^%x+ (%a) ([%w_.]+)$")
        if kind and kind:match("[TDBR]") then owner[symbol] = name end
        local undefined = line:match("^%s+U ([%w_.]+)$")
        if undefined then uses[name][#uses[name] + 1] = undefined end
      end
    end
    local edges = {} -- name → { [file it calls] = the first symbol it calls there }
    for name, list in pairs(uses) do
      edges[name] = {}
      for _, symbol in ipairs(list) do
        local to = owner[symbol]
        if to and to ~= name and not edges[name][to] then edges[name][to] = symbol end
      end
    end
    local circle, files_read = circle_in(edges), 0
    for _ in pairs(edges) do files_read = files_read + 1 end
    assert.is_nil(circle, circle and ("a circle: " .. table.concat(circle, " -> ")))
    assert.is_true(files_read > 20)
  end)
end)
