/* lgm_ops.c — tensor ops for Lua: each is registered as gm.<op>(t, ...), as the method
 * t:<op>(...) and, for arithmetic, as the operator metamethods. Dimensions and indices are
 * 1-based here and 0-based in the core. */
#include "lgm.h"

#define UNARY_OP(NAME, CALL)                  \
  static int o_##NAME(lua_State *L) {         \
    gm_tensor *a = lgm_check_tensor(L, 1);    \
    lgm_box *b = lgm_new_box(L);              \
    return lgm_finish(L, b, CALL);                \
  }

UNARY_OP(neg, gm_neg(a))
UNARY_OP(exp, gm_exp(a))
UNARY_OP(log, gm_log(a))
UNARY_OP(sqrt, gm_sqrt(a))
UNARY_OP(tanh, gm_tanh(a))
UNARY_OP(relu, gm_relu(a))

static int o_gelu(lua_State *L) {
  gm_tensor *a = lgm_check_tensor(L, 1);
  static const char *const modes[] = {"none", "tanh", NULL};
  int tanh_form = luaL_checkoption(L, 2, "none", modes);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, tanh_form ? gm_gelu_tanh(a) : gm_gelu(a));
}

static int o_leaky_relu(lua_State *L) {
  gm_tensor *a = lgm_check_tensor(L, 1);
  float slope = (float)luaL_optnumber(L, 2, 0.01);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_leaky_relu(a, slope));
}

/* ---- arithmetic: tensor ∘ tensor, tensor ∘ number, number ∘ tensor ------------------------ */

typedef enum { ARITH_ADD, ARITH_SUB, ARITH_MUL, ARITH_DIV } arith;

static gm_tensor *tensor_tensor(gm_tensor *x, gm_tensor *y, arith op) {
  switch (op) {
    case ARITH_ADD: return gm_add(x, y);
    case ARITH_SUB: return gm_sub(x, y);
    case ARITH_MUL: return gm_mul(x, y);
    default: return gm_div(x, y);
  }
}

static gm_tensor *tensor_number(gm_tensor *x, float s, arith op) {
  switch (op) {
    case ARITH_ADD: return gm_add_scalar(x, s);
    case ARITH_SUB: return gm_add_scalar(x, -s);
    case ARITH_MUL: return gm_mul_scalar(x, s);
    default: { /* a true division, as PyTorch does (x * (1/s) can differ in the last bit) */
      gm_tensor *c = gm_tensor_full(0, NULL, s);
      gm_tensor *r = c ? gm_div(x, c) : NULL;
      gm_tensor_release(c);
      return r;
    }
  }
}

static gm_tensor *number_tensor(float s, gm_tensor *y, arith op) {
  switch (op) {
    case ARITH_ADD: return gm_add_scalar(y, s);
    case ARITH_MUL: return gm_mul_scalar(y, s);
    case ARITH_DIV: return gm_rdiv_scalar(y, s);
    default: { /* s - y = (-y) + s */
      gm_tensor *n = gm_neg(y);
      gm_tensor *r = n ? gm_add_scalar(n, s) : NULL;
      gm_tensor_release(n);
      return r;
    }
  }
}

static int arithmetic(lua_State *L, arith op) {
  gm_tensor *r;
  lgm_box *b;
  if (lua_type(L, 1) == LUA_TNUMBER) {
    float s = (float)lua_tonumber(L, 1);
    gm_tensor *y = lgm_check_tensor(L, 2);
    b = lgm_new_box(L);
    r = number_tensor(s, y, op);
  } else if (lua_type(L, 2) == LUA_TNUMBER) {
    gm_tensor *x = lgm_check_tensor(L, 1);
    float s = (float)lua_tonumber(L, 2);
    b = lgm_new_box(L);
    r = tensor_number(x, s, op);
  } else {
    gm_tensor *x = lgm_check_tensor(L, 1), *y = lgm_check_tensor(L, 2);
    b = lgm_new_box(L);
    r = tensor_tensor(x, y, op);
  }
  return lgm_finish(L, b, r);
}

static int o_add(lua_State *L) { return arithmetic(L, ARITH_ADD); }
static int o_sub(lua_State *L) { return arithmetic(L, ARITH_SUB); }
static int o_mul(lua_State *L) { return arithmetic(L, ARITH_MUL); }
static int o_div(lua_State *L) { return arithmetic(L, ARITH_DIV); }

