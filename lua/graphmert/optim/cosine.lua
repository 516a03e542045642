-- cosine.lua — the learning-rate schedule of the official GraphMERT trainer.
-- HF's cosine_with_min_lr: linear warm-up from 0 to peak over `warmup` steps, then a cosine
-- down to min_lr at `total` steps (and min_lr after). step counts from 1.
return function(step, opts)
  local peak, min_lr = opts.peak, opts.min_lr or 0
  local warmup, total = opts.warmup or 0, opts.total
  assert(peak and total, "cosine: peak and total are required")
  if step <= warmup then return peak * step / math.max(1, warmup) end
  local progress = math.min(1, (step - warmup) / math.max(1, total - warmup))
  return min_lr + (peak - min_lr) * 0.5 * (1 + math.cos(math.pi * progress))
end
