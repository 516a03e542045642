/* lgm_optim.c — the optimizers' fused steps for Lua (lua/graphmert/optim drives them). */
#include "lgm.h"

/* gm.adamw_step(p, grad, exp_avg, exp_avg_sq, {lr, beta1, beta2, eps, weight_decay, step}) */
static int l_adamw_step(lua_State *L) {
  gm_tensor *p = lgm_check_tensor(L, 1), *g = lgm_check_tensor(L, 2);
  gm_tensor *m = lgm_check_tensor(L, 3), *v = lgm_check_tensor(L, 4);
  luaL_checktype(L, 5, LUA_TTABLE);
  float lr = (float)lgm_field_number(L, 5, "lr", 1e-3), b1 = (float)lgm_field_number(L, 5, "beta1", 0.9);
  float b2 = (float)lgm_field_number(L, 5, "beta2", 0.999), eps = (float)lgm_field_number(L, 5, "eps", 1e-8);
  float wd = (float)lgm_field_number(L, 5, "weight_decay", 0.01);
  lua_Integer step = lgm_field_integer(L, 5, "step", LGM_NO_DEFAULT);
  if (step < 1) return luaL_argerror(L, 5, "step must be an integer >= 1");
  if (gm_adamw_step(p, g, m, v, lr, b1, b2, eps, wd, (int64_t)step) != GM_OK) return lgm_raise(L);
  return 0;
}

static const luaL_Reg optim_functions[] = {{"adamw_step", l_adamw_step}, {NULL, NULL}};

void lgm_open_optim(lua_State *L, int module) {
  lua_pushvalue(L, module);
  lgm_set_functions(L, optim_functions);
  lua_pop(L, 1);
}