static int o_pow(lua_State *L) {
  gm_tensor *a = lgm_check_tensor(L, 1);
  float p = (float)luaL_checknumber(L, 2);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_pow_scalar(a, p));
}

/* ---- reductions and softmax -------------------------------------------------------------- */

/* dim argument: nil means all dimensions (-1 in the core) */
static int opt_dim(lua_State *L, int arg, const gm_tensor *t) {
  return lua_isnoneornil(L, arg) ? -1 : lgm_check_dim(L, arg, t->ndim);
}

static int o_sum(lua_State *L) {
  gm_tensor *a = lgm_check_tensor(L, 1);
  int dim = opt_dim(L, 2, a), keep = lua_toboolean(L, 3);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_sum(a, dim, keep));
}

static int o_mean(lua_State *L) {
  gm_tensor *a = lgm_check_tensor(L, 1);
  int dim = opt_dim(L, 2, a), keep = lua_toboolean(L, 3);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_mean(a, dim, keep));
}

/* t:max() → the largest value; t:max(dim[, keepdim]) → values, 1-based indices */
static int o_max(lua_State *L) {
  gm_tensor *a = lgm_check_tensor(L, 1);
  int dim = opt_dim(L, 2, a), keep = lua_toboolean(L, 3);
  lgm_box *values = lgm_new_box(L);
  lgm_box *indices = lgm_new_box(L);
  gm_tensor *idx = NULL;
  gm_tensor *r = gm_max(a, dim, keep, &idx);
  if (!r) return lgm_raise(L);
  lgm_box_set(L, values, r);
  /* a new tensor: the 0-based one may be saved for backward */
  gm_tensor *one_based = gm_add_scalar(idx, 1.0f);
  gm_tensor_release(idx);
  if (!one_based) return lgm_raise(L);
  lgm_box_set(L, indices, one_based);
  return dim < 0 ? (lua_pop(L, 1), 1) : 2;
}

static int softmax_like(lua_State *L, int log_form) {
  gm_tensor *a = lgm_check_tensor(L, 1);
  int dim = lua_isnoneornil(L, 2) ? a->ndim - 1 : lgm_check_dim(L, 2, a->ndim);
  if (a->ndim == 0) return luaL_argerror(L, 1, "softmax needs at least one dimension");
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, log_form ? gm_log_softmax(a, dim) : gm_softmax(a, dim));
}

static int o_softmax(lua_State *L) { return softmax_like(L, 0); }
static int o_log_softmax(lua_State *L) { return softmax_like(L, 1); }

/* ---- products and shapes ----------------------------------------------------------------- */

/* matmul(a, b[, transpose_a[, transpose_b]]): the flags read a's or b's last two dimensions
 * transposed, without a copy */
static int o_matmul(lua_State *L) {
  gm_tensor *a = lgm_check_tensor(L, 1), *m = lgm_check_tensor(L, 2);
  int ta = lua_toboolean(L, 3), tb = lua_toboolean(L, 4);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_matmul(a, m, ta, tb));
}

/* reshape(d1, d2, ...) or reshape({d1, d2}); one size may be -1 */
static int o_reshape(lua_State *L) {
  gm_tensor *a = lgm_check_tensor(L, 1);
  int64_t shape[GM_MAX_DIMS];
  int n = 0, table = lua_istable(L, 2), count = table ? (int)luaL_len(L, 2) : lua_gettop(L) - 1;
  if (count > GM_MAX_DIMS) return luaL_argerror(L, 2, "too many dimensions (at most 8)");
  for (int i = 0; i < count; i++) {
    int isnum;
    if (table) lua_geti(L, 2, i + 1);
    lua_Integer v = lua_tointegerx(L, table ? -1 : i + 2, &isnum);
    if (table) lua_pop(L, 1);
    if (!isnum) return luaL_argerror(L, table ? 2 : i + 2, "sizes must be integers");
    shape[n++] = (int64_t)v;
  }
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_reshape(a, n, shape));
}

