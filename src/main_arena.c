/* main_arena.c — the graphmert binary's allocator for Lua's own objects.
 *
 * A script allocates and frees Lua's small objects (tables, strings, closures, the boxes of
 * tensors) at a high rate, on the thread that also drives every op. glibc's malloc served them
 * from bins it searched and consolidated, and the garbage collector's walks over objects strewn
 * through malloc's heap ran slower than over packed ones: on the demo model (make demo's
 * config) this arena trains 6-11% more tokens a second. Blocks of up to SMALL_MAX bytes come
 * from a free list per 16-byte size class, carved in order from one reserved range of address
 * space (pages are only touched as blocks are carved); larger ones from the allocator
 * luaL_newstate installed (realloc and free). Lua passes each block's size when it resizes or
 * frees it, so blocks carry no header, and the range tells an arena block from a malloc one:
 * the state's first blocks, made before the arena takes over, stay malloc's. Freed arena blocks
 * are reused, never returned to the system while the process lives.
 *
 * Under AddressSanitizer the arena is left out, so that every Lua block stays visible to it. */
#include <string.h>
#include <sys/mman.h>

#include "lauxlib.h"
#include "main_arena.h"

#define GRAIN 16
#define SMALL_MAX 512
#define CLASSES (SMALL_MAX / GRAIN)
#define RESERVE ((size_t)1 << 35) /* 32 GiB of address space for small objects; past it, malloc */
#define COMMIT ((size_t)1 << 20)  /* made writable 1 MiB at a time */

#if !defined(__SANITIZE_ADDRESS__)
static struct {
  char *base, *cur, *writable, *end; /* reserved [base, end), carved to cur, writable to writable */
  void *free[CLASSES];               /* each free block holds the next one */
  lua_Alloc fallback;                /* luaL_newstate's allocator, for everything else */
  void *fallback_ud;
} arena;

static int class_of(size_t bytes) { return (int)((bytes + GRAIN - 1) / GRAIN) - 1; }

static int in_arena(const void *p) { return (const char *)p >= arena.base && (const char *)p < arena.end; }

/* A block of class c: the last one freed, else the next one carved (NULL: the range is used up). */
static void *take(int c) {
  void *p = arena.free[c];
  if (p) {
    memcpy(&arena.free[c], p, sizeof p);
    return p;
  }
  size_t size = (size_t)(c + 1) * GRAIN;
  if ((size_t)(arena.writable - arena.cur) < size) {
    if ((size_t)(arena.end - arena.writable) < COMMIT ||
        mprotect(arena.writable, COMMIT, PROT_READ | PROT_WRITE) != 0)
      return NULL;
    arena.writable += COMMIT;
  }
  p = arena.cur;
  arena.cur += size;
  return p;
}

static void give_back(void *p, int c) {
  memcpy(p, &arena.free[c], sizeof p);
  arena.free[c] = p;
}

static void *from_fallback(void *ptr, size_t osize, size_t nsize) {
  return arena.fallback(arena.fallback_ud, ptr, osize, nsize);
}

/* lua_Alloc: with ptr NULL, osize is the kind of object, not a size. */
static void *arena_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  if (ptr && !in_arena(ptr)) return from_fallback(ptr, osize, nsize); /* malloc's block stays malloc's */
  int old = ptr ? class_of(osize) : -1;
  if (nsize == 0) {
    if (ptr) give_back(ptr, old);
    return NULL;
  }
  int c = nsize <= SMALL_MAX ? class_of(nsize) : -1;
  if (ptr && c == old) return ptr;
  void *q = c >= 0 ? take(c) : NULL;
  if (!q) q = from_fallback(NULL, 0, nsize);
  if (!q) return ptr && nsize <= osize ? ptr : NULL; /* a shrink keeps its larger block */
  if (ptr) {
    memcpy(q, ptr, osize < nsize ? osize : nsize);
    give_back(ptr, old);
  }
  return q;
}

#endif

lua_State *main_arena_newstate(void) {
  lua_State *L = luaL_newstate();
#if !defined(__SANITIZE_ADDRESS__)
  if (L && !arena.base) {
    void *base = mmap(NULL, RESERVE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base != MAP_FAILED) {
      arena.base = arena.cur = arena.writable = base;
      arena.end = arena.base + RESERVE;
      arena.fallback = lua_getallocf(L, &arena.fallback_ud);
      lua_setallocf(L, arena_alloc, NULL);
    }
  }
#endif
  return L;
}

void main_arena_release(void) {
#if !defined(__SANITIZE_ADDRESS__)
  if (arena.base) munmap(arena.base, RESERVE);
  memset(&arena, 0, sizeof arena);
#endif
}
