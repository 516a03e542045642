/* gm_bf16.c — C = alpha op(A) op(B) + beta C with the inputs rounded to bfloat16 and float32
 * accumulation (AVX-512 BF16 VDPBF16PS): the "medium" matrix-product precision.
 *
 * Debian's OpenBLAS 0.3.21 is built without its sbgemm, and oneDNN's matmul costs a
 * primitive per shape, far more than the attention kernel's 64 x 256 x 64 tiles take to
 * compute, so the product is done here, GotoBLAS-style: both operands are packed once into
 * bf16 pairs along k (A in panels of MR rows, B in panels of NR columns, zero-padded), then a
 * register-blocked micro-kernel multiplies an MR x NR tile of C over a chunk of KC pairs of k
 * while that chunk of the B panel stays in L1.
 *
 * On a CPU with AMX (Intel Sapphire Rapids and later) the micro-kernel is a block of 32 x 32 of C
 * held in four AMX tiles instead (TDPBF16PS: 16 x 16 x 32 products per instruction, sixteen times
 * the work of a VDPBF16PS). The B panels keep their layout, which is already the tiles' (16
 * pairs of k by 16 columns, one 64-byte row per pair), padded with zero pairs to whole tiles;
 * A is packed as plain rows of bf16 pairs, padded likewise. GRAPHMERT_BF16_KERNEL=avx512 in
 * the environment keeps the vector kernel on such a CPU (to compare the two).
 *
 * Large products (DNNL_MIN_MULADDS and up) go to oneDNN when it is installed (gm_dnnl.c): the
 * operands are rounded to bf16 once, the same way, and oneDNN multiplies them.
 *
 * The file is compiled for AVX-512 BF16 and AMX (the pragma below) but only ever called after
 * gm_bf16_available() said the running CPU has AVX-512 BF16, and the tiles are touched only
 * after the OS granted them (bf16_kernel); nothing else in the build needs those instructions. */
#include <immintrin.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gm_internal.h"
#include "gm_simd.h"

/* clang ignores GCC's target pragma; its own pushes the attribute onto every function here */
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,amx-tile,amx-bf16"))), apply_to = function)
#else
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,amx-tile,amx-bf16")
#endif

#define MR 12         /* rows of C per micro-tile: 12 x 2 accumulators in 24 zmm registers */
#define NR 32         /* columns of C per micro-tile: two zmm */
#define KC 128        /* pairs of k per chunk: a 16 KiB chunk of a B panel, in L1 */
#define MC_PANELS 16  /* A panels per block: 192 rows x 384 k, 144 KiB, in L2 */
#define STACK_PACK_BYTES (48 * 1024) /* tile products pack on the stack, larger ones allocate */
#define PAR_MIN_FLOPS (4.0 * 1024 * 1024) /* below this, threads cost more than they save */
/* From here on oneDNN beats this kernel, its fixed cost per call and the rounding pass paid
 * (AMD EPYC, 2 threads: 256^3 430 vs our 474 GFLOP/s, 512 x 512 x 128 530 vs 488, 512^3 600,
 * large products 750 vs 245). */
#define DNNL_MIN_MULADDS (512.0 * 512 * 128)
#define TILE 16       /* AMX: rows of a tile, and pairs of k per A or B tile */
#define AMX_ROWS 32   /* AMX: rows of C per block (two A tiles; the block's columns are NR) */

/* ---- which kernel: AMX tiles or AVX-512 BF16 vectors ------------------------------------- */

#define ARCH_REQ_XCOMP_PERM 0x1023 /* Linux: ask for an XSAVE feature for this process */
#define XFEATURE_XTILEDATA 18

static int amx; /* 1 when the tiles are used; set once by choose_kernel */
static pthread_once_t kernel_once = PTHREAD_ONCE_INIT;

static void choose_kernel(void) {
  const char *want = getenv("GRAPHMERT_BF16_KERNEL");
  amx = (gm_cpu_features() & GM_CPU_AMX_BF16) && !(want && strcmp(want, "avx512") == 0) &&
        syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

static int use_amx(void) {
  pthread_once(&kernel_once, choose_kernel);
  return amx;
}

const char *gm_bf16_kernel(void) { return use_amx() ? "AMX tiles" : "AVX-512 BF16"; }

static int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/* Pairs of k a B panel holds for k (rows of NR words), with the tiles' zero padding. */
static int64_t panel_pairs(int64_t k) { return use_amx() ? round_up((k + 1) / 2, TILE) : (k + 1) / 2; }

/* The conversions use VCVTNE2PS2BF16: round to nearest even, NaN stays NaN, and (as the
 * instruction does) subnormal inputs count as zero. Two layouts occur. */

/* Pairs across two rows: o[c] = (r0[c], r1[c]) for c < n, r1 NULL giving zeros (odd k). */
static void pack_row_pairs(const float *r0, const float *r1, int64_t n, uint32_t *o) {
  /* word c of the result = bf16 c of the low half, then bf16 c of the high half */
  const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                              24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17,
                                              1, 16, 0);
  for (int64_t c = 0; c < n; c += 16) {
    __mmask16 m = n - c >= 16 ? 0xFFFF : (__mmask16)((1u << (n - c)) - 1);
    __m512 x0 = _mm512_maskz_loadu_ps(m, r0 + c);
    __m512 x1 = r1 ? _mm512_maskz_loadu_ps(m, r1 + c) : _mm512_setzero_ps();
    __m512i v = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);
    _mm512_mask_storeu_epi32(o + c, m, _mm512_permutexvar_epi16(interleave, v));
  }
}

