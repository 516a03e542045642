/* lgm_tables.c — flat Lua tables of strings packed into a file and read back in one pass: an
 * index built once (the seed graph's, gm.data.seed_graph) loads in a fraction of the time it
 * takes to build, into tables presized from the file's counts.
 *
 * The file (all integers little-endian u32; `bytes` is a u32 length then that many bytes):
 *   "GMTABLES"  version (1)  table count
 *   per table, by name (byte order): name bytes, kind (u32: 1 = set, key → true; 2 = map,
 *     key → string), entry count, then per entry, by key (byte order): key bytes, and for a
 *     map value bytes.
 * The reader trusts nothing in it: every length and count is checked against the bytes left
 * before anything is allocated for it (an entry takes 4 bytes at least, so no count makes a
 * table of more than 16 times the file's size), names and keys out of order (so also given
 * twice) and bytes after the last table are errors, and each error names the file and the byte
 * where it was found. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lgm.h"

#define MAGIC "GMTABLES"
#define MAGIC_LEN 8
#define VERSION 1
enum { KIND_SET = 1, KIND_MAP = 2 };

/* ---- writing ---- */

typedef struct {
  const char *key, *value; /* value NULL in a set */
  size_t key_len, value_len;
} entry;

static int compare_bytes(const char *a, size_t an, const char *b, size_t bn) {
  int c = memcmp(a, b, an < bn ? an : bn);
  return c ? c : (an > bn) - (an < bn);
}

static int compare_entries(const void *x, const void *y) {
  const entry *a = x, *b = y;
  return compare_bytes(a->key, a->key_len, b->key, b->key_len);
}

static unsigned char *put_u32(unsigned char *p, size_t v) {
  p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8), p[2] = (unsigned char)(v >> 16), p[3] = (unsigned char)(v >> 24);
  return p + 4;
}

static unsigned char *put_bytes(unsigned char *p, const char *s, size_t n) {
  p = put_u32(p, n);
  memcpy(p, s, n);
  return p + n;
}

/* The entries of the table at idx, sorted (a userdata pushed on the stack; its strings stay alive
 * in the table). *kind from its values: all true, or all strings (an empty table is a set). */
static entry *collect(lua_State *L, const char *name, int idx, size_t *count, int *kind, size_t *bytes) {
  size_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) n++, lua_pop(L, 1);
  if (n > UINT32_MAX) luaL_error(L, "pack_tables: table '%s' has more than 2^32 entries", name);
  entry *es = lua_newuserdatauv(L, sizeof(entry) * (n ? n : 1), 0);
  *kind = KIND_SET;
  size_t i = 0, total = 4 + strlen(name) + 8;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_error(L, "pack_tables: table '%s' has a %s key (keys must be strings)", name, luaL_typename(L, -2));
    int value_kind = lua_type(L, -1) == LUA_TSTRING ? KIND_MAP
                     : lua_type(L, -1) == LUA_TBOOLEAN && lua_toboolean(L, -1) ? KIND_SET
                                                                                : 0;
    if (!value_kind || (i > 0 && value_kind != *kind))
      luaL_error(L, "pack_tables: table '%s' at key '%s' holds a %s (all values must be strings, or all true)", name,
                 lua_tostring(L, -2), luaL_typename(L, -1));
    *kind = value_kind;
    es[i].key = lua_tolstring(L, -2, &es[i].key_len);
    es[i].value = value_kind == KIND_MAP ? lua_tolstring(L, -1, &es[i].value_len) : NULL;
    if (value_kind == KIND_SET) es[i].value_len = 0;
    if (es[i].key_len > UINT32_MAX || es[i].value_len > UINT32_MAX)
      luaL_error(L, "pack_tables: table '%s' has a string longer than 4 GiB", name);
    total += 4 + es[i].key_len + (value_kind == KIND_MAP ? 4 + es[i].value_len : 0);
    i++;
    lua_pop(L, 1);
  }
  qsort(es, n, sizeof *es, compare_entries); /* the same tables give the same file */
  *count = n;
  *bytes = total;
  return es;
}

static int compare_names(const void *x, const void *y) { return strcmp(*(const char *const *)x, *(const char *const *)y); }

