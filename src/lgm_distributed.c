/* lgm_distributed.c — the binding of gm_distributed.c, as core.distributed (wrapped by
 * lua/graphmert/distributed.lua). Ranks are 0-based as in MPI. */

#include "lgm.h"

/* The tensors of the list at arg as a C array (a userdata pushed on the stack; the list keeps
 * the tensors alive). */
static gm_tensor **check_list(lua_State *L, int arg, int *n) {
  luaL_checktype(L, arg, LUA_TTABLE);
  lua_Integer len = luaL_len(L, arg);
  luaL_argcheck(L, len < 1 << 24, arg, "too many tensors");
  gm_tensor **ts = lua_newuserdatauv(L, sizeof(gm_tensor *) * (size_t)(len + 1), 0);
  for (lua_Integer i = 1; i <= len; i++) {
    lua_geti(L, arg, i);
    if (!lgm_is_tensor(L, -1)) {
      lua_pushfstring(L, "element %d is a %s, not a tensor", (int)i, luaL_typename(L, -1));
      luaL_argerror(L, arg, lua_tostring(L, -1));
    }
    ts[i - 1] = lgm_check_tensor(L, -1);
    lua_pop(L, 1);
  }
  *n = (int)len;
  return ts;
}

static gm_dist_op check_op(lua_State *L, int opts) {
  static const char *const ops[] = {"sum", "mean", NULL};
  return lgm_field_option(L, opts, "op", ops) == 1 ? GM_DIST_MEAN : GM_DIST_SUM;
}

static size_t check_bucket(lua_State *L, int opts) {
  lua_Integer bytes = lgm_field_integer(L, opts, "bucket_bytes", 0);
  luaL_argcheck(L, bytes >= 0, opts, "bucket_bytes must be >= 0");
  return (size_t)bytes;
}

static int d_init(lua_State *L) {
  if (gm_dist_init() != GM_OK) return lgm_raise(L);
  return 0;
}

static int d_rank(lua_State *L) {
  lua_pushinteger(L, gm_dist_rank());
  return 1;
}

static int d_size(lua_State *L) {
  lua_pushinteger(L, gm_dist_size());
  return 1;
}

static int d_compiled(lua_State *L) {
  lua_pushboolean(L, gm_dist_compiled());
  return 1;
}

/* allreduce(tensors, {op = "sum"|"mean", bucket_bytes}) */
static int d_allreduce(lua_State *L) {
  int n;
  gm_tensor **ts = check_list(L, 1, &n);
  gm_dist_op op = check_op(L, 2);
  if (gm_dist_allreduce(ts, n, op, check_bucket(L, 2)) != GM_OK) return lgm_raise(L);
  return 0;
}

/* allreduce_grads(params, extra, {op, bucket_bytes}) */
static int d_allreduce_grads(lua_State *L) {
  int n, n_extra;
  gm_tensor **params = check_list(L, 1, &n);
  gm_tensor **extra = check_list(L, 2, &n_extra);
  gm_dist_op op = check_op(L, 3);
  if (gm_dist_allreduce_grads(params, n, extra, n_extra, op, check_bucket(L, 3)) != GM_OK) return lgm_raise(L);
  return 0;
}

/* broadcast(tensors, root, {bucket_bytes}) */
static int d_broadcast(lua_State *L) {
  int n;
  gm_tensor **ts = check_list(L, 1, &n);
  lua_Integer root = luaL_checkinteger(L, 2);
  luaL_argcheck(L, root >= 0 && root < gm_dist_size(), 2, "root is not a rank (0 to size() - 1)");
  if (gm_dist_broadcast(ts, n, (int)root, check_bucket(L, 3)) != GM_OK) return lgm_raise(L);
  return 0;
}

static int d_barrier(lua_State *L) {
  if (gm_dist_barrier() != GM_OK) return lgm_raise(L);
  return 0;
}

static int d_finalize(lua_State *L) {
  if (gm_dist_finalize() != GM_OK) return lgm_raise(L);
  return 0;
}

static int d_abort(lua_State *L) {
  lua_Integer code = luaL_optinteger(L, 1, 1);
  luaL_argcheck(L, code >= 1 && code <= 255, 1, "exit code must be in [1, 255]");
  gm_dist_abort((int)code);
  return 0;
}

static const luaL_Reg distributed_functions[] = {
    {"init", d_init},           {"rank", d_rank},
    {"size", d_size},           {"compiled", d_compiled},
    {"allreduce", d_allreduce}, {"allreduce_grads", d_allreduce_grads},
    {"broadcast", d_broadcast}, {"barrier", d_barrier},
    {"finalize", d_finalize},   {"abort", d_abort},
    {NULL, NULL}};

void lgm_open_distributed(lua_State *L, int module) {
  lua_newtable(L);
  lgm_set_functions(L, distributed_functions);
  lua_setfield(L, module, "distributed");
}
