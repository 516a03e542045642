/* lgm_io.c — atomic file writes, files read without blocking, and tensors from and to raw bytes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lgm.h"

/* The parts of one file from a Lua table of strings and tensors (tensors as raw float32); the
 * arrays are userdata on the stack and the table keeps each part alive. */
static gm_file_parts check_parts(lua_State *L, const char *path, int idx, int arg) {
  luaL_checktype(L, idx, LUA_TTABLE);
  int n = (int)luaL_len(L, idx);
  luaL_argcheck(L, n >= 0 && n < 1 << 20, arg, "too many parts");
  const void **chunks = lua_newuserdatauv(L, sizeof(void *) * (size_t)(n + 1), 0);
  size_t *sizes = lua_newuserdatauv(L, sizeof(size_t) * (size_t)(n + 1), 0);
  for (int i = 0; i < n; i++) {
    lua_geti(L, idx, i + 1);
    if (lua_type(L, -1) == LUA_TSTRING) {
      chunks[i] = lua_tolstring(L, -1, &sizes[i]);
    } else if (lgm_is_tensor(L, -1)) {
      gm_tensor *t = lgm_check_tensor(L, -1);
      chunks[i] = t->data;
      sizes[i] = (size_t)t->numel * sizeof(float);
    } else {
      lua_pushfstring(L, "%s: part %d is neither a string nor a tensor", path, i + 1);
      luaL_argerror(L, arg, lua_tostring(L, -1));
    }
    lua_pop(L, 1);
  }
  return (gm_file_parts){path, chunks, sizes, n};
}

/* gm.write_atomic(path, {string or tensor, ...}) or gm.write_atomic{{path, parts}, ...}: the
 * second form writes several files as one (all old or all new) → true, or nil and a message */
