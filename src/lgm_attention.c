/* lgm_attention.c — gm.attention(q, k, v, opts) for Lua: the fused kernel of gm_attention.c.
 * (lua/graphmert/attention.lua adds the materialised reference path and table conversions.) */
#include <string.h>

#include "lgm.h"

/* opts[name] as a tensor (or NULL); a Lua table of numbers or booleans is converted and kept
 * alive in the options table itself. */
static gm_tensor *opt_tensor(lua_State *L, int opts, const char *name) {
  int type = lua_getfield(L, opts, name);
  gm_tensor *t = NULL;
  if (type == LUA_TNIL || (type == LUA_TBOOLEAN && !lua_toboolean(L, -1))) {
    t = NULL;
  } else if (lgm_is_tensor(L, -1)) {
    t = lgm_check_tensor(L, -1);
  } else {
    lua_pushfstring(L, "%s must be a tensor", name);
    luaL_argerror(L, opts, lua_tostring(L, -1));
  }
  lua_pop(L, 1); /* the options table keeps it alive */
  return t;
}

static int l_attention(lua_State *L) {
  gm_tensor *q = lgm_check_tensor(L, 1), *k = lgm_check_tensor(L, 2), *v = lgm_check_tensor(L, 3);
  gm_attention_opts o;
  memset(&o, 0, sizeof o);
  int need_weights = 0;
  if (!lua_isnoneornil(L, 4)) {
    luaL_checktype(L, 4, LUA_TTABLE);
    o.key_mask = opt_tensor(L, 4, "key_mask");
    o.key_bias = opt_tensor(L, 4, "key_bias");
    o.attn_mask = opt_tensor(L, 4, "attn_mask");
    o.attn_bias = opt_tensor(L, 4, "attn_bias");
    o.decay = opt_tensor(L, 4, "decay");
    lua_getfield(L, 4, "decay_mode");
    const char *mode = lua_isnil(L, -1) ? "scores" : lua_tostring(L, -1);
    if (!mode || (strcmp(mode, "scores") != 0 && strcmp(mode, "weights") != 0))
      return luaL_argerror(L, 4, "decay_mode must be \"scores\" or \"weights\"");
    o.decay_weights = strcmp(mode, "weights") == 0;
    lua_getfield(L, 4, "renormalize");
    o.renormalize = lua_toboolean(L, -1);
    lua_getfield(L, 4, "scale");
    if (!lua_isnil(L, -1) && !lua_isnumber(L, -1)) return luaL_argerror(L, 4, "scale must be a number");
    o.scale = (float)lua_tonumber(L, -1);
    if (!lua_isnil(L, -1) && !(o.scale > 0)) return luaL_argerror(L, 4, "scale must be > 0");
    lua_getfield(L, 4, "dropout");
    if (!lua_isnil(L, -1) && !lua_isnumber(L, -1)) return luaL_argerror(L, 4, "dropout must be a number");
    o.dropout = (float)lua_tonumber(L, -1);
    lua_getfield(L, 4, "training");
    if (!lua_isnil(L, -1) && !lua_toboolean(L, -1)) o.dropout = 0.0f; /* eval: no dropout */
    lua_getfield(L, 4, "need_weights");
    need_weights = lua_toboolean(L, -1);
    lua_pop(L, 5);
  }
  if (o.dropout > 0.0f) o.dropout_seed = gm_rng_next(&lgm_state_of(L)->rng);
  lgm_box *out_box = lgm_new_box(L);
  lgm_box *w_box = need_weights ? lgm_new_box(L) : NULL;
  gm_tensor *w = NULL;
  gm_tensor *out = gm_attention(q, k, v, &o, need_weights ? &w : NULL);
  if (!out) {
    if (gm_last_error_arg() >= 4) return luaL_argerror(L, 4, gm_last_error());
    return lgm_raise(L);
  }
  lgm_box_set(L, out_box, out);
  if (w_box) lgm_box_set(L, w_box, w);
  return need_weights ? 2 : 1;
}

static const luaL_Reg attention_functions[] = {{"attention", l_attention}, {NULL, NULL}};

void lgm_open_attention(lua_State *L, int module) {
  lua_pushvalue(L, module);
  lgm_set_functions(L, attention_functions);
  lua_pop(L, 1);
}
