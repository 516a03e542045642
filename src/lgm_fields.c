/* lgm_fields.c — fields of a Lua options table, {lr = 1e-3, gelu = "tanh", ...}, read the same
 * way by every binding function: nil gives the default, a wrong type raises an argument error on
 * the table that names the field. */
#include <string.h>

#include "lgm.h"

/* Pushes opts[name] and returns its type; none or nil opts reads as an empty table. */
static int push_field(lua_State *L, int opts, const char *name) {
  if (lua_isnoneornil(L, opts)) {
    lua_pushnil(L);
    return LUA_TNIL;
  }
  luaL_checktype(L, opts, LUA_TTABLE);
  return lua_getfield(L, opts, name);
}

static int field_error(lua_State *L, int opts, const char *name, const char *expected) {
  lua_pushfstring(L, "%s must be %s", name, expected);
  return luaL_argerror(L, opts, lua_tostring(L, -1));
}

lua_Number lgm_field_number(lua_State *L, int opts, const char *name, lua_Number def) {
  lua_Number v = def;
  if (push_field(L, opts, name) != LUA_TNIL) {
    int isnum;
    v = lua_tonumberx(L, -1, &isnum);
    if (!isnum) field_error(L, opts, name, "a number");
  }
  lua_pop(L, 1);
  return v;
}

lua_Integer lgm_field_integer(lua_State *L, int opts, const char *name, lua_Integer def) {
  lua_Integer v = def;
  int type = push_field(L, opts, name);
  if (type != LUA_TNIL || def == LGM_NO_DEFAULT) {
    int isnum;
    v = lua_tointegerx(L, -1, &isnum);
    if (!isnum) field_error(L, opts, name, "an integer");
  }
  lua_pop(L, 1);
  return v;
}

int lgm_field_boolean(lua_State *L, int opts, const char *name, int def) {
  int v = push_field(L, opts, name) == LUA_TNIL ? def : lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

gm_tensor *lgm_field_tensor(lua_State *L, int opts, const char *name) {
  int type = push_field(L, opts, name);
  gm_tensor *t = NULL;
  if (type == LUA_TNIL || (type == LUA_TBOOLEAN && !lua_toboolean(L, -1))) t = NULL;
  else if (lgm_is_tensor(L, -1)) t = lgm_check_tensor(L, -1);
  else field_error(L, opts, name, "a tensor");
  lua_pop(L, 1); /* the options table keeps it alive */
  return t;
}

int lgm_field_option(lua_State *L, int opts, const char *name, const char *const names[]) {
  int choice = 0;
  if (push_field(L, opts, name) != LUA_TNIL) {
    const char *given = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    choice = -1;
    for (int i = 0; given && names[i]; i++)
      if (strcmp(given, names[i]) == 0) choice = i;
    if (choice < 0) { /* "a", "b" or "c" */
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      for (int i = 0; names[i]; i++) {
        if (i > 0) luaL_addstring(&b, names[i + 1] ? ", " : " or ");
        luaL_addchar(&b, '"');
        luaL_addstring(&b, names[i]);
        luaL_addchar(&b, '"');
      }
      luaL_pushresult(&b);
      field_error(L, opts, name, lua_tostring(L, -1));
    }
  }
  lua_pop(L, 1);
  return choice;
}