static int l_write_atomic(lua_State *L) {
  gm_file_parts *files;
  int n = 1;
  if (lua_type(L, 1) == LUA_TSTRING) {
    files = lua_newuserdatauv(L, sizeof *files, 0);
    files[0] = check_parts(L, lua_tostring(L, 1), 2, 2);
  } else {
    luaL_checktype(L, 1, LUA_TTABLE);
    n = (int)luaL_len(L, 1);
    luaL_argcheck(L, n >= 1 && n <= 64, 1, "1 to 64 {path, parts} pairs expected");
    files = lua_newuserdatauv(L, sizeof *files * (size_t)n, 0);
    for (int i = 0; i < n; i++) {
      luaL_checkstack(L, 8, "too many files");
      if (lua_geti(L, 1, i + 1) != LUA_TTABLE || lua_geti(L, -1, 1) != LUA_TSTRING ||
          lua_geti(L, -2, 2) != LUA_TTABLE)
        luaL_argerror(L, 1, lua_pushfstring(L, "entry %d is not a {path, parts} pair", i + 1));
      /* the pair table (below its path and parts) stays on the stack: it keeps them alive */
      files[i] = check_parts(L, lua_tostring(L, -2), lua_gettop(L), 1);
    }
  }
  if (gm_file_write_atomic_all(files, n) != GM_OK) {
    lua_pushnil(L);
    lua_pushstring(L, gm_last_error());
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* gm.atomic_writer{path, ...} → a graphmert.AtomicWriter: files written in steps and put in
 * place as one (gm_staged_*), for outputs too large to hold as parts. w:write(i, s, ...) appends
 * strings to file i; w:commit() → true, or nil and a message; w:close() (also __close and __gc)
 * removes the files not committed. The box is made empty first and filled file by file, so an
 * error part-way leaves only files that its release removes. */
#define WRITER_META "graphmert.AtomicWriter"
typedef struct {
  int n, opened;
  gm_staged files[64];
} atomic_writer;

static atomic_writer *check_writer(lua_State *L) { return luaL_checkudata(L, 1, WRITER_META); }

static void writer_discard(atomic_writer *w) {
  for (int i = 0; i < w->opened; i++) gm_staged_discard(&w->files[i]);
  w->opened = 0;
}

static int writer_release(lua_State *L) {
  writer_discard(check_writer(L));
  return 0;
}

static int l_atomic_writer(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int n = (int)lua_rawlen(L, 1);
  luaL_argcheck(L, n >= 1 && n <= 64, 1, "1 to 64 paths expected");
  luaL_checkstack(L, n + 2, "too many paths");
  lua_settop(L, 1);
  for (int i = 1; i <= n; i++) /* the paths stay on the stack, at 1 + i, read once */
    if (lua_rawgeti(L, 1, i) != LUA_TSTRING) luaL_argerror(L, 1, lua_pushfstring(L, "entry %d is not a path", i));
  atomic_writer *w = lua_newuserdatauv(L, sizeof *w, 0);
  w->n = n;
  w->opened = 0;
  luaL_setmetatable(L, WRITER_META);
  for (int i = 0; i < n; i++) {
    if (gm_staged_open(&w->files[i], lua_tostring(L, 2 + i)) != GM_OK) {
      lua_pushstring(L, gm_last_error());
      writer_discard(w);
      return lua_error(L);
    }
    w->opened = i + 1;
  }
  return 1;
}

static int writer_write(lua_State *L) {
  atomic_writer *w = check_writer(L);
  lua_Integer i = luaL_checkinteger(L, 2);
  luaL_argcheck(L, i >= 1 && i <= w->n, 2, "no such file");
  int top = lua_gettop(L);
  for (int a = 3; a <= top; a++) luaL_checkstring(L, a); /* every part checked before any is written */
  if (w->opened != w->n) return luaL_error(L, "atomic writer: already committed or closed");
  for (int a = 3; a <= top; a++) {
    size_t len;
    const char *s = lua_tolstring(L, a, &len);
    if (gm_staged_write(&w->files[i - 1], s, len) != GM_OK) return luaL_error(L, "%s", gm_last_error());
  }
  return 0;
}

static int writer_commit(lua_State *L) {
  atomic_writer *w = check_writer(L);
  if (w->opened != w->n) return luaL_error(L, "atomic writer: already committed or closed");
  gm_status st = gm_staged_commit_all(w->files, w->n);
  w->opened = 0; /* commit_all has released every file */
  if (st != GM_OK) {
    luaL_pushfail(L);
    lua_pushstring(L, gm_last_error());
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int writer_tostring(lua_State *L) {
  atomic_writer *w = check_writer(L);
  lua_pushfstring(L, "graphmert.AtomicWriter (%d files, %s)", w->n, w->opened == w->n ? "open" : "closed");
  return 1;
}

static const luaL_Reg writer_methods[] = {{"write", writer_write}, {"commit", writer_commit}, {"close", writer_release},
                                          {NULL, NULL}};

/* gm.stat(path) → {type = "file" | "directory" | "fifo" | "device" | "socket", size = bytes,
 * mtime = last modification in seconds since the epoch (to the nanosecond the file system keeps),
 * link = whether path itself is a symbolic link}, following links; or nil and a message. Never
 * opens the file, so a FIFO cannot block it. */
static int l_stat(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  struct stat sb, lsb;
  if (stat(path, &sb) != 0) {
    luaL_pushfail(L);
    lua_pushfstring(L, "%s: %s", path, strerror(errno));
    return 2;
  }
  const char *type = S_ISREG(sb.st_mode)   ? "file"
                     : S_ISDIR(sb.st_mode) ? "directory"
                     : S_ISFIFO(sb.st_mode) ? "fifo"
                     : S_ISSOCK(sb.st_mode) ? "socket"
                                            : "device";
  lua_createtable(L, 0, 4);
  lua_pushstring(L, type);
  lua_setfield(L, -2, "type");
  lua_pushinteger(L, (lua_Integer)sb.st_size);
  lua_setfield(L, -2, "size");
  lua_pushnumber(L, (lua_Number)sb.st_mtim.tv_sec + (lua_Number)sb.st_mtim.tv_nsec * 1e-9);
  lua_setfield(L, -2, "mtime");
  lua_pushboolean(L, lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode));
  lua_setfield(L, -2, "link");
  return 1;
}

/* gm.file_digest(path) → the file's 64-bit digest as 16 hex digits, and its size; or nil and a
 * message (gm_file_digest) */
static int l_file_digest(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  uint64_t digest, size;
  if (gm_file_digest(path, &digest, &size) != GM_OK) {
    luaL_pushfail(L);
    lua_pushstring(L, gm_last_error());
    return 2;
  }
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)digest);
  lua_pushstring(L, hex);
  lua_pushinteger(L, (lua_Integer)size);
  return 2;
}

/* gm.lock_file(path) → a graphmert.FileLock holding an exclusive lock on the file (created if
 * missing; gm_file_lock), and a warning when the file system cannot lock (the lock then holds
 * nothing); or false when another process holds it; or nil and a message.
 * lock:release() lets it go (also __close and __gc; once). The box is made before the lock is
 * taken, so no error can leave a lock without an owner. */
#define LOCK_META "graphmert.FileLock"
typedef struct {
  int fd, held;
} file_lock;

static int lock_release(lua_State *L) {
  file_lock *k = luaL_checkudata(L, 1, LOCK_META);
  gm_file_unlock(k->fd);
  k->fd = -1;
  k->held = 0;
  return 0;
}

static int lock_tostring(lua_State *L) {
  file_lock *k = luaL_checkudata(L, 1, LOCK_META);
  lua_pushstring(L, k->held ? "graphmert.FileLock (held)" : k->fd >= 0 ? "graphmert.FileLock (not held: no locks here)"
                                                                        : "graphmert.FileLock (released)");
  return 1;
}

static int l_lock_file(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  file_lock *k = lua_newuserdatauv(L, sizeof *k, 0);
  k->fd = -1;
  k->held = 0;
  luaL_setmetatable(L, LOCK_META);
  if (gm_file_lock(path, &k->fd, &k->held) != GM_OK) {
    luaL_pushfail(L);
    lua_pushstring(L, gm_last_error());
    return 2;
  }
  if (k->fd < 0) {
    lua_pushboolean(L, 0);
    return 1;
  }
  if (k->held) return 1;
  lua_pushfstring(L, "%s: this file system cannot lock files: nothing stops a second run on the same output", path);
  return 2;
}

static const luaL_Reg lock_methods[] = {{"release", lock_release}, {NULL, NULL}};

/* gm.realpath(path) → the absolute path with every symbolic link resolved, or nil and a message */
static int l_realpath(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  char *real = realpath(path, NULL);
  if (!real) {
    luaL_pushfail(L);
    lua_pushfstring(L, "%s: %s", path, strerror(errno));
    return 2;
  }
  lua_pushstring(L, real);
  free(real);
  return 1;
}

/* gm.read_file(path[, offset = 0[, length = the rest]]) → string: a regular file's bytes
 * (gm_file_open: never blocks on a FIFO, refuses devices); a range past the end is an error */
static int l_read_file(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  lua_Integer offset = luaL_optinteger(L, 2, 0), length = luaL_optinteger(L, 3, -1);
  luaL_argcheck(L, offset >= 0, 2, "offset must be >= 0");
  luaL_argcheck(L, length >= -1, 3, "length must be >= 0");
  int fd;
  uint64_t size;
  if (gm_file_open(path, &fd, &size) != GM_OK) return luaL_error(L, "%s", gm_last_error());
  if ((uint64_t)offset > size || (length >= 0 && (uint64_t)length > size - (uint64_t)offset)) {
    close(fd);
    return luaL_error(L, "%s: bytes %I to %I lie past the end of the file (%I bytes)", path, offset,
                      offset + (length < 0 ? 0 : length), (lua_Integer)size);
  }
  size_t n = length >= 0 ? (size_t)length : (size_t)(size - (uint64_t)offset);
  luaL_Buffer b;
  char *p = luaL_buffinitsize(L, &b, n);
  gm_status st = gm_file_read(fd, path, (uint64_t)offset, p, n);
  close(fd);
  if (st != GM_OK) return luaL_error(L, "%s", gm_last_error());
  luaL_pushresultsize(&b, n);
  return 1;
}

/* gm.without_interrupts(fn, ...) → fn(...)'s results: Ctrl-C, SIGTERM, SIGHUP and SIGQUIT
 * wait until fn returns or fails (then a held signal takes effect), so that what fn writes is
 * written whole */
static int l_without_interrupts(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  gm_signals_hold();
  int status = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0);
  gm_signals_release();
  if (status != LUA_OK) return lua_error(L);
  return lua_gettop(L);
}

