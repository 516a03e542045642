-- summary_output.lua — busted output handler: a dot per test, the details of each failure and
-- error, then one last line "N passed, N failed, N skipped" that CI reads. Errors count as
-- failures; busted's own exit status is left as it is.
return function(options)
  local busted = require "busted"
  local pretty = require "pl.pretty"
  local handler = require "busted.outputHandlers.base"()

  local function describe_failure(kind, element)
    local trace = element.trace or element.element.trace
    local where = trace and (trace.short_src .. ":" .. (trace.currentline or "?")) or "?"
    local message = element.message
    if type(message) ~= "string" then message = pretty.write(message) end
    return string.format("%s -> %s\n%s\n%s\n", kind, where, handler.getFullName(element),
      tostring(message))
  end

  handler.testEnd = function(element, parent, status)
    local marks = { success = "+", failure = "-", error = "*", pending = "." }
    io.write(marks[status] or "?")
    io.flush()
    return nil, true
  end

  handler.suiteEnd = function()
    io.write("\n\n")
    for _, f in ipairs(handler.failures) do io.write(describe_failure("Failure", f), "\n") end
    for _, e in ipairs(handler.errors) do io.write(describe_failure("Error", e), "\n") end
    io.write(string.format("%d passed, %d failed, %d skipped\n", handler.successesCount,
      handler.failuresCount + handler.errorsCount, handler.pendingsCount))
    io.flush()
    return nil, true
  end

  busted.subscribe({ "test", "end" }, handler.testEnd, { predicate = handler.cancelOnPending })
  busted.subscribe({ "suite", "end" }, handler.suiteEnd)
  return handler
end
