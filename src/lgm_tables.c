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
 * where it was found.
 *
 * With {lazy = true} each table is a read-only map over the file's bytes (a graphmert.TableMap
 * userdata: t[key] by binary search over the sorted keys, pairs(t) in key order, #t its size),
 * so loading costs one checking pass and no Lua string per entry: the seed graph of all of
 * WordNet (640,000 entries) loads in milliseconds instead of a third of a second, and takes its
 * file's size in memory. gm.pack_tables takes such maps as it takes tables. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lgm.h"

#define MAGIC "GMTABLES"
#define MAGIC_LEN 8
#define VERSION 1
enum { KIND_SET = 1, KIND_MAP = 2 };

#define MAP_META "graphmert.TableMap"

/* a table read lazily: entry i starts at at[i] (its key's length, the key, and in a map the
 * value's length and the value); the file's bytes are the userdata's user value */
typedef struct {
  const unsigned char **at;
  uint32_t n;
  int kind;
} table_map;

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* entry i's key and, in a map, value (NULL in a set) */
static void map_entry(const table_map *m, uint32_t i, const char **key, size_t *key_len, const char **value,
                      size_t *value_len) {
  const unsigned char *p = m->at[i];
  *key_len = get_u32(p);
  *key = (const char *)p + 4;
  if (m->kind == KIND_MAP) {
    p += 4 + *key_len;
    *value_len = get_u32(p);
    *value = (const char *)p + 4;
  } else {
    *value = NULL;
    *value_len = 0;
  }
}

static table_map *check_map(lua_State *L, int idx) { return luaL_checkudata(L, idx, MAP_META); }

static void push_value(lua_State *L, const table_map *m, uint32_t i) {
  const char *key, *value;
  size_t key_len, value_len;
  map_entry(m, i, &key, &key_len, &value, &value_len);
  if (value) lua_pushlstring(L, value, value_len);
  else lua_pushboolean(L, 1);
}

static int compare_bytes(const char *a, size_t an, const char *b, size_t bn);

static int map_index(lua_State *L) {
  table_map *m = check_map(L, 1);
  if (lua_type(L, 2) != LUA_TSTRING) return lua_pushnil(L), 1; /* keys are strings: no other key is there */
  size_t want_len;
  const char *want = lua_tolstring(L, 2, &want_len);
  uint32_t lo = 0, hi = m->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    const char *key, *value;
    size_t key_len, value_len;
    map_entry(m, mid, &key, &key_len, &value, &value_len);
    int c = compare_bytes(key, key_len, want, want_len);
    if (c == 0) return push_value(L, m, mid), 1;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  lua_pushnil(L);
  return 1;
}

static int map_newindex(lua_State *L) {
  check_map(L, 1);
  return luaL_error(L, "a table read by gm.load_tables{lazy = true} is read-only");
}

static int map_len(lua_State *L) {
  lua_pushinteger(L, check_map(L, 1)->n);
  return 1;
}

/* pairs(map): the entries in key order (a closure over the map and the next position) */
static int map_next(lua_State *L) {
  table_map *m = check_map(L, lua_upvalueindex(1));
  lua_Integer i = lua_tointeger(L, lua_upvalueindex(2));
  if (i >= (lua_Integer)m->n) return 0;
  lua_pushinteger(L, i + 1);
  lua_replace(L, lua_upvalueindex(2));
  const char *key, *value;
  size_t key_len, value_len;
  map_entry(m, (uint32_t)i, &key, &key_len, &value, &value_len);
  lua_pushlstring(L, key, key_len);
  push_value(L, m, (uint32_t)i);
  return 2;
}

