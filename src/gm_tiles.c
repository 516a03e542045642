/* gm_tiles.c — the attention kernel's float32 tile products (m, n, k of 64 to 256) on AVX-512.
 *
 * Through OpenBLAS each such product paid a call, a check for its "small matrix" path and, for
 * the transposed-A products of backward (dV += Ãᵀ dO, dK += dSᵀ Q), a full GotoBLAS packing of
 * both operands: a quarter of the attention's time went to packing and calls. Here nothing is
 * packed per tile: a register-blocked micro-kernel keeps an MR x 64 block of C in 24 zmm
 * accumulators (MR = 6) and, for each step of k, loads one row of B's 64-column block (4 zmm) and
 * broadcasts MR elements of A straight from memory (a row of A, or a column when A is read
 * transposed). B must therefore be row-major in k; the kernel's Kᵀ and Vᵀ operands are packed
 * once per call into panels of 64 keys ([k][64] each: contiguous, so that a tile's block of B
 * does not map onto a few L1 sets as rows 4 KiB apart would). Long k runs in chunks of KC rows
 * of B that stay in L1 across the blocks of C (the sums keep their order: each chunk continues
 * from the C the previous one stored).
 *
 * The kernels are compiled for AVX-512F (AVX512 below: a function attribute, which GCC and
 * clang both honour) but only ever called after gm_tiles_available() said the running CPU has
 * it; elsewhere the attention kernel multiplies through gm_gemm. */
#include <immintrin.h>

#include "gm_internal.h"
#include "gm_simd.h"

#define AVX512 __attribute__((target("avx512f")))

#define MR 6  /* rows of C per micro-tile: 6 x 4 accumulators, latency of the FMAs hidden */
#define NC 64 /* columns of C per micro-tile, and keys per packed panel */
#define KC 64 /* rows of B per pass over the blocks of C */

int gm_tiles_available(void) { return (gm_cpu_features() & GM_CPU_AVX512F) != 0; }

/* What a scores product (gm_tiles_scores) does to C on its way out: C = (A B) · scale ⊙ E, E's
 * element (r, c) at e[r · lde + c] (no E: C = (A B) · scale), and A B itself kept in raw (row
 * stride ldr) when raw is not NULL. The rows of E (a decay plane) come from memory: read while
 * the next micro-tile's products run, they cost no separate pass over the tile. With stream,
 * whole 64-byte lines of raw go straight to memory (non-temporal stores: raw is read back
 * much later, by the attention's backward; see gm_tiles_scores). */
typedef struct scores_out {
  float scale;
  const float *e;
  int64_t lde;
  float *raw;
  int64_t ldr;
  int stream;
} scores_out;

/* C[rows, 64 columns masked by m] (+)= op(A) B over k, or, with OUT, the last pass of a scores
 * product (see scores_out; c and out->e, out->raw at the micro-tile's first element); ROWS,
 * TRANS, MASKED and OUT are constants after inlining, so the accumulators stay in registers. */
AVX512 static inline __attribute__((always_inline)) void micro(int ROWS, int TRANS, int MASKED, int OUT,
                                                        int64_t k, const float *a, int64_t lda,
                                                        const float *b, int64_t ldb, const __mmask16 *m,
                                                        int accumulate, float *c, int64_t ldc,
                                                        const scores_out *out) {
  __m512 acc[MR][4];
  for (int r = 0; r < ROWS; r++)
    for (int v = 0; v < 4; v++)
      acc[r][v] = !accumulate ? _mm512_setzero_ps()
                  : MASKED    ? _mm512_maskz_loadu_ps(m[v], c + r * ldc + 16 * v)
                              : _mm512_loadu_ps(c + r * ldc + 16 * v);
  for (int64_t p = 0; p < k; p++) {
    __m512 bv[4];
    for (int v = 0; v < 4; v++)
      bv[v] = MASKED ? _mm512_maskz_loadu_ps(m[v], b + p * ldb + 16 * v) : _mm512_loadu_ps(b + p * ldb + 16 * v);
    for (int r = 0; r < ROWS; r++) {
      __m512 x = _mm512_set1_ps(TRANS ? a[p * lda + r] : a[r * lda + p]);
      for (int v = 0; v < 4; v++) acc[r][v] = _mm512_fmadd_ps(x, bv[v], acc[r][v]);
    }
  }
  /* The scores' treatment read into locals first: read through `out` after each store to C
   * (which may alias its float field), the fields were loaded again for every vector, and GCC,
   * not unrolling that longer loop, kept the accumulators on the stack to index them (the scores
   * product ran 10-15% slower than a plain one of its shape). Fully unrolled, they stay in
   * registers. */
  const float *e = OUT ? out->e : NULL;
  float *raw = OUT ? out->raw : NULL;
  int64_t lde = OUT ? out->lde : 0, ldr = OUT ? out->ldr : 0;
  int stream = OUT && out->stream;
  __m512 scale = _mm512_set1_ps(OUT ? out->scale : 1.0f);
#pragma GCC unroll 6
  for (int r = 0; r < ROWS; r++)
#pragma GCC unroll 4
    for (int v = 0; v < 4; v++) {
      __m512 y = acc[r][v];
      if (OUT) { /* (x · scale) · e, in the order the scalar code takes */
        if (raw) {
          float *at = raw + r * ldr + 16 * v;
          if (MASKED) _mm512_mask_storeu_ps(at, m[v], y);
          else if (stream) _mm512_stream_ps(at, y);
          else _mm512_storeu_ps(at, y);
        }
        y = _mm512_mul_ps(y, scale);
        if (e)
          y = _mm512_mul_ps(y, MASKED ? _mm512_maskz_loadu_ps(m[v], e + r * lde + 16 * v)
                                      : _mm512_loadu_ps(e + r * lde + 16 * v));
      }
      if (MASKED) _mm512_mask_storeu_ps(c + r * ldc + 16 * v, m[v], y);
      else _mm512_storeu_ps(c + r * ldc + 16 * v, y);
    }
}

