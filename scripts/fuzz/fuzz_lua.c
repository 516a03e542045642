/* fuzz_lua.c — one libFuzzer harness for every Lua-level target: the core and the binding are
 * linked in (built with ASan/UBSan and fuzzer coverage), the Lua sources come from ./lua, and
 * GM_FUZZ_TARGET names a function of scripts/fuzz/targets.lua that receives each input as a
 * string. A Lua error is an expected outcome; a crash, an abort or a sanitizer report is a bug.
 *   GM_FUZZ_TARGET=safetensors ./build/fuzz/fuzz_lua -max_total_time=30 scripts/fuzz/corpus/safetensors */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

int luaopen_graphmert_core(lua_State *L);

static lua_State *L;
static int target_ref = LUA_NOREF;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *target = getenv("GM_FUZZ_TARGET");
  if (!target) {
    fprintf(stderr, "fuzz_lua: set GM_FUZZ_TARGET to a function of scripts/fuzz/targets.lua\n");
    exit(2);
  }
  L = luaL_newstate();
  luaL_openlibs(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_graphmert_core);
  lua_setfield(L, -2, "graphmert.core");
  lua_pop(L, 1);
  if (luaL_dostring(L, "package.path = './lua/?.lua;./lua/?/init.lua;' .. package.path\n"
                       "return dofile('scripts/fuzz/targets.lua')") != LUA_OK) {
    fprintf(stderr, "fuzz_lua: %s\n", lua_tostring(L, -1));
    exit(2);
  }
  lua_getfield(L, -1, target);
  if (!lua_isfunction(L, -1)) {
    fprintf(stderr, "fuzz_lua: no target '%s' in scripts/fuzz/targets.lua\n", target);
    exit(2);
  }
  target_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pop(L, 1);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, target_ref);
  lua_pushlstring(L, (const char *)data, size);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) lua_pop(L, 1); /* errors are fine; crashes are not */
  return 0;
}
