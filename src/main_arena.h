/* main_arena.h — the graphmert binary's Lua allocator (see main_arena.c).
 *
 * main_arena_newstate() is luaL_newstate() with the arena as the state's allocator: the same
 * panic function and the same default warnings (off until "@on"). The arena belongs to the
 * state: after lua_close(L), main_arena_release() returns its memory. One arena per process. */
#ifndef MAIN_ARENA_H
#define MAIN_ARENA_H

#include "lua.h"

lua_State *main_arena_newstate(void);
void main_arena_release(void);

#endif
