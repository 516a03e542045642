-- Lua's own objects: in the graphmert binary the small ones (up to 512 bytes) come from its
-- arena (src/main_arena.c), the rest from malloc, and a block moves between the two as it grows
-- or shrinks. Under a stock lua5.4 the same checks run against malloc alone.

-- n bytes of content that differ from one object to the next
local function pattern(seed, n)
  local parts = {}
  for i = 1, n do parts[i] = string.char(33 + (seed * 31 + i * 7) % 90) end
  return table.concat(parts)
end

describe("Lua objects", function()
  it("keep their contents at every size across the small-block limit, through collections", function()
    local strings, tables = {}, {}
    for n = 1, 700 do -- strings of 1..700 bytes: headers of ~24 bytes put the limit near n = 488
      strings[n] = pattern(n, n)
      local t = {}
      for i = 1, n % 90 do t[i] = n * 1000 + i end -- array parts from 0 to 89 slots
      tables[n] = t
    end
    collectgarbage()
    for n = 1, 700, 3 do strings[n], tables[n] = nil, nil end -- free every third, then reuse the room
    collectgarbage()
    local again = {}
    for n = 1, 700, 3 do again[n] = pattern(n + 1, n) end
    for n = 1, 700 do
      if n % 3 == 1 then
        assert.equal(pattern(n + 1, n), again[n])
      else
        assert.equal(pattern(n, n), strings[n])
        assert.equal(n % 90, #tables[n])
        for i = 1, n % 90 do assert.equal(n * 1000 + i, tables[n][i]) end
      end
    end
  end)

  it("keep their contents when a table grows past the limit and shrinks back", function()
    local t, keys = {}, {}
    for round = 1, 3 do
      for i = 1, 200 do -- the hash part grows through every size from 1 to 256 slots
        local k = "k" .. round .. "_" .. i
        t[k] = i * round
        keys[#keys + 1] = k
      end
      for i, k in ipairs(keys) do
        if i % 2 == 0 then t[k] = nil end
      end
      collectgarbage() -- the next insertion rehashes into a smaller part
      t.after = round
      for i, k in ipairs(keys) do
        if i % 2 == 1 then assert.is_not_nil(t[k], k) end
      end
      keys = {}
      for k in pairs(t) do
        if k ~= "after" then keys[#keys + 1] = k end
      end
      table.sort(keys)
    end
    assert.equal(3, t.after)
  end)

  it("come back to Lua's count after they are collected", function()
    local function make_junk()
      local junk = {}
      for i = 1, 20000 do junk[i] = { i, tostring(i), pattern(i, i % 600) } end
    end
    -- once before measuring: Lua's string table grows for the junk's strings and, with enough
    -- other strings alive in this process, keeps its size afterwards (128 KiB of slots), which is
    -- no object left behind
    make_junk()
    collectgarbage()
    collectgarbage()
    local before = collectgarbage("count")
    make_junk()
    collectgarbage()
    collectgarbage()
    assert.is_true(collectgarbage("count") < before + 64, "Lua heap grew by " ..
      (collectgarbage("count") - before) .. " KiB")
  end)
end)
