/* gm_graph.c — graphs (edge list + CSR), leafy chains, adjacency, and all-pairs hop counts:
 * one BFS per source spread over the threads, or the closed form of a leafy chain. */
#include <stdlib.h>
#include <string.h>

#include "gm_internal.h"

struct gm_graph {
  int refcount;
  int64_t n, m;
  int directed;
  int64_t *edges;   /* 2m, as given */
  int64_t *offsets; /* n + 1 */
  int64_t *targets; /* CSR, sorted per node */
  int leafy;
  int64_t roots, leaves;
  gm_leaf_edges leaf_edges;
};

void gm_graph_retain(gm_graph *g) { __atomic_add_fetch(&g->refcount, 1, __ATOMIC_RELAXED); }

void gm_graph_release(gm_graph *g) {
  if (!g || __atomic_sub_fetch(&g->refcount, 1, __ATOMIC_ACQ_REL) > 0) return;
  gm_free(g->edges);
  gm_free(g->offsets);
  gm_free(g->targets);
  gm_free(g);
}

static int compare_int64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Builds the CSR arrays from the edge list. */
static gm_status build_csr(gm_graph *g) {
  int64_t per_edge = g->directed ? 1 : 2;
  g->offsets = gm_malloc((size_t)(g->n + 1) * sizeof(int64_t));
  g->targets = gm_malloc((size_t)(g->m * per_edge + 1) * sizeof(int64_t));
  if (!g->offsets || !g->targets) return gm_last_status();
  memset(g->offsets, 0, (size_t)(g->n + 1) * sizeof(int64_t));
  for (int64_t e = 0; e < g->m; e++) {
    g->offsets[g->edges[2 * e] + 1]++;
    if (!g->directed) g->offsets[g->edges[2 * e + 1] + 1]++;
  }
  for (int64_t i = 0; i < g->n; i++) g->offsets[i + 1] += g->offsets[i];
  int64_t *fill = gm_malloc((size_t)(g->n + 1) * sizeof(int64_t));
  if (!fill) return gm_last_status();
  memcpy(fill, g->offsets, (size_t)(g->n + 1) * sizeof(int64_t));
  for (int64_t e = 0; e < g->m; e++) {
    int64_t u = g->edges[2 * e], v = g->edges[2 * e + 1];
    g->targets[fill[u]++] = v;
    if (!g->directed) g->targets[fill[v]++] = u;
  }
  gm_free(fill);
  for (int64_t i = 0; i < g->n; i++)
    qsort(g->targets + g->offsets[i], (size_t)(g->offsets[i + 1] - g->offsets[i]), sizeof(int64_t),
          compare_int64);
  return GM_OK;
}

/* Largest graph we build: its n x n hop table (2 bytes a pair) must stay allocatable. */
#define GM_GRAPH_MAX_NODES ((int64_t)1 << 20)

gm_graph *gm_graph_from_edges(int64_t n, const int64_t *edges, int64_t m, int directed) {
  if (n <= 0 || n > GM_GRAPH_MAX_NODES) {
    gm_fail(GM_ERR_ARG, 1, "number of nodes must be in [1, %lld] (got %lld)",
            (long long)GM_GRAPH_MAX_NODES, (long long)n);
    return NULL;
  }
  if (m < 0 || m > INT64_MAX / 32) {
    gm_fail(GM_ERR_ARG, 2, "invalid edge count %lld", (long long)m);
    return NULL;
  }
  for (int64_t e = 0; e < 2 * m; e++)
    if (edges[e] < 0 || edges[e] >= n) {
      gm_fail(GM_ERR_ARG, 2, "edge %lld joins node %lld, outside [1, %lld]", (long long)(e / 2 + 1),
              (long long)edges[e] + 1, (long long)n);
      return NULL;
    }
  gm_graph *g = gm_malloc(sizeof *g);
  if (!g) return NULL;
  memset(g, 0, sizeof *g);
  g->refcount = 1;
  g->n = n;
  g->m = m;
  g->directed = directed != 0;
  g->edges = gm_malloc((size_t)(2 * m + 1) * sizeof(int64_t));
  if (!g->edges) {
    gm_graph_release(g);
    return NULL;
  }
  if (m) memcpy(g->edges, edges, (size_t)(2 * m) * sizeof(int64_t));
  if (build_csr(g) != GM_OK) {
    gm_graph_release(g);
    return NULL;
  }
  return g;
}

