-- progress.lua — the progress line of a long run. On a terminal it rewrites itself in place (at
-- most twice a second); into a log or a pipe it prints a plain line at each tenth of the work
-- and at least every 30 s, so `make demo > log` stays short and readable.
--   local p = progress.new { stream = io.stderr, total = n }   -- total: the work's count
--   p:update(done, text)   -- text: the whole line, without "\r" or "\n"
--   p:say(text)            -- a message on a line of its own (a newline after it is added)
--   p:finish()             -- ends a live line
-- `enabled = false` (ranks other than 0) makes every call a no-op.
local gm = require "graphmert"

local M = {}
local Progress = {}
Progress.__index = Progress

local FDS = {}
local function fd_of(stream)
  if not FDS[io.stdout] then FDS[io.stdout], FDS[io.stderr] = 1, 2 end
  return FDS[stream]
end

function M.new(opts)
  local stream = opts.stream or io.stderr
  local fd = fd_of(stream)
  return setmetatable({ stream = stream, total = opts.total, enabled = opts.enabled ~= false,
    tty = opts.tty == nil and fd ~= nil and gm.isatty(fd) or opts.tty == true, shown_at = -math.huge,
    shown_done = nil, live = false }, Progress)
end

function Progress:update(done, text)
  if not self.enabled then return end
  local now, last = gm.clock(), self.shown_done
  local finished = self.total and done >= self.total
  if self.tty then
    if now - self.shown_at < 0.5 and not finished then return end
    self.stream:write("\r", text, "   ")
    self.live = true
  else
    local tenth = self.total and self.total >= 10 and self.total // 10
    local due = last == nil or finished or now - self.shown_at >= 30 or
      (tenth and done // tenth > last // tenth)
    if not due or done == last then return end
    self.stream:write(text, "\n")
  end
  self.stream:flush()
  self.shown_at, self.shown_done = now, done
end

function Progress:say(text)
  if not self.enabled then return end
  if self.live then self.stream:write("\n") end
  self.live = false
  self.stream:write(text, "\n")
  self.stream:flush()
end

function Progress:finish()
  if self.enabled and self.live then self.stream:write("\n") end
  self.live = false
end

return M
