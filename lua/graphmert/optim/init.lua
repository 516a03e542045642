-- graphmert.optim — optimizers over lists of parameters, one protocol for all (step, zero_grad,
-- get_lr/set_lr, state_dict/load_state_dict), the cosine schedule, gradient clipping, and
-- logistic regression fit by Newton's method.
return {
  sgd = require "graphmert.optim.sgd",
  adamw = require "graphmert.optim.adamw",
  cosine = require "graphmert.optim.cosine",
  clip_grad_norm = require "graphmert.optim.clip",
  logistic = require "graphmert.optim.logistic",
}