/* gm.pack_tables{name = table, ...} → the file's bytes (gm.write_atomic writes them); each table a
 * set (every value true) or a map (every value a string), its keys strings */
static int l_pack_tables(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int ntables = 0;
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TTABLE)
      luaL_argerror(L, 1, "name → table pairs expected");
    size_t len;
    if (strlen(lua_tolstring(L, -2, &len)) != len) luaL_argerror(L, 1, "a table name holds a \\0 byte");
    ntables++, lua_pop(L, 1);
  }
  luaL_argcheck(L, ntables <= 1 << 16, 1, "at most 65536 tables");
  const char **names = lua_newuserdatauv(L, sizeof(char *) * (size_t)(ntables + 1), 0);
  int i = 0;
  lua_pushnil(L);
  while (lua_next(L, 1)) names[i++] = lua_tostring(L, -2), lua_pop(L, 1);
  qsort(names, (size_t)ntables, sizeof *names, compare_names);
  luaL_checkstack(L, 2 * ntables + 8, "too many tables");
  entry **tables = lua_newuserdatauv(L, sizeof(entry *) * (size_t)(ntables + 1), 0);
  size_t *counts = lua_newuserdatauv(L, sizeof(size_t) * (size_t)(ntables + 1), 0);
  int *kinds = lua_newuserdatauv(L, sizeof(int) * (size_t)(ntables + 1), 0);
  size_t total = MAGIC_LEN + 8;
  for (i = 0; i < ntables; i++) { /* each table and its entries stay on the stack */
    size_t bytes;
    lua_getfield(L, 1, names[i]);
    tables[i] = collect(L, names[i], lua_gettop(L), &counts[i], &kinds[i], &bytes);
    total += bytes;
  }
  luaL_Buffer b;
  unsigned char *p = (unsigned char *)luaL_buffinitsize(L, &b, total);
  memcpy(p, MAGIC, MAGIC_LEN);
  p = put_u32(put_u32(p + MAGIC_LEN, VERSION), (size_t)ntables);
  for (i = 0; i < ntables; i++) {
    p = put_u32(put_u32(put_bytes(p, names[i], strlen(names[i])), (size_t)kinds[i]), counts[i]);
    for (size_t j = 0; j < counts[i]; j++) {
      const entry *e = &tables[i][j];
      p = put_bytes(p, e->key, e->key_len);
      if (kinds[i] == KIND_MAP) p = put_bytes(p, e->value, e->value_len);
    }
  }
  luaL_pushresultsize(&b, total);
  return 1;
}

/* ---- reading ---- */

typedef struct {
  const unsigned char *start, *p, *end;
  const char *path;
} cursor;

/* raises "load_tables: <path>: [table '<table>': ]<what> at byte <offset>" */
static int bad(lua_State *L, const cursor *c, const char *table, const char *what) {
  return luaL_error(L, "load_tables: %s: %s%s%s%s at byte %I (not a table file, or a damaged one)", c->path,
                    table ? "table '" : "", table ? table : "", table ? "': " : "", what, (lua_Integer)(c->p - c->start));
}

static size_t left(const cursor *c) { return (size_t)(c->end - c->p); }

