/* lgm_tensor.c — the graphmert.Tensor userdata: boxes, conversions from Lua values,
 * constructors, element access and the autograd methods. */
#include <math.h>
#include <string.h>

#include "lgm.h"

/* ---- boxes ------------------------------------------------------------------------------- */

lgm_box *lgm_new_box(lua_State *L) {
  lgm_box *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->t = NULL;
  luaL_setmetatable(L, LGM_TENSOR);
  return b;
}

void lgm_box_set(lua_State *L, lgm_box *b, gm_tensor *t) {
  b->t = t;
  gm_tensor_pin(t); /* the user may read it */
  lgm_state *st = lgm_state_of(L);
  st->pending_bytes += (size_t)t->numel * sizeof(float) + sizeof(gm_tensor);
  if (st->pending_bytes >= LGM_GC_STEP_BYTES) {
    int kb = (int)(st->pending_bytes >> 10);
    st->pending_bytes = 0;
    lua_gc(L, LUA_GCSTEP, kb);
    if (gm_memory_live() > st->gc_soft_max) {
      lua_gc(L, LUA_GCCOLLECT);
      /* collect again after 25% growth, but not before twice the Lua heap has been allocated
       * in C: a full collection walks the whole Lua heap, so a script holding a big dataset in
       * Lua would otherwise spend its time collecting */
      size_t live = gm_memory_live();
      size_t lua_heap = ((size_t)lua_gc(L, LUA_GCCOUNT) << 10) + (size_t)lua_gc(L, LUA_GCCOUNTB);
      size_t next = live / 4 * 5;
      if (next < live + 2 * lua_heap) next = live + 2 * lua_heap;
      st->gc_soft_max = next > LGM_GC_SOFT_MAX_START ? next : LGM_GC_SOFT_MAX_START;
    }
  }
}

void lgm_push_tensor(lua_State *L, gm_tensor *t) { lgm_box_set(L, lgm_new_box(L), t); }

int lgm_finish(lua_State *L, lgm_box *b, gm_tensor *r) {
  if (!r) return lgm_raise(L);
  lgm_box_set(L, b, r);
  return 1;
}

void lgm_push_tensor_borrowed(lua_State *L, gm_tensor *t) {
  gm_tensor_retain(t);
  lgm_push_tensor(L, t);
}

int lgm_is_tensor(lua_State *L, int arg) { return luaL_testudata(L, arg, LGM_TENSOR) != NULL; }

gm_tensor *lgm_check_tensor(lua_State *L, int arg) {
  lgm_box *b = luaL_checkudata(L, arg, LGM_TENSOR);
  if (!b->t) luaL_argerror(L, arg, "attempt to use a released tensor");
  return b->t;
}

gm_tensor *lgm_opt_tensor(lua_State *L, int arg) {
  return lua_isnoneornil(L, arg) ? NULL : lgm_check_tensor(L, arg);
}

int lgm_raise(lua_State *L) {
  const char *msg = gm_last_error();
  int arg = gm_last_error_arg();
  if (arg > 0) return luaL_argerror(L, arg, msg);
  lua_Debug ar;
  const char *name = lua_getstack(L, 0, &ar) && lua_getinfo(L, "n", &ar) && ar.name ? ar.name : "?";
  return luaL_error(L, "%s: %s", name, msg);
}

int lgm_check_dim(lua_State *L, int arg, int ndim) {
  lua_Integer d = luaL_checkinteger(L, arg);
  lua_Integer resolved = d < 0 ? d + ndim : d - 1;
  if (d == 0 || resolved < 0 || resolved >= ndim) {
    lua_pushfstring(L, "dimension %I out of range for a %d-dimensional tensor", d, ndim);
    luaL_argerror(L, arg, lua_tostring(L, -1));
  }
  return (int)resolved;
}

static int64_t check_size(lua_State *L, int arg, int isnum, lua_Integer v) {
  if (!isnum) luaL_argerror(L, arg, "sizes must be integers");
  if (v < 0) {
    lua_pushfstring(L, "negative size %I", v);
    luaL_argerror(L, arg, lua_tostring(L, -1));
  }
  return (int64_t)v;
}

