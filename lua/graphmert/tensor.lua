-- tensor.lua — Lua-side tensor methods installed into the C metatable: torch7-style printing
-- and small conveniences. Called once by graphmert/init.lua with the core table.
return function(core)
  local methods = core.methods
  local meta = core.Tensor
  local floor, abs, log10, max = math.floor, math.abs, math.log, math.max

  local function shape_string(t)
    local shape = t:shape()
    if #shape == 0 then return "scalar" end
    return table.concat(shape, "x")
  end
  methods.shape_string = shape_string

  -- One format for a whole tensor, chosen from its magnitudes (torch7's Storage__printformat):
  -- integers as integers; %.4f in a fixed width; %11.4e when magnitudes span more than 4
  -- decades; otherwise a common scale printed above the values.
  local function choose_format(values)
    local all_int, amax, amin = true, 0, math.huge
    for _, v in ipairs(values) do
      if v == v and v ~= math.huge and v ~= -math.huge then
        if v ~= floor(v) then all_int = false end
        local a = abs(v)
        if a > amax then amax = a end
        if a ~= 0 and a < amin then amin = a end
      end
    end
    if amin == math.huge then amin = amax end
    local emax = amax > 0 and floor(log10(amax, 10)) + 1 or 1
    local emin = amin > 0 and floor(log10(amin, 10)) + 1 or 1
    if all_int then
      if emax > 9 then return "%11.4e", 1, 11 end
      local width = max(emax, 1) + 2
      return "%" .. width .. ".0f", 1, width
    end
    if emax - emin > 4 then return "%11.4e", 1, 11 end
    if emax > 5 or emax < -4 then
      local scale = 10 ^ (emax - 1)
      return "%10.4f", scale, 10
    end
    local width = max(emax, 1) + 6
    return "%" .. width .. ".4f", 1, width
  end

  local function fmt_value(fmt, scale, width, v)
    if v ~= v then return string.format("%" .. width .. "s", "nan") end
    if v == math.huge or v == -math.huge then
      return string.format("%" .. width .. "s", v > 0 and "inf" or "-inf")
    end
    return string.format(fmt, v / scale)
  end

  local ELIDE_ABOVE, EDGE = 1000, 3

  -- The positions along a dimension of `size` that are shown: all, or the first and last EDGE.
  local function shown(size, elide)
    local idx = {}
    if not elide or size <= 2 * EDGE then
      for i = 1, size do idx[#idx + 1] = i end
    else
      for i = 1, EDGE do idx[#idx + 1] = i end
      idx[#idx + 1] = false -- the "..." marker
      for i = size - EDGE + 1, size do idx[#idx + 1] = i end
    end
    return idx
  end

  -- Calls fn(prefix) for every shown index prefix over the leading dimensions.
  local function each_prefix(shape, ndim, elide, prefix, fn)
    if #prefix == ndim then return fn(prefix) end
    for _, i in ipairs(shown(shape[#prefix + 1], elide)) do
      local p = { table.unpack(prefix) }
      p[#p + 1] = i
      each_prefix(shape, ndim, elide, p, fn)
    end
  end

  local function tensor_tostring(t)
    if t:is_released() then return "[graphmert.Tensor (released)]" end
    local shape, n = t:shape(), t:numel()
    local ndim = #shape
    local elide = n > ELIDE_ABOVE
    local footer = "[graphmert.Tensor of size " .. shape_string(t)
        .. (t:requires_grad() and ", requires_grad" or "") .. "]"
    if n == 0 then return "[graphmert.Tensor of size " .. shape_string(t) .. " (empty)]" end
    -- gather the shown values first, to pick one format
    local values = {}
    local function get(idx) return t:get(table.unpack(idx)) end
    if ndim == 0 then
      values[1] = t:item()
    else
      each_prefix(shape, ndim, elide, {}, function(idx)
        for _, i in ipairs(idx) do if not i then return end end
        values[#values + 1] = get(idx)
      end)
    end
    local fmt, scale, width = choose_format(values)
    local out = {}
    if scale ~= 1 then out[#out + 1] = string.format("%g *", scale) end
    local function line_of(idx_prefix)
      local cols = {}
      for _, j in ipairs(shown(shape[ndim], elide)) do
        if not j then
          cols[#cols + 1] = string.format("%" .. width .. "s", "...")
        else
          local idx = { table.unpack(idx_prefix) }
          idx[#idx + 1] = j
          cols[#cols + 1] = fmt_value(fmt, scale, width, get(idx))
        end
      end
      return table.concat(cols, " ")
    end
    if ndim == 0 then
      out[#out + 1] = fmt_value(fmt, scale, width, values[1])
    elseif ndim == 1 then
      for _, i in ipairs(shown(shape[1], elide)) do
        out[#out + 1] = i and fmt_value(fmt, scale, width, get { i })
            or string.format("%" .. width .. "s", "...")
      end
    else
      each_prefix(shape, ndim - 2, elide, {}, function(prefix)
        for _, i in ipairs(prefix) do
          if not i then
            out[#out + 1] = "..."
            return
          end
        end
        if ndim > 2 then
          local head = {}
          for _, i in ipairs(prefix) do head[#head + 1] = tostring(i) end
          out[#out + 1] = "(" .. table.concat(head, ",") .. ",.,.) = "
        end
        for _, i in ipairs(shown(shape[ndim - 1], elide)) do
          if not i then
            out[#out + 1] = "..."
          else
            local p = { table.unpack(prefix) }
            p[#p + 1] = i
            out[#out + 1] = line_of(p)
          end
        end
        if ndim > 2 then out[#out + 1] = "" end
      end)
    end
    out[#out + 1] = footer
    return table.concat(out, "\n")
  end
  meta.__tostring = tensor_tostring

  -- t:t(): the transpose of a matrix
  function methods.t(self)
    if self:dim() ~= 2 then
      error("bad argument #1 to 't' (t() needs a matrix, got size " .. shape_string(self) .. ")", 2)
    end
    return self:transpose(1, 2)
  end
  -- t:type(): the type name, as torch7 users expect
  function methods.type() return "graphmert.Tensor" end
  function methods.sigmoid(self) return 1 / (1 + (-self):exp()) end

  -- t[i]: the i-th slice along the first dimension (a tensor of one dimension fewer: a 0-dim
  -- one for a vector, whose :item() is the number), -1 the last; any other key is a method's
  -- name. The methods table stays reachable as the metatable's `methods` (completion, specs).
  local function slice(t, i)
    if t:dim() == 0 then error("a 0-dimensional tensor has no slices (use t:item())", 3) end
    local n = t:size(1)
    local at = i < 0 and n + 1 + i or i
    if at < 1 or at > n then
      error(string.format("index %d out of range for a tensor of size %s (dimension 1 has %d)", i, shape_string(t), n), 3)
    end
    local shape = t:shape()
    table.remove(shape, 1)
    return t:narrow(1, at, 1):reshape(shape)
  end
  meta.methods = methods
  meta.__index = function(t, key)
    local m = methods[key]
    if m == nil and math.type(key) == "integer" then return slice(t, key) end
    return m
  end
end
