/* gm_memory.c — counted allocation: live and peak bytes, an optional cap, an OOM hook, and a
 * cache of freed blocks.
 *
 * Large tensors come from mmap, and a fresh mapping pays a page fault per 4 KiB on first touch:
 * a 32 MiB attention buffer made every step would spend more time faulting than computing. So
 * freed blocks of at least GM_BLOCK_CACHE_MIN bytes are kept (rounded to size classes, at most
 * GM_BLOCK_CACHE_SLOTS of them and a byte cap) and handed out again for the same class, or for a
 * class up to a third smaller when none of its own is cached (see cache_take). Cached bytes are
 * not live: gm_memory_live() counts what tensors hold (a whole block, when it is a larger one).
 *
 * Smaller blocks come from malloc, which served them slowly: glibc's posix_memalign searched
 * and split its bins for each of the thousands of tensor headers, storages and small tensors a
 * training step makes and frees (8% of the demo model's samples; glibc's malloc with jemalloc
 * preloaded trained it 27% faster). They are rounded to size classes too (64-byte steps up to
 * 512 bytes, then eight per power of two) and freed ones wait in a free list per class, up to
 * SMALL_CACHE_MAX bytes (see small_class). Live and peak count the bytes asked for, as before. */
#include <pthread.h>
#include <sys/mman.h>
#include <stdatomic.h>
#include <string.h>

#include "gm_internal.h"

/* Under AddressSanitizer a kept block's payload is poisoned until it is handed out again, so
 * that a use after gm_free is still reported though the block is not freed; so is a handed-out
 * small block's rounding past its request (see small_slack), so that an overflow into it is
 * still reported too. (Valgrind, which sees only malloc and free, no longer sees either.) */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif
#define KEPT(block, payload) POISON((char *)(block) + HEADER, (payload))
#define HANDED_OUT(block, payload) UNPOISON((char *)(block) + HEADER, (payload))

/* Each block starts with a 64-byte header holding its size class, so the payload stays
 * aligned for SIMD. */
#define HEADER 64
#define GM_BLOCK_CACHE_MIN ((size_t)1 << 20)
/* A training step frees well over 64 large blocks before its next step takes them again (the
 * 2-layer bench model: 64 slots left 22k page faults per step, 256 about 3k); bytes stay capped
 * by cache_limit. */
#define GM_BLOCK_CACHE_SLOTS 256

static atomic_size_t live_bytes;
static atomic_size_t peak_bytes;
static atomic_size_t limit_bytes;
static _Thread_local gm_oom_hook oom_hook;
static _Thread_local void *oom_ud;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static void *cached_block[GM_BLOCK_CACHE_SLOTS];
static size_t cached_size[GM_BLOCK_CACHE_SLOTS];
static int cached_count;
static size_t cached_bytes; /* large and small blocks */

/* The small blocks' free lists: each free block holds the next one after its size word. */
#define SMALL_CLASSES 96
#define SMALL_CACHE_MAX ((size_t)64 << 20)
static void *small_free[SMALL_CLASSES];
static size_t small_bytes;
/* The bench model's full step (1.35 GB live at its peak) frees and retakes more than 1 GiB of
 * large blocks per step: at 1 GiB it re-faulted ~110k pages a step (2.8 s -> 1.7 s at 2 GiB,
 * peak RSS the same). Cached bytes are handed back when an allocation fails. */
static size_t cache_limit = (size_t)2 << 30;

/* Large sizes round up to 1/8 of their power of two, so similar shapes share blocks. */
static size_t size_class(size_t bytes) {
  if (bytes < GM_BLOCK_CACHE_MIN) return bytes;
  size_t step = GM_BLOCK_CACHE_MIN;
  while (step * 16 <= bytes) step *= 2;
  return (bytes + step - 1) / step * step;
}

/* The class of a small request (bytes < GM_BLOCK_CACHE_MIN): its index, and in *size the payload
 * its blocks have. Up to 512 bytes in steps of 64; above, eight classes per power of two
 * (p < bytes <= 2p rounds up to a multiple of p/8), so a block is at most an eighth larger than
 * asked and the 96 lists cover every size up to 1 MiB. */
static int small_class(size_t bytes, size_t *size) {
  if (bytes <= 512) {
    *size = bytes ? (bytes + 63) / 64 * 64 : 64;
    return (int)(*size / 64) - 1;
  }
  int lg = 63 - __builtin_clzll((unsigned long long)(bytes - 1)); /* 2^lg < bytes <= 2^(lg+1) */
  size_t step = (size_t)1 << (lg - 3), steps = (bytes + step - 1) / step; /* 9 to 16 */
  *size = steps * step;
  return 8 + (lg - 9) * 8 + (int)(steps - 9);
}