/* Rows [0, rows) of x (leading dimension ld) as pairs along k, each row one column of the
 * output: o[kp * stride + r] = (x[r][2kp], x[r][2kp+1]), a zero high half for odd k. Sixteen
 * rows at a time: each row's 32 floats round to 16 pairs, and a 16 x 16 transpose turns them
 * into 16 runs of consecutive r, a masked store each (a scalar store per pair was a twentieth of
 * a "medium" training step). */
static void pack_pairs_transposed(const float *x, int64_t ld, int64_t rows, int64_t k, int64_t stride,
                                  uint32_t *o) {
  for (int64_t r0 = 0; r0 < rows; r0 += 16) {
    int64_t nr = rows - r0 < 16 ? rows - r0 : 16;
    __mmask16 keep = (__mmask16)((1u << nr) - 1);
    for (int64_t e = 0; e < k; e += 32) {
      int64_t left = k - e;
      __mmask16 m0 = left >= 16 ? 0xFFFF : (__mmask16)((1u << left) - 1);
      __mmask16 m1 = left >= 32 ? 0xFFFF : left <= 16 ? 0 : (__mmask16)((1u << (left - 16)) - 1);
      __m512 r[16];
      for (int l = 0; l < 16; l++) {
        const float *row = x + (r0 + l) * ld + e;
        r[l] = l < nr ? (__m512)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(m1, row + 16),
                                                    _mm512_maskz_loadu_ps(m0, row))
                      : _mm512_setzero_ps();
      }
      gm_transpose16(r); /* r[j] lane l: pair e/2 + j of row r0 + l */
      int64_t pairs = (left + 1) / 2 < 16 ? (left + 1) / 2 : 16;
      for (int64_t j = 0; j < pairs; j++) _mm512_mask_storeu_ps((float *)(o + (e / 2 + j) * stride + r0), keep, r[j]);
    }
  }
}

/* op(A)'s rows [i0, i0 + MR) as pairs along k: out[kp * MR + r] = (A[i][2kp], A[i][2kp+1]),
 * rows past m zero. */
static void pack_a(int trans, const float *a, int64_t lda, int64_t m, int64_t k, int64_t i0,
                   uint32_t *out) {
  int64_t kp_n = (k + 1) / 2, rows = m - i0 < MR ? m - i0 : MR;
  if (rows < MR) memset(out, 0, (size_t)(kp_n * MR) * sizeof(uint32_t));
  if (!trans)
    pack_pairs_transposed(a + i0 * lda, lda, rows, k, MR, out);
  else /* op(A) = Aᵀ: the panel's rows are columns of A */
    for (int64_t kp = 0; kp < kp_n; kp++)
      pack_row_pairs(a + 2 * kp * lda + i0, 2 * kp + 1 < k ? a + (2 * kp + 1) * lda + i0 : NULL, rows,
                     out + kp * MR);
}

/* op(B)'s columns [j0, j0 + NR) as pairs along k: out[kp * NR + c] = (B[2kp][j], B[2kp+1][j]),
 * columns past n and pairs past k (up to panel_pairs(k)) zero. */
static void pack_b(int trans, const float *b, int64_t ldb, int64_t n, int64_t k, int64_t j0,
                   uint32_t *out) {
  int64_t kp_n = (k + 1) / 2, cols = n - j0 < NR ? n - j0 : NR;
  if (cols < NR) memset(out, 0, (size_t)(kp_n * NR) * sizeof(uint32_t));
  memset(out + kp_n * NR, 0, (size_t)((panel_pairs(k) - kp_n) * NR) * sizeof(uint32_t));
  if (!trans)
    for (int64_t kp = 0; kp < kp_n; kp++)
      pack_row_pairs(b + 2 * kp * ldb + j0, 2 * kp + 1 < k ? b + (2 * kp + 1) * ldb + j0 : NULL, cols,
                     out + kp * NR);
  else /* op(B) = Bᵀ: the panel's columns are rows of B */
    pack_pairs_transposed(b + j0 * ldb, ldb, cols, k, NR, out);
}

/* C[0:ROWS, 0:cols] = alpha (A panel · B panel over kp_n pairs) + beta C; beta 0 never reads C.
 * Pair kp of the panel's row r is ap[kp · pair + r]. ROWS is a constant after inlining: a block
 * of 64 rows (the attention tiles) ends with 4, and multiplying those as 12 would make 72 rows of
 * work for 64. */