static int map_pairs(lua_State *L) {
  check_map(L, 1);
  lua_pushvalue(L, 1);
  lua_pushinteger(L, 0);
  lua_pushcclosure(L, map_next, 2);
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

static int map_gc(lua_State *L) {
  table_map *m = check_map(L, 1);
  free(m->at); /* idempotent: __gc and an error in the loader may both come here */
  m->at = NULL;
  m->n = 0;
  return 0;
}

static int map_tostring(lua_State *L) {
  table_map *m = check_map(L, 1);
  lua_pushfstring(L, "graphmert.TableMap (%I entries, %s)", (lua_Integer)m->n, m->kind == KIND_MAP ? "map" : "set");
  return 1;
}

static const luaL_Reg map_methods[] = {{"__index", map_index}, {"__newindex", map_newindex}, {"__len", map_len},
                                       {"__pairs", map_pairs}, {"__gc", map_gc}, {"__close", map_gc},
                                       {"__tostring", map_tostring}, {NULL, NULL}};

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
  table_map *m = luaL_testudata(L, idx, MAP_META);
  if (m) { /* already sorted; its strings stay alive in its file's bytes */
    entry *es = lua_newuserdatauv(L, sizeof(entry) * (m->n ? m->n : 1), 0);
    size_t total = 4 + strlen(name) + 8;
    for (uint32_t i = 0; i < m->n; i++) {
      map_entry(m, i, &es[i].key, &es[i].key_len, &es[i].value, &es[i].value_len);
      total += 4 + es[i].key_len + (m->kind == KIND_MAP ? 4 + es[i].value_len : 0);
    }
    *kind = m->kind;
    *count = m->n;
    *bytes = total;
    return es;
  }
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
    if (lua_type(L, -2) != LUA_TSTRING || (lua_type(L, -1) != LUA_TTABLE && !luaL_testudata(L, -1, MAP_META)))
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

/* gm.load_tables(path[, {lazy = false}]) → {name = table, ...} as gm.pack_tables packed them, each
 * table created at its size, or with lazy a graphmert.TableMap over the file's bytes; any fault in
 * the file is an error naming it. The file (a regular file: gm_file_open) is read whole first. */
static int l_load_tables(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  int lazy = lua_istable(L, 2) && lgm_field_boolean(L, 2, "lazy", 0);
  lua_settop(L, 1);
  int fd;
  uint64_t size;
  if (gm_file_open(path, &fd, &size) != GM_OK) return luaL_error(L, "load_tables: %s", gm_last_error());
  if (size > (uint64_t)SIZE_MAX / 2) {
    close(fd);
    return luaL_error(L, "load_tables: %s: too large (%I bytes)", path, (lua_Integer)size);
  }
  unsigned char *buf = lua_newuserdatauv(L, size ? (size_t)size : 1, 0); /* collected after an error too */
  int buf_idx = lua_gettop(L);
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
    table_map *m = NULL;
    if (lazy) { /* the box first, then its array: an error below frees it */
      m = lua_newuserdatauv(L, sizeof *m, 1);
      m->at = NULL, m->n = 0, m->kind = (int)kind;
      luaL_setmetatable(L, MAP_META);
      lua_pushvalue(L, buf_idx);
      lua_setiuservalue(L, -2, 1);
      m->at = malloc(sizeof *m->at * (n ? n : 1));
      if (!m->at) return luaL_error(L, "load_tables: %s: no memory for table '%s'", path, name);
    } else {
      lua_createtable(L, 0, (int)n);
    }
    const char *key = NULL, *value;
    size_t key_len = 0, value_len;
    for (uint32_t i = 0; i < n; i++) {
      const unsigned char *at = c.p;
      take_next(L, &c, name, "a key", &key, &key_len);
      if (kind == KIND_MAP) take_bytes(L, &c, name, "a value", &value, &value_len);
      if (m) {
        m->at[i] = at, m->n = i + 1;
        continue;
      }
      lua_pushlstring(L, key, key_len);
      if (kind == KIND_MAP) lua_pushlstring(L, value, value_len);
      else lua_pushboolean(L, 1);
      lua_rawset(L, -3);
    }
    lua_rawset(L, result);
  }
  if (left(&c)) return bad(L, &c, NULL, lua_pushfstring(L, "%I bytes after the last table", (lua_Integer)left(&c)));
  return 1;
}

/* ---- finding ---- */

typedef struct {
  const char *s;
  size_t n;
} word;

static int compare_words(const void *x, const void *y) {
  const word *a = x, *b = y;
  return compare_bytes(a->s, a->n, b->s, b->n);
}

static int is_wanted(const word *wanted, size_t count, const char *s, size_t n) {
  word w = {s, n};
  return bsearch(&w, wanted, count, sizeof w, compare_words) != NULL;
}

/* gm.table_find(map, set) → {key = value, ...}: the entries of a graphmert.TableMap whose key is
 * in set (string → true), or one of whose value's "\0"-separated parts is: the seed graph's facts
 * that touch some entities (relation → head → tails), or the phrases that name them (phrase →
 * ids), found in one pass over the file's bytes with no Lua string per entry passed by. */
static int l_table_find(lua_State *L) {
  table_map *m = check_map(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  size_t count = 0;
  lua_pushnil(L);
  while (lua_next(L, 2)) count += lua_type(L, -2) == LUA_TSTRING, lua_pop(L, 1);
  word *wanted = lua_newuserdatauv(L, sizeof(word) * (count ? count : 1), 0); /* its strings stay in set */
  size_t i = 0;
  lua_pushnil(L);
  while (lua_next(L, 2)) {
    if (lua_type(L, -2) == LUA_TSTRING) wanted[i].s = lua_tolstring(L, -2, &wanted[i].n), i++;
    lua_pop(L, 1);
  }
  qsort(wanted, count, sizeof *wanted, compare_words);
  lua_newtable(L);
  for (uint32_t e = 0; e < m->n && count; e++) {
    const char *key, *value;
    size_t key_len, value_len;
    map_entry(m, e, &key, &key_len, &value, &value_len);
    int found = is_wanted(wanted, count, key, key_len);
    for (size_t start = 0; value && !found && start <= value_len;) {
      const char *end = memchr(value + start, 0, value_len - start);
      size_t len = end ? (size_t)(end - value) - start : value_len - start;
      found = len > 0 && is_wanted(wanted, count, value + start, len);
      start += len + 1;
    }
    if (!found) continue;
    lua_pushlstring(L, key, key_len);
    push_value(L, m, e);
    lua_rawset(L, -3);
  }
  return 1;
}

static const luaL_Reg table_functions[] = {
    {"pack_tables", l_pack_tables}, {"load_tables", l_load_tables}, {"table_find", l_table_find}, {NULL, NULL}};

void lgm_open_tables(lua_State *L, int module) {
  luaL_newmetatable(L, MAP_META);
  luaL_setfuncs(L, map_methods, 0);
  lua_pop(L, 1);
  lua_pushvalue(L, module);
  lgm_set_functions(L, table_functions);
  lua_pop(L, 1);
}