/* A small block's payload past the `bytes` asked for, poisoned under AddressSanitizer while the
 * block is handed out (poison 1) and made addressable again before it is kept or freed. */
static void small_slack(void *block, size_t bytes, int poison) {
#if defined(__SANITIZE_ADDRESS__)
  size_t size;
  small_class(bytes, &size);
  char *end = (char *)block + HEADER + bytes;
  if (poison) POISON(end, size - bytes);
  else UNPOISON(end, size - bytes);
#else
  (void)block, (void)bytes, (void)poison;
#endif
}

/* A freed small block of `bytes` (requested) kept in its class's list; 1 when kept. */
static int small_put(void *block, size_t bytes) {
  size_t size;
  int c = small_class(bytes, &size);
  int kept = 0;
  pthread_mutex_lock(&cache_lock);
  if (small_bytes + size <= SMALL_CACHE_MAX && cached_bytes + size <= cache_limit) {
    memcpy((char *)block + sizeof(size_t), &small_free[c], sizeof(void *));
    small_free[c] = block;
    KEPT(block, size);
    small_bytes += size, cached_bytes += size;
    kept = 1;
  }
  pthread_mutex_unlock(&cache_lock);
  return kept;
}

/* A kept block for a small request of `bytes`, from its class's list (NULL: none kept). */
static void *small_take(size_t bytes) {
  size_t size;
  int c = small_class(bytes, &size);
  pthread_mutex_lock(&cache_lock);
  void *block = small_free[c];
  if (block) {
    memcpy(&small_free[c], (char *)block + sizeof(size_t), sizeof(void *));
    small_bytes -= size, cached_bytes -= size;
    HANDED_OUT(block, size);
  }
  pthread_mutex_unlock(&cache_lock);
  return block;
}

/* A cached block for class *cls: one of that class, else the smallest of at most 1.5 times it
 * and at most `most` bytes, whose class then replaces *cls (NULL: none). Its pages are mapped
 * already; a fresh block would fault them in while the larger one idled in the cache, which a
 * training step's backward does with the blocks its forward freed in sizes it does not ask for
 * (the bench model's step: peak RSS 1594 -> 1307 MB in float32, 1633 -> 1437 MB in "medium", the
 * step as fast; "any larger block" was worse than either, as small requests took the large
 * blocks that large ones then missed). */
static void *cache_take(size_t *cls, size_t most) {
  size_t want = *cls, fit = want + want / 2;
  if (most > fit) most = fit;
  if (most < want) most = want; /* its own class is always taken, as gm_malloc checked it */
  pthread_mutex_lock(&cache_lock);
  int best = -1;
  for (int i = 0; i < cached_count && (best < 0 || cached_size[best] != want); i++)
    if (cached_size[i] >= want && cached_size[i] <= most && (best < 0 || cached_size[i] < cached_size[best]))
      best = i;
  void *block = NULL;
  if (best >= 0) {
    block = cached_block[best];
    HANDED_OUT(block, cached_size[best]);
    *cls = cached_size[best];
    cached_bytes -= *cls;
    cached_block[best] = cached_block[--cached_count];
    cached_size[best] = cached_size[cached_count];
  }
  pthread_mutex_unlock(&cache_lock);
  return block;
}

/* 1 when the cache kept the block. */
static int cache_put(void *block, size_t cls) {
  if (cls < GM_BLOCK_CACHE_MIN) return small_put(block, cls);
  int kept = 0;
  pthread_mutex_lock(&cache_lock);
  if (cached_count < GM_BLOCK_CACHE_SLOTS && cached_bytes + cls <= cache_limit) {
    KEPT(block, cls);
    cached_block[cached_count] = block;
    cached_size[cached_count++] = cls;
    cached_bytes += cls;
    kept = 1;
  }
  pthread_mutex_unlock(&cache_lock);
  return kept;
}

void gm_memory_release_cache(void) {
  pthread_mutex_lock(&cache_lock);
  for (int i = 0; i < cached_count; i++) {
    HANDED_OUT(cached_block[i], cached_size[i]);
    free(cached_block[i]);
  }
  cached_count = 0;
  for (int c = 0; c < SMALL_CLASSES; c++)
    while (small_free[c]) {
      void *block = small_free[c];
      memcpy(&small_free[c], (char *)block + sizeof(size_t), sizeof(void *));
      size_t bytes, size; /* the size word: its last owner's request, of this class */
      memcpy(&bytes, block, sizeof bytes);
      small_class(bytes, &size);
      HANDED_OUT(block, size);
      free(block);
    }
  cached_bytes = small_bytes = 0;
  pthread_mutex_unlock(&cache_lock);
}