gm_graph *gm_graph_leafy_chain(int64_t roots, int64_t leaves, gm_leaf_edges leaf_edges) {
  if (roots <= 0 || leaves < 0 || roots > GM_GRAPH_MAX_NODES || leaves > GM_GRAPH_MAX_NODES ||
      roots * (leaves + 1) > GM_GRAPH_MAX_NODES) {
    gm_fail(GM_ERR_ARG, 1,
            "a leafy chain needs roots >= 1, leaves >= 0 and at most %lld nodes (got %lld roots, "
            "%lld leaves)", (long long)GM_GRAPH_MAX_NODES, (long long)roots, (long long)leaves);
    return NULL;
  }
  if (leaf_edges != GM_LEAF_EDGES_PATH && leaf_edges != GM_LEAF_EDGES_CLIQUE &&
      leaf_edges != GM_LEAF_EDGES_NONE) {
    gm_fail(GM_ERR_ARG, 1, "unknown leaf_edges kind");
    return NULL;
  }
  int64_t per_root = leaves; /* root-leaf star */
  if (leaf_edges == GM_LEAF_EDGES_PATH) per_root += leaves > 0 ? leaves - 1 : 0;
  if (leaf_edges == GM_LEAF_EDGES_CLIQUE) per_root += leaves * (leaves - 1) / 2;
  int64_t m = (roots - 1) + roots * per_root, k = 0;
  int64_t *edges = gm_malloc((size_t)(2 * m + 1) * sizeof(int64_t));
  if (!edges) return NULL;
#define ADD_EDGE(u, v) (edges[2 * k] = (u), edges[2 * k + 1] = (v), k++)
  for (int64_t r = 0; r + 1 < roots; r++) ADD_EDGE(r, r + 1);
  for (int64_t r = 0; r < roots; r++) {
    int64_t first = roots + leaves * r;
    for (int64_t a = 0; a < leaves; a++) ADD_EDGE(r, first + a);
    if (leaf_edges == GM_LEAF_EDGES_PATH)
      for (int64_t a = 0; a + 1 < leaves; a++) ADD_EDGE(first + a, first + a + 1);
    if (leaf_edges == GM_LEAF_EDGES_CLIQUE)
      for (int64_t a = 0; a < leaves; a++)
        for (int64_t b = a + 1; b < leaves; b++) ADD_EDGE(first + a, first + b);
  }
#undef ADD_EDGE
  GM_ASSERT(k == m);
  gm_graph *g = gm_graph_from_edges(roots * (leaves + 1), edges, m, 0);
  gm_free(edges);
  if (!g) return NULL;
  g->leafy = 1;
  g->roots = roots;
  g->leaves = leaves;
  g->leaf_edges = leaf_edges;
  return g;
}

int64_t gm_graph_num_nodes(const gm_graph *g) { return g->n; }
int gm_graph_is_directed(const gm_graph *g) { return g->directed; }

const int64_t *gm_graph_edges(const gm_graph *g, int64_t *m) {
  *m = g->m;
  return g->edges;
}

const int64_t *gm_graph_neighbors(const gm_graph *g, int64_t i, int64_t *count) {
  *count = g->offsets[i + 1] - g->offsets[i];
  return g->targets + g->offsets[i];
}

int gm_graph_leafy_config(const gm_graph *g, int64_t *roots, int64_t *leaves, gm_leaf_edges *e) {
  if (!g->leafy) return 0;
  *roots = g->roots;
  *leaves = g->leaves;
  *e = g->leaf_edges;
  return 1;
}

gm_tensor *gm_graph_adjacency(const gm_graph *g, int self_loops) {
  int64_t shape[2] = {g->n, g->n};
  gm_tensor *a = gm_tensor_full(2, shape, 0.0f);
  if (!a) return NULL;
  for (int64_t i = 0; i < g->n; i++) {
    for (int64_t k = g->offsets[i]; k < g->offsets[i + 1]; k++) a->data[i * g->n + g->targets[k]] = 1.0f;
    if (self_loops) a->data[i * g->n + i] = 1.0f;
  }
  return a;
}

/* ---- hop counts -------------------------------------------------------------------------- */

gm_paths *gm_paths_alloc(int64_t n) {
  gm_paths *p = gm_malloc(sizeof *p);
  if (!p) return NULL;
  p->refcount = 1;
  p->n = n;
  p->max_hops = 0;
  p->hops = gm_malloc((size_t)(n * n) * sizeof(uint16_t));
  if (!p->hops) {
    gm_free(p);
    return NULL;
  }
  return p;
}

void gm_paths_retain(gm_paths *p) { __atomic_add_fetch(&p->refcount, 1, __ATOMIC_RELAXED); }

void gm_paths_release(gm_paths *p) {
  if (!p || __atomic_sub_fetch(&p->refcount, 1, __ATOMIC_ACQ_REL) > 0) return;
  gm_free(p->hops);
  gm_free(p);
}