int lgm_check_shape(lua_State *L, int first, int64_t *shape) {
  int n = 0, isnum;
  if (lua_istable(L, first)) {
    n = (int)luaL_len(L, first);
    if (n > GM_MAX_DIMS) luaL_argerror(L, first, "too many dimensions (at most 8)");
    for (int i = 0; i < n; i++) {
      lua_geti(L, first, i + 1);
      lua_Integer v = lua_tointegerx(L, -1, &isnum);
      shape[i] = check_size(L, first, isnum, v);
      lua_pop(L, 1);
    }
    return n;
  }
  int top = lua_gettop(L);
  if (top - first + 1 > GM_MAX_DIMS) luaL_argerror(L, first, "too many dimensions (at most 8)");
  for (int i = first; i <= top; i++) {
    lua_Integer v = lua_tointegerx(L, i, &isnum);
    shape[n++] = check_size(L, i, isnum, v);
  }
  return n;
}

/* ---- gm.tensor(nested table) ------------------------------------------------------------- */

/* Walks the first elements to find the shape. */
static int nested_shape(lua_State *L, int idx, int64_t *shape) {
  int ndim = 0;
  lua_pushvalue(L, idx);
  while (lua_istable(L, -1)) {
    if (ndim == GM_MAX_DIMS) luaL_argerror(L, 1, "too many dimensions (at most 8)");
    shape[ndim++] = (int64_t)luaL_len(L, -1);
    lua_geti(L, -1, 1);
    lua_remove(L, -2);
  }
  lua_pop(L, 1);
  return ndim;
}

static void nested_fill(lua_State *L, int idx, int depth, int ndim, const int64_t *shape,
                        float *out, int64_t *at) {
  if (depth == ndim) {
    int isnum;
    lua_Number v = lua_tonumberx(L, idx, &isnum);
    if (!isnum) luaL_argerror(L, 1, "nested table holds a value that is not a number");
    out[(*at)++] = (float)v;
    return;
  }
  if (!lua_istable(L, idx) || (int64_t)luaL_len(L, idx) != shape[depth])
    luaL_argerror(L, 1, "nested table is not rectangular");
  for (int64_t i = 1; i <= shape[depth]; i++) {
    lua_geti(L, idx, i);
    nested_fill(L, lua_gettop(L), depth + 1, ndim, shape, out, at);
    lua_pop(L, 1);
  }
}

/* Converts the table at idx; pushes the new tensor box. */
static gm_tensor *tensor_from_table(lua_State *L, int idx) {
  int64_t shape[GM_MAX_DIMS];
  idx = lua_absindex(L, idx);
  int ndim = nested_shape(L, idx, shape);
  if (gm_check_shape(ndim, shape, 1) != GM_OK) lgm_raise(L);
  lgm_box *b = lgm_new_box(L);
  gm_tensor *t = gm_tensor_empty(ndim, shape);
  if (!t) lgm_raise(L);
  lgm_box_set(L, b, t); /* owned by the box before anything below can raise */
  int64_t at = 0;
  nested_fill(L, idx, 0, ndim, shape, t->data, &at);
  return t;
}

gm_tensor *lgm_check_tensorish(lua_State *L, int arg) {
  if (lua_istable(L, arg)) {
    gm_tensor *t = tensor_from_table(L, arg);
    lua_replace(L, arg); /* keep the box alive in the argument's slot */
    return t;
  }
  return lgm_check_tensor(L, arg);
}

static int l_tensor(lua_State *L) {
  if (lua_type(L, 1) == LUA_TNUMBER) {
    float v = (float)lua_tonumber(L, 1);
    lgm_box *b = lgm_new_box(L);
    gm_tensor *t = gm_tensor_full(0, NULL, v);
    if (!t) return lgm_raise(L);
    lgm_box_set(L, b, t);
    return 1;
  }
  if (lgm_is_tensor(L, 1)) { /* a copy without history, like torch.tensor(t) */
    gm_tensor *src = lgm_check_tensor(L, 1);
    lgm_box *b = lgm_new_box(L);
    gm_tensor *t = gm_tensor_clone(src);
    if (!t) return lgm_raise(L);
    lgm_box_set(L, b, t);
    return 1;
  }
  luaL_checktype(L, 1, LUA_TTABLE);
  tensor_from_table(L, 1);
  return 1;
}

