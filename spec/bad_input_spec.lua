-- Bad input: every public function, called wrongly, raises a Lua error that names the function,
-- the argument and the shapes; nothing crashes. A final check makes sure no public function
-- is missing from the table.
local gm = require "graphmert"

local a23, a45 = gm.ones(2, 3), gm.ones(4, 5)
local released = gm.ones(2)
released:release()
local nonleaf = gm.ones(2):requires_grad(true) * 2
local graph = gm.graph(4, { { 1, 2 } })
local released_graph = gm.graph(2, {})
released_graph:release()
local distances = gm.graph(4, { { 2, 3 } }, { directed = true }):distances { cache = false }
local released_distances = gm.graph(3, {}):distances { cache = false }
released_distances:release()

-- { function name, call, pattern the error message must match }
local rows = {
  { "tensor", function() gm.tensor { { 1, 2 }, { 3 } } end, "bad argument #1 to 'tensor' %(nested table is not rectangular%)" },
  { "tensor", function() gm.tensor { "a" } end, "not a number" },
  { "tensor", function() gm.tensor("x") end, "bad argument #1 to 'tensor' %(table expected" },
  { "zeros", function() gm.zeros(-1, 2) end, "bad argument #1 to 'zeros' %(negative size %-1%)" },
  { "zeros", function() gm.zeros(2, "x") end, "bad argument #2 to 'zeros' %(sizes must be integers%)" },
  { "zeros", function() gm.zeros(1e6, 1e6, 1e6) end, "too large" },
  { "zeros", function() gm.zeros(1, 1, 1, 1, 1, 1, 1, 1, 1) end, "too many dimensions" },
  { "ones", function() gm.ones({ 2, -3 }) end, "negative size" },
  { "full", function() gm.full("x", 2) end, "bad argument #1 to 'full' %(number expected" },
  { "randn", function() gm.randn(2, 2.5) end, "sizes must be integers" },
  { "rand", function() gm.rand(-2) end, "negative size" },
  { "arange", function() gm.arange(0, 1, 0) end, "non%-zero step" },
  { "arange", function() gm.arange(1e15) end, "too large" },
  { "manual_seed", function() gm.manual_seed("x") end, "bad argument #1 to 'manual_seed'" },
  { "set_rng_state", function() gm.set_rng_state("short") end, "not a state from get_rng_state" },
  { "set_memory_limit", function() gm.set_memory_limit(-1) end, "limit must be >= 0" },
  { "set_memory_cache_limit", function() gm.set_memory_cache_limit(-5) end, "bad argument #1 to 'set_memory_cache_limit' %(limit must be >= 0 bytes%)" },
  { "set_num_threads", function() gm.set_num_threads(0) end, "thread count must be in" },
  { "set_float32_matmul_precision", function() gm.set_float32_matmul_precision("fast") end,
    "bad argument #1 to 'set_float32_matmul_precision' %(invalid option 'fast'%)" },
  { "set_attention_keep_scores", function() gm.set_attention_keep_scores("yes") end,
    "bad argument #1 to 'set_attention_keep_scores' %(boolean expected, got string%)" },
  { "set_grad_enabled", function() gm.set_grad_enabled() end, "bad argument #1 to 'set_grad_enabled'" },
  { "no_grad", function() gm.no_grad(42) end, "bad argument #1 to 'no_grad' %(function expected" },
  { "add", function() return a23 + a45 end, "size mismatch: 2x3 and 4x5 do not broadcast" },
  { "add", function() return a23 + "x" end, "bad argument #2 to 'add'" },
  { "sub", function() return gm.sub(a23, a45) end, "bad argument #2 to 'sub' %(size mismatch: 2x3 and 4x5" },
  { "mul", function() return a23 * {} end, "graphmert.Tensor expected" },
  { "div", function() return a23 / a45 end, "size mismatch" },
  { "pow", function() return a23 ^ a23 end, "bad argument #2 to 'pow' %(number expected" },
  { "neg", function() return gm.neg(42) end, "bad argument #1 to 'neg'" },
  { "exp", function() return gm.exp() end, "bad argument #1 to 'exp'" },
  { "log", function() return gm.log("x") end, "bad argument #1 to 'log'" },
  { "sqrt", function() return released:sqrt() end, "attempt to use a released tensor" },
  { "tanh", function() return gm.tanh(nil) end, "bad argument #1 to 'tanh'" },
  { "gelu", function() return a23:gelu("cubic") end, "invalid option 'cubic'" },
  { "relu", function() return gm.relu({}) end, "bad argument #1 to 'relu'" },
  { "leaky_relu", function() return a23:leaky_relu("x") end, "bad argument #1 to 'leaky_relu'" },
  { "sum", function() return a23:sum(3) end, "bad argument #1 to 'sum' %(dimension 3 out of range" },
  { "mean", function() return a23:mean(0) end, "dimension 0 out of range" },
  { "max", function() return gm.zeros(0):max() end, "max of an empty dimension" },
  { "softmax", function() return a23:softmax(-3) end, "dimension %-3 out of range" },
  { "log_softmax", function() return gm.tensor(1):log_softmax() end, "needs at least one dimension" },
  { "matmul", function() return a23:matmul(a45) end, "bad argument #1 to 'matmul' %(size mismatch: 2x3 @ 4x5%)" },
  { "matmul", function() return gm.matmul(a23, a45) end, "bad argument #2 to 'matmul' %(size mismatch: 2x3 @ 4x5%)" },
  { "matmul", function() return gm.matmul(gm.ones(3), gm.ones(3)) end, "matmul needs matrices" },
  { "matmul", function() return gm.matmul(gm.ones(2, 2, 3), gm.ones(3, 3, 4)) end, "size mismatch: 2x2x3 @ 3x3x4" },
  { "reshape", function() return a23:reshape(4, 2) end, "cannot reshape a tensor of size 2x3 into 4x2" },
  { "reshape", function() return a23:reshape(-1, -1) end, "invalid size %-1" },
  { "reshape", function() return a23:reshape(3, math.maxinteger, -1) end,
    "cannot reshape a tensor of size 2x3 into 3x9223372036854775807x%-1" },
  { "view", function() return a23:view("a") end, "sizes must be integers" },
  { "transpose", function() return a23:transpose(1, 5) end, "dimension 5 out of range" },
  { "permute", function() return a23:permute(1, 1) end, "permutation is not a reordering" },
  { "permute", function() return a23:permute(1) end, "permutation of 1 dimensions for a 2%-dimensional tensor" },
  { "cat", function() return gm.cat({ a23, a45 }, 2) end, "size mismatch in concat along dimension 2: tensor 1 is 2x3, tensor 2 is 4x5" },
  { "cat", function() return gm.cat({}) end, "non%-empty list" },
  { "concat", function() return gm.concat({ a23, 3 }) end, "element 2 is not a live tensor" },
  { "narrow", function() return a23:narrow(2, 3, 2) end, "narrow of length 2 from position 3 is out of range for dimension 2 of size 2x3" },
  { "narrow", function() return a23:narrow(2, math.mininteger, 1) end, "bad argument #2 to 'narrow' %(start must be at least 1%)" },
  { "narrow", function() return a23:narrow(2, 1, math.maxinteger) end, "narrow of length 9223372036854775807 from position 1" },
  { "index_select", function() return a23:index_select(1, { 3 }) end, "index 3 at position 1 is out of range %[1, 2%]" },
  { "index_select", function() return a23:index_select(1, { 1.5 }) end, "out of range" },
  { "index_select", function() return a23:index_select(1, gm.ones(1, 1)) end, "needs a 1%-D index" },
  { "top_sums", function() return a23:top_sums({ 1, 7 }, 2, 1) end, "index 7 at position 2 is out of range %[1, 6%]" },
  { "top_sums", function() return a23:top_sums({ 1, 2, 3 }, 2, 1) end, "3 indices are not whole groups of 2" },
  { "top_sums", function() return a23:top_sums({ 1, 2 }, 0, 1) end, "needs a width and a k of at least 1" },
  { "top_sums", function() return a23:top_sums({ 1, 2 }, 2, 0) end, "needs a width and a k of at least 1" },
  { "sum_set", function() return gm.sum_set({ 1, 2, 3 }, 2) end, "3 indices are not whole groups of 2" },
  { "sum_set", function() return gm.sum_set({ 1, 2 }, 0) end, "bad argument #2 to 'sum_set' %(a width from 1 to 2%^20 expected%)" },
  { "sum_set", function() return gm.sum_set({ 1, 0.5 }, 2) end, "index 0.5 at position 2 is not an element number from 1" },
  { "sum_set", function() return gm.sum_set({ 1, -3 }, 2) end, "index %-3 at position 2 is not an element number from 1" },
  { "sum_set", function() return gm.sum_set("x", 2) end, "bad argument #1 to 'sum_set'" },
  { "sum_set", function() return gm.sum_set({ 1 / 0, 2 }, 2) end, "index inf at position 1 is not an element number from 1" },
  { "sum_set", function() return gm.sum_set({ 0 / 0, 2 }, 2) end, "index %-?nan at position 1 is not an element number from 1" },
  { "atomic_writer", function() local w <close> = gm.atomic_writer { os.tmpname() }; w:write(1, "a", {}) end, "bad argument #3 to 'write'" },
  { "sum_set", function() return gm.sum_set({ 1, 7 }, 2):top(a23, 1) end, "its elements reach 7, the tensor has 6" },
  { "sum_set", function() return gm.sum_set({ 1, 2 }, 2):top(a23, 0) end, "k must be at least 1" },
  { "sum_set", function() return gm.sum_set({ 1, 2 }, 2):top({ 1, 2 }, 1) end, "bad argument #1 to 'top' %(graphmert.Tensor expected" },
  { "sum_set", function() local s = gm.sum_set({ 1, 2 }, 2); getmetatable(s).__gc(s); return s:top(a23, 1) end, "a released sum set" },
  { "gather", function() return a23:gather(2, gm.ones(5, 1)) end, "gather index of size 5x1 does not fit a tensor of size 2x3" },
  { "layer_norm", function() return a23:layer_norm(gm.ones(4)) end, "layer_norm weight of size 4 does not match input 2x3" },
  { "layer_norm", function() return a23:layer_norm(nil, gm.ones(2)) end, "bias of size 2" },
  { "dropout", function() return a23:dropout(1.5) end, "dropout probability must be in %[0, 1%]" },
  { "cross_entropy", function() return a23:cross_entropy({ 1, 4 }) end, "target 4 at position 2 is not a class in %[1, 3%]" },
  { "cross_entropy", function() return a23:cross_entropy({ 1 }) end, "logits NxC and target N %(got 2x3 and 1%)" },
  { "cross_entropy", function() return a23:cross_entropy({ 1, 2 }, { ignore_index = "x" }) end, "ignore_index must be an integer" },
  { "embedding", function() return gm.embedding(a23, { 7 }) end, "^embedding: token id 7 at position 1 is out of range %[1, 2%]" },
  { "gradcheck", function() return gm.gradcheck(42, {}) end, "bad argument #1 to 'gradcheck'" },
  { "t", function() return gm.ones(2, 2, 2):t() end, "bad argument #1 to 't' %(t%(%) needs a matrix, got size 2x2x2%)" },
  { "sigmoid", function() return gm.sigmoid(released) end, "released tensor" },
  -- graphs, distances and the decay mask
  { "graph", function() return gm.graph(3, { { 1, 4 } }) end, "bad argument #2 to 'graph' %(edge 1 joins node 4, outside %[1, 3%]%)" },
  { "graph", function() return gm.graph(0, {}) end, "number of nodes must be in %[1," },
  { "graph", function() return gm.graph(3, { { 2, 1 }, { math.mininteger, 1 } }) end, "edge 2 joins node %-9223372036854775808, outside %[1, 3%]" },
  { "graph", function() return gm.graph(3, { 1, 2 }) end, "edge 1 is not a {u, v} pair" },
  { "graph", function() return gm.graph(3, { { 1, "x" } }) end, "edge 1 is not a pair of integers" },
  { "graph", function() return gm.graph(3) end, "bad argument #2 to 'graph' %(table expected" },
  { "leafy_chain", function() return gm.leafy_chain { roots = 0, leaves = 7 } end, "roots >= 1, leaves >= 0 .*0 roots" },
  { "leafy_chain", function() return gm.leafy_chain { roots = 4, leaves = -1 } end, "leaves >= 0" },
  { "leafy_chain", function() return gm.leafy_chain { roots = 1e9, leaves = 1e9 } end, "at most %d+ nodes" },
  { "leafy_chain", function() return gm.leafy_chain { roots = 4, leaves = 1, leaf_edges = "star" } end, "leaf_edges must be" },
  { "leafy_chain", function() return gm.leafy_chain { leaves = 1 } end, "roots must be an integer" },
  { "decay_mask", function() return gm.decay_mask(gm.zeros(2, 3, 1), { lambda = 0.6 }) end, "bad argument #1 to 'decay_mask' %(distances must be a matrix %(got 2x3x1%)%)" },
  { "decay_mask", function() return gm.decay_mask(gm.zeros(2, 2), { lambda = 2 }) end, "bad argument #2 to 'decay_mask' %(lambda must be in %(0, 1%]" },
  { "decay_mask", function() return gm.decay_mask(gm.zeros(2, 2)) end, "bad argument #2 to 'decay_mask' %(table expected" },
  { "decay_mask", function() return gm.decay_mask(gm.zeros(2, 2), { p = "x" }) end, "p must be a number or a tensor" },
  { "graph:num_nodes", function() return released_graph:num_nodes() end, "attempt to use a released graph" },
  { "graph:num_edges", function() return released_graph:num_edges() end, "released graph" },
  { "graph:neighbors", function() return graph:neighbors(5) end, "bad argument #1 to 'neighbors' %(node 5 out of range %[1, 4%]%)" },
  { "graph:adjacency", function() return released_graph:adjacency() end, "released graph" },
  { "graph:shortest_paths", function() return graph:shortest_paths { method = "dijkstra" } end, "method must be" },
  { "graph:distances", function() return graph:distances { method = "closed_form" } end, "only for leafy chains" },
  { "graph:edges", function() return released_graph:edges() end, "released graph" },
  { "graph:is_directed", function() return released_graph:is_directed() end, "released graph" },
  { "graph:config", function() return released_graph:config() end, "released graph" },
  { "graph:release", function() return graph.release(42) end, "graphmert.Graph expected" },
  { "distances:get", function() return distances:get(0, 1) end, "bad argument #1 to 'get' %(node out of range%)" },
  { "distances:tensor", function() return released_distances:tensor() end, "attempt to use released distances" },
  { "distances:num_nodes", function() return released_distances:num_nodes() end, "released distances" },
  { "distances:max_hops", function() return released_distances:max_hops() end, "released distances" },
  { "distances:bytes", function() return released_distances:bytes() end, "released distances" },
  { "distances:release", function() return distances.release("x") end, "graphmert.Distances expected" },
  { "attention", function() return gm.attention(a23, a23, a23) end, "bad argument #1 to 'attention' %(attention needs q %[B,H,L,d%]" },
  { "attention", function() local q = gm.ones(1, 1, 2, 2) return gm.attention(q, q, q, { attn_mask = gm.ones(3, 3) }) end, "bad argument #4 to 'attention' %(attn_mask of size 3x3 does not fit" },
  { "attention", function() local q = gm.ones(1, 1, 2, 2) return gm.attention(q, q, q, 5) end, "bad argument #4 to 'attention' %(table expected" },
  { "attention", function() local q = gm.ones(1, 1, 2, 2) return gm.attention(q, q, q, { decay = "x" }) end, "decay must be a tensor or a table" },
  { "adamw_step", function() return gm.adamw_step(gm.ones(2), gm.ones(3), gm.ones(2), gm.ones(2), { step = 1 }) end, "bad argument #2 to 'adamw_step' %(adamw: gradient or state of size 3 for a parameter of size 2%)" },
  { "adamw_step", function() return gm.adamw_step(gm.ones(2), gm.ones(2), gm.ones(2), gm.ones(2), { step = 1, lr = "x" }) end, "lr must be a number" },
  { "tensor_from_bytes", function() return gm.tensor_from_bytes("abcd", 0, 4, { 2 }) end, "4 bytes for a F32 tensor of size 2 %(needs 8%)" },
  { "tensor_from_bytes", function() return gm.tensor_from_bytes("abcd", 2, 4, { 1 }) end, "bad argument #3 to 'tensor_from_bytes' %(byte range outside the string%)" },
  { "tensor_from_bytes", function() return gm.tensor_from_bytes("abcd", 0, 4, { 1 }, "I8") end, "invalid option 'I8'" },
  { "tensor_from_bytes", function() return gm.tensor_from_bytes("abcd", 0, 4, { 3 }, "BF16") end, "4 bytes for a BF16 tensor of size 3 %(needs 6%)" },
  { "torch_load", function() return gm.torch_load(nil) end, "bad argument #1 to 'torch_load' %(string expected" },
  { "torch_load", function() return gm.torch_load("x.pt", 5) end, "bad argument #2 to 'torch_load' %(table expected" },
  { "torch_load", function() return gm.torch_load("x.pt", { skip = true }) end, "bad argument #2 to 'torch_load' %(unknown option skip" },
  { "write_atomic", function() return gm.write_atomic("/tmp/x", { 42 }) end, "part 1 is neither a string nor a tensor" },
  { "write_atomic", function() return gm.write_atomic(nil, {}) end, "bad argument #1 to 'write_atomic'" },
  { "write_atomic", function() return gm.write_atomic { { "/tmp/x" } } end, "bad argument #1 to 'write_atomic' %(entry 1 is not a {path, parts} pair%)" },
  { "write_atomic", function() return gm.write_atomic {} end, "1 to 64 {path, parts} pairs expected" },
  { "atomic_writer", function() return gm.atomic_writer {} end, "bad argument #1 to 'atomic_writer' %(1 to 64 paths expected%)" },
  { "atomic_writer", function() return gm.atomic_writer { "/tmp/x", 3 } end, "entry 2 is not a path" },
  { "atomic_writer", function() return gm.atomic_writer("/tmp/x") end, "bad argument #1 to 'atomic_writer' %(table expected" },
  { "atomic_writer", function() return gm.atomic_writer { "/nonexistent/folder/x" } end, "/nonexistent/folder/x.tmp.%d+: No such file or directory" },
  { "atomic_writer", function() local w <close> = gm.atomic_writer { os.tmpname() }; w:write(2, "x") end, "bad argument #1 to 'write' %(no such file%)" },
  { "atomic_writer", function() local w <close> = gm.atomic_writer { os.tmpname() }; w:write(1, {}) end, "bad argument #2 to 'write' %(string expected" },
  { "atomic_writer", function() local w = gm.atomic_writer { os.tmpname() }; w:close(); w:write(1, "x") end, "already committed or closed" },
  { "atomic_writer", function() local w = gm.atomic_writer { os.tmpname() }; assert(w:commit()); w:commit() end, "already committed or closed" },
  { "stat", function() return gm.stat({}) end, "bad argument #1 to 'stat' %(string expected" },
  { "file_digest", function() return gm.file_digest({}) end, "bad argument #1 to 'file_digest' %(string expected" },
  { "lock_file", function() return gm.lock_file({}) end, "bad argument #1 to 'lock_file' %(string expected" },
  { "lock_file", function() error(select(2, gm.lock_file("/nonexistent/folder/x.journal")), 0) end,
    "/nonexistent/folder/x.journal: No such file or directory" },
  { "lock_file", function() error(select(2, gm.lock_file("/tmp")), 0) end, "/tmp: Is a directory" },
  { "without_interrupts", function() return gm.without_interrupts(5) end, "bad argument #1 to 'without_interrupts' %(function expected" },
  { "isatty", function() return gm.isatty(-1) end, "bad argument #1 to 'isatty' %(a file descriptor expected%)" },
  { "realpath", function() return gm.realpath() end, "bad argument #1 to 'realpath' %(string expected" },
  { "read_file", function() return gm.read_file("/dev/zero") end, "/dev/zero: a device, not a regular file" },
  { "read_file", function() return gm.read_file("Makefile", -1) end, "bad argument #2 to 'read_file' %(offset must be >= 0%)" },
  { "read_file", function() return gm.read_file("Makefile", 0, 1 << 40) end, "lie past the end of the file" },
  { "read_file", function() return gm.read_file("/nonexistent/x") end, "/nonexistent/x: No such file or directory" },
  { "load_tables", function() return gm.load_tables("/dev/zero") end, "load_tables: /dev/zero: a device, not a regular file" },
  { "load_tables", function() return gm.load_tables("Makefile") end, "load_tables: Makefile: no GMTABLES mark at byte 0" },
  { "load_tables", function() return gm.load_tables() end, "bad argument #1 to 'load_tables' %(string expected" },
  { "load_tables", function() return gm.load_tables("Makefile", "lazy") end, "bad argument #2 to 'load_tables' %(table expected" },
  { "table_find", function() return gm.table_find({}, {}) end, "bad argument #1 to 'table_find' %(graphmert.TableMap expected, got table%)" },
  { "table_find", function()
      local path = os.tmpname()
      gm.write_atomic(path, { gm.pack_tables { t = { a = "b" } } })
      local map = gm.load_tables(path, { lazy = true }).t
      os.remove(path)
      return gm.table_find(map, "a")
    end, "bad argument #2 to 'table_find' %(table expected, got string%)" },
  { "pack_tables", function() return gm.pack_tables { t = { 1, 2 } } end, "pack_tables: table 't' has a number key %(keys must be strings%)" },
  { "pack_tables", function() return gm.pack_tables { t = { a = "x", b = true } } end, "all values must be strings, or all true" },
  { "pack_tables", function() return gm.pack_tables { t = { a = false } } end, "at key 'a' holds a boolean" },
  { "pack_tables", function() return gm.pack_tables { "x" } end, "bad argument #1 to 'pack_tables' %(name → table pairs expected%)" },
  { "tensor_from_file", function() return gm.tensor_from_file("Makefile", 0, 4, { 2 }) end, "4 bytes for a F32 tensor of size 2" },
  { "tensor_from_file", function() return gm.tensor_from_file("Makefile", 0, -4, { 1 }) end, "bad argument #3 to 'tensor_from_file' %(byte count must be >= 0%)" },
  { "tensor_from_file", function() return gm.tensor_from_file("Makefile", 1 << 40, 4, { 1 }) end, "lie past the end of the file" },
  { "tensor_from_file", function() return gm.tensor_from_file("/dev/zero", 0, 4, { 1 }) end, "a device, not a regular file" },
  { "to_bytes", function() return released:to_bytes() end, "released tensor" },
  { "hgat", function() return gm.hgat(gm.ones(2, 3), gm.ones(2, 4), gm.ones(1, 3, 3), gm.ones(1, 6), { 1, 1 }, { 1, 1 }, { 1, 1 }) end, "bad argument #1 to 'hgat' %(hgat needs tails %[n, H%] and heads %[m, H%] %(got 2x3 and 2x4%)%)" },
  { "hgat", function() return gm.hgat(gm.ones(2, 3), gm.ones(2, 3), gm.ones(1, 3, 3), gm.ones(1, 6), { 1 }, { 1, 1 }, { 1, 1 }) end, "hgat index 1 must have one entry per tail" },
  { "index_add", function() return gm.index_add(gm.ones(3, 2), { 1 }, gm.ones(2, 2)) end, "bad argument #3 to 'index_add' %(index_add needs src" },
  -- methods
  { "release", function() return a23.release(42) end, "graphmert.Tensor expected" },
  { "is_released", function() return a23.is_released("x") end, "graphmert.Tensor expected" },
  { "shape", function() return released:shape() end, "released tensor" },
  { "size", function() return a23:size(3) end, "dimension 3 out of range" },
  { "dim", function() return a23.dim(nil) end, "graphmert.Tensor expected" },
  { "numel", function() return released:numel() end, "released tensor" },
  { "item", function() return a23:item() end, "item needs exactly one element %(size 2x3%)" },
  { "totable", function() return released:totable() end, "released tensor" },
  { "get", function() return a23:get(3, 1) end, "index 3 out of range %[1, 2%]" },
  { "get", function() return a23:get(1) end, "1 indices for a 2%-dimensional tensor" },
  { "set", function() return a23:set("x", 1, 1) end, "number expected" },
  { "get_flat", function() return a23:get_flat(7) end, "flat index 7 out of range %[1, 6%]" },
  { "set_flat", function() return a23:set_flat(0, 1) end, "flat index 0 out of range" },
  { "requires_grad", function() return nonleaf:requires_grad(false) end, "only be changed on a leaf" },
  { "is_leaf", function() return released:is_leaf() end, "released tensor" },
  { "grad_fn", function() return released:grad_fn() end, "released tensor" },
  { "backward", function() return a23:backward() end, "does not require grad" },
  { "backward", function() return nonleaf:backward() end, "backward needs a scalar %(got size 2%)" },
  { "grad", function() return released:grad() end, "released tensor" },
  { "zero_grad", function() return released:zero_grad() end, "released tensor" },
  { "detach", function() return released:detach() end, "released tensor" },
  { "clone", function() return released:clone() end, "released tensor" },
  { "fill_", function() return a23:fill_("x") end, "number expected" },
  { "zero_", function() return nonleaf:zero_() end, "recorded graph" },
  { "copy_", function() return a23:copy_(a45) end, "size mismatch: 2x3 and 4x5" },
  { "add_", function() return a23:add_(a45) end, "size mismatch" },
  { "mul_", function() return a23:mul_(a23) end, "number expected" },
  { "shape_string", function() return released:shape_string() end, "released tensor" },
  { "solve", function() return gm.solve(a23, a45) end, "bad argument #2 to 'solve' %(solve needs A %[..., n, n%] and B %[..., n, k%] with the same batch %(got 2x3 and 4x5%)%)" },
  { "solve", function() return gm.solve(gm.zeros(2, 2), gm.ones(2, 1)) end, "bad argument #1 to 'solve' %(solve: matrix 1 of the batch is singular%)" },
  { "segment_softmax", function() return gm.segment_softmax(a23, gm.tensor { 1, 2, 3 }, 2) end, "one index per row %(got scores 2x3, index 3%)" },
  { "segment_softmax", function() return gm.segment_softmax(a23, gm.tensor { 1, 3 }, 2) end, "bad argument #2 to 'segment_softmax' %(segment_softmax: index 3 at position 2 is not a group in %[1, 2%]%)" },
  { "segment_softmax", function() return gm.segment_softmax(a23, gm.tensor { 1, 1 }, -1) end, "group count %-1 is negative" },
  { "segment_softmax", function() return gm.segment_softmax(a23, gm.tensor { 1, 1e30 }, 2) end, "index 1e%+30 at position 2 is not a group" },
  { "segment_softmax", function() return gm.segment_softmax(a23, gm.tensor { 0 / 0, 1 }, 2) end, "index %-?nan at position 1 is not a group" },
}