#define MICRO_ROWS(TRANS, MASKED, OUT)                                                          \
  switch (rows) {                                                                               \
  case 6: micro(6, TRANS, MASKED, OUT, k, a, lda, b, ldb, m, accumulate, c, ldc, out); break;  \
  case 5: micro(5, TRANS, MASKED, OUT, k, a, lda, b, ldb, m, accumulate, c, ldc, out); break;  \
  case 4: micro(4, TRANS, MASKED, OUT, k, a, lda, b, ldb, m, accumulate, c, ldc, out); break;  \
  case 3: micro(3, TRANS, MASKED, OUT, k, a, lda, b, ldb, m, accumulate, c, ldc, out); break;  \
  case 2: micro(2, TRANS, MASKED, OUT, k, a, lda, b, ldb, m, accumulate, c, ldc, out); break;  \
  default: micro(1, TRANS, MASKED, OUT, k, a, lda, b, ldb, m, accumulate, c, ldc, out); break; \
  }

/* out: a scores product's last pass (never transposed) */
AVX512 static void micro_any(int rows, int trans, int masked, int64_t k, const float *a, int64_t lda,
                      const float *b, int64_t ldb, const __mmask16 *m, int accumulate, float *c,
                      int64_t ldc, const scores_out *out) {
  if (out && masked) MICRO_ROWS(0, 1, 1)
  else if (out) MICRO_ROWS(0, 0, 1)
  else if (trans && masked) MICRO_ROWS(1, 1, 0)
  else if (trans) MICRO_ROWS(1, 0, 0)
  else if (masked) MICRO_ROWS(0, 1, 0)
  else MICRO_ROWS(0, 0, 0)
}

/* Walks the lines of the later regions (see gm_tiles_gemm), one region after the other, asking
 * for a share of them at each micro-tile. */
typedef struct prefetcher {
  const gm_region *regions;
  int region;
  int64_t row, col, lines, calls, call;
} prefetcher;

static prefetcher prefetcher_make(const gm_region *regions, int n, int64_t calls) {
  prefetcher p = {.regions = regions, .calls = calls > 0 ? calls : 1};
  for (int i = 0; i < n; i++) {
    GM_ASSERT(regions[i].rows > 0 && regions[i].cols > 0); /* the walk steps over every line */
    p.lines += regions[i].rows * ((regions[i].cols + 15) / 16);
  }
  return p;
}

static void prefetcher_step(prefetcher *p) {
  if (!p->lines) return; /* most products: no divisions for nothing */
  for (int64_t l = (p->call + 1) * p->lines / p->calls - p->call * p->lines / p->calls; l > 0; l--) {
    const gm_region *r = &p->regions[p->region];
    __builtin_prefetch(r->data + p->row * r->ld + p->col);
    if ((p->col += 16) >= r->cols) {
      p->col = 0;
      if (++p->row == r->rows) p->row = 0, p->region++;
    }
  }
  p->call++;
}

/* The products, a scores product's treatment of C on the last pass over k (out), and the rows
 * of a plane [m, n] (ahead, rows ld_ahead apart) asked for one micro-tile before the last pass
 * reaches them: for E, and for a plane the caller reads right after the product (the decay's
 * gradient after dO Vᵀ). Asked for all at once when the attention tile starts, a plane's rows
 * displaced each other before their turn (2-3% of the attention's time each for the decay and
 * its gradient). The later regions go the same way, over every micro-tile (prefetcher). */