/* ---- constructors ------------------------------------------------------------------------ */

/* a tensor of `value` with the shape given from argument `first` on */
static int fill_constructor(lua_State *L, float value, int first) {
  int64_t shape[GM_MAX_DIMS];
  int ndim = lgm_check_shape(L, first, shape);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_tensor_full(ndim, shape, value));
}

static int l_zeros(lua_State *L) { return fill_constructor(L, 0.0f, 1); }
static int l_ones(lua_State *L) { return fill_constructor(L, 1.0f, 1); }

/* full(value, d1, d2, ...) or full(value, {d1, d2}) */
static int l_full(lua_State *L) { return fill_constructor(L, (float)luaL_checknumber(L, 1), 2); }

static int random_constructor(lua_State *L, int normal) {
  int64_t shape[GM_MAX_DIMS];
  int ndim = lgm_check_shape(L, 1, shape);
  lgm_box *b = lgm_new_box(L);
  gm_rng *rng = &lgm_state_of(L)->rng;
  return lgm_finish(L, b, normal ? gm_tensor_randn(rng, ndim, shape) : gm_tensor_rand(rng, ndim, shape));
}

static int l_randn(lua_State *L) { return random_constructor(L, 1); }
static int l_rand(lua_State *L) { return random_constructor(L, 0); }

/* arange(n) = 0..n-1, arange(a, b[, step]) = a, a+step, ... below b (PyTorch's convention) */
static int l_arange(lua_State *L) {
  double start = 0, stop, step = 1;
  if (lua_gettop(L) >= 2) {
    start = luaL_checknumber(L, 1);
    stop = luaL_checknumber(L, 2);
    step = luaL_optnumber(L, 3, 1);
  } else {
    stop = luaL_checknumber(L, 1);
  }
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_tensor_arange(start, stop, step));
}

/* ---- basic methods ----------------------------------------------------------------------- */

static int t_release(lua_State *L) {
  lgm_box *b = luaL_checkudata(L, 1, LGM_TENSOR);
  if (b->t) gm_tensor_unpin(b->t);
  gm_tensor_release(b->t);
  b->t = NULL;
  return 0;
}

static int t_is_released(lua_State *L) {
  lgm_box *b = luaL_checkudata(L, 1, LGM_TENSOR);
  lua_pushboolean(L, b->t == NULL);
  return 1;
}

