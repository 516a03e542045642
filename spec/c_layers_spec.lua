-- The C core's files form layers: no file calls (through a chain of others) back into itself.
-- Read from the built objects with nm: a file depends on the file that defines a symbol it
-- leaves undefined. A circle would mean a lower file (gm_tensor.c, say) needs a higher one
-- (gm_autograd.c), as the op table once made it; the spec names the circle and the symbols.
local files = require "spec.files"

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
    local edges, why = {}, {}
    for name, list in pairs(uses) do
      edges[name] = {}
      for _, symbol in ipairs(list) do
        local to = owner[symbol]
        if to and to ~= name then
          if not edges[name][to] then edges[name][to] = true end
          why[name .. " -> " .. to] = why[name .. " -> " .. to] or symbol
        end
      end
    end
    -- depth-first search for a back edge; the path on the stack is the circle
    local state, stack, circle = {}, {}, nil
    local function visit(v)
      state[v] = "open"
      stack[#stack + 1] = v
      local next_names = {}
      for w in pairs(edges[v]) do next_names[#next_names + 1] = w end
      table.sort(next_names)
      for _, w in ipairs(next_names) do
        if state[w] == "open" then
          local from
          for i, x in ipairs(stack) do if x == w then from = i end end
          circle = {}
          for i = from, #stack do circle[#circle + 1] = stack[i] .. " (" .. why[stack[i] .. " -> " .. (stack[i + 1] or w)] .. ")" end
          return true
        elseif not state[w] and visit(w) then
          return true
        end
      end
      stack[#stack] = nil
      state[v] = "done"
    end
    local names = {}
    for name in pairs(edges) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do
      if not state[name] and visit(name) then break end
    end
    assert.is_nil(circle, circle and ("a circle: " .. table.concat(circle, " -> ")))
    assert.is_true(#names > 20)
  end)
end)
