/* lgm_graph.c — graphmert.Graph and graphmert.Distances for Lua, and the graph cache's
 * statistics (gm.decay_mask, which reads distances, is bound in lgm_attention.c). Node numbers
 * are 1-based here and 0-based in the core. */
#include <math.h>

#include "lgm.h"

#define LGM_GRAPH "graphmert.Graph"
#define LGM_DISTANCES "graphmert.Distances"
#define LGM_DISTANCE_BOXES "graphmert.distance_boxes" /* weak: paths pointer -> its box */

typedef struct { gm_graph *g; } graph_box;
typedef struct { gm_paths *p; } paths_box;

static gm_graph *check_graph(lua_State *L, int arg) {
  graph_box *b = luaL_checkudata(L, arg, LGM_GRAPH);
  if (!b->g) luaL_argerror(L, arg, "attempt to use a released graph");
  return b->g;
}

static gm_paths *check_paths(lua_State *L, int arg) {
  paths_box *b = luaL_checkudata(L, arg, LGM_DISTANCES);
  if (!b->p) luaL_argerror(L, arg, "attempt to use released distances");
  return b->p;
}

gm_paths *lgm_test_paths(lua_State *L, int arg) {
  return luaL_testudata(L, arg, LGM_DISTANCES) ? check_paths(L, arg) : NULL;
}

static graph_box *new_graph_box(lua_State *L) {
  graph_box *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->g = NULL;
  luaL_setmetatable(L, LGM_GRAPH);
  return b;
}

/* Pushes the one box of p (steals the reference): the same distances are the same object. */
static void push_paths(lua_State *L, gm_paths *p) {
  lua_getfield(L, LUA_REGISTRYINDEX, LGM_DISTANCE_BOXES);
  lua_rawgetp(L, -1, p);
  if (!lua_isnil(L, -1)) {
    lua_remove(L, -2);
    gm_paths_release(p); /* the box already owns one */
    return;
  }
  lua_pop(L, 1);
  paths_box *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->p = p;
  luaL_setmetatable(L, LGM_DISTANCES);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, -3, p);
  lua_remove(L, -2);
}

/* ---- construction ------------------------------------------------------------------------ */