static int o_transpose(lua_State *L) {
  gm_tensor *a = lgm_check_tensor(L, 1);
  if (lua_isnone(L, 2) && a->ndim != 2)
    return luaL_argerror(L, 2, "transpose without dimensions needs a matrix");
  int d0 = lua_isnone(L, 2) ? 0 : lgm_check_dim(L, 2, a->ndim);
  int d1 = lua_isnone(L, 2) ? 1 : lgm_check_dim(L, 3, a->ndim);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_transpose(a, d0, d1));
}

/* permute(p1, p2, ...) or permute({p1, p2, ...}) with 1-based dimensions */
static int o_permute(lua_State *L) {
  gm_tensor *a = lgm_check_tensor(L, 1);
  int perm[GM_MAX_DIMS], table = lua_istable(L, 2);
  int count = table ? (int)luaL_len(L, 2) : lua_gettop(L) - 1;
  if (count != a->ndim) {
    lua_pushfstring(L, "permutation of %d dimensions for a %d-dimensional tensor", count, a->ndim);
    return luaL_argerror(L, 2, lua_tostring(L, -1));
  }
  for (int i = 0; i < count; i++) {
    if (table) {
      lua_geti(L, 2, i + 1);
      perm[i] = lgm_check_dim(L, -1, a->ndim);
      lua_pop(L, 1);
    } else {
      perm[i] = lgm_check_dim(L, i + 2, a->ndim);
    }
  }
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_permute(a, perm));
}

/* cat({t1, t2, ...}[, dim = 1]) */
static int o_cat(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int n = (int)luaL_len(L, 1);
  luaL_argcheck(L, n >= 1, 1, "cat needs a non-empty list of tensors");
  gm_tensor **ts = lua_newuserdatauv(L, (size_t)n * sizeof *ts, 0); /* collected by Lua */
  for (int i = 0; i < n; i++) {
    lua_geti(L, 1, i + 1);
    lgm_box *bx = luaL_testudata(L, -1, LGM_TENSOR);
    if (!bx || !bx->t) {
      lua_pushfstring(L, "element %d is not a live tensor", i + 1);
      return luaL_argerror(L, 1, lua_tostring(L, -1));
    }
    ts[i] = bx->t;
    lua_pop(L, 1);
  }
  int dim = lua_isnoneornil(L, 2) ? 0 : lgm_check_dim(L, 2, ts[0]->ndim);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_concat(ts, n, dim));
}

/* narrow(dim, start, length) with a 1-based start */
static int o_narrow(lua_State *L) {
  gm_tensor *a = lgm_check_tensor(L, 1);
  int dim = lgm_check_dim(L, 2, a->ndim);
  lua_Integer start = luaL_checkinteger(L, 3), length = luaL_checkinteger(L, 4);
  luaL_argcheck(L, start >= 1, 3, "start must be at least 1");
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_narrow(a, dim, (int64_t)start - 1, (int64_t)length));
}

/* index_select(dim, index) and gather(dim, index) with 1-based indices in a tensor or a table */
static int indexing(lua_State *L, gm_tensor *(*op)(gm_tensor *, int, gm_tensor *, int)) {
  gm_tensor *a = lgm_check_tensor(L, 1);
  int dim = lgm_check_dim(L, 2, a->ndim);
  gm_tensor *index = lgm_check_tensorish(L, 3);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, op(a, dim, index, 1));
}

static int o_index_select(lua_State *L) { return indexing(L, gm_index_select); }

/* t:top_sums(index, width, k) → the k best sums of `width` elements of t at 1-based index, best
 * first, and their 1-based group numbers (gm_top_sums) */
static int o_top_sums(lua_State *L) {
  gm_tensor *a = lgm_check_tensor(L, 1);
  gm_tensor *index = lgm_check_tensorish(L, 2);
  lua_Integer width = luaL_checkinteger(L, 3), k = luaL_checkinteger(L, 4);
  lgm_box *values = lgm_new_box(L);
  lgm_box *groups = lgm_new_box(L);
  gm_tensor *which = NULL;
  gm_tensor *r = gm_top_sums(a, index, (int64_t)width, (int64_t)k, 1, &which);
  if (!r) return lgm_raise(L);
  lgm_box_set(L, values, r);
  lgm_box_set(L, groups, which);
  return 2;
}
static int o_gather(lua_State *L) { return indexing(L, gm_gather); }
/* gm.sum_set(index, width) → a graphmert.SumSet: candidates for top_sums prepared once;
 * set:top(t, k) → what t:top_sums(index, width, k) gives, reading only the groups that can enter
 * (gm_sum_set_top). #set is the number of candidates. */
