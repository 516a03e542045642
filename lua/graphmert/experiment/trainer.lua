-- trainer.lua — one optimisation step, and the held-out masked-token accuracy.
--   trainer(d, cfg, model, opt, {alone}) → step(n) → loss, real tokens in the batch, skipped
--   masked_accuracy(d, cfg, model, {alone}) → accuracy, masked tokens, per held-out sequence
--     {hits, total} (one process only)
-- alone = true: this process trains and evaluates by itself even under MPI (an ablation grid
-- gives each rank its own cells)
-- d is gm.experiment.prepare's data (sequences, masking options), cfg a checked config.
local gm = require "graphmert"
local errors = require "graphmert.errors"
local shard = require "graphmert.experiment.shard"

local M = {}

local function finite(x) return x == x and x ~= math.huge and x ~= -math.huge end

-- The step function trains on the n-th batch (batches wrap around the training sequences). A
-- NaN or infinite loss or gradient norm raises a "nonfinite" error naming the step before the
-- optimizer touches the weights (so the last checkpoint stays the last good state), or with
-- cfg.on_nonfinite = "skip" leaves the weights alone and goes on.
-- Under MPI (gm.distributed.size() > 1) every rank masks the whole global batch with the same
-- generator state (so the masks are the ones one process would draw), then computes the loss
-- of its contiguous share of the rows, each term scaled to its share of the global batch's
-- count (GraphMERT:loss's counts): the gradients and losses, summed over the ranks in one
-- bucketed all-reduce, are the global batch's. Clipping and AdamW then run on the same summed
-- gradient on every rank. Every rank runs its forward from the generator state one process
-- would have (dropout takes one seed per call) and ends where one process would, so the next
-- masks are the same everywhere. The relation dropout of H-GAT (on weights) is then one
-- process's; row dropout on rank r > 0 repeats the pattern of the first rows, so with
-- dropout > 0 results match one process only in distribution (without, to rounding).
local function world(opts)
  local dist = gm.distributed
  if opts and opts.alone then return 1, 0 end
  return dist.size(), dist.rank()
end

function M.trainer(d, cfg, model, opt, opts)
  local schedule = { peak = cfg.lr, min_lr = cfg.min_lr, warmup = cfg.warmup, total = cfg.steps }
  local dist = gm.distributed
  local ranks, rank = world(opts)
  if ranks > cfg.batch then
    error(string.format("trainer: %d ranks cannot share a batch of %d sequences (batch must be at least the number of ranks)",
      ranks, cfg.batch), 2)
  end
  local params = model:parameters()

  -- The forward draws one number per dropout call, and some calls depend on the rows (H-GAT's
  -- only when the rows hold a triple); one process draws as many as the rank that drew most.
  -- Each rank counts its draws (gm.rand(1) takes one number, as a dropout call does) as a
  -- one-hot vector, summed with the gradients; every rank then moves its generator that far
  -- from the common start, as one process would have.
  local MAX_DRAWS = 256
  local function count_draws(start, finish)
    gm.set_rng_state(start)
    for n = 0, MAX_DRAWS - 1 do
      if gm.get_rng_state() == finish then return n end
      gm.rand(1)
    end
    error(string.format("trainer: the forward drew more than %d random numbers", MAX_DRAWS), 0)
  end

  -- this rank's share of the masked global batch: the global loss value, with the gradients
  -- summed over the ranks
  local function shared_loss(batch)
    local first, count = shard.range(batch.ids:size(1), rank, ranks)
    local start, value = gm.get_rng_state(), 0
    if count > 0 then -- none when the epoch's last batch is shorter than the number of ranks
      local loss_opts = setmetatable({ counts = model:loss_counts(batch, cfg.loss) }, { __index = cfg.loss })
      local loss = model:loss(shard.rows(batch, first, count), loss_opts)
      if loss:requires_grad() then loss:backward() end
      value = loss:item()
    end
    local draws = gm.zeros(MAX_DRAWS)
    draws:set(1, count_draws(start, gm.get_rng_state()) + 1)
    local total = gm.tensor { value }
    dist.allreduce_grads(params, { total, draws }, { op = "sum" })
    local most = 0
    for n, ranks_with_n in ipairs(draws:totable()) do if ranks_with_n > 0 then most = n - 1 end end
    gm.set_rng_state(start)
    for _ = 1, most do gm.rand(1) end
    return total:item()
  end

  return function(step)
    local first = ((step - 1) * cfg.batch) % math.max(1, #d.train_seqs) + 1
    local batch = gm.data.masking.mask(gm.data.corpus.batch(d.train_seqs, first, cfg.batch), d.mask_opts)
    opt:set_lr(gm.optim.cosine(step, schedule))
    opt:zero_grad()
    local value, tokens
    if ranks == 1 then
      local loss = model:loss(batch, cfg.loss)
      value = loss:item()
      if finite(value) then loss:backward() end
    else
      value = shared_loss(batch)
    end
    tokens = batch.valid:sum():item()
    local bad
    if not finite(value) then
      bad = string.format("loss %s", tostring(value))
    else
      local norm = gm.optim.clip_grad_norm(params, cfg.clip)
      if not finite(norm) then bad = string.format("gradient norm %s", tostring(norm)) end
    end
    if bad then
      opt:zero_grad()
      if cfg.on_nonfinite == "skip" then return value, tokens, true end
      errors.raise("nonfinite", string.format("non-finite %s at step %d: training stopped, the last checkpoint is the " ..
        "last good state (on_nonfinite = \"skip\" in the config skips such steps instead)", bad, step))
    end
    opt:step()
    return value, tokens, false
  end
end

-- Masked-token accuracy on the held-out sequences, with fixed masks (the generator's state is
-- put back afterwards, so evaluating does not change training). Under MPI every rank draws
-- every batch's masks (the same masks as one process) but runs the model on every size()-th
-- batch only; the counts are summed over the ranks. The masks depend on the data alone, so the
-- per-sequence counts of two models pair sequence by sequence.
function M.masked_accuracy(d, cfg, model, opts)
  local dist = gm.distributed
  local ranks, rank = world(opts)
  local state = gm.get_rng_state()
  gm.manual_seed(12345)
  local hits, total, per_sequence = 0, 0, {}
  local nodes = d.layout.nodes
  model:evaluating(function()
    for first = 1, #d.eval_seqs, cfg.batch do
      local b = gm.data.masking.mask(gm.data.corpus.batch(d.eval_seqs, first, cfg.batch), d.mask_opts)
      if ((first - 1) // cfg.batch) % ranks ~= rank then goto next_batch end
      local hidden = model(b)
      for i = first, math.min(#d.eval_seqs, first + cfg.batch - 1) do per_sequence[i] = { hits = 0, total = 0 } end
      for _, part in ipairs { b.labels.roots, b.labels.leaves } do
        if #part.positions > 0 then
          local _, pred = model:logits(hidden, part.positions):max(2)
          for k, p in ipairs(pred:totable()) do
            local unit = per_sequence[first + (part.positions[k] - 1) // nodes]
            local hit = p == part.targets[k] and 1 or 0
            total, hits = total + 1, hits + hit
            unit.total, unit.hits = unit.total + 1, unit.hits + hit
          end
        end
      end
      ::next_batch::
    end
  end)
  gm.set_rng_state(state)
  if ranks > 1 then
    local counts = dist.allreduce({ gm.tensor { hits, total } })[1]:totable()
    hits, total = math.tointeger(counts[1]), math.tointeger(counts[2])
    per_sequence = nil
  end
  return total > 0 and hits / total or 0, total, per_sequence
end

return M