/* gm.isatty(fd) → whether file descriptor fd (0, 1, 2: stdin, stdout, stderr) is a terminal */
static int l_isatty(lua_State *L) {
  lua_Integer fd = luaL_checkinteger(L, 1);
  luaL_argcheck(L, fd >= 0 && fd <= 1 << 20, 1, "a file descriptor expected");
  lua_pushboolean(L, isatty((int)fd));
  return 1;
}

static const char *const dtype_names[] = {"F32", "F64", "F16", "BF16", NULL}; /* gm_dtype order */

/* gm.tensor_from_file(path, offset, nbytes, shape[, dtype = "F32"]): offset counts from 0 */
static int l_tensor_from_file(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  lua_Integer offset = luaL_checkinteger(L, 2), nbytes = luaL_checkinteger(L, 3);
  luaL_argcheck(L, offset >= 0, 2, "offset must be >= 0");
  luaL_argcheck(L, nbytes >= 0, 3, "byte count must be >= 0");
  int64_t shape[GM_MAX_DIMS];
  luaL_checktype(L, 4, LUA_TTABLE);
  int ndim = lgm_check_shape(L, 4, shape);
  gm_dtype dtype = (gm_dtype)luaL_checkoption(L, 5, "F32", dtype_names);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_tensor_from_file(path, (uint64_t)offset, (size_t)nbytes, ndim, shape, dtype));
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
  gm_dtype dtype = (gm_dtype)luaL_checkoption(L, 5, "F32", dtype_names);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_tensor_from_bytes(s + offset, (size_t)nbytes, ndim, shape, dtype));
}

