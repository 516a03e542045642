-- trainer.lua — one optimisation step, and the held-out masked-token accuracy.
--   trainer(d, cfg, model, opt) → step(n) → loss, real tokens in the batch, skipped
--   masked_accuracy(d, cfg, model) → accuracy, masked tokens
-- d is gm.experiment.prepare's data (sequences, masking options), cfg a checked config.
local gm = require "graphmert"
local errors = require "graphmert.errors"

local M = {}

local function finite(x) return x == x and x ~= math.huge and x ~= -math.huge end

-- The step function trains on the n-th batch (batches wrap around the training sequences). A
-- NaN or infinite loss or gradient norm raises a "nonfinite" error naming the step before the
-- optimizer touches the weights (so the last checkpoint stays the last good state), or with
-- cfg.on_nonfinite = "skip" leaves the weights alone and goes on.
function M.trainer(d, cfg, model, opt)
  local schedule = { peak = cfg.lr, min_lr = cfg.min_lr, warmup = cfg.warmup, total = cfg.steps }
  return function(step)
    local first = ((step - 1) * cfg.batch) % math.max(1, #d.train_seqs) + 1
    local batch = gm.data.masking.mask(gm.data.corpus.batch(d.train_seqs, first, cfg.batch), d.mask_opts)
    opt:set_lr(gm.optim.cosine(step, schedule))
    opt:zero_grad()
    local loss = model:loss(batch, cfg.loss)
    local value, tokens = loss:item(), batch.valid:sum():item()
    local bad
    if not finite(value) then
      bad = string.format("loss %s", tostring(value))
    else
      loss:backward()
      local norm = gm.optim.clip_grad_norm(model:parameters(), cfg.clip)
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
-- put back afterwards, so evaluating does not change training).
function M.masked_accuracy(d, cfg, model)
  local state = gm.get_rng_state()
  gm.manual_seed(12345)
  local hits, total = 0, 0
  model:evaluating(function()
    for first = 1, #d.eval_seqs, cfg.batch do
      local b = gm.data.masking.mask(gm.data.corpus.batch(d.eval_seqs, first, cfg.batch), d.mask_opts)
      local hidden = model(b)
      for _, part in ipairs { b.labels.roots, b.labels.leaves } do
        if #part.positions > 0 then
          local _, pred = model:logits(hidden, part.positions):max(2)
          for k, p in ipairs(pred:totable()) do
            total = total + 1
            if p == part.targets[k] then hits = hits + 1 end
          end
        end
      end
    end
  end)
  gm.set_rng_state(state)
  return total > 0 and hits / total or 0, total
end

return M