static uint32_t take_u32(lua_State *L, cursor *c, const char *table, const char *what) {
  if (left(c) < 4) bad(L, c, table, lua_pushfstring(L, "the file ends inside %s", what));
  const unsigned char *p = c->p;
  c->p += 4;
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* a length-prefixed string, its length checked against the bytes left: *s and *n */
static void take_bytes(lua_State *L, cursor *c, const char *table, const char *what, const char **s, size_t *n) {
  uint32_t len = take_u32(L, c, table, what);
  if (len > left(c))
    bad(L, c, table, lua_pushfstring(L, "%s of %I bytes with %I left", what, (lua_Integer)len, (lua_Integer)left(c)));
  *s = (const char *)c->p;
  *n = len;
  c->p += len;
}

/* the same, which must come after *prev (of *prev_n bytes; NULL: the first) in byte order: the
 * writer sorts, so a name or key out of order or given twice is a damaged file, found without a
 * table lookup */
static void take_next(lua_State *L, cursor *c, const char *table, const char *what, const char **prev, size_t *prev_n) {
  const char *s;
  size_t n;
  take_bytes(L, c, table, what, &s, &n);
  if (*prev && compare_bytes(*prev, *prev_n, s, n) >= 0)
    bad(L, c, table, lua_pushfstring(L, "%s out of order or given twice", what));
  *prev = s;
  *prev_n = n;
}

/* gm.load_tables(path) → {name = table, ...} as gm.pack_tables packed them, each table created at
 * its size; any fault in the file is an error naming it. The file (a regular file: gm_file_open)
 * is read whole first. */
static int l_load_tables(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  int fd;
  uint64_t size;
  if (gm_file_open(path, &fd, &size) != GM_OK) return luaL_error(L, "load_tables: %s", gm_last_error());
  if (size > (uint64_t)SIZE_MAX / 2) {
    close(fd);
    return luaL_error(L, "load_tables: %s: too large (%I bytes)", path, (lua_Integer)size);
  }
  unsigned char *buf = lua_newuserdatauv(L, size ? (size_t)size : 1, 0); /* collected after an error too */
  gm_status st = gm_file_read(fd, path, 0, buf, (size_t)size);
  close(fd);
  if (st != GM_OK) return luaL_error(L, "load_tables: %s", gm_last_error());
  cursor c = {buf, buf, buf + size, path};
  if (size < MAGIC_LEN || memcmp(buf, MAGIC, MAGIC_LEN) != 0) return bad(L, &c, NULL, "no " MAGIC " mark");
  c.p += MAGIC_LEN;
  uint32_t version = take_u32(L, &c, NULL, "the version");
  if (version != VERSION)
    return luaL_error(L, "load_tables: %s: format version %I, this build reads %d", path, (lua_Integer)version, VERSION);
  uint32_t ntables = take_u32(L, &c, NULL, "the table count");
  if (ntables > left(&c) / 12) /* a table takes 12 bytes at least */
    return bad(L, &c, NULL, lua_pushfstring(L, "%I tables in %I bytes", (lua_Integer)ntables, (lua_Integer)left(&c)));
  lua_createtable(L, 0, (int)ntables);
  int result = lua_gettop(L);
  const char *table_name = NULL;
  size_t table_name_len = 0;
  for (uint32_t t = 0; t < ntables; t++) {
    take_next(L, &c, NULL, "a table name", &table_name, &table_name_len);
    const char *name = lua_pushlstring(L, table_name, table_name_len);
    uint32_t kind = take_u32(L, &c, name, "the kind");
    if (kind != KIND_SET && kind != KIND_MAP)
      return bad(L, &c, name, lua_pushfstring(L, "kind %I (1: set, 2: map)", (lua_Integer)kind));
    uint32_t n = take_u32(L, &c, name, "the entry count");
    if (n > left(&c) / (kind == KIND_MAP ? 8 : 4) || n > INT32_MAX) /* an entry takes 4 or 8 bytes at least */
      return bad(L, &c, name, lua_pushfstring(L, "%I entries in %I bytes", (lua_Integer)n, (lua_Integer)left(&c)));
    lua_createtable(L, 0, (int)n);
    const char *key = NULL, *value;
    size_t key_len = 0, value_len;
    for (uint32_t i = 0; i < n; i++) {
      take_next(L, &c, name, "a key", &key, &key_len);
      lua_pushlstring(L, key, key_len);
      if (kind == KIND_MAP) {
        take_bytes(L, &c, name, "a value", &value, &value_len);
        lua_pushlstring(L, value, value_len);
      } else {
        lua_pushboolean(L, 1);
      }
      lua_rawset(L, -3);
    }
    lua_rawset(L, result);
  }
  if (left(&c)) return bad(L, &c, NULL, lua_pushfstring(L, "%I bytes after the last table", (lua_Integer)left(&c)));
  return 1;
}

static const luaL_Reg table_functions[] = {{"pack_tables", l_pack_tables}, {"load_tables", l_load_tables}, {NULL, NULL}};

void lgm_open_tables(lua_State *L, int module) {
  lua_pushvalue(L, module);
  lgm_set_functions(L, table_functions);
  lua_pop(L, 1);
}