AVX512 static void tiles(int trans_a, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                         const float *b, int64_t ldb, int64_t panel_stride, int accumulate, float *c,
                         int64_t ldc, const scores_out *out, const float *ahead, int64_t ld_ahead,
                         const gm_region *later, int n_later) {
  prefetcher pf = prefetcher_make(later, n_later, (n + NC - 1) / NC * ((k + KC - 1) / KC) * ((m + MR - 1) / MR));
  for (int64_t j = 0; j < n; j += NC) {
    int64_t cols = n - j < NC ? n - j : NC;
    __mmask16 mask[4];
    for (int v = 0; v < 4; v++) {
      int64_t left = cols - 16 * v;
      mask[v] = left >= 16 ? 0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
    }
    const float *bj = b + j / NC * panel_stride;
    /* k in chunks of KC rows of B (16 KiB of the panel): each chunk stays in L1 while every
     * block of rows of C passes over it, instead of the whole panel streaming from L2 again
     * for each block (k reaches 256 in P V and dS K) */
    for (int64_t p0 = 0; p0 < k; p0 += KC) {
      int64_t kc = k - p0 < KC ? k - p0 : KC;
      const float *ap = trans_a ? a + p0 * lda : a + p0;
      for (int64_t i = 0; i < m; i += MR) {
        int rows = m - i < MR ? (int)(m - i) : MR;
        int last = p0 + kc == k;             /* the pass that stores C for good */
        if (ahead && last) {                 /* the next micro-tile's rows of the plane */
          int64_t ni = i + MR, nj = j;
          if (ni >= m) ni = 0, nj += NC;       /* atop the next column block */
          if (nj < n)
            for (int64_t r = ni; r < ni + MR && r < m; r++)
              for (int v = 0; v < 4; v++) __builtin_prefetch(ahead + r * ld_ahead + nj + 16 * v);
        }
        prefetcher_step(&pf);
        scores_out at; /* out, moved to this micro-tile */
        if (out && last)
          at = (scores_out){.scale = out->scale, .e = out->e ? out->e + i * out->lde + j : NULL,
                            .lde = out->lde, .raw = out->raw ? out->raw + i * out->ldr + j : NULL,
                            .ldr = out->ldr, .stream = out->stream};
        micro_any(rows, trans_a, cols < NC, kc, trans_a ? ap + i : ap + i * lda, lda, bj + p0 * ldb, ldb,
                  mask, accumulate || p0 > 0, c + i * ldc + j, ldc, out && last ? &at : NULL);
      }
    }
  }
}

AVX512 void gm_tiles_gemm(int trans_a, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                   const float *b, int64_t ldb, int64_t panel_stride, int accumulate, float *c,
                   int64_t ldc, const float *ahead, int64_t ld_ahead, const gm_region *later,
                   int n_later) {
  tiles(trans_a, m, n, k, a, lda, b, ldb, panel_stride, accumulate, c, ldc, NULL, ahead, ld_ahead, later,
        n_later);
}

AVX512 void gm_tiles_scores(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                     int64_t ldb, int64_t panel_stride, float scale, const float *e, int64_t lde,
                     float *raw, int64_t ldr, int stream, float *c, int64_t ldc) {
  /* streamed lines must start on 64 bytes: raw's rows, and their 16-float steps */
  GM_ASSERT(!stream || ((uintptr_t)raw % 64 == 0 && ldr % 16 == 0));
  scores_out out = {.scale = scale, .e = e, .lde = lde, .raw = raw, .ldr = ldr, .stream = stream};
  tiles(0, m, n, k, a, lda, b, ldb, panel_stride, 0, c, ldc, &out, e, lde, NULL, 0);
}

void gm_tiles_stream_fence(void) { _mm_sfence(); }

int64_t gm_tiles_panel_floats(int64_t rows, int64_t cols) { return (rows + NC - 1) / NC * NC * cols; }

AVX512 void gm_tiles_pack_panels(const float *x, int64_t rows, int64_t cols, float *out) {
  for (int64_t i0 = 0; i0 < rows; i0 += NC) {
    float *panel = out + i0 * cols;
    /* 16 x 16 blocks: rows i0 + i.. of x become columns i.. of the panel, zeros past the end */
    for (int64_t i = 0; i < NC; i += 16)
      for (int64_t c = 0; c < cols; c += 16) {
        __mmask16 m = cols - c >= 16 ? 0xFFFF : (__mmask16)((1u << (cols - c)) - 1);
        __m512 r[16];
        for (int l = 0; l < 16; l++)
          r[l] = i0 + i + l < rows ? _mm512_maskz_loadu_ps(m, x + (i0 + i + l) * cols + c) : _mm512_setzero_ps();
        gm_transpose16(r);
        for (int l = 0; l < 16 && c + l < cols; l++) _mm512_storeu_ps(panel + (c + l) * NC + i, r[l]);
      }
  }
}
