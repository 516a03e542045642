-- graphmert.optim — optimizers over lists of parameters.
return { sgd = require "graphmert.optim.sgd" }