/* One BFS per source, sources spread over the threads, each with its own queue. */
static gm_status paths_bfs(const gm_graph *g, gm_paths *p) {
  int64_t n = g->n;
  int overflow = 0, nomem = 0;
#pragma omp parallel
  {
    int64_t *queue = malloc((size_t)n * sizeof(int64_t)); /* scratch, not counted */
    if (!queue) {
#pragma omp atomic write
      nomem = 1;
    }
#pragma omp for schedule(dynamic, 16)
    for (int64_t s = 0; s < n; s++) {
      if (!queue) continue;
      uint16_t *row = p->hops + s * n;
      for (int64_t j = 0; j < n; j++) row[j] = GM_HOPS_UNREACHABLE;
      row[s] = 0;
      int64_t head = 0, tail = 0;
      queue[tail++] = s;
      while (head < tail) {
        int64_t u = queue[head++];
        uint32_t next = (uint32_t)row[u] + 1;
        if (next >= GM_HOPS_UNREACHABLE) {
#pragma omp atomic write
          overflow = 1;
          break;
        }
        for (int64_t k = g->offsets[u]; k < g->offsets[u + 1]; k++) {
          int64_t v = g->targets[k];
          if (row[v] == GM_HOPS_UNREACHABLE) {
            row[v] = (uint16_t)next;
            queue[tail++] = v;
          }
        }
      }
    }
    free(queue);
  }
  if (nomem) return gm_fail(GM_ERR_NOMEM, 0, "not enough memory for the BFS queues");
  if (overflow) return gm_fail(GM_ERR_ARG, 1, "a shortest path is longer than %u hops", GM_HOPS_UNREACHABLE - 1);
  return GM_OK;
}

/* The leafy chain in closed form (checked equal to BFS in spec/graph_spec.lua):
 *   root i – root j: |i−j|;  root i – leaf of j: |i−j| + 1;  leaves of i ≠ j: |i−j| + 2;
 *   two leaves a ≠ b of one root: 1 when joined (clique, or |a−b| = 1 on a path), else 2. */
static void paths_leafy(const gm_graph *g, gm_paths *p) {
  int64_t n = g->n, R = g->roots, L = g->leaves;
  GM_FOR(s, n, n * n, {
    int64_t rs = s < R ? s : (s - R) / L, as = s < R ? -1 : (s - R) % L;
    int64_t from_leaf = as >= 0;
    uint16_t *row = p->hops + s * n;
    for (int64_t rt = 0; rt < R; rt++) { /* the roots, then each root's block of leaves */
      int64_t d = (rs > rt ? rs - rt : rt - rs) + from_leaf;
      row[rt] = (uint16_t)d;
      uint16_t *leaves = row + R + rt * L;
      if (rt == rs && from_leaf) {
        for (int64_t at = 0; at < L; at++) {
          int64_t gap = as > at ? as - at : at - as;
          int joined = g->leaf_edges == GM_LEAF_EDGES_CLIQUE ||
                       (g->leaf_edges == GM_LEAF_EDGES_PATH && gap == 1);
          leaves[at] = (uint16_t)(gap == 0 ? 0 : joined ? 1 : 2);
        }
      } else {
        for (int64_t at = 0; at < L; at++) leaves[at] = (uint16_t)(d + 1);
      }
    }
  });
}

static void note_max(gm_paths *p) {
  int best = 0;
  int64_t count = p->n * p->n;
  const uint16_t *h = p->hops;
#pragma omp simd reduction(max : best)
  for (int64_t i = 0; i < count; i++) {
    int v = h[i] == GM_HOPS_UNREACHABLE ? 0 : h[i];
    best = v > best ? v : best;
  }
  p->max_hops = (uint16_t)best;
}

gm_paths *gm_graph_paths_compute(const gm_graph *g, gm_paths_method method) {
  if (method == GM_PATHS_CLOSED_FORM && !g->leafy) {
    gm_fail(GM_ERR_ARG, 2, "the closed form exists only for leafy chains");
    return NULL;
  }
  if (g->leafy && g->roots + 2 >= GM_HOPS_UNREACHABLE) {
    gm_fail(GM_ERR_ARG, 1, "a chain of %lld roots has paths longer than %u hops",
            (long long)g->roots, GM_HOPS_UNREACHABLE - 1);
    return NULL;
  }
  gm_paths *p = gm_paths_alloc(g->n);
  if (!p) return NULL;
  if (g->leafy && method != GM_PATHS_BFS) {
    paths_leafy(g, p);
  } else if (paths_bfs(g, p) != GM_OK) {
    gm_paths_release(p);
    return NULL;
  }
  note_max(p);
  return p;
}

gm_tensor *gm_paths_tensor(const gm_paths *p) {
  int64_t shape[2] = {p->n, p->n};
  gm_tensor *t = gm_tensor_empty(2, shape);
  if (!t) return NULL;
  int64_t count = p->n * p->n;
  GM_FOR(i, count, count, {
    t->data[i] = p->hops[i] == GM_HOPS_UNREACHABLE ? INFINITY : (float)p->hops[i];
  });
  return t;
}

/* The cache key of a graph: its configuration for leafy chains; for other graphs the node
 * count, direction and the whole sorted edge list, compared exactly (gm_graph_cache.c). */
size_t gm_graph_key(const gm_graph *g, char *buf, size_t size) {
  if (g->leafy)
    return (size_t)snprintf(buf, size, "leafy_chain roots=%lld leaves=%lld leaf_edges=%d",
                            (long long)g->roots, (long long)g->leaves, (int)g->leaf_edges);
  return (size_t)snprintf(buf, size, "graph n=%lld directed=%d", (long long)g->n, g->directed);
}

/* CSR targets with offsets: the canonical form of the edge set (duplicates kept). */
const int64_t *gm_graph_csr(const gm_graph *g, const int64_t **offsets) {
  *offsets = g->offsets;
  return g->targets;
}
