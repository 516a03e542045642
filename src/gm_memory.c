/* gm_memory.c — counted, aligned allocation: live and peak bytes, an optional cap, an OOM hook. */
#include <stdatomic.h>
#include <string.h>

#include "gm_internal.h"

/* Each block starts with a 64-byte header holding its size, so the payload stays aligned for SIMD. */
#define HEADER 64

static atomic_size_t live_bytes;
static atomic_size_t peak_bytes;
static atomic_size_t limit_bytes;
static _Thread_local gm_oom_hook oom_hook;
static _Thread_local void *oom_ud;

static void note_peak(size_t now) {
  size_t peak = atomic_load(&peak_bytes);
  while (now > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, now)) {
  }
}

void *gm_malloc(size_t bytes) {
  if (bytes > SIZE_MAX - 2 * HEADER) {
    gm_fail(GM_ERR_NOMEM, 0, "not enough memory (requested %zu bytes)", bytes);
    return NULL;
  }
  size_t limit = atomic_load(&limit_bytes);
  if (limit && atomic_load(&live_bytes) + bytes > limit) {
    if (oom_hook) oom_hook(oom_ud); /* a GC may release enough */
    if (atomic_load(&live_bytes) + bytes > limit) {
      gm_fail(GM_ERR_NOMEM, 0,
              "memory limit reached (requested %zu bytes, %zu live, limit %zu)", bytes,
              atomic_load(&live_bytes), limit);
      return NULL;
    }
  }
  void *block = NULL;
  if (posix_memalign(&block, HEADER, bytes + HEADER) != 0) {
    if (oom_hook) oom_hook(oom_ud);
    if (posix_memalign(&block, HEADER, bytes + HEADER) != 0) {
      gm_fail(GM_ERR_NOMEM, 0, "not enough memory (requested %zu bytes)", bytes);
      return NULL;
    }
  }
  memcpy(block, &bytes, sizeof bytes);
  note_peak(atomic_fetch_add(&live_bytes, bytes) + bytes);
  return (char *)block + HEADER;
}

void gm_free(void *p) {
  if (!p) return;
  char *block = (char *)p - HEADER;
  size_t bytes;
  memcpy(&bytes, block, sizeof bytes);
  atomic_fetch_sub(&live_bytes, bytes);
  free(block);
}

size_t gm_memory_live(void) { return atomic_load(&live_bytes); }
size_t gm_memory_peak(void) { return atomic_load(&peak_bytes); }
void gm_memory_reset_peak(void) { atomic_store(&peak_bytes, atomic_load(&live_bytes)); }
void gm_memory_set_limit(size_t bytes) { atomic_store(&limit_bytes, bytes); }
size_t gm_memory_limit(void) { return atomic_load(&limit_bytes); }

void gm_memory_set_oom_hook(gm_oom_hook hook, void *ud) {
  oom_hook = hook;
  oom_ud = ud;
}