describe("bad input", function()
  for _, row in ipairs(rows) do
    it(row[1] .. " raises: " .. row[3], function()
      local ok, err = pcall(row[2])
      assert.is_false(ok)
      assert.matches(row[3], tostring(err))
    end)
  end

  it("gm.file_digest tells files by their bytes, not their times, and refuses what is no regular file", function()
    local path = os.tmpname()
    local function put(s) local f = assert(io.open(path, "wb")); f:write(s); f:close() end
    put("one passage\n")
    local d1, size = gm.file_digest(path)
    assert.matches("^%x+$", d1)
    assert.equal(16, #d1)
    assert.equal(12, size)
    os.execute("touch -d '+1 minute' " .. path)
    assert.equal(d1, (gm.file_digest(path)))
    put("one passagf\n")
    assert.not_equal(d1, (gm.file_digest(path)))
    put("one passage\n\0")
    assert.not_equal(d1, (gm.file_digest(path)))
    os.remove(path)
    local none, err = gm.file_digest(path)
    assert.is_nil(none)
    assert.matches("No such file", err)
    local _, dir_err = gm.file_digest("/tmp")
    assert.matches("/tmp: a directory, not a regular file", dir_err)
  end)

  it("covers every public function and method", function()
    local covered = {}
    for _, row in ipairs(rows) do covered[row[1]] = true end
    -- functions that take no arguments, or accept any value
    local no_input = { clock = true, memory = true, reset_peak_memory = true, get_num_threads = true,
      config = true, get_float32_matmul_precision = true, get_attention_keep_scores = true,
      is_grad_enabled = true, get_rng_state = true, is_tensor = true, version = true, type = true,
      graph_cache_clear = true, graph_cache_stats = true, release_memory_cache = true, autograd_ops = true,
      nn = true, optim = true, class = true }
    local missing = {}
    for name, v in pairs(gm) do
      if type(v) == "function" and not covered[name] and not no_input[name] then
        missing[#missing + 1] = name
      end
    end
    for name in pairs(getmetatable(a23).methods) do
      if not covered[name] and not no_input[name] then missing[#missing + 1] = "method " .. name end
    end
    for kind, object in pairs { graph = graph, distances = distances } do
      for name in pairs(getmetatable(object).__index) do
        if not covered[kind .. ":" .. name] then missing[#missing + 1] = kind .. ":" .. name end
      end
    end
    table.sort(missing)
    assert.same({}, missing)
  end)
end)