static int t_shape(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  lua_createtable(L, t->ndim, 0);
  for (int i = 0; i < t->ndim; i++) {
    lua_pushinteger(L, t->shape[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int t_size(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  if (lua_isnoneornil(L, 2)) return t_shape(L);
  lua_pushinteger(L, t->shape[lgm_check_dim(L, 2, t->ndim)]);
  return 1;
}

static int t_dim(lua_State *L) {
  lua_pushinteger(L, lgm_check_tensor(L, 1)->ndim);
  return 1;
}

static int t_numel(lua_State *L) {
  lua_pushinteger(L, lgm_check_tensor(L, 1)->numel);
  return 1;
}

static int t_len(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  lua_pushinteger(L, t->ndim ? t->shape[0] : 1);
  return 1;
}

static int t_item(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  if (t->numel != 1) {
    char buf[96];
    lua_pushfstring(L, "item needs exactly one element (size %s)",
                    gm_shape_str(t->ndim, t->shape, buf, sizeof buf));
    return luaL_argerror(L, 1, lua_tostring(L, -1));
  }
  lua_pushnumber(L, t->data[0]);
  return 1;
}

static void push_nested(lua_State *L, const gm_tensor *t, int depth, const float **p) {
  if (depth == t->ndim) {
    lua_pushnumber(L, *(*p)++);
    return;
  }
  lua_createtable(L, (int)t->shape[depth], 0);
  for (int64_t i = 0; i < t->shape[depth]; i++) {
    push_nested(L, t, depth + 1, p);
    lua_rawseti(L, -2, i + 1);
  }
}

static int t_totable(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  const float *p = t->data;
  luaL_checkstack(L, t->ndim + 4, "tensor too deep");
  push_nested(L, t, 0, &p);
  return 1;
}

/* Flat offset of the 1-based index given by numbers from `first` on. */
static int64_t element_offset(lua_State *L, gm_tensor *t, int first) {
  int n = lua_gettop(L) - first + 1;
  if (n != t->ndim) {
    lua_pushfstring(L, "%d indices for a %d-dimensional tensor", n, t->ndim);
    luaL_argerror(L, first, lua_tostring(L, -1));
  }
  int64_t off = 0;
  for (int d = 0; d < t->ndim; d++) {
    lua_Integer i = luaL_checkinteger(L, first + d);
    if (i < 1 || i > t->shape[d]) {
      lua_pushfstring(L, "index %I out of range [1, %I]", i, (lua_Integer)t->shape[d]);
      luaL_argerror(L, first + d, lua_tostring(L, -1));
    }
    off = off * t->shape[d] + (i - 1);
  }
  return off;
}

static int t_get(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  lua_pushnumber(L, t->data[element_offset(L, t, 2)]);
  return 1;
}

/* t:set(value, i, j, ...) */
static int t_set(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  float v = (float)luaL_checknumber(L, 2);
  int64_t off = element_offset(L, t, 3);
  if (gm_tensor_check_writable(t) != GM_OK) return lgm_raise(L);
  t->data[off] = v;
  lua_settop(L, 1);
  return 1;
}

static int64_t flat_index(lua_State *L, gm_tensor *t, int arg) {
  lua_Integer i = luaL_checkinteger(L, arg);
  if (i < 1 || i > t->numel) {
    lua_pushfstring(L, "flat index %I out of range [1, %I]", i, (lua_Integer)t->numel);
    luaL_argerror(L, arg, lua_tostring(L, -1));
  }
  return (int64_t)i - 1;
}

/* t:get_flat(i): element i (1-based) in row-major order */
static int t_get_flat(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  lua_pushnumber(L, t->data[flat_index(L, t, 2)]);
  return 1;
}

/* t:set_flat(i, value) */
static int t_set_flat(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  int64_t i = flat_index(L, t, 2);
  float v = (float)luaL_checknumber(L, 3);
  if (gm_tensor_check_writable(t) != GM_OK) return lgm_raise(L);
  t->data[i] = v;
  lua_settop(L, 1);
  return 1;
}

/* ---- autograd methods -------------------------------------------------------------------- */

static int t_requires_grad(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  if (lua_isnone(L, 2)) {
    lua_pushboolean(L, t->requires_grad);
    return 1;
  }
  if (gm_tensor_set_requires_grad(t, lua_toboolean(L, 2)) != GM_OK) return lgm_raise(L);
  lua_settop(L, 1);
  return 1;
}

static int t_is_leaf(lua_State *L) {
  lua_pushboolean(L, lgm_check_tensor(L, 1)->op == GM_OP_NONE);
  return 1;
}

static int t_grad_fn(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  if (t->op == GM_OP_NONE) lua_pushnil(L);
  else lua_pushstring(L, gm_op_name(t->op));
  return 1;
}

/* loss:backward([gradient], [retain_graph]) */
static int t_backward(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  gm_tensor *g = lgm_opt_tensor(L, 2);
  int retain = lua_toboolean(L, 3);
  if (gm_backward(t, g, retain) != GM_OK) return lgm_raise(L);
  return 0;
}

static int t_grad(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  if (!t->grad) lua_pushnil(L);
  else lgm_push_tensor_borrowed(L, t->grad);
  return 1;
}

static int t_zero_grad(lua_State *L) {
  gm_tensor_zero_grad(lgm_check_tensor(L, 1));
  lua_settop(L, 1);
  return 1;
}

static int t_detach(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_tensor_detach(t));
}

static int t_clone(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_tensor_clone(t));
}

/* ---- in-place updates (for optimizers; refused on recorded tensors) ----------------------- */

static int finish_inplace(lua_State *L, gm_status st) {
  if (st != GM_OK) return lgm_raise(L);
  lua_settop(L, 1);
  return 1;
}

static int t_fill_(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  return finish_inplace(L, gm_tensor_fill_(t, (float)luaL_checknumber(L, 2)));
}

static int t_zero_(lua_State *L) { return finish_inplace(L, gm_tensor_fill_(lgm_check_tensor(L, 1), 0.0f)); }

static int t_copy_(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  return finish_inplace(L, gm_tensor_copy_(t, lgm_check_tensor(L, 2)));
}

/* t:add_(u[, alpha]) is t += alpha * u; t:add_(number) adds the number */
static int t_add_(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  if (lua_type(L, 2) == LUA_TNUMBER) {
    float v = (float)lua_tonumber(L, 2);
    gm_status st = gm_tensor_check_writable(t);
    if (st == GM_OK)
      for (int64_t i = 0; i < t->numel; i++) t->data[i] += v;
    return finish_inplace(L, st);
  }
  gm_tensor *u = lgm_check_tensor(L, 2);
  float alpha = (float)luaL_optnumber(L, 3, 1.0);
  return finish_inplace(L, gm_tensor_add_(t, u, alpha));
}

static int t_mul_(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  return finish_inplace(L, gm_tensor_mul_(t, (float)luaL_checknumber(L, 2)));
}

static const luaL_Reg tensor_functions[] = {
    {"tensor", l_tensor}, {"zeros", l_zeros}, {"ones", l_ones}, {"full", l_full},
    {"randn", l_randn},   {"rand", l_rand},   {"arange", l_arange}, {NULL, NULL}};

static const luaL_Reg tensor_methods[] = {
    {"release", t_release},     {"is_released", t_is_released},
    {"shape", t_shape},         {"size", t_size},
    {"dim", t_dim},             {"numel", t_numel},
    {"item", t_item},           {"totable", t_totable},
    {"get", t_get},             {"set", t_set},
    {"get_flat", t_get_flat},   {"set_flat", t_set_flat},
    {"requires_grad", t_requires_grad}, {"is_leaf", t_is_leaf},
    {"grad_fn", t_grad_fn},     {"backward", t_backward},
    {"grad", t_grad},           {"zero_grad", t_zero_grad},
    {"detach", t_detach},       {"clone", t_clone},
    {"fill_", t_fill_},         {"zero_", t_zero_},
    {"copy_", t_copy_},         {"add_", t_add_},
    {"mul_", t_mul_},           {NULL, NULL}};

static const luaL_Reg tensor_metamethods[] = {
    {"__gc", t_release}, {"__close", t_release}, {"__len", t_len}, {NULL, NULL}};

void lgm_set_functions(lua_State *L, const luaL_Reg *reg) {
  lua_getfield(L, LUA_REGISTRYINDEX, LGM_STATE_KEY);
  luaL_setfuncs(L, reg, 1);
}

void lgm_new_type(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction release,
                  lua_CFunction tostring) {
  luaL_newmetatable(L, name);
  const luaL_Reg meta[] = {{"__gc", release}, {"__close", release}, {"__tostring", tostring}, {NULL, NULL}};
  lgm_set_functions(L, meta);
  lua_newtable(L);
  lgm_set_functions(L, methods);
  lua_setfield(L, -2, "__index");
}

void lgm_open_tensor(lua_State *L, int module) {
  luaL_newmetatable(L, LGM_TENSOR);
  int meta = lua_gettop(L);
  lgm_set_functions(L, tensor_metamethods);
  lua_newtable(L); /* methods, the metatable's __index */
  lgm_set_functions(L, tensor_methods);
  lua_pushvalue(L, -1);
  lua_setfield(L, meta, "__index");
  lua_setfield(L, module, "methods");
  lua_setfield(L, module, "Tensor");
  lua_pushvalue(L, module);
  lgm_set_functions(L, tensor_functions);
  lua_pop(L, 1);
}