static inline __attribute__((always_inline)) void micro_rows(int ROWS, int64_t kp_n, const uint32_t *ap,
                                                             int64_t pair, const uint32_t *bp, float *c,
                                                             int64_t ldc, int cols, float alpha, float beta) {
  __m512 acc[MR][2];
  for (int r = 0; r < ROWS; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t kp = 0; kp < kp_n; kp++) {
    __m512bh b0 = (__m512bh)_mm512_load_si512(bp), b1 = (__m512bh)_mm512_load_si512(bp + 16);
#pragma GCC unroll 12
    for (int r = 0; r < ROWS; r++) {
      __m512bh a = (__m512bh)_mm512_set1_epi32((int)ap[r]);
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], a, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], a, b1);
    }
    ap += pair;
    bp += NR;
  }
  __mmask16 m0 = cols >= 16 ? 0xFFFF : (__mmask16)((1u << cols) - 1);
  __mmask16 m1 = cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : (__mmask16)((1u << (cols - 16)) - 1);
  __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  for (int r = 0; r < ROWS; r++) {
    float *cr = c + r * ldc;
    __m512 x0 = _mm512_mul_ps(acc[r][0], va), x1 = _mm512_mul_ps(acc[r][1], va);
    if (beta != 0.0f) {
      x0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m0, cr), vb, x0);
      x1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m1, cr + 16), vb, x1);
    }
    _mm512_mask_storeu_ps(cr, m0, x0);
    _mm512_mask_storeu_ps(cr + 16, m1, x1);
  }
}

/* micro_rows for rows (1 to MR) rows of C. */
static void micro_kernel(int64_t kp_n, const uint32_t *ap, int64_t pair, const uint32_t *bp, float *c,
                         int64_t ldc, int rows, int cols, float alpha, float beta) {
#define MICRO_ROWS(R) \
  case R: micro_rows(R, kp_n, ap, pair, bp, c, ldc, cols, alpha, beta); break;
  switch (rows) {
    MICRO_ROWS(1) MICRO_ROWS(2) MICRO_ROWS(3) MICRO_ROWS(4) MICRO_ROWS(5) MICRO_ROWS(6)
    MICRO_ROWS(7) MICRO_ROWS(8) MICRO_ROWS(9) MICRO_ROWS(10) MICRO_ROWS(11) MICRO_ROWS(12)
  }
#undef MICRO_ROWS
  _Static_assert(MR == 12, "micro_kernel has a case for each row count up to MR");
}

/* ---- AMX ------------------------------------------------------------------------------------- */

/* One row of cols floats as bf16, rounded as the packing does. */
static void round_row(const float *x, int64_t cols, uint16_t *out) {
  for (int64_t c = 0; c < cols; c += 16) {
    __mmask16 m = cols - c >= 16 ? 0xFFFF : (__mmask16)((1u << (cols - c)) - 1);
    __m256bh v = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + c));
    _mm256_mask_storeu_epi16(out + c, m, (__m256i)v);
  }
}


/* op(A)'s rows [i0, i1) (i0 a multiple of TILE, i1 <= round_up(m, TILE)) for the tiles: row i of
 * out, amx_row_words(k) words, holds (A[i][2kp], A[i][2kp+1]) for each kp; pairs past k and rows
 * past m zero. */
static int64_t amx_row_words(int64_t k) { return round_up((k + 1) / 2, TILE); }

static void amx_pack_rows(int trans, const float *a, int64_t lda, int64_t m, int64_t k, int64_t i0,
                          int64_t i1, uint32_t *out) {
  int64_t kp_n = (k + 1) / 2, stride = amx_row_words(k);
  if (!trans) { /* a row's pairs are its floats rounded in order, 32 to a 64-byte store */
    for (int64_t i = i0; i < i1; i++) {
      uint32_t *o = out + i * stride;
      for (int64_t e = 0; e < 2 * stride; e += 32) {
        int64_t left = i < m ? k - e : 0;
        __mmask16 m0 = left >= 16 ? 0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
        __mmask16 m1 = left >= 32 ? 0xFFFF : left <= 16 ? 0 : (__mmask16)((1u << (left - 16)) - 1);
        const float *row = a + i * lda + e;
        _mm512_storeu_si512(o + e / 2, (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(m1, row + 16),
                                                                      _mm512_maskz_loadu_ps(m0, row)));
      }
    }
    return;
  }
  /* op(A) = Aᵀ: pairs of A's rows along its columns, 16 x 16 words at a time, transposed */
  for (int64_t r0 = i0; r0 < i1; r0 += TILE) {
    int64_t rows = m - r0 < TILE ? (m - r0 > 0 ? m - r0 : 0) : TILE;
    for (int64_t p0 = 0; p0 < stride; p0 += TILE) {
      __m512 t[TILE];
      for (int j = 0; j < TILE; j++) {
        int64_t kp = p0 + j;
        t[j] = _mm512_setzero_ps();
        if (kp < kp_n && rows > 0)
          pack_row_pairs(a + 2 * kp * lda + r0, 2 * kp + 1 < k ? a + (2 * kp + 1) * lda + r0 : NULL, rows,
                         (uint32_t *)&t[j]);
      }
      gm_transpose16(t); /* t[l] lane j: pair p0 + j of row r0 + l */
      for (int l = 0; l < TILE; l++) _mm512_storeu_ps((float *)(out + (r0 + l) * stride + p0), t[l]);
    }
  }
}

/* The tile shapes: every tile 16 rows of 64 bytes. 0-3 hold C (rows 0-15 and 16-31 of the block,
 * columns 0-15 and 16-31), 4-5 the block's two A tiles, 6-7 the panel's two B tiles. */
typedef struct tile_config {
  uint8_t palette, start_row, reserved[14];
  uint16_t bytes_per_row[16];
  uint8_t rows[16];
} tile_config;

