/* lgm_torchload.c — gm.torch_load: a PyTorch checkpoint (torch.save's zip format) as a table of
 * float32 tensors, read by the core's restricted unpickler (gm_torch.c). */
#include <string.h>

#include "lgm.h"

#define LGM_STATE_DICT "graphmert.StateDict"

/* The core's result is held by a userdata until every tensor has been moved into its box, so a
 * Lua error half-way (out of memory) frees the rest instead of leaking it. */
static int state_dict_gc(lua_State *L) {
  gm_state_dict **holder = luaL_checkudata(L, 1, LGM_STATE_DICT);
  gm_state_dict_free(*holder);
  *holder = NULL;
  return 0;
}

static int check_options(lua_State *L, int arg) {
  if (lua_isnoneornil(L, arg)) return 0;
  luaL_checktype(L, arg, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, arg)) {
    if (lua_type(L, -2) != LUA_TSTRING || strcmp(lua_tostring(L, -2), "skip_non_float") != 0) {
      lua_pushfstring(L, "unknown option %s (skip_non_float is the only one)",
                      luaL_tolstring(L, -2, NULL));
      luaL_argerror(L, arg, lua_tostring(L, -1));
    }
    if (!lua_isboolean(L, -1)) luaL_argerror(L, arg, "skip_non_float must be a boolean");
    lua_pop(L, 1);
  }
  return lgm_field_boolean(L, arg, "skip_non_float", 0);
}

/* gm.torch_load(path[, {skip_non_float = false}]) → {name = tensor}, {skipped name = "int64"} */
static int l_torch_load(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  int skip = check_options(L, 2);
  gm_state_dict **holder = lua_newuserdatauv(L, sizeof *holder, 0);
  *holder = NULL;
  luaL_setmetatable(L, LGM_STATE_DICT);
  gm_state_dict *sd = *holder = gm_torch_load(path, skip);
  if (!sd) return luaL_error(L, "torch_load: %s", gm_last_error());
  lua_createtable(L, 0, sd->count);
  for (int i = 0; i < sd->count; i++) {
    lgm_box *b = lgm_new_box(L);
    lgm_box_set(L, b, sd->tensors[i]);
    sd->tensors[i] = NULL;
    lua_setfield(L, -2, sd->names[i]);
  }
  lua_createtable(L, 0, sd->skipped_count);
  for (int i = 0; i < sd->skipped_count; i++) {
    lua_pushstring(L, sd->skipped_dtype[i]);
    lua_setfield(L, -2, sd->skipped[i]);
  }
  *holder = NULL;
  gm_state_dict_free(sd);
  return 2;
}

static const luaL_Reg torchload_functions[] = {{"torch_load", l_torch_load}, {NULL, NULL}};

void lgm_open_torchload(lua_State *L, int module) {
  luaL_newmetatable(L, LGM_STATE_DICT);
  lua_pushcfunction(L, state_dict_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  lua_pushvalue(L, module);
  lgm_set_functions(L, torchload_functions);
  lua_pop(L, 1);
}
