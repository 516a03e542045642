/* gm_graph_cache.c — the process-wide cache of hop counts. Distances depend only on the
 * graph's configuration, so every sample and every layer shares one table per configuration:
 * computed on the first request (a miss), handed out by reference afterwards (a hit). */
#include <pthread.h>
#include <string.h>

#include "gm_internal.h"

typedef struct cache_entry {
  char key[128];
  int64_t n;
  int64_t *offsets, *targets; /* general graphs: the CSR compared exactly; NULL for leafy */
  int64_t ntargets;
  gm_paths *paths;
  struct cache_entry *next;
} cache_entry;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static cache_entry *cache_head;
static int64_t cache_hits, cache_misses;

static int entry_matches(const cache_entry *e, const char *key, const gm_graph *g, int leafy) {
  if (strcmp(e->key, key) != 0) return 0;
  if (leafy) return 1;
  const int64_t *offsets;
  const int64_t *targets = gm_graph_csr(g, &offsets);
  int64_t nt = offsets[e->n];
  return nt == e->ntargets &&
         memcmp(offsets, e->offsets, (size_t)(e->n + 1) * sizeof(int64_t)) == 0 &&
         memcmp(targets, e->targets, (size_t)nt * sizeof(int64_t)) == 0;
}

static cache_entry *find(const char *key, const gm_graph *g, int leafy) {
  for (cache_entry *e = cache_head; e; e = e->next)
    if (entry_matches(e, key, g, leafy)) return e;
  return NULL;
}

static void entry_free(cache_entry *e) {
  gm_paths_release(e->paths);
  gm_free(e->offsets);
  gm_free(e->targets);
  gm_free(e);
}

/* A new entry holding a reference to paths (and a copy of the CSR of a general graph). */
static cache_entry *entry_new(const char *key, const gm_graph *g, int leafy, gm_paths *paths) {
  cache_entry *e = gm_malloc(sizeof *e);
  if (!e) return NULL;
  memset(e, 0, sizeof *e);
  snprintf(e->key, sizeof e->key, "%s", key);
  e->n = gm_graph_num_nodes(g);
  if (!leafy) {
    const int64_t *offsets;
    const int64_t *targets = gm_graph_csr(g, &offsets);
    e->ntargets = offsets[e->n];
    e->offsets = gm_malloc((size_t)(e->n + 1) * sizeof(int64_t));
    e->targets = gm_malloc((size_t)(e->ntargets + 1) * sizeof(int64_t));
    if (!e->offsets || !e->targets) {
      entry_free(e);
      return NULL;
    }
    memcpy(e->offsets, offsets, (size_t)(e->n + 1) * sizeof(int64_t));
    memcpy(e->targets, targets, (size_t)e->ntargets * sizeof(int64_t));
  }
  gm_paths_retain(paths);
  e->paths = paths;
  return e;
}

gm_paths *gm_graph_paths(gm_graph *g, gm_paths_method method, int use_cache) {
  if (!use_cache) return gm_graph_paths_compute(g, method);
  char key[128];
  int64_t roots, leaves;
  gm_leaf_edges kind;
  int leafy = gm_graph_leafy_config(g, &roots, &leaves, &kind);
  gm_graph_key(g, key, sizeof key);
  pthread_mutex_lock(&cache_lock);
  cache_entry *e = find(key, g, leafy);
  if (e) {
    cache_hits++;
    gm_paths_retain(e->paths);
    pthread_mutex_unlock(&cache_lock);
    return e->paths;
  }
  cache_misses++;
  pthread_mutex_unlock(&cache_lock);

  gm_paths *paths = gm_graph_paths_compute(g, method); /* outside the lock: it may be long */
  if (!paths) return NULL;
  pthread_mutex_lock(&cache_lock);
  e = find(key, g, leafy); /* another thread may have filled it meanwhile */
  if (e) {
    gm_paths_release(paths);
    gm_paths_retain(e->paths);
    paths = e->paths;
  } else if ((e = entry_new(key, g, leafy, paths)) != NULL) {
    e->next = cache_head;
    cache_head = e;
  } /* else: no room to remember it; the caller still gets its distances */
  pthread_mutex_unlock(&cache_lock);
  return paths;
}

void gm_graph_cache_get_stats(gm_graph_cache_stats *stats) {
  pthread_mutex_lock(&cache_lock);
  stats->hits = cache_hits;
  stats->misses = cache_misses;
  stats->entries = 0;
  stats->bytes = 0;
  for (cache_entry *e = cache_head; e; e = e->next) {
    stats->entries++;
    stats->bytes += (size_t)(e->n * e->n) * sizeof(uint16_t);
  }
  pthread_mutex_unlock(&cache_lock);
}

void gm_graph_cache_clear(void) {
  pthread_mutex_lock(&cache_lock);
  cache_entry *e = cache_head;
  cache_head = NULL;
  cache_hits = cache_misses = 0;
  pthread_mutex_unlock(&cache_lock);
  while (e) {
    cache_entry *next = e->next;
    entry_free(e);
    e = next;
  }
}