/* Tile shapes are per thread and oneDNN's AMX kernels load their own: a thread loads ours when
 * it has not since the last oneDNN call (tile_generation counts them). */
static unsigned tile_generation;
static _Thread_local unsigned configured; /* tile_generation + 1 when this thread's are ours */

static void amx_configure(void) {
  unsigned g = __atomic_load_n(&tile_generation, __ATOMIC_ACQUIRE) + 1;
  if (configured == g) return;
  tile_config cfg = {.palette = 1};
  for (int t = 0; t < 8; t++) cfg.bytes_per_row[t] = 64, cfg.rows[t] = TILE;
  _tile_loadconfig(&cfg);
  configured = g;
}

/* C[0:rows, 0:cols] (rows <= 32, cols <= NR) = alpha (A rows · B panel over steps tiles of k)
 * + beta C. a: the block's first A row (a_words per row); b: the panel at its first pair.
 * Whole blocks with alpha 1 and beta 0 or 1 go straight between C and the tiles; the rest
 * through acc, where beta 0 never reads C. */
static void amx_block(const uint32_t *a, int64_t a_words, const uint32_t *b, int64_t steps, float *c,
                      int64_t ldc, int rows, int cols, float alpha, float beta) {
  const size_t a_bytes = (size_t)a_words * 4, b_bytes = NR * 4, c_bytes = (size_t)ldc * 4;
  const uint32_t *a1 = a + TILE * a_words; /* rows 16-31 */
  int two = rows > TILE;
  int direct = cols == NR && (rows == AMX_ROWS || rows == TILE) && alpha == 1.0f &&
               (beta == 0.0f || beta == 1.0f);
  if (direct && beta == 1.0f) {
    _tile_loadd(0, c, c_bytes);
    _tile_loadd(1, c + 16, c_bytes);
    if (two) {
      _tile_loadd(2, c + TILE * ldc, c_bytes);
      _tile_loadd(3, c + TILE * ldc + 16, c_bytes);
    }
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  if (two)
    for (int64_t s = 0; s < steps; s++) {
      _tile_loadd(4, a + s * TILE, a_bytes);
      _tile_loadd(6, b + s * TILE * NR, b_bytes);
      _tile_loadd(7, b + s * TILE * NR + 16, b_bytes);
      _tile_loadd(5, a1 + s * TILE, a_bytes);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  else
    for (int64_t s = 0; s < steps; s++) {
      _tile_loadd(4, a + s * TILE, a_bytes);
      _tile_loadd(6, b + s * TILE * NR, b_bytes);
      _tile_loadd(7, b + s * TILE * NR + 16, b_bytes);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
    }
  if (direct) {
    _tile_stored(0, c, c_bytes);
    _tile_stored(1, c + 16, c_bytes);
    if (two) {
      _tile_stored(2, c + TILE * ldc, c_bytes);
      _tile_stored(3, c + TILE * ldc + 16, c_bytes);
    }
    return;
  }
  _Alignas(64) float acc[AMX_ROWS][NR];
  _tile_stored(0, acc[0], NR * 4);
  _tile_stored(1, acc[0] + 16, NR * 4);
  if (two) {
    _tile_stored(2, acc[TILE], NR * 4);
    _tile_stored(3, acc[TILE] + 16, NR * 4);
  }
  __mmask16 m0 = cols >= 16 ? 0xFFFF : (__mmask16)((1u << cols) - 1);
  __mmask16 m1 = cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : (__mmask16)((1u << (cols - 16)) - 1);
  __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  for (int r = 0; r < rows; r++) {
    float *cr = c + r * ldc;
    __m512 x0 = _mm512_mul_ps(_mm512_load_ps(acc[r]), va), x1 = _mm512_mul_ps(_mm512_load_ps(acc[r] + 16), va);
    if (beta != 0.0f) {
      x0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m0, cr), vb, x0);
      x1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m1, cr + 16), vb, x1);
    }
    _mm512_mask_storeu_ps(cr, m0, x0);
    _mm512_mask_storeu_ps(cr + 16, m1, x1);
  }
}

typedef struct product {
  int64_t m, n, k, kp_n, mp, np; /* mp, np: A panels (AMX: blocks of AMX_ROWS rows), B panels */
  const uint32_t *ap, *bp;       /* packed, kp_n pairs per A panel (AMX: A rows) */
  int64_t a_panel, a_pair;       /* words from one A panel to the next, and between its pairs
                                  * (kp_n MR and MR as packed; MR and a row's words as rounded by
                                  * round_transposed) */
  int64_t a_words;               /* AMX: words per A row */
  int64_t b_stride;              /* words from one B panel to the next (kp_n NR, or more) */
  int amx;
  float *c;
  int64_t ldc;
  float alpha, beta;
  const float *ahead; /* a plane [m, n] (rows ld_ahead apart) asked for as C's tiles are reached */
  int64_t ld_ahead;
} product;

/* Asks for the caller's plane rows [i, i + rows) x [j, j + cols) (pr->ahead, if any) as the
 * product reaches the same block of C, the last time it stores it: both kernels do, or the
 * caller's pass over the plane stalls on it (AMX, "medium" attention fwd+bwd with a per-head
 * decay, B8 H8 N1024 d64: 0.118 s without, 0.096 s with). */