#define SUM_SET_META "graphmert.SumSet"

static gm_sum_set **check_sum_set(lua_State *L) {
  gm_sum_set **box = luaL_checkudata(L, 1, SUM_SET_META);
  if (!*box) luaL_argerror(L, 1, "a released sum set");
  return box;
}

static int l_sum_set(lua_State *L) {
  gm_tensor *index = lgm_check_tensorish(L, 1);
  lua_Integer width = luaL_checkinteger(L, 2);
  luaL_argcheck(L, width >= 1 && width <= 1 << 20, 2, "a width from 1 to 2^20 expected");
  gm_sum_set **box = lua_newuserdatauv(L, sizeof *box, 0);
  *box = NULL;
  luaL_setmetatable(L, SUM_SET_META);
  *box = gm_sum_set_new(index, (int64_t)width, 1);
  if (!*box) return lgm_raise(L);
  return 1;
}

static int sum_set_top(lua_State *L) {
  gm_sum_set **set = check_sum_set(L);
  gm_tensor *src = lgm_check_tensor(L, 2);
  lua_Integer k = luaL_checkinteger(L, 3);
  lgm_box *values = lgm_new_box(L);
  lgm_box *groups = lgm_new_box(L);
  gm_tensor *which = NULL;
  gm_tensor *r = gm_sum_set_top(*set, src, (int64_t)k, 1, &which);
  if (!r) return lgm_raise(L);
  lgm_box_set(L, values, r);
  lgm_box_set(L, groups, which);
  return 2;
}

static int sum_set_release(lua_State *L) {
  gm_sum_set **box = luaL_checkudata(L, 1, SUM_SET_META);
  gm_sum_set_free(*box);
  *box = NULL;
  return 0;
}

static int sum_set_len(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)gm_sum_set_size(*check_sum_set(L)));
  return 1;
}

static int sum_set_tostring(lua_State *L) {
  gm_sum_set **box = luaL_checkudata(L, 1, SUM_SET_META);
  if (!*box) lua_pushliteral(L, "graphmert.SumSet (released)");
  else
    lua_pushfstring(L, "graphmert.SumSet (%I candidates of %I elements)", (lua_Integer)gm_sum_set_size(*box),
                    (lua_Integer)gm_sum_set_width(*box));
  return 1;
}


/* index_add(base, index, src): rows index[k] (1-based) of base increased by src[k] */
static int o_index_add(lua_State *L) {
  gm_tensor *base = lgm_check_tensor(L, 1);
  gm_tensor *index = lgm_check_tensorish(L, 2);
  gm_tensor *src = lgm_check_tensor(L, 3);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_index_add(base, index, src, 1));
}

/* segment_softmax(x, index, groups): softmax of x's rows within the groups index[e] (1-based) */
static int o_segment_softmax(lua_State *L) {
  gm_tensor *x = lgm_check_tensor(L, 1);
  gm_tensor *index = lgm_check_tensorish(L, 2);
  lua_Integer groups = luaL_checkinteger(L, 3);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_segment_softmax(x, index, (int64_t)groups, 1));
}

/* solve(A, B) → A⁻¹ B, batched */
static int o_solve(lua_State *L) {
  gm_tensor *a = lgm_check_tensor(L, 1);
  gm_tensor *rhs = lgm_check_tensor(L, 2);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_solve(a, rhs));
}

/* hgat(tails, heads, W, a, rel, start, count[, {interleaved = false, dropout = 0}]): rel indexes
 * the rows of W and a, start the rows of heads, both 1-based; dropout draws one mask of W_r and
 * a_r per occurrence (the tails sharing rel and start) from gm's generator; see gm.h */
static int o_hgat(lua_State *L) {
  gm_tensor *args[7];
  for (int i = 0; i < 4; i++) args[i] = lgm_check_tensor(L, i + 1);
  for (int i = 4; i < 7; i++) args[i] = lgm_check_tensorish(L, i + 1);
  gm_hgat_opts o = {.interleaved = lgm_field_boolean(L, 8, "interleaved", 0), .index_base = 1,
                    .dropout = (float)lgm_field_number(L, 8, "dropout", 0.0)};
  if (o.dropout > 0.0f) o.dropout_seed = gm_rng_next(&lgm_state_of(L)->rng);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_hgat(args[0], args[1], args[2], args[3], args[4], args[5], args[6], &o));
}