static int t_to_bytes(lua_State *L) {
  gm_tensor *t = lgm_check_tensor(L, 1);
  lua_pushlstring(L, (const char *)t->data, (size_t)t->numel * sizeof(float));
  return 1;
}

static const luaL_Reg io_functions[] = {{"write_atomic", l_write_atomic},
                                        {"atomic_writer", l_atomic_writer},
                                        {"stat", l_stat},
                                        {"isatty", l_isatty},
                                        {"without_interrupts", l_without_interrupts},
                                        {"realpath", l_realpath},
                                        {"file_digest", l_file_digest},
                                        {"lock_file", l_lock_file},
                                        {"read_file", l_read_file},
                                        {"tensor_from_bytes", l_tensor_from_bytes},
                                        {"tensor_from_file", l_tensor_from_file},
                                        {NULL, NULL}};

static const luaL_Reg io_methods[] = {{"to_bytes", t_to_bytes}, {NULL, NULL}};

void lgm_open_io(lua_State *L, int module) {
  lua_pushvalue(L, module);
  lgm_set_functions(L, io_functions);
  lua_pop(L, 1);
  lgm_new_type(L, WRITER_META, writer_methods, writer_release, writer_tostring);
  lua_pop(L, 1);
  lgm_new_type(L, LOCK_META, lock_methods, lock_release, lock_tostring);
  lua_pop(L, 1);
  luaL_getmetatable(L, LGM_TENSOR);
  lua_getfield(L, -1, "__index");
  lgm_set_functions(L, io_methods);
  lua_pop(L, 2);
}