static void ask_ahead(const product *pr, int64_t i, int64_t rows, int64_t j, int64_t cols) {
  if (!pr->ahead) return;
  for (int64_t r = i; r < i + rows; r++) {
    __builtin_prefetch(pr->ahead + r * pr->ld_ahead + j);
    if (cols > 16) __builtin_prefetch(pr->ahead + r * pr->ld_ahead + j + 16);
  }
}

/* C tiles of A panels [p0, p1) x B panels [q0, q1), chunk by chunk of k. */
static void multiply(const product *pr, int64_t p0, int64_t p1, int64_t q0, int64_t q1) {
  for (int64_t k0 = 0; k0 < pr->kp_n; k0 += KC) {
    int64_t kc = pr->kp_n - k0 < KC ? pr->kp_n - k0 : KC;
    float beta = k0 == 0 ? pr->beta : 1.0f;
    for (int64_t pb = p0; pb < p1; pb += MC_PANELS) {
      int64_t pe = pb + MC_PANELS < p1 ? pb + MC_PANELS : p1;
      for (int64_t q = q0; q < q1; q++) {
        const uint32_t *bq = pr->bp + q * pr->b_stride + k0 * NR;
        int64_t j = q * NR, cols = pr->n - j < NR ? pr->n - j : NR;
        for (int64_t p = pb; p < pe; p++) {
          int64_t i = p * MR, rows = pr->m - i < MR ? pr->m - i : MR;
          if (k0 + kc == pr->kp_n) ask_ahead(pr, i, rows, j, cols);
          micro_kernel(kc, pr->ap + p * pr->a_panel + k0 * pr->a_pair, pr->a_pair, bq,
                       pr->c + i * pr->ldc + j, pr->ldc, (int)rows, (int)cols, pr->alpha, beta);
        }
      }
    }
  }
}

/* C blocks of A row blocks [p0, p1) x B panels [q0, q1) in AMX tiles, over the whole of k: a
 * panel's pairs stay in L1 while every row block passes over them. */
static void amx_multiply(const product *pr, int64_t p0, int64_t p1, int64_t q0, int64_t q1) {
  amx_configure();
  int64_t steps = (pr->kp_n + TILE - 1) / TILE;
  for (int64_t q = q0; q < q1; q++) {
    int64_t j = q * NR, cols = pr->n - j < NR ? pr->n - j : NR;
    for (int64_t p = p0; p < p1; p++) {
      int64_t i = p * AMX_ROWS, rows = pr->m - i < AMX_ROWS ? pr->m - i : AMX_ROWS;
      ask_ahead(pr, i, rows, j, cols);
      amx_block(pr->ap + i * pr->a_words, pr->a_words, pr->bp + q * pr->b_stride, steps,
                pr->c + i * pr->ldc + j, pr->ldc, (int)rows, (int)cols, pr->alpha, pr->beta);
    }
  }
}

/* Splits the panel grid among the team along its longer side; each thread owns its C tiles. */
static void multiply_share(const product *pr, int thread, int threads) {
  int64_t p0 = 0, p1 = pr->mp, q0 = 0, q1 = pr->np;
  if (pr->np >= pr->mp) q0 = pr->np * thread / threads, q1 = pr->np * (thread + 1) / threads;
  else p0 = pr->mp * thread / threads, p1 = pr->mp * (thread + 1) / threads;
  (pr->amx ? amx_multiply : multiply)(pr, p0, p1, q0, q1);
}

/* The product's A and B bookkeeping for the kernel in use: A packed by pack_rows, B panels of
 * b_pairs pairs each. */
static product make_product(int64_t m, int64_t n, int64_t k, int64_t b_pairs, float alpha, float beta,
                            float *c, int64_t ldc) {
  int a = use_amx();
  return (product){.m = m, .n = n, .k = k, .kp_n = (k + 1) / 2,
                   .mp = a ? (m + AMX_ROWS - 1) / AMX_ROWS : (m + MR - 1) / MR,
                   .np = (n + NR - 1) / NR, .a_panel = (k + 1) / 2 * MR, .a_pair = MR,
                   .a_words = a ? amx_row_words(k) : 0,
                   .b_stride = b_pairs * NR, .c = c, .ldc = ldc, .alpha = alpha, .beta = beta, .amx = a};
}

static void scale_c(float *c, int64_t ldc, int64_t m, int64_t n, float beta) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0.0f ? 0.0f : c[i * ldc + j] * beta;
}

/* x's rows x cols (leading dimension ld) as contiguous bf16. (The vector code stays in
 * round_row: clang does not give the OpenMP body the file's target.) */
static void round_matrix(const float *x, int64_t rows, int64_t cols, int64_t ld, uint16_t *out) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) round_row(x + r * ld, cols, out + r * cols);
}

/* Roundings that products reuse instead of making again (see gm_internal.h), each naming the
 * matrix it rounds as stored (x, rows, cols, ld): shared, made by the first product between
 * gm_bf16_share_begin and _end that reads it; kept, made by a forward product for its backward
 * (gm_bf16_keep_begin/_end), in a tensor that the caller then owns; offered, one kept earlier and
 * handed back to a backward's products (gm_bf16_offer, until gm_bf16_share_end). */