/* gm.graph(n, {{u, v}, ...}[, {directed = false}]) with 1-based nodes */
static int l_graph(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  int directed = lgm_field_boolean(L, 3, "directed", 0);
  lua_Integer m = luaL_len(L, 2);
  luaL_argcheck(L, m >= 0 && m <= INT32_MAX, 2, "edge count out of range");
  int64_t *edges = lua_newuserdatauv(L, (size_t)(2 * m + 1) * sizeof(int64_t), 0); /* GC'd */
  for (lua_Integer e = 0; e < m; e++) {
    lua_geti(L, 2, e + 1);
    if (!lua_istable(L, -1)) {
      lua_pushfstring(L, "edge %d is not a {u, v} pair", (int)e + 1);
      return luaL_argerror(L, 2, lua_tostring(L, -1));
    }
    for (int k = 0; k < 2; k++) {
      int isnum;
      lua_geti(L, -1, k + 1);
      lua_Integer v = lua_tointegerx(L, -1, &isnum);
      if (!isnum) {
        lua_pushfstring(L, "edge %d is not a pair of integers", (int)e + 1);
        return luaL_argerror(L, 2, lua_tostring(L, -1));
      }
      if (v < 1) { /* the core checks the upper end; here v - 1 must not overflow */
        lua_pushfstring(L, "edge %d joins node %I, outside [1, %I]", (int)e + 1, v, n);
        return luaL_argerror(L, 2, lua_tostring(L, -1));
      }
      edges[2 * e + k] = (int64_t)v - 1;
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  graph_box *b = new_graph_box(L);
  b->g = gm_graph_from_edges((int64_t)n, edges, (int64_t)m, directed);
  if (!b->g) return lgm_raise(L);
  return 1;
}

static const char *const leaf_edge_names[] = {"path", "clique", "none", NULL};

/* gm.leafy_chain{roots = 128, leaves = 7, leaf_edges = "path"} */
static int l_leafy_chain(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer roots = lgm_field_integer(L, 1, "roots", LGM_NO_DEFAULT);
  lua_Integer leaves = lgm_field_integer(L, 1, "leaves", LGM_NO_DEFAULT);
  int kind = lgm_field_option(L, 1, "leaf_edges", leaf_edge_names);
  graph_box *b = new_graph_box(L);
  b->g = gm_graph_leafy_chain((int64_t)roots, (int64_t)leaves, (gm_leaf_edges)kind);
  if (!b->g) return lgm_raise(L);
  return 1;
}

/* ---- graph methods ----------------------------------------------------------------------- */

static int g_release(lua_State *L) {
  graph_box *b = luaL_checkudata(L, 1, LGM_GRAPH);
  gm_graph_release(b->g);
  b->g = NULL;
  return 0;
}

static int g_num_nodes(lua_State *L) {
  lua_pushinteger(L, gm_graph_num_nodes(check_graph(L, 1)));
  return 1;
}

static int g_num_edges(lua_State *L) {
  int64_t m;
  gm_graph_edges(check_graph(L, 1), &m);
  lua_pushinteger(L, m);
  return 1;
}

static int g_is_directed(lua_State *L) {
  lua_pushboolean(L, gm_graph_is_directed(check_graph(L, 1)));
  return 1;
}

static int g_edges(lua_State *L) {
  int64_t m;
  const int64_t *e = gm_graph_edges(check_graph(L, 1), &m);
  lua_createtable(L, (int)m, 0);
  for (int64_t i = 0; i < m; i++) {
    lua_createtable(L, 2, 0);
    lua_pushinteger(L, e[2 * i] + 1);
    lua_rawseti(L, -2, 1);
    lua_pushinteger(L, e[2 * i + 1] + 1);
    lua_rawseti(L, -2, 2);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int g_neighbors(lua_State *L) {
  gm_graph *g = check_graph(L, 1);
  lua_Integer i = luaL_checkinteger(L, 2);
  if (i < 1 || i > gm_graph_num_nodes(g)) {
    lua_pushfstring(L, "node %I out of range [1, %I]", i, (lua_Integer)gm_graph_num_nodes(g));
    return luaL_argerror(L, 2, lua_tostring(L, -1));
  }
  int64_t count;
  const int64_t *nb = gm_graph_neighbors(g, (int64_t)i - 1, &count);
  lua_createtable(L, (int)count, 0);
  for (int64_t k = 0; k < count; k++) {
    lua_pushinteger(L, nb[k] + 1);
    lua_rawseti(L, -2, k + 1);
  }
  return 1;
}

static int g_adjacency(lua_State *L) {
  gm_graph *g = check_graph(L, 1);
  int self_loops = lgm_field_boolean(L, 2, "self_loops", 0);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_graph_adjacency(g, self_loops));
}

static gm_paths_method check_method(lua_State *L, int opts) {
  static const char *const names[] = {"auto", "bfs", "closed_form", NULL}; /* gm_paths_method order */
  return (gm_paths_method)lgm_field_option(L, opts, "method", names);
}

/* g:distances{method = "auto"}: the shared, cached hop counts (a graphmert.Distances) */
static int g_distances(lua_State *L) {
  gm_graph *g = check_graph(L, 1);
  gm_paths_method method = check_method(L, 2);
  int cache = lgm_field_boolean(L, 2, "cache", 1);
  gm_paths *p = gm_graph_paths(g, method, cache);
  if (!p) return lgm_raise(L);
  push_paths(L, p);
  return 1;
}

/* g:shortest_paths{method, cache}: hop counts as a float [N, N] tensor, inf if unreachable */
static int g_shortest_paths(lua_State *L) {
  gm_graph *g = check_graph(L, 1);
  gm_paths_method method = check_method(L, 2);
  int cache = lgm_field_boolean(L, 2, "cache", 1);
  lgm_box *b = lgm_new_box(L);
  gm_paths *p = gm_graph_paths(g, method, cache);
  if (!p) return lgm_raise(L);
  gm_tensor *t = gm_paths_tensor(p);
  gm_paths_release(p);
  if (!t) return lgm_raise(L);
  lgm_box_set(L, b, t);
  return 1;
}

static int g_config(lua_State *L) {
  gm_graph *g = check_graph(L, 1);
  int64_t roots, leaves;
  gm_leaf_edges kind;
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, gm_graph_num_nodes(g));
  lua_setfield(L, -2, "num_nodes");
  lua_pushboolean(L, gm_graph_is_directed(g));
  lua_setfield(L, -2, "directed");
  if (gm_graph_leafy_config(g, &roots, &leaves, &kind)) {
    lua_pushliteral(L, "leafy_chain");
    lua_setfield(L, -2, "kind");
    lua_pushinteger(L, roots);
    lua_setfield(L, -2, "roots");
    lua_pushinteger(L, leaves);
    lua_setfield(L, -2, "leaves");
    lua_pushstring(L, leaf_edge_names[kind]);
    lua_setfield(L, -2, "leaf_edges");
  } else {
    lua_pushliteral(L, "graph");
    lua_setfield(L, -2, "kind");
  }
  return 1;
}

static int g_tostring(lua_State *L) {
  graph_box *b = luaL_checkudata(L, 1, LGM_GRAPH);
  if (!b->g) {
    lua_pushliteral(L, "graphmert.Graph (released)");
    return 1;
  }
  int64_t m, roots, leaves;
  gm_leaf_edges kind;
  gm_graph_edges(b->g, &m);
  if (gm_graph_leafy_config(b->g, &roots, &leaves, &kind))
    lua_pushfstring(L, "graphmert.Graph (leafy chain: %d roots, %d leaves, leaf_edges=%s; %d nodes, %d edges)",
                    (int)roots, (int)leaves, leaf_edge_names[kind], (int)gm_graph_num_nodes(b->g), (int)m);
  else
    lua_pushfstring(L, "graphmert.Graph (%d nodes, %d %s edges)", (int)gm_graph_num_nodes(b->g),
                    (int)m, gm_graph_is_directed(b->g) ? "directed" : "undirected");
  return 1;
}

/* ---- distances --------------------------------------------------------------------------- */

static int d_release(lua_State *L) {
  paths_box *b = luaL_checkudata(L, 1, LGM_DISTANCES);
  gm_paths_release(b->p);
  b->p = NULL;
  return 0;
}

static int d_num_nodes(lua_State *L) {
  lua_pushinteger(L, check_paths(L, 1)->n);
  return 1;
}

static int d_max_hops(lua_State *L) {
  lua_pushinteger(L, check_paths(L, 1)->max_hops);
  return 1;
}

static int d_bytes(lua_State *L) {
  gm_paths *p = check_paths(L, 1);
  lua_pushinteger(L, (lua_Integer)(p->n * p->n * (int64_t)sizeof(uint16_t)));
  return 1;
}

static int d_get(lua_State *L) {
  gm_paths *p = check_paths(L, 1);
  lua_Integer i = luaL_checkinteger(L, 2), j = luaL_checkinteger(L, 3);
  luaL_argcheck(L, i >= 1 && i <= p->n, 2, "node out of range");
  luaL_argcheck(L, j >= 1 && j <= p->n, 3, "node out of range");
  uint16_t h = p->hops[(i - 1) * p->n + (j - 1)];
  if (h == GM_HOPS_UNREACHABLE) lua_pushnumber(L, HUGE_VAL);
  else lua_pushinteger(L, h);
  return 1;
}

static int d_tensor(lua_State *L) {
  gm_paths *p = check_paths(L, 1);
  lgm_box *b = lgm_new_box(L);
  return lgm_finish(L, b, gm_paths_tensor(p));
}

static int d_tostring(lua_State *L) {
  paths_box *b = luaL_checkudata(L, 1, LGM_DISTANCES);
  if (!b->p) lua_pushliteral(L, "graphmert.Distances (released)");
  else lua_pushfstring(L, "graphmert.Distances (%d nodes, at most %d hops, 2 bytes a pair)",
                       (int)b->p->n, (int)b->p->max_hops);
  return 1;
}

static int l_graph_cache_stats(lua_State *L) {
  gm_graph_cache_stats s;
  gm_graph_cache_get_stats(&s);
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, s.hits);
  lua_setfield(L, -2, "hits");
  lua_pushinteger(L, s.misses);
  lua_setfield(L, -2, "misses");
  lua_pushinteger(L, s.entries);
  lua_setfield(L, -2, "entries");
  lua_pushinteger(L, (lua_Integer)s.bytes);
  lua_setfield(L, -2, "bytes");
  return 1;
}

static int l_graph_cache_clear(lua_State *L) {
  (void)L;
  gm_graph_cache_clear();
  return 0;
}

static const luaL_Reg graph_functions[] = {
    {"graph", l_graph},
    {"leafy_chain", l_leafy_chain},
    {"graph_cache_stats", l_graph_cache_stats},
    {"graph_cache_clear", l_graph_cache_clear},
    {NULL, NULL}};

static const luaL_Reg graph_methods[] = {
    {"release", g_release},       {"num_nodes", g_num_nodes},
    {"num_edges", g_num_edges},   {"is_directed", g_is_directed},
    {"edges", g_edges},           {"neighbors", g_neighbors},
    {"adjacency", g_adjacency},   {"shortest_paths", g_shortest_paths},
    {"distances", g_distances},   {"config", g_config},
    {NULL, NULL}};

static const luaL_Reg distance_methods[] = {
    {"release", d_release}, {"num_nodes", d_num_nodes}, {"max_hops", d_max_hops},
    {"bytes", d_bytes},     {"get", d_get},             {"tensor", d_tensor},
    {NULL, NULL}};

void lgm_open_graph(lua_State *L, int module) {
  lgm_new_type(L, LGM_GRAPH, graph_methods, g_release, g_tostring);
  lua_pop(L, 1);
  lgm_new_type(L, LGM_DISTANCES, distance_methods, d_release, d_tostring);
  lua_pop(L, 1);
  lua_newtable(L); /* weak-valued identity table for distances boxes */
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "v");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, LGM_DISTANCE_BOXES);
  lua_pushvalue(L, module);
  lgm_set_functions(L, graph_functions);
  lua_pop(L, 1);
}
