/* lgm.h — the Lua binding's internal header (the only place besides lgm_*.c and main.c that
 * sees both Lua and the core).
 *
 * Ownership: a tensor box owns exactly one reference to its gm_tensor. lgm_box_set() and
 * lgm_push_tensor() STEAL the reference they are given; lgm_push_tensor_borrowed() retains
 * first. A released box holds NULL and every use of it raises "attempt to use a released tensor".
 *
 * Every binding function checks all its arguments, then makes the empty box, then calls the
 * core, then fills the box: an error raised at any point leaks nothing. */
#ifndef LGM_H
#define LGM_H

#include <lauxlib.h>
#include <lua.h>

#include "gm.h"

#define LGM_TENSOR "graphmert.Tensor"
#define LGM_STATE_KEY "graphmert.state"

#if defined(__GNUC__)
#define LGM_EXPORT __attribute__((visibility("default")))
#else
#define LGM_EXPORT
#endif

typedef struct lgm_box {
  gm_tensor *t;
} lgm_box;

/* Per-Lua-state settings, a userdata passed as upvalue 1 to every binding function. */
/* Lua's GC sees only 16-byte boxes, so the binding tells it about the memory behind them
 * (torch7's heap tracking): an incremental step per MiB handed out, and a full collection
 * whenever live core bytes pass a soft maximum, reset after each collection to 25% above what
 * survived it (64 MiB at least). The full collection is what works in generational mode, where
 * steps alone leave dead boxes uncollected; the tight margin matters because a dead box still
 * pins its tensor's data (see data_pins in gm.h). */
#define LGM_GC_STEP_BYTES (1u << 20)
#define LGM_GC_SOFT_MAX_START ((size_t)64 << 20)

typedef struct lgm_state {
  size_t pending_bytes; /* bytes handed to Lua since the last GC step */
  size_t gc_soft_max;   /* live core bytes that trigger a full collection */
  gm_rng rng;           /* the default generator (gm.manual_seed) */
} lgm_state;

#define lgm_state_of(L) ((lgm_state *)lua_touserdata((L), lua_upvalueindex(1)))

gm_tensor *lgm_check_tensor(lua_State *L, int arg);
gm_tensor *lgm_opt_tensor(lua_State *L, int arg); /* nil or none gives NULL */
int lgm_is_tensor(lua_State *L, int arg);
lgm_box *lgm_new_box(lua_State *L);                    /* pushes an empty box */
void lgm_box_set(lua_State *L, lgm_box *b, gm_tensor *t); /* steals t; tells the GC its bytes */
void lgm_push_tensor(lua_State *L, gm_tensor *t);         /* steals t */
/* The last step of a binding function: fills box b (made before the core call) with r, or
 * raises the core's error when r is NULL. Returns 1 (the box on the stack). */
int lgm_finish(lua_State *L, lgm_box *b, gm_tensor *r);
void lgm_push_tensor_borrowed(lua_State *L, gm_tensor *t); /* retains t */
/* Raises the core's last error as a Lua error naming the function and argument. */
int lgm_raise(lua_State *L);
/* A 1-based (or negative, from the end) Lua dimension as a 0-based one. */
int lgm_check_dim(lua_State *L, int arg, int ndim);
/* A shape given as numbers from `first` on, or as one table at `first`. */
int lgm_check_shape(lua_State *L, int first, int64_t *shape);
/* A tensor argument, or a Lua table of numbers converted to one (pushed box kept on stack). */
gm_tensor *lgm_check_tensorish(lua_State *L, int arg);

/* Fields of an options table at index opts (lgm_fields.c). A none or nil opts reads as an empty
 * table and nil fields give the default; a wrong type raises an argument error on opts naming
 * the field ("lr must be a number"). */
#define LGM_NO_DEFAULT LUA_MININTEGER /* lgm_field_integer: the field is required */
lua_Number lgm_field_number(lua_State *L, int opts, const char *name, lua_Number def);
lua_Integer lgm_field_integer(lua_State *L, int opts, const char *name, lua_Integer def);
int lgm_field_boolean(lua_State *L, int opts, const char *name, int def); /* Lua truth */
/* nil or false gives NULL; opts keeps the tensor alive */
gm_tensor *lgm_field_tensor(lua_State *L, int opts, const char *name);
/* The index of the string in names (NULL-terminated); nil gives 0, the first. */
int lgm_field_option(lua_State *L, int opts, const char *name, const char *const names[]);

/* The graphmert.Distances at arg, or NULL when arg holds something else (lgm_graph.c). */
gm_paths *lgm_test_paths(lua_State *L, int arg);

/* Registers reg into the table on top of the stack, with the state as upvalue 1. */
void lgm_set_functions(lua_State *L, const luaL_Reg *reg);
/* A userdata type: metatable `name` (left on the stack) with methods as __index and release as
 * __gc and __close (so it must be idempotent), tostring as __tostring; all get the state upvalue. */
void lgm_new_type(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction release,
                  lua_CFunction tostring);
/* Registration: functions of the module table and tensor methods, all with the state upvalue. */
void lgm_open_tensor(lua_State *L, int module_index);
void lgm_open_ops(lua_State *L, int module_index);
void lgm_open_graph(lua_State *L, int module_index);
void lgm_open_attention(lua_State *L, int module_index);
void lgm_open_io(lua_State *L, int module_index);
void lgm_open_tables(lua_State *L, int module_index);
void lgm_open_optim(lua_State *L, int module_index);
void lgm_open_torchload(lua_State *L, int module_index);
void lgm_open_distributed(lua_State *L, int module_index);

#endif