typedef struct rounding {
  const float *x;
  int64_t rows, cols, ld;
  uint16_t *bf16;
  gm_tensor *box; /* kept: the tensor bf16 lives in */
} rounding;
static _Thread_local rounding shared, kept, offered;

static int rounds(const rounding *r, const float *x, int64_t rows, int64_t cols, int64_t ld) {
  return r->bf16 && r->x == x && r->rows == rows && r->cols == cols && r->ld == ld;
}

void gm_bf16_share_begin(const float *x) {
  gm_bf16_share_end();
  shared.x = x;
}

void gm_bf16_share_end(void) {
  gm_free(shared.bf16);
  memset(&shared, 0, sizeof shared);
  memset(&offered, 0, sizeof offered);
}

void gm_bf16_keep_begin(const float *x) {
  gm_tensor_release(kept.box);
  memset(&kept, 0, sizeof kept);
  kept.x = x;
}

gm_tensor *gm_bf16_keep_end(int64_t dims[3]) {
  gm_tensor *box = kept.box;
  dims[0] = kept.rows, dims[1] = kept.cols, dims[2] = kept.ld;
  memset(&kept, 0, sizeof kept);
  return box;
}

void gm_bf16_offer(const float *x, const gm_tensor *box, const int64_t dims[3]) {
  offered = (rounding){.x = x, .rows = dims[0], .cols = dims[1], .ld = dims[2],
                       .bf16 = (uint16_t *)box->data};
}

/* Makes r's rounding of x into new memory (a tensor when box), 0 without memory. */
static int make_rounding(rounding *r, int box, const float *x, int64_t rows, int64_t cols, int64_t ld) {
  if (box) {
    int64_t floats = (rows * cols + 1) / 2;
    r->box = gm_tensor_empty(1, &floats);
    r->bf16 = r->box ? (uint16_t *)r->box->data : NULL;
  } else {
    r->bf16 = gm_malloc((size_t)(rows * cols) * sizeof(uint16_t));
  }
  if (!r->bf16) return 0;
  r->rows = rows, r->cols = cols, r->ld = ld;
  round_matrix(x, rows, cols, ld, r->bf16);
  return 1;
}

/* The kept roundings of leaf matrices read with gradients off (gm_bf16_frozen_begin): at most
 * FROZEN_SLOTS of them and FROZEN_BYTES in all, the least recently used replaced. Entries are
 * named by their storage's serial and version, never by address alone (a freed weight's address
 * is reused), and only ever read by the thread that made them. */
#define FROZEN_SLOTS 64 /* the official 12-layer model reads about 50 matrices a batch */
#define FROZEN_BYTES ((size_t)128 << 20)
typedef struct frozen {
  uint64_t serial, used;
  uint32_t version;
  rounding r;
} frozen;
static _Thread_local frozen frozen_cache[FROZEN_SLOTS];
static _Thread_local struct {
  const float *x;
  uint64_t serial;
  uint32_t version;
} frozen_now;
static _Thread_local uint64_t frozen_clock;

void gm_bf16_frozen_begin(const gm_tensor *t) {
  frozen_now.x = t->storage ? t->data : NULL;
  frozen_now.serial = t->storage ? t->storage->serial : 0;
  frozen_now.version = t->storage ? t->storage->version : 0;
}

void gm_bf16_frozen_end(void) { frozen_now.x = NULL; }

static size_t frozen_bytes(const frozen *f) { return (size_t)(f->r.rows * f->r.cols) * sizeof(uint16_t); }

static void frozen_drop(frozen *f) {
  gm_free(f->r.bf16);
  memset(f, 0, sizeof *f);
}

void gm_bf16_frozen_clear(void) {
  for (int i = 0; i < FROZEN_SLOTS; i++) frozen_drop(&frozen_cache[i]);
}

/* The kept rounding of the matrix frozen_now names (made now on a miss, the least recently used
 * dropped until it fits); NULL for a matrix larger than all the room or without memory, and the
 * product then rounds it as any other. */
static const uint16_t *frozen_rounding(int64_t rows, int64_t cols, int64_t ld) {
  size_t bytes = (size_t)(rows * cols) * sizeof(uint16_t), held = 0;
  if (bytes > FROZEN_BYTES) return NULL;
  for (int i = 0; i < FROZEN_SLOTS; i++) {
    frozen *f = &frozen_cache[i];
    if (f->r.bf16 && f->serial == frozen_now.serial && f->version == frozen_now.version &&
        rounds(&f->r, frozen_now.x, rows, cols, ld)) {
      f->used = ++frozen_clock;
      return f->r.bf16;
    }
    held += frozen_bytes(f);
  }
  frozen *slot = NULL;
  for (;;) { /* the least recently used, until one slot is free and the bytes fit */
    frozen *oldest = NULL;
    slot = NULL;
    for (int i = 0; i < FROZEN_SLOTS; i++) {
      frozen *f = &frozen_cache[i];
      if (!f->r.bf16) slot = slot ? slot : f;
      else if (!oldest || f->used < oldest->used) oldest = f;
    }
    if (slot && held + bytes <= FROZEN_BYTES) break;
    held -= frozen_bytes(oldest);
    frozen_drop(oldest);
  }
  slot->r.x = frozen_now.x;
  if (!make_rounding(&slot->r, 0, frozen_now.x, rows, cols, ld)) {
    memset(slot, 0, sizeof *slot);
    return NULL;
  }
  slot->serial = frozen_now.serial;
  slot->version = frozen_now.version;
  slot->used = ++frozen_clock;
  return slot->r.bf16;
}

