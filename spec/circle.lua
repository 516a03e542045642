-- circle.lua — a circle in a dependency graph, for the specs that keep the code in layers (the C
-- core's files: c_layers_spec.lua; the Lua modules: lua_layers_spec.lua).
--   find(graph) → nil, or the circle as a list of steps, "a (why a needs b)", ..., closed by the
--   first name again; graph: name → { [name it needs] = why (a string) }. Depth-first, in name
--   order, so the same graph names the same circle every run.
local sorted_keys = require("graphmert.check").sorted_keys

local M = {}

function M.find(graph)
  local state, stack = {}, {}
  local function visit(v)
    state[v] = "open"
    stack[#stack + 1] = v
    for _, w in ipairs(sorted_keys(graph[v])) do
      if state[w] == "open" then -- a back edge: the stack from w to v, and back to w
        local from
        for i, x in ipairs(stack) do if x == w then from = i end end
        local circle = {}
        for i = from, #stack do
          circle[#circle + 1] = stack[i] .. " (" .. graph[stack[i]][stack[i + 1] or w] .. ")"
        end
        circle[#circle + 1] = w
        return circle
      elseif not state[w] then
        local circle = visit(w)
        if circle then return circle end
      end
    end
    stack[#stack] = nil
    state[v] = "done"
  end
  for _, name in ipairs(sorted_keys(graph)) do
    if not state[name] then
      local circle = visit(name)
      if circle then return circle end
    end
  end
end

return M
