-- distributed.lua — data parallelism over MPI: the same script on K processes
-- (`mpirun -np K graphmert script.lua`), each a rank of the world.
--   init()                     starts MPI when launched by an MPI launcher (idempotent; the
--                              other functions call it); a plain run is a world of one process
--   rank() → 0..size()-1       0-based, as in MPI: rank 0 is the root (prints, logs, saves)
--   size() → K                 is_main() → rank() == 0
--   compiled() → true when this build has MPI (make MPI=0 builds without)
--   allreduce(tensors, {op = "sum"|"mean", bucket_bytes}) → tensors, summed (or averaged) over
--                              the ranks in place
--   allreduce_grads(params, extra, {op, bucket_bytes}): the parameters' gradients and the extra
--                              tensors reduced in one stream (a missing gradient counts as zeros)
--   broadcast(tensors, root = 0) → tensors, root's values in place on every rank
--   barrier()   finalize()
--   session()                  a to-be-closed value for a script: finalize() at its end, and an
--                              error on a rank of several prints "rank N: <error>" and ends
--                              the whole job (MPI_Abort) instead of leaving the other ranks
--                              waiting in a collective
-- Collectives take lists of float32 tensors, copied into buckets of at most bucket_bytes
-- (default 4 MiB), one MPI call per bucket; every rank must pass the same sizes. With one
-- process they leave the values unchanged (sum and mean alike).
local core = require("graphmert.core").distributed

local M = {}

local started = false
function M.init()
  if not started then
    core.init()
    started = true
  end
  return M
end

function M.rank() M.init(); return core.rank() end
function M.size() M.init(); return core.size() end
function M.is_main() return M.rank() == 0 end
-- io.write on rank 0 only: what a script prints once for the whole job
function M.say(...) if M.is_main() then io.write(...) end end
M.compiled = core.compiled

local function list_arg(fn, tensors, n)
  if type(tensors) ~= "table" then
    error(string.format("bad argument #%d to '%s' (a list of tensors expected, got %s)", n, fn, type(tensors)), 3)
  end
end

function M.allreduce(tensors, opts)
  list_arg("allreduce", tensors, 1)
  M.init()
  core.allreduce(tensors, opts)
  return tensors
end

function M.allreduce_grads(params, extra, opts)
  list_arg("allreduce_grads", params, 1)
  list_arg("allreduce_grads", extra, 2)
  M.init()
  core.allreduce_grads(params, extra, opts)
end

function M.broadcast(tensors, root, opts)
  list_arg("broadcast", tensors, 1)
  M.init()
  core.broadcast(tensors, root or 0, opts)
  return tensors
end

function M.barrier() M.init(); core.barrier() end

-- ends every rank of the job with `code` (MPI_Abort): what one rank does when it stops and the
-- others would wait for it in a collective
function M.abort(code)
  io.stdout:flush()
  io.stderr:flush()
  core.abort(code or 1)
end
function M.finalize() core.finalize() end

-- A to-be-closed value for a script's main chunk (local s <close> = dist.session()): at the
-- chunk's end it finalizes MPI; when the chunk ends by an error on one rank of several, it
-- prints "rank N: <error>" and ends every rank (MPI_Abort, exit status 1), so the other ranks
-- do not wait forever in a collective. With one process the error goes on as usual.
local session_meta = {
  __close = function(_, err)
    if err ~= nil and M.size() > 1 then
      io.stdout:flush()
      io.stderr:write(string.format("rank %d: %s\n", M.rank(), tostring(err)))
      M.abort(1)
    end
    M.finalize()
  end,
}

function M.session()
  M.init()
  return setmetatable({}, session_meta)
end

return M
