-- graphmert.optim — optimizers over lists of parameters, schedules, gradient clipping.
local schedule = require "graphmert.optim.schedule"
return {
  sgd = require "graphmert.optim.sgd",
  adamw = require "graphmert.optim.adamw",
  cosine = schedule.cosine,
  clip_grad_norm = schedule.clip_grad_norm,
}