/* ---- neural-network ops ------------------------------------------------------------------ */

/* layer_norm(x[, weight[, bias[, eps = 1e-5]]]) over the last dimension */
static int o_layer_norm(lua_State *L) {
  gm_tensor *x = lgm_check_tensor(L, 1);
  gm_tensor *w = lgm_opt_tensor(L, 2), *bias = lgm_opt_tensor(L, 3);
  float eps = (float)luaL_optnumber(L, 4, 1e-5);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_layer_norm(x, w, bias, eps));
}

/* dropout(x, p[, training = true]); not training returns x itself */
static int o_dropout(lua_State *L) {
  gm_tensor *x = lgm_check_tensor(L, 1);
  float p = (float)luaL_checknumber(L, 2);
  int training = lua_isnoneornil(L, 3) || lua_toboolean(L, 3);
  if (!training) {
    luaL_argcheck(L, p >= 0 && p <= 1, 2, "dropout probability must be in [0, 1]");
    lua_settop(L, 1);
    return 1;
  }
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_dropout(x, p, &lgm_state_of(L)->rng));
}

/* cross_entropy(logits NxC, target N with 1-based classes[, {ignore_index = -100}]) */
static int o_cross_entropy(lua_State *L) {
  gm_tensor *logits = lgm_check_tensor(L, 1);
  gm_tensor *target = lgm_check_tensorish(L, 2);
  lua_Integer ignore = lgm_field_integer(L, 3, "ignore_index", -100);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_cross_entropy(logits, target, 1, (int64_t)ignore));
}

static const luaL_Reg ops[] = {
    {"add", o_add},         {"sub", o_sub},
    {"mul", o_mul},         {"div", o_div},
    {"pow", o_pow},         {"neg", o_neg},
    {"exp", o_exp},         {"log", o_log},
    {"sqrt", o_sqrt},       {"tanh", o_tanh},
    {"gelu", o_gelu},       {"relu", o_relu},
    {"leaky_relu", o_leaky_relu},
    {"sum", o_sum},         {"mean", o_mean},
    {"max", o_max},         {"softmax", o_softmax},
    {"log_softmax", o_log_softmax},
    {"matmul", o_matmul},   {"reshape", o_reshape},
    {"view", o_reshape},    {"transpose", o_transpose},
    {"permute", o_permute}, {"narrow", o_narrow},
    {"index_select", o_index_select}, {"gather", o_gather},
    {"top_sums", o_top_sums},
    {"layer_norm", o_layer_norm}, {"dropout", o_dropout},
    {"cross_entropy", o_cross_entropy},
    {"index_add", o_index_add}, {"hgat", o_hgat},
    {"segment_softmax", o_segment_softmax}, {"solve", o_solve},
    {NULL, NULL}};

static const luaL_Reg operators[] = {
    {"__add", o_add}, {"__sub", o_sub}, {"__mul", o_mul}, {"__div", o_div},
    {"__unm", o_neg}, {"__pow", o_pow}, {NULL, NULL}};

static const luaL_Reg sum_set_methods[] = {{"top", sum_set_top}, {NULL, NULL}};
static const luaL_Reg sum_set_length[] = {{"__len", sum_set_len}, {NULL, NULL}};

static const luaL_Reg module_only[] = {{"cat", o_cat}, {"concat", o_cat}, {"sum_set", l_sum_set}, {NULL, NULL}};

void lgm_open_ops(lua_State *L, int module) {
  lua_pushvalue(L, module);
  lgm_set_functions(L, ops);
  lgm_set_functions(L, module_only);
  lua_pop(L, 1);
  lgm_new_type(L, SUM_SET_META, sum_set_methods, sum_set_release, sum_set_tostring);
  lgm_set_functions(L, sum_set_length);
  lua_pop(L, 1);
  luaL_getmetatable(L, LGM_TENSOR);
  lgm_set_functions(L, operators);
  lua_getfield(L, -1, "__index");
  lgm_set_functions(L, ops);
  lua_pop(L, 2);
}