/* x's rows x cols (leading dimension ld) as contiguous bf16: an offered, shared or kept
 * rounding of it (the shared and kept ones made now when they are asked for x for the first
 * time), else rounded into *own, allocated here (the caller frees it). NULL without memory. */
static const uint16_t *rounded(const float *x, int64_t rows, int64_t cols, int64_t ld, uint16_t **own) {
  if (rounds(&offered, x, rows, cols, ld)) return offered.bf16;
  if (shared.x == x && !shared.bf16) return make_rounding(&shared, 0, x, rows, cols, ld) ? shared.bf16 : NULL;
  if (rounds(&shared, x, rows, cols, ld)) return shared.bf16;
  if (kept.x == x && !kept.bf16 && make_rounding(&kept, 1, x, rows, cols, ld)) return kept.bf16;
  if (rounds(&kept, x, rows, cols, ld)) return kept.bf16;
  if (frozen_now.x == x) {
    const uint16_t *f = frozen_rounding(rows, cols, ld);
    if (f) return f;
  }
  *own = gm_malloc((size_t)(rows * cols) * sizeof(uint16_t));
  if (*own) round_matrix(x, rows, cols, ld, *own);
  return *own;
}

/* The product through oneDNN: 1 when done, 0 (C untouched) without oneDNN or memory. */
static int dnnl_product(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                        const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                        int64_t ldc) {
  if (!gm_dnnl_available()) return 0;
  int64_t a_cols = trans_a ? m : k, b_cols = trans_b ? k : n; /* as stored */
  uint16_t *own_a = NULL, *own_b = NULL;
  const uint16_t *a16 = rounded(a, m * k / a_cols, a_cols, lda, &own_a);
  const uint16_t *b16 = a16 ? rounded(b, k * n / b_cols, b_cols, ldb, &own_b) : NULL;
  int done = a16 && b16 &&
             gm_dnnl_bf16_gemm(trans_a, trans_b, m, n, k, alpha, a16, a_cols, b16, b_cols, beta, c, ldc);
  __atomic_add_fetch(&tile_generation, 1, __ATOMIC_RELEASE); /* its AMX kernels loaded their shapes */
  gm_free(own_a);
  gm_free(own_b);
  return done;
}