size_t gm_memory_cached(void) {
  pthread_mutex_lock(&cache_lock);
  size_t b = cached_bytes;
  pthread_mutex_unlock(&cache_lock);
  return b;
}

void gm_memory_set_cache_limit(size_t bytes) {
  pthread_mutex_lock(&cache_lock);
  cache_limit = bytes;
  pthread_mutex_unlock(&cache_lock);
  if (gm_memory_cached() > bytes) gm_memory_release_cache();
}

static void note_peak(size_t now) {
  size_t peak = atomic_load(&peak_bytes);
  while (now > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, now)) {
  }
}

/* Blocks of 2 MiB and more start on a 2 MiB boundary and ask the kernel for transparent huge
 * pages (Debian's default gives them only where asked: "madvise"): a fresh block then faults
 * once per 2 MiB instead of once per 4 KiB, and the TLB covers 512 times more of it (in a VM a
 * TLB miss walks two page tables). Measured on the bench model: its step ran 4-7% faster in
 * float32 and 3% in "medium", its first step took half the system time. madvise's answer is
 * ignored: a kernel without THP refuses the advice and the block keeps small pages. */
#define HUGE_PAGE ((size_t)2 << 20)
static int system_alloc(void **block, size_t cls) {
  size_t bytes = cls + HEADER;
  if (cls < GM_BLOCK_CACHE_MIN) { /* a small block has its whole class's room, to be reused */
    size_t size;
    small_class(cls, &size);
    bytes = size + HEADER;
  }
  if (bytes < HUGE_PAGE) return posix_memalign(block, HEADER, bytes) == 0;
  if (posix_memalign(block, HUGE_PAGE, bytes) != 0) return 0;
  (void)madvise(*block, bytes / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE);
  return 1;
}

/* A new block of class *cls, or of a larger class of at most `most` bytes from the cache (which
 * then replaces *cls); else from the system, after one round of releasing the cache and running
 * the OOM hook if the system says no. */
static void *block_alloc(size_t *cls, size_t most) {
  void *block = *cls >= GM_BLOCK_CACHE_MIN ? cache_take(cls, most) : small_take(*cls);
  if (block) return block;
  if (system_alloc(&block, *cls)) return block;
  gm_memory_release_cache();
  if (oom_hook) oom_hook(oom_ud);
  return system_alloc(&block, *cls) ? block : NULL;
}

void *gm_malloc(size_t bytes) {
  if (bytes > SIZE_MAX / 2) {
    gm_fail(GM_ERR_NOMEM, 0, "not enough memory (requested %zu bytes)", bytes);
    return NULL;
  }
  size_t cls = size_class(bytes);
  size_t limit = atomic_load(&limit_bytes);
  if (limit && atomic_load(&live_bytes) + cls > limit) {
    if (oom_hook) oom_hook(oom_ud); /* a GC may release enough */
    if (atomic_load(&live_bytes) + cls > limit) {
      gm_fail(GM_ERR_NOMEM, 0, "memory limit reached (requested %zu bytes, %zu live, limit %zu)",
              bytes, atomic_load(&live_bytes), limit);
      return NULL;
    }
  }
  /* under a limit, a larger cached block only if it fits too */
  size_t live = atomic_load(&live_bytes);
  void *block = block_alloc(&cls, !limit ? SIZE_MAX : limit > live ? limit - live : 0);
  if (!block) {
    gm_fail(GM_ERR_NOMEM, 0, "not enough memory (requested %zu bytes)", bytes);
    return NULL;
  }
  memcpy(block, &cls, sizeof cls);
  if (cls < GM_BLOCK_CACHE_MIN) small_slack(block, cls, 1);
  note_peak(atomic_fetch_add(&live_bytes, cls) + cls);
  return (char *)block + HEADER;
}

void gm_free(void *p) {
  if (!p) return;
  char *block = (char *)p - HEADER;
  size_t cls;
  memcpy(&cls, block, sizeof cls);
  atomic_fetch_sub(&live_bytes, cls);
  if (cls < GM_BLOCK_CACHE_MIN) small_slack(block, cls, 0);
  if (!cache_put(block, cls)) free(block);
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
