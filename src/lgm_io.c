/* lgm_io.c — atomic file writes and tensors from and to raw bytes. */

#include "lgm.h"

/* gm.write_atomic(path, {string or tensor, ...}): tensors are written as raw float32 */
static int l_write_atomic(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  int n = (int)luaL_len(L, 2);
  luaL_argcheck(L, n >= 0 && n < 1 << 20, 2, "too many parts");
  const void **chunks = lua_newuserdatauv(L, sizeof(void *) * (size_t)(n + 1), 0);
  size_t *sizes = lua_newuserdatauv(L, sizeof(size_t) * (size_t)(n + 1), 0);
  for (int i = 0; i < n; i++) {
    lua_geti(L, 2, i + 1); /* the table keeps each part alive */
    if (lua_type(L, -1) == LUA_TSTRING) {
      chunks[i] = lua_tolstring(L, -1, &sizes[i]);
    } else if (lgm_is_tensor(L, -1)) {
      gm_tensor *t = lgm_check_tensor(L, -1);
      chunks[i] = t->data;
      sizes[i] = (size_t)t->numel * sizeof(float);
    } else {
      lua_pushfstring(L, "part %d is neither a string nor a tensor", i + 1);
      return luaL_argerror(L, 2, lua_tostring(L, -1));
    }
    lua_pop(L, 1);
  }
  if (gm_file_write_atomic(path, chunks, sizes, n) != GM_OK) {
    lua_pushnil(L);
    lua_pushstring(L, gm_last_error());
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* gm.tensor_from_bytes(s, offset, nbytes, shape[, dtype = "F32"]): offset counts from 0 */
static int l_tensor_from_bytes(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  lua_Integer offset = luaL_checkinteger(L, 2), nbytes = luaL_checkinteger(L, 3);
  luaL_argcheck(L, offset >= 0 && (size_t)offset <= len, 2, "offset outside the string");
  luaL_argcheck(L, nbytes >= 0 && (size_t)nbytes <= len - (size_t)offset, 3,
                "byte range outside the string");
  int64_t shape[GM_MAX_DIMS];
  luaL_checktype(L, 4, LUA_TTABLE);
  int ndim = lgm_check_shape(L, 4, shape);
  static const char *const dtypes[] = {"F32", "F64", "F16", "BF16", NULL}; /* gm_dtype order */
  gm_dtype dtype = (gm_dtype)luaL_checkoption(L, 5, "F32", dtypes);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_tensor_from_bytes(s + offset, (size_t)nbytes, ndim, shape, dtype));
}

static int t_to_bytes(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  lua_pushlstring(L, (const char *)t->data, (size_t)t->numel * sizeof(float));
  return 1;
}

static const luaL_Reg io_functions[] = {{"write_atomic", l_write_atomic},
                                        {"tensor_from_bytes", l_tensor_from_bytes},
                                        {NULL, NULL}};

static const luaL_Reg io_methods[] = {{"to_bytes", t_to_bytes}, {NULL, NULL}};

void lgm_open_io(lua_State *L, int module) {
  lua_pushvalue(L, module);
  lgm_set_functions(L, io_functions);
  lua_pop(L, 1);
  luaL_getmetatable(L, LGM_TENSOR);
  lua_getfield(L, -1, "__index");
  lgm_set_functions(L, io_methods);
  lua_pop(L, 2);
}