int gm_bf16_gemm_offered(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const float *a,
                         int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc) {
  /* the offered operand is never read as float32: it must be the one rounded() hands back */
  GM_ASSERT(a == offered.x ? rounds(&offered, a, trans_a ? k : m, trans_a ? m : k, lda)
                           : rounds(&offered, b, trans_b ? n : k, trans_b ? k : n, ldb));
  return dnnl_product(trans_a, trans_b, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
}

/* op(A) packed for the kernel in use, in groups (MR rows each, AMX: TILE rows) the team can share:
 * rows_words words in all, group g packed by pack_row_group. */
static int64_t row_groups(int64_t m) { return use_amx() ? (m + TILE - 1) / TILE : (m + MR - 1) / MR; }

int64_t gm_bf16_rows_words(int64_t m, int64_t k) {
  return use_amx() ? round_up(m, TILE) * amx_row_words(k) : (m + MR - 1) / MR * ((k + 1) / 2) * MR;
}

static void pack_row_group(int trans_a, const float *a, int64_t lda, int64_t m, int64_t k, int64_t g,
                           uint32_t *out) {
  if (use_amx()) amx_pack_rows(trans_a, a, lda, m, k, g * TILE, (g + 1) * TILE, out);
  else pack_a(trans_a, a, lda, m, k, g * MR, out + g * ((k + 1) / 2) * MR);
}

void gm_bf16_pack_rows(int trans_a, const float *a, int64_t lda, int64_t m, int64_t k, uint32_t *out) {
  for (int64_t g = 0; g < row_groups(m); g++) pack_row_group(trans_a, a, lda, m, k, g, out);
}

int64_t gm_bf16_panel_words(int64_t n, int64_t k) { return (n + NR - 1) / NR * panel_pairs(k) * NR; }

void gm_bf16_pack_panels(int trans_b, const float *b, int64_t ldb, int64_t n, int64_t k, uint32_t *out) {
  for (int64_t q = 0; q * NR < n; q++) pack_b(trans_b, b, ldb, n, k, q * NR, out + q * panel_pairs(k) * NR);
}

int gm_bf16_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                 int64_t ldc) {
  if (m == 0 || n == 0) return 1;
  if (k == 0) {
    scale_c(c, ldc, m, n, beta);
    return 1;
  }
  if ((double)m * (double)n * (double)k >= DNNL_MIN_MULADDS && !omp_in_parallel() &&
      dnnl_product(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
    return 1;
  product pr = make_product(m, n, k, panel_pairs(k), alpha, beta, c, ldc);
  /* B's panels start on a 64-byte line: a_words rounded up to 16 */
  size_t a_words = (size_t)round_up(gm_bf16_rows_words(m, k), 16), b_words = (size_t)(pr.np * pr.b_stride);
  size_t bytes = (a_words + b_words) * sizeof(uint32_t);
  _Alignas(64) uint32_t stack[STACK_PACK_BYTES / sizeof(uint32_t)];
  uint32_t *pack = bytes <= sizeof stack ? stack : gm_malloc(bytes);
  if (!pack) return 0;
  uint32_t *ap = pack, *bp = pack + a_words;
  pr.ap = ap;
  pr.bp = bp;
  int64_t groups = row_groups(m);
  int parallel = !omp_in_parallel() && omp_get_max_threads() > 1 && 2.0 * m * n * k > PAR_MIN_FLOPS;
  if (parallel) {
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
      for (int64_t g = 0; g < groups; g++) pack_row_group(trans_a, a, lda, m, k, g, ap);
#pragma omp for schedule(static)
      for (int64_t q = 0; q < pr.np; q++) pack_b(trans_b, b, ldb, n, k, q * NR, bp + q * pr.b_stride);
      multiply_share(&pr, omp_get_thread_num(), omp_get_num_threads());
    }
  } else {
    gm_bf16_pack_rows(trans_a, a, lda, m, k, ap);
    gm_bf16_pack_panels(trans_b, b, ldb, n, k, bp);
    multiply_share(&pr, 0, 1);
  }
  if (pack != stack) gm_free(pack);
  return 1;
}

/* ---- operands packed once, read in blocks (the attention kernel's keys and values) ------- */

/* C = alpha op(A) · (the block of the panels at col0, k0) + beta C, op(A) already rounded at
 * rows: pair kp of row r at rows[r / MR · a_panel + kp · a_pair + r % MR] (AMX: its own rows). */
static void multiply_panels(int64_t m, int64_t n, int64_t k, float alpha, const uint32_t *rows,
                            int64_t a_panel, int64_t a_pair, const uint32_t *panels, int64_t panels_k,
                            int64_t col0, int64_t k0, float beta, float *c, int64_t ldc,
                            const float *ahead, int64_t ld_ahead) {
  GM_ASSERT(col0 % NR == 0 && k0 % 2 == 0);
  /* the tiles read whole tiles of k: a part of the panels must end on one, or at their end */
  GM_ASSERT(!use_amx() || k % (2 * TILE) == 0 || k0 + k == panels_k);
  if (m == 0 || n == 0) return;
  if (k == 0) {
    scale_c(c, ldc, m, n, beta);
    return;
  }
  product pr = make_product(m, n, k, panel_pairs(panels_k), alpha, beta, c, ldc);
  pr.ap = rows, pr.a_panel = a_panel, pr.a_pair = a_pair;
  pr.bp = panels + col0 / NR * pr.b_stride + k0 / 2 * NR;
  pr.ahead = ahead, pr.ld_ahead = ld_ahead;
  multiply_share(&pr, 0, 1);
}

void gm_bf16_gemm_packed(int64_t m, int64_t n, int64_t k, float alpha, const uint32_t *rows,
                         const uint32_t *panels, int64_t panels_k, int64_t col0, int64_t k0, float beta,
                         float *c, int64_t ldc, const float *ahead, int64_t ld_ahead) {
  multiply_panels(m, n, k, alpha, rows, (k + 1) / 2 * MR, MR, panels, panels_k, col0, k0, beta, c, ldc,
                  ahead, ld_ahead);
}

/* Aᵀ's pairs for the vector kernel without transposing: pair kp of its row r (column r of A)
 * is (A[2kp][r], A[2kp+1][r]), so two rows of A round, interleaved, to one row of words
 * (pack_row_pairs), kp's row at out + kp · width; micro-tiles read it with pair stride width. */
static void round_transposed(const float *a, int64_t lda, int64_t m, int64_t k, int64_t width, uint32_t *out) {
  for (int64_t kp = 0; kp < (k + 1) / 2; kp++)
    pack_row_pairs(a + 2 * kp * lda, 2 * kp + 1 < k ? a + (2 * kp + 1) * lda : NULL, m, out + kp * width);
}

void gm_bf16_gemm_panels(int trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                         int64_t lda, const uint32_t *panels, int64_t panels_k, int64_t col0,
                         int64_t k0, float beta, float *c, int64_t ldc) {
  _Alignas(64) uint32_t rows[STACK_PACK_BYTES / sizeof(uint32_t)];
  int64_t capacity = (int64_t)(sizeof rows / sizeof rows[0]), width = round_up(m, 16);
  /* Aᵀ (dV += Ãᵀ dO, dK += dSᵀ Q): rounded as pairs of A's rows, which costs half the packing's
   * time (no 16 x 16 transposes, no 12-wide masked stores per panel) */
  if (trans_a && !use_amx() && (k + 1) / 2 * width <= capacity) {
    round_transposed(a, lda, m, k, width, rows);
    multiply_panels(m, n, k, alpha, rows, MR, width, panels, panels_k, col0, k0, beta, c, ldc, NULL, 0);
    return;
  }
  GM_ASSERT(gm_bf16_rows_words(m, k) <= capacity); /* a tile's A */
  if (m > 0 && n > 0 && k > 0) gm_bf16_pack_rows(trans_a, a, lda, m, k, rows);
  gm_bf16_gemm_packed(m, n, k, alpha, rows, panels, panels_k, col0, k0, beta, c, ldc, NULL, 0);
}

#ifdef __clang__
#pragma clang attribute pop
#endif
