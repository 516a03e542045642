/* gm_kernels.h — the core's matrix products on raw row-major float buffers, below the tensor
 * code: gm_gemm (OpenBLAS, or oneDNN's bf16 at "medium" precision), the bf16 products on packed
 * operands, and the attention's AVX-512 tile products. No tensors, no state: what the kernels of
 * gm_attention*.c, gm_hgat.c and gm_linalg.c call, and what the benchmarks under scripts/bench/
 * time on their own (they include this header, never gm_internal.h). Buffers are owned by the
 * caller; nothing here allocates what it returns. */
#ifndef GM_KERNELS_H
#define GM_KERNELS_H

#include <stdint.h>

/* C = alpha op(A) op(B) + beta C on raw row-major buffers (small tiles inside kernels). */
void gm_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
             int64_t ldc);
/* gm_gemm's "medium" precision path (gm_bf16.c, only on CPUs with avx512_bf16): inputs rounded
 * to bfloat16, float32 accumulation. Returns 0, without touching C, when it cannot get memory
 * for its packed operands (the caller then multiplies in float32). */
int gm_bf16_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                 int64_t ldc);
/* An operand read in blocks by many small products (the attention kernel's K and V per (batch,
 * head)), rounded and packed once: op(B) [k, n] as bf16 panels, gm_bf16_panel_words(n, k) words,
 * 64-byte aligned. gm_bf16_gemm_panels multiplies op(A) (a tile: m <= 64, k <= 256) by the block
 * of rows [k0, k0 + k) (k0 even) and columns [col0, col0 + n) (col0 a multiple of 32) of it,
 * single-threaded, with the rounding of gm_bf16_gemm. */
int64_t gm_bf16_panel_words(int64_t n, int64_t k);
void gm_bf16_pack_panels(int trans_b, const float *b, int64_t ldb, int64_t n, int64_t k, uint32_t *out);
void gm_bf16_gemm_panels(int trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                         int64_t lda, const uint32_t *panels, int64_t panels_k, int64_t col0,
                         int64_t k0, float beta, float *c, int64_t ldc);
/* gm_bf16_gemm_panels in two steps, for an op(A) that several products read (a block of queries
 * against each block of keys): op(A) [m, k] rounded and packed by gm_bf16_pack_rows into
 * gm_bf16_rows_words(m, k) words, then multiplied, as often as needed, by gm_bf16_gemm_packed.
 * ahead (or NULL): a plane [m, n], rows ld_ahead apart, that the caller reads next; the product
 * asks for its rows as it reaches the same rows of C. */
int64_t gm_bf16_rows_words(int64_t m, int64_t k);
void gm_bf16_pack_rows(int trans_a, const float *a, int64_t lda, int64_t m, int64_t k, uint32_t *out);
void gm_bf16_gemm_packed(int64_t m, int64_t n, int64_t k, float alpha, const uint32_t *rows,
                         const uint32_t *panels, int64_t panels_k, int64_t col0, int64_t k0, float beta,
                         float *c, int64_t ldc, const float *ahead, int64_t ld_ahead);

/* The attention kernel's float32 tile products on AVX-512 (gm_tiles.c; call only when
 * gm_tiles_available()): C [m, n] = op(A) [m, k] · B [k, n], plus C when accumulate, with
 * B(p, c) at b[c / 64 · panel_stride + p · ldb + c % 64]: a row-major B is panel_stride 64, a
 * packed one ldb 64. gm_tiles_pack_panels stores Xᵀ of x [rows, cols] (row-major) as panels of
 * 64 rows of x, [cols][64] each, zero-padded: gm_tiles_panel_floats(rows, cols) floats, read
 * with ldb 64 and panel_stride 64 · cols. ahead (or NULL): a plane [m, n], rows ld_ahead apart,
 * that the caller reads next, whose rows the product asks for a few at a time, as it reaches
 * the same rows of C. later: n_later regions of rows x cols floats (rows ld apart, both > 0) that the
 * caller reads after that, their 64-byte lines asked for evenly over the product's micro-tiles,
 * so that they arrive while it computes (the attention backward's next tile). */
typedef struct gm_region {
  const float *data;
  int64_t rows, cols, ld;
} gm_region;
int gm_tiles_available(void);
void gm_tiles_gemm(int trans_a, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                   const float *b, int64_t ldb, int64_t panel_stride, int accumulate, float *c,
                   int64_t ldc, const float *ahead, int64_t ld_ahead, const gm_region *later,
                   int n_later);
/* The scores of attention in one product: C = (A B) · scale ⊙ E (E [m, n], rows lde apart;
 * NULL: no factor; its rows asked for ahead as gm_tiles_gemm's), with A B itself also stored in
 * raw (rows ldr apart) when raw is not NULL — with non-temporal stores when stream (raw on 64
 * bytes, ldr a multiple of 16: for memory that is read back much later); A and B as in
 * gm_tiles_gemm (A not transposed). The same bits as the product followed by the scaling loop.
 * gm_tiles_stream_fence orders the calling thread's non-temporal stores before what it does
 * next: call it before another thread may read them. */
void gm_tiles_scores(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                     int64_t ldb, int64_t panel_stride, float scale, const float *e, int64_t lde,
                     float *raw, int64_t ldr, int stream, float *c, int64_t ldc);
void gm_tiles_stream_fence(void);
int64_t gm_tiles_panel_floats(int64_t rows, int64_t cols);
void gm_tiles_pack_panels(const float *x, int64_t rows, int64_t cols, float *out);

#endif
