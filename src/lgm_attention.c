/* lgm_attention.c — gm.attention(q, k, v, opts) for Lua: the fused kernel of gm_attention.c
 * (lua/graphmert/attention.lua adds the materialised reference path and table conversions), and
 * gm.decay_mask, the spatial decay it takes. */
#include <string.h>

#include "lgm.h"

static int l_attention(lua_State *L) {
  gm_tensor *q = lgm_check_tensor(L, 1), *k = lgm_check_tensor(L, 2), *v = lgm_check_tensor(L, 3);
  gm_attention_opts o;
  memset(&o, 0, sizeof o);
  static const char *const decay_modes[] = {"scores", "weights", NULL};
  o.key_mask = lgm_field_tensor(L, 4, "key_mask");
  o.key_bias = lgm_field_tensor(L, 4, "key_bias");
  o.attn_mask = lgm_field_tensor(L, 4, "attn_mask");
  o.attn_bias = lgm_field_tensor(L, 4, "attn_bias");
  o.decay = lgm_field_tensor(L, 4, "decay");
  o.decay_weights = lgm_field_option(L, 4, "decay_mode", decay_modes) == 1;
  o.renormalize = lgm_field_boolean(L, 4, "renormalize", 0);
  /* no scale leaves 0, which the core reads as 1/sqrt(d); a given one must be > 0 */
  if (lgm_field_boolean(L, 4, "scale", 0)) {
    o.scale = (float)lgm_field_number(L, 4, "scale", 0.0);
    if (!(o.scale > 0)) return luaL_argerror(L, 4, "scale must be > 0");
  }
  o.dropout = (float)lgm_field_number(L, 4, "dropout", 0.0);
  if (!lgm_field_boolean(L, 4, "training", 1)) o.dropout = 0.0f; /* eval: no dropout */
  int need_weights = lgm_field_boolean(L, 4, "need_weights", 0);
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

/* gm.decay_mask(sp, {lambda = 0.6, p = 1.0, offset = 1, gelu = "erf"}); sp is a distance
 * matrix or a graphmert.Distances; lambda = false means no decay (all ones), a missing lambda
 * is 0.6, as in DecayMask and GraphMERT (graphmert.nn.check.lambda). */
static int l_decay_mask(lua_State *L) {
  gm_paths *paths = lgm_test_paths(L, 1);
  gm_tensor *sp = paths ? NULL : lgm_check_tensor(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  static const char *const gelu_forms[] = {"erf", "tanh", NULL};
  /* lambda false: no decay, which the core computes as λ = 1 (all ones) */
  lua_getfield(L, 2, "lambda");
  int no_decay = lua_isboolean(L, -1) && !lua_toboolean(L, -1);
  lua_pop(L, 1);
  float lambda = no_decay ? 1.0f : (float)lgm_field_number(L, 2, "lambda", GM_DEFAULT_LAMBDA);
  float offset = (float)lgm_field_number(L, 2, "offset", 1.0);
  int gelu_tanh = lgm_field_option(L, 2, "gelu", gelu_forms) == 1;
  /* p is a number or a tensor */
  lua_getfield(L, 2, "p");
  gm_tensor *p = NULL;
  float p_value = 1.0f;
  if (lua_isnil(L, -1)) p_value = 1.0f;
  else if (lua_type(L, -1) == LUA_TNUMBER) p_value = (float)lua_tonumber(L, -1);
  else if (lgm_is_tensor(L, -1)) p = lgm_check_tensor(L, -1);
  else return luaL_argerror(L, 2, "p must be a number or a tensor");
  lua_settop(L, 2);
  /* temporaries are boxed at once, so an error below frees them */
  if (!p) {
    lgm_box *pb = lgm_new_box(L);
    p = gm_tensor_full(0, NULL, p_value);
    if (!p) return lgm_raise(L);
    lgm_box_set(L, pb, p);
  }
  if (paths) {
    lgm_box *sb = lgm_new_box(L);
    sp = gm_paths_tensor(paths);
    if (!sp) return lgm_raise(L);
    lgm_box_set(L, sb, sp);
  }
  lgm_box *b = lgm_new_box(L);
  gm_tensor *f = gm_decay_mask(sp, p, lambda, offset, gelu_tanh);
  if (!f) {
    /* blame the options table for p, lambda and offset */
    if (gm_last_error_arg() >= 2) return luaL_argerror(L, 2, gm_last_error());
    return lgm_raise(L);
  }
  lgm_box_set(L, b, f);
  return 1;
}

static const luaL_Reg attention_functions[] = {
    {"attention", l_attention}, {"decay_mask", l_decay_mask}, {NULL, NULL}};

void lgm_open_attention(lua_State *L, int module) {
  lua_pushvalue(L, module);
  lgm_set_functions(L, attention_functions);
  lua_pop(L, 1);
  lua_pushnumber(L, GM_DEFAULT_LAMBDA); /* gm.DEFAULT_LAMBDA: the one default λ, for the Lua side */
  lua_setfield(L, module, "DEFAULT_LAMBDA");
}
