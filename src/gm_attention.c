/* gm_attention.c — fused multi-head attention with padding, graph and decay masks.
 *
 * Forward, per (batch, head, block of BQ query rows): for each block of BK keys, one small
 * product gives the raw scores Q Kᵀ; they are scaled, decayed and masked in place, folded into a
 * running (max, sum) per row — the online softmax — and multiplied into V by a second product.
 * Each row's logsumexp (and, for renormalised weight decay, its renormaliser) is kept, and, when
 * they fit (keep_scores), the raw scores themselves.
 *
 * Backward, per (batch, head): the same tiles are made again (from the kept raw scores, or by
 * the product again), and with D_i = dO_i · O_i:
 *   dV += Ãᵀ dO,  dÃ = dO Vᵀ,  dA = dÃ ⊙ Z (dropout),
 *   scores mode (s = f · scale · qk):  dS = P ⊙ (dA − D),  df = dS · scale · qk,  dqk = dS f scale
 *   weights mode, A = P f:             dS = P ⊙ (f dA − D),  df = P dA,            dqk = dS scale
 *   weights mode, A = P f / c:         dS = A ⊙ (dA − D),    df = P (dA − D) / c,  dqk = dS scale
 *   dQ += dqk K,  dK += dqkᵀ Q.
 * (For the renormalised case Σ_j P_ij dP_ij vanishes because each row of A sums to 1.)
 *
 * The tile products run single-threaded inside our parallel loops: in float32 on AVX-512 by
 * gm_tiles_gemm (gm_tiles.c), which reads K, V, Q and dO in place and needs Kᵀ and Vᵀ packed,
 * once per task into its scratch; elsewhere, and in "medium" precision, through gm_gemm or
 * the bf16 panels below. The loops run over (batch, head) in forward, heads outermost — or
 * runs of a (batch, head)'s query blocks when those are fewer than twice the threads — and over
 * (batch, head) — or head, when the decay's gradient is per head — in backward, so no two
 * threads ever write the same output row; when those are fewer than twice the threads,
 * backward also splits the query blocks into chunks with dK and dV summed in per-chunk scratch
 * and added in a fixed order (see gm_attention_backward).
 *
 * The decay plane [L, S] of a head is too large to stay in cache between the batch's passes
 * over it: each tile's rows of it are prefetched while the tile's first product runs. */
#include <omp.h>
#include <string.h>

#include "gm_internal.h"

#define BQ 64  /* query rows per tile */
#define BK 256 /* keys per tile */
/* Row stride of the tiles in scratch: 16 floats more than BK. The transposed products (dV +=
 * Ãᵀ dO, dK += dSᵀ Q) read a tile down its columns, and with rows 1 KiB apart every row fell in
 * the same 4 of L1's 64 sets; float32 attention fwd+bwd 1-3% faster on the Xeon (AMX host). */
#define LDT (BK + 16)

/* "medium": K or V of every (b, h) rounded to bf16 and packed once as the B operand of the
 * tile products (gm_bf16_pack_panels), instead of once per tile; likewise a block's queries
 * (Q and dO) once per block, for the products of all its tiles (query_block). (The float32
 * tile kernel reads K and V in place and needs only Kᵀ and Vᵀ packed, which each task does for
 * its own (b, h): pack_own.) */
typedef struct panels {
  uint32_t *words; /* NULL in float32 */
  int64_t per_bh;  /* words per (b, h) */
  int64_t k;       /* rows of op(X) as packed: cols for Xᵀ, S for X */
} panels;

typedef struct problem {
  int64_t B, H, L, S, d, dv;
  const float *q, *k, *v;
  const float *key_mask, *key_bias;   /* [B, S] */
  const float *attn_mask, *attn_bias; /* [L, S], [B, L, S] or [B, H, L, S] */
  int attn_mask_dims, attn_bias_dims;
  const float *decay; /* [L, S] or [H, L, S] */
  int decay_per_head, decay_weights, renormalize;
  float scale, dropout, keep_scale;
  uint32_t keep_threshold; /* dropout · 2^24 */
  uint64_t seed;
  int tiles; /* float32 products by gm_tiles_gemm, not gm_gemm */
  /* The raw Q Kᵀ of every tile, [B, H, L, ld_kept], written by forward for backward to read
   * instead of computing it again (see keep_scores); NULL when not kept. */
  float *kept;
  int64_t ld_kept;
  panels kt_panels, v_panels, vt_panels, k_panels; /* Kᵀ and V in forward; Kᵀ, Vᵀ, K in backward */
} problem;

/* "medium": one query block's rows of Q and dO rounded and packed once, as the A operand of
 * Q Kᵀ and dO Vᵀ (q_rows, do_rows) and as the B operand of dV += Ãᵀ dO and dK += dSᵀ Q
 * (do_panels, q_panels); all NULL in float32. */
typedef struct query_block {
  uint32_t *q_rows, *do_rows, *do_panels, *q_panels;
} query_block;

/* Words of a task's query_block buffers (0 in float32), each part a multiple of 16 words so
 * that the panels stay on 64-byte lines; with qb, its parts are set to their places from at
 * (NULL in float32). */
static int64_t query_block_words(const problem *pb, int backward, query_block *qb, uint32_t *at) {
  int medium = pb->kt_panels.words != NULL;
  int64_t sizes[4] = {gm_bf16_rows_words(BQ, pb->d), backward ? gm_bf16_rows_words(BQ, pb->dv) : 0,
                      backward ? gm_bf16_panel_words(pb->dv, BQ) : 0,
                      backward ? gm_bf16_panel_words(pb->d, BQ) : 0};
  uint32_t *place[4];
  int64_t total = 0;
  for (int i = 0; i < 4; i++) {
    place[i] = medium && sizes[i] && at ? at + total : NULL;
    total += (sizes[i] + 15) / 16 * 16;
  }
  if (qb) *qb = (query_block){.q_rows = place[0], .do_rows = place[1], .do_panels = place[2], .q_panels = place[3]};
  return medium ? total : 0;
}

/* Packs x [B, H, S, cols] as Xᵀ (trans: n = S keys, k = cols) or X (n = cols, k = S keys). */
static gm_status pack_panels(const problem *pb, const float *x, int64_t cols, int trans, panels *out) {
  int64_t n = trans ? pb->S : cols, k = trans ? cols : pb->S;
  out->per_bh = gm_bf16_panel_words(n, k);
  out->k = k;
  out->words = gm_malloc((size_t)(pb->B * pb->H * out->per_bh) * sizeof(uint32_t));
  if (!out->words) return gm_last_status();
  GM_FOR(bh, pb->B * pb->H, pb->B * pb->H * pb->S * cols, {
    gm_bf16_pack_panels(trans, x + bh * pb->S * cols, cols, n, k, out->words + bh * out->per_bh);
  });
  return GM_OK;
}

static void free_panels(problem *pb) {
  panels *all[4] = {&pb->kt_panels, &pb->v_panels, &pb->vt_panels, &pb->k_panels};
  for (int i = 0; i < 4; i++) gm_free(all[i]->words), all[i]->words = NULL;
}

/* Floats of scratch for one (b, h)'s packed Xᵀ, x [S, cols] (none without the tile kernel). */
static int64_t own_floats(const problem *pb, int64_t cols) {
  return pb->tiles ? gm_tiles_panel_floats(pb->S, cols) : 0;
}

/* Xᵀ of (b, h)'s x [S, cols] packed into the task's scratch for the float32 tile kernel, NULL
 * without it: once per task, where its tiles then find it in cache. */
static const float *pack_own(const problem *pb, const float *x, int64_t bh, int64_t cols, float *out) {
  if (!pb->tiles) return NULL;
  gm_tiles_pack_panels(x + bh * pb->S * cols, pb->S, cols, out);
  return out;
}

/* Whether the tile products ask for the rows of a plane the tile reads next as they go (the
 * float32 tile kernel and the bf16 panels do; gm_gemm does not). A few rows at a time, next to
 * the products' own loads, they arrive in time; asked for all at once before the product (64
 * KiB a tile), they queued ahead of its loads and displaced each other ("medium" attention: 7%
 * slower forward and backward). */
static int products_ask_ahead(const problem *pb) { return pb->tiles || pb->kt_panels.words; }

/* The tile products. C [m, n] (row stride LDT) = A · (rows [j0, j0 + n) of x, (b, h)'s [S, k])ᵀ:
 * Q Kᵀ and dO Vᵀ, from xp's bf16 panels and A's packed rows a_rows or xt (the float32 ones of
 * this (b, h)) when there are some; either asks for the rows of ahead (the tile's place in an
 * [L, S] plane, or NULL) as it goes. */
static void product_abt(const problem *pb, const panels *xp, const float *xt, int64_t bh, int64_t m,
                        int64_t n, int64_t k, const float *a, const uint32_t *a_rows, int64_t lda,
                        const float *x, int64_t j0, float *c, const float *ahead) {
  if (xp->words)
    gm_bf16_gemm_packed(m, n, k, 1.0f, a_rows, xp->words + bh * xp->per_bh, xp->k, j0, 0, 0.0f, c, LDT,
                        ahead, pb->S);
  else if (xt) /* j0 is a multiple of 64, so its panel starts at j0 · k */
    gm_tiles_gemm(0, m, n, k, a, lda, xt + j0 * k, 64, 64 * k, 0, c, LDT, ahead, pb->S, NULL, 0);
  else
    gm_gemm(0, 1, m, n, k, 1.0f, a, lda, x + (bh * pb->S + j0) * k, k, 0.0f, c, LDT);
}

/* C [m, n] = op(A) · b, plus C when accumulate (else C is not read), b [k, n] row-major: P V,
 * dQ += dS K (b = rows [k0, k0 + k) of (b, h)'s V or K, taken from xp's bf16 panels when there
 * are some), dV += Ãᵀ dO and dK += dSᵀ Q (xp NULL; b's bf16 panels in b_panels when there are
 * some). */
static void product_ab(const problem *pb, const panels *xp, const uint32_t *b_panels, int64_t bh,
                       int64_t k0, int trans_a, int64_t m, int64_t n, int64_t k, const float *a,
                       int64_t lda, const float *b, int accumulate, float *c, int64_t ldc,
                       const gm_region *later, int n_later) {
  float beta = accumulate ? 1.0f : 0.0f;
  if (xp && xp->words)
    gm_bf16_gemm_panels(trans_a, m, n, k, 1.0f, a, lda, xp->words + bh * xp->per_bh, xp->k, 0, k0,
                        beta, c, ldc);
  else if (b_panels)
    gm_bf16_gemm_panels(trans_a, m, n, k, 1.0f, a, lda, b_panels, k, 0, 0, beta, c, ldc);
  else if (pb->tiles)
    gm_tiles_gemm(trans_a, m, n, k, a, lda, b, n, 64, accumulate, c, ldc, NULL, 0, later, n_later);
  else
    gm_gemm(trans_a, 0, m, n, k, 1.0f, a, lda, b, n, beta, c, ldc);
}

/* The [L, S] plane of a mask of `dims` dimensions for (b, h). */
static const float *plane(const problem *pb, const float *m, int dims, int64_t b, int64_t h) {
  if (!m) return NULL;
  int64_t ls = pb->L * pb->S;
  return dims == 4 ? m + (b * pb->H + h) * ls : dims == 3 ? m + b * ls : m;
}

static const float *decay_plane(const problem *pb, int64_t h) {
  if (!pb->decay) return NULL;
  return pb->decay_per_head ? pb->decay + h * pb->L * pb->S : pb->decay;
}

/* Finishes row i of a tile's scores, keys [j0, j0 + nk) of (b, h), in s: from the raw Q Kᵀ
 * row qk (scaled, and decayed in scores mode) unless the product already did that (qk NULL),
 * then biased and −inf where attending is not allowed. Called by the loops that read the row
 * next (max and exp), so that the row is still in L1 when they do instead of each pass taking
 * the whole 64 KiB tile from L2. */
GM_HOT static void row_scores(const problem *pb, int64_t b, int64_t h, int64_t i, int64_t j0, int64_t nk,
                              const float *qk, float *y) {
  int64_t row = i * pb->S + j0;
  if (qk) {
    const float *dp = decay_plane(pb, h);
    float scale = pb->scale;
    if (dp && !pb->decay_weights)
      for (int64_t c = 0; c < nk; c++) y[c] = qk[c] * scale * dp[row + c];
    else
      for (int64_t c = 0; c < nk; c++) y[c] = qk[c] * scale;
  }
  const float *am = plane(pb, pb->attn_mask, pb->attn_mask_dims, b, h);
  const float *ab = plane(pb, pb->attn_bias, pb->attn_bias_dims, b, h);
  const float *km = pb->key_mask ? pb->key_mask + b * pb->S + j0 : NULL;
  const float *kb = pb->key_bias ? pb->key_bias + b * pb->S + j0 : NULL;
  /* one simple loop per step, so that each vectorises */
  if (kb)
    for (int64_t c = 0; c < nk; c++) y[c] += kb[c];
  if (ab)
    for (int64_t c = 0; c < nk; c++) y[c] += ab[row + c];
  if (km)
    for (int64_t c = 0; c < nk; c++) y[c] = km[c] != 0.0f ? y[c] : -INFINITY;
  if (am)
    for (int64_t c = 0; c < nk; c++) y[c] = am[row + c] != 0.0f ? y[c] : -INFINITY;
}

/* Where a tile's raw Q Kᵀ is (rows ld apart; qk NULL: nowhere), and whether its scores are
 * already scaled and decayed in s (the float32 tile kernel does that as it stores them). Either
 * way the rows of s still need row_scores. */
typedef struct tile_raw {
  const float *qk;
  int64_t ld;
  int scaled;
} tile_raw;

/* Row r of the raw Q Kᵀ (NULL: not kept anywhere). */
static const float *raw_row(tile_raw raw, int64_t r) { return raw.qk ? raw.qk + r * raw.ld : NULL; }

/* What row_scores takes for row r: the raw row when it still has to be scaled and decayed,
 * NULL when the product did that. */
static const float *unscaled_row(tile_raw raw, int64_t r) { return raw.scaled ? NULL : raw_row(raw, r); }

/* The product behind the tile's scores, rows [i0, i0 + nq) and keys [j0, j0 + nk) of (b, h),
 * leaving the raw Q Kᵀ in qk (row stride LDT) when qk is not NULL (the decay's gradient reads
 * it), else in s, and, when pb->kept (the float32 tile kernel only), in the kept scores
 * instead — or, with reuse (backward, and the weights after forward), no product at all: the
 * raw one is the one forward kept. The float32 tile kernel scales and decays the scores as it
 * stores them, so the decay plane's rows are read while the next micro-tile's products run
 * rather than in a pass of their own. */
static tile_raw tile_scores_product(const problem *pb, int reuse, int64_t b, int64_t h, int64_t i0,
                                    int64_t nq, int64_t j0, int64_t nk, const float *kt,
                                    const query_block *qb, float *qk, float *s) {
  int64_t bh = b * pb->H + h, d = pb->d;
  float *kept = pb->kept ? pb->kept + (bh * pb->L + i0) * pb->ld_kept + j0 : NULL;
  if (kept && reuse) return (tile_raw){.qk = kept, .ld = pb->ld_kept, .scaled = 0};
  const float *q = pb->q + (bh * pb->L + i0) * d, *dp = decay_plane(pb, h);
  if (!pb->kt_panels.words && kt) { /* j0 is a multiple of 64: see product_abt */
    float *raw = kept ? kept : qk; /* NULL: the raw product is not needed */
    int64_t ld = kept ? pb->ld_kept : LDT;
    gm_tiles_scores(nq, nk, d, q, d, kt + j0 * d, 64, 64 * d, pb->scale,
                    dp && !pb->decay_weights ? dp + i0 * pb->S + j0 : NULL, pb->S, raw, ld, kept != NULL,
                    s, LDT);
    return (tile_raw){.qk = raw, .ld = ld, .scaled = 1};
  }
  GM_ASSERT(!kept); /* kept only with the tile kernel (keep_scores) */
  float *raw = qk ? qk : s;
  product_abt(pb, &pb->kt_panels, kt, bh, nq, nk, d, q, qb->q_rows, d, pb->k, j0, raw,
              dp && !pb->decay_weights ? dp + i0 * pb->S + j0 : NULL);
  return (tile_raw){.qk = raw, .ld = LDT, .scaled = 0};
}

/* Asks for the tile's rows of the [L, S] planes it reads (decay, masks, biases, and the decay
 * gradient it adds to) while the tile product runs: each row is a separate run of BK floats,
 * S floats from the next, which the hardware prefetchers follow too late. Not the decay (in
 * scores mode) and its gradient when the products ask for them (products_ask_ahead: Q Kᵀ, and
 * dO Vᵀ in backward) — but the decay when reuse takes kept scores instead of Q Kᵀ (then the
 * previous tile's last products asked for it already, all but the first tile's; asking again
 * costs nothing measurable). noipa: GCC's IPA counts prefetches as no side effect and would drop
 * the call as pure. */
GM_NOIPA static void prefetch_planes(const problem *pb, int64_t b, int64_t h, int64_t i0,
                                                   int64_t nq, int64_t j0, int64_t nk,
                                                   const float *ddecay_plane, int reuse) {
  int asked = products_ask_ahead(pb), scored = asked && !(reuse && pb->kept);
  const float *all[4] = {scored && !pb->decay_weights ? NULL : decay_plane(pb, h),
                         plane(pb, pb->attn_mask, pb->attn_mask_dims, b, h),
                         plane(pb, pb->attn_bias, pb->attn_bias_dims, b, h), asked ? NULL : ddecay_plane};
  for (int i = 0; i < 4; i++) {
    if (!all[i]) continue;
    for (int64_t r = 0; r < nq; r++)
      for (int64_t c = 0; c < nk; c += 16) __builtin_prefetch(all[i] + (i0 + r) * pb->S + j0 + c);
  }
}

/* dst = src ⊙ the dropout factors of the tile (src may be dst), and the factors kept in z when z
 * is not NULL (backward applies them twice: the hash is dearer than a load). */
GM_HOT static void apply_dropout(const problem *pb, int64_t b, int64_t h, int64_t i0, int64_t nq,
                          int64_t j0, int64_t nk, const float *src, float *dst, float *z) {
  if (pb->dropout == 0.0f) return;
  for (int64_t r = 0; r < nq; r++) {
    uint64_t base = (uint64_t)(((b * pb->H + h) * pb->L + i0 + r) * pb->S + j0);
    gm_dropout_run(pb->seed, base, nk, pb->keep_threshold, pb->keep_scale, src + r * LDT, dst + r * LDT,
                   z ? z + r * LDT : NULL);
  }
}

/* t ⊙= z, the factors apply_dropout kept. */
GM_HOT static void reapply_dropout(const problem *pb, int64_t nq, int64_t nk, const float *z, float *t) {
  if (pb->dropout == 0.0f) return;
  for (int64_t r = 0; r < nq; r++)
    for (int64_t c = 0; c < nk; c++) t[r * LDT + c] *= z[r * LDT + c];
}

/* Row kernels, kept out of line so that each compiles once, vectorised (inlined into the
 * OpenMP bodies the vectoriser gives up on them). */
/* The row's maximum, NaN if the row holds a NaN (so that it reaches the output as in PyTorch
 * instead of passing for a row with nothing allowed). */
GM_HOT static __attribute__((noinline)) float row_max(const float *t, int64_t n) {
  float mx = -INFINITY;
  int nan = 0;
#pragma omp simd reduction(max : mx) reduction(| : nan)
  for (int64_t c = 0; c < n; c++) {
    mx = t[c] > mx ? t[c] : mx;
    nan |= t[c] != t[c];
  }
  return nan ? NAN : mx;
}

/* t[c] = e^(t[c] − shift) (backward's P, whose rows are already known to sum to 1) */
GM_HOT static __attribute__((noinline)) void row_exp(float *t, int64_t n, float shift) {
#pragma omp simd
  for (int64_t c = 0; c < n; c++) t[c] = gm_exp_nonpositive(t[c] - shift);
}

/* row_exp, returning the sum */
GM_HOT static __attribute__((noinline)) float row_exp_sum(float *t, int64_t n, float shift) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < n; c++) {
    float p = gm_exp_nonpositive(t[c] - shift);
    t[c] = p;
    sum += p;
  }
  return sum;
}

/* Every thread's scratch of `floats` for one call, from gm_malloc: one block, which the memory
 * limit counts and the allocator's cache hands back on the next call (allocated per task, it
 * came from a fresh mapping each time), and out of memory is known before any task starts.
 * Each thread's part starts on a 64-byte line (the bf16 panels of its query_block are read with
 * aligned loads); gm_free releases the whole. */
typedef struct thread_scratch {
  float *all;
  size_t stride; /* floats per thread */
} thread_scratch;

static gm_status thread_scratch_alloc(size_t floats, thread_scratch *ts) {
  ts->stride = (floats + 15) / 16 * 16;
  ts->all = gm_malloc((size_t)omp_get_max_threads() * ts->stride * sizeof(float));
  return ts->all ? GM_OK : gm_last_status();
}

/* The calling thread's part (inside a GM_FOR body, or the serial loop: thread 0). */
static float *my_scratch(const thread_scratch *ts) {
  return ts->all + (size_t)omp_get_thread_num() * ts->stride;
}

/* ---- forward ----------------------------------------------------------------------------- */

/* One (b, h, query block): out rows and their statistics (logsumexp, renormaliser). In
 * "medium", qb->q_rows holds the block's Q, packed by the caller (for this and weights_block). */
GM_HOT static void forward_block(const problem *pb, int64_t b, int64_t h, int64_t i0, const float *kt,
                                 const query_block *qb, float *out, float *stats, float *scratch) {
  int64_t nq = pb->L - i0 < BQ ? pb->L - i0 : BQ, dv = pb->dv;
  const float *v = pb->v + (b * pb->H + h) * pb->S * dv;
  float *o = out + ((b * pb->H + h) * pb->L + i0) * dv;
  float *tile = scratch;
  const float *dp = decay_plane(pb, h);
  float m[BQ], l[BQ], w[BQ];
  int weights_mode = dp && pb->decay_weights;
  for (int64_t r = 0; r < nq; r++) m[r] = -INFINITY, l[r] = 0.0f, w[r] = 0.0f;
  memset(o, 0, (size_t)(nq * dv) * sizeof(float));
  for (int64_t j0 = 0; j0 < pb->S; j0 += BK) {
    int64_t nk = pb->S - j0 < BK ? pb->S - j0 : BK;
    prefetch_planes(pb, b, h, i0, nq, j0, nk, NULL, 0);
    tile_raw raw = tile_scores_product(pb, 0, b, h, i0, nq, j0, nk, kt, qb, NULL, tile);
    for (int64_t r = 0; r < nq; r++) {
      float *t = tile + r * LDT;
      row_scores(pb, b, h, i0 + r, j0, nk, unscaled_row(raw, r), t);
      float mx = row_max(t, nk);
      float m_new = mx > m[r] || isnan(mx) ? mx : m[r];
      if (m_new == -INFINITY) { /* nothing allowed so far in this row */
        memset(t, 0, (size_t)nk * sizeof(float));
        continue;
      }
      float alpha = gm_exp_nonpositive(m[r] - m_new); /* 0 when m[r] is −inf */
      float sum = row_exp_sum(t, nk, m_new), wsum = 0.0f;
      if (weights_mode) {
        const float *fr = dp + (i0 + r) * pb->S + j0;
#pragma omp simd reduction(+ : wsum)
        for (int64_t c = 0; c < nk; c++) {
          t[c] *= fr[c];
          wsum += t[c];
        }
        w[r] = w[r] * alpha + wsum;
      }
      l[r] = l[r] * alpha + sum;
      m[r] = m_new;
      if (alpha != 1.0f)
        for (int64_t c = 0; c < dv; c++) o[r * dv + c] *= alpha;
    }
    apply_dropout(pb, b, h, i0, nq, j0, nk, tile, tile, NULL);
    product_ab(pb, &pb->v_panels, NULL, b * pb->H + h, j0, 0, nq, dv, nk, tile, LDT, v + j0 * dv, 1, o, dv, NULL, 0);
  }
  for (int64_t r = 0; r < nq; r++) {
    float *st = stats + ((b * pb->H + h) * pb->L + i0 + r) * 2;
    if (l[r] == 0.0f) { /* no allowed key: 0 output, and +inf marks the row for backward */
      memset(o + r * dv, 0, (size_t)dv * sizeof(float));
      st[0] = INFINITY;
      st[1] = 1.0f;
      continue;
    }
    int renorm = weights_mode && pb->renormalize;
    float denom = renorm ? w[r] : l[r];
    float inv = denom > 0.0f ? 1.0f / denom : 0.0f; /* a row whose decay is all 0 stays 0 */
    for (int64_t c = 0; c < dv; c++) o[r * dv + c] *= inv;
    st[0] = m[r] + logf(l[r]);
    st[1] = renorm ? w[r] / l[r] : 1.0f;
  }
}

/* The final weights of one (b, h, query block), recomputed from the statistics. */
GM_HOT static void weights_block(const problem *pb, int64_t b, int64_t h, int64_t i0, const float *kt,
                                 const query_block *qb, const float *stats, float *weights,
                                 float *scratch) {
  int64_t nq = pb->L - i0 < BQ ? pb->L - i0 : BQ;
  float *tile = scratch;
  const float *dp = decay_plane(pb, h);
  int weights_mode = dp && pb->decay_weights;
  for (int64_t j0 = 0; j0 < pb->S; j0 += BK) {
    int64_t nk = pb->S - j0 < BK ? pb->S - j0 : BK;
    tile_raw raw = tile_scores_product(pb, 1, b, h, i0, nq, j0, nk, kt, qb, NULL, tile);
    for (int64_t r = 0; r < nq; r++) {
      const float *st = stats + ((b * pb->H + h) * pb->L + i0 + r) * 2;
      float *t = tile + r * LDT, lse = st[0], inv_c = 1.0f / st[1];
      row_scores(pb, b, h, i0 + r, j0, nk, unscaled_row(raw, r), t);
      if (isinf(lse)) {
        memset(t, 0, (size_t)nk * sizeof(float));
        continue;
      }
      row_exp(t, nk, lse);
      if (weights_mode) {
        const float *fr = dp + (i0 + r) * pb->S + j0;
        for (int64_t c = 0; c < nk; c++) t[c] *= fr[c] * inv_c;
      }
    }
    apply_dropout(pb, b, h, i0, nq, j0, nk, tile, tile, NULL);
    for (int64_t r = 0; r < nq; r++)
      memcpy(weights + ((b * pb->H + h) * pb->L + i0 + r) * pb->S + j0, tile + r * LDT,
             (size_t)nk * sizeof(float));
  }
}

static gm_status check_mask(const gm_tensor *m, int arg, const char *name, int64_t B, int64_t H,
                            int64_t L, int64_t S, int allow_heads_only) {
  char x[GM_SHAPE_BUF];
  if (!m) return GM_OK;
  int ok = 0;
  if (allow_heads_only) { /* decay: [L, S] or [H, L, S] */
    ok = (m->ndim == 2 && m->shape[0] == L && m->shape[1] == S) ||
         (m->ndim == 3 && m->shape[0] == H && m->shape[1] == L && m->shape[2] == S);
  } else if (arg == 4 || arg == 5) { /* key masks: [B, S] */
    ok = m->ndim == 2 && m->shape[0] == B && m->shape[1] == S;
  } else {
    ok = (m->ndim == 2 && m->shape[0] == L && m->shape[1] == S) ||
         (m->ndim == 3 && m->shape[0] == B && m->shape[1] == L && m->shape[2] == S) ||
         (m->ndim == 4 && m->shape[0] == B && m->shape[1] == H && m->shape[2] == L && m->shape[3] == S);
  }
  if (!ok)
    return gm_fail(GM_ERR_SHAPE, arg, "%s of size %s does not fit B=%lld H=%lld L=%lld S=%lld",
                   name, GM_SHAPE(m, x), (long long)B, (long long)H, (long long)L, (long long)S);
  return GM_OK;
}

static gm_status make_problem(problem *pb, gm_tensor *q, gm_tensor *k, gm_tensor *v,
                              const gm_attention_opts *o) {
  char x[GM_SHAPE_BUF], y[GM_SHAPE_BUF], z[GM_SHAPE_BUF];
  if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4 || k->shape[0] != q->shape[0] ||
      v->shape[0] != q->shape[0] || k->shape[1] != q->shape[1] || v->shape[1] != q->shape[1] ||
      k->shape[3] != q->shape[3] || v->shape[2] != k->shape[2])
    return gm_fail(GM_ERR_SHAPE, q->ndim != 4 ? 1 : k->ndim != 4 || k->shape[3] != q->shape[3] ? 2 : 3,
                   "attention needs q [B,H,L,d], k [B,H,S,d], v [B,H,S,dv] (got q %s, k %s, v %s)",
                   GM_SHAPE(q, x), GM_SHAPE(k, y), GM_SHAPE(v, z));
  memset(pb, 0, sizeof *pb);
  pb->B = q->shape[0], pb->H = q->shape[1], pb->L = q->shape[2], pb->S = k->shape[2];
  pb->d = q->shape[3], pb->dv = v->shape[3];
  gm_status st;
  if ((st = check_mask(o->key_mask, 4, "key_mask", pb->B, pb->H, pb->L, pb->S, 0)) != GM_OK ||
      (st = check_mask(o->key_bias, 5, "key_bias", pb->B, pb->H, pb->L, pb->S, 0)) != GM_OK ||
      (st = check_mask(o->attn_mask, 6, "attn_mask", pb->B, pb->H, pb->L, pb->S, 0)) != GM_OK ||
      (st = check_mask(o->attn_bias, 7, "attn_bias", pb->B, pb->H, pb->L, pb->S, 0)) != GM_OK ||
      (st = check_mask(o->decay, 8, "decay", pb->B, pb->H, pb->L, pb->S, 1)) != GM_OK)
    return st;
  if (!(o->dropout >= 0.0f && o->dropout < 1.0f))
    return gm_fail(GM_ERR_ARG, 9, "attention dropout must be in [0, 1) (got %g)", (double)o->dropout);
  if (!(o->scale >= 0.0f) || isinf(o->scale))
    return gm_fail(GM_ERR_ARG, 10, "attention scale must be finite and > 0 (got %g)", (double)o->scale);
  pb->q = q->data, pb->k = k->data, pb->v = v->data;
  pb->key_mask = o->key_mask ? o->key_mask->data : NULL;
  pb->key_bias = o->key_bias ? o->key_bias->data : NULL;
  pb->attn_mask = o->attn_mask ? o->attn_mask->data : NULL;
  pb->attn_bias = o->attn_bias ? o->attn_bias->data : NULL;
  pb->attn_mask_dims = o->attn_mask ? o->attn_mask->ndim : 0;
  pb->attn_bias_dims = o->attn_bias ? o->attn_bias->ndim : 0;
  pb->decay = o->decay ? o->decay->data : NULL;
  pb->decay_per_head = o->decay && o->decay->ndim == 3;
  pb->decay_weights = o->decay_weights != 0;
  pb->renormalize = o->renormalize != 0;
  pb->scale = o->scale > 0.0f ? o->scale : 1.0f / sqrtf((float)(pb->d ? pb->d : 1));
  pb->dropout = o->dropout;
  pb->keep_scale = 1.0f / (1.0f - o->dropout);
  pb->keep_threshold = (uint32_t)(o->dropout * 16777216.0f);
  pb->seed = o->dropout_seed;
  pb->tiles = !gm_matmul_uses_bf16() && gm_tiles_available();
  return GM_OK;
}

/* Floats of the row statistics (logsumexp, renormaliser) at the start of the saved buffer,
 * rounded so that the kept scores after them start on a 64-byte line. */
static int64_t stats_floats(const problem *pb) { return (pb->B * pb->H * pb->L * 2 + 15) / 16 * 16; }

static int keep_setting; /* gm_set_attention_keep_scores; off: the memory-lean default */

void gm_set_attention_keep_scores(int on) { __atomic_store_n(&keep_setting, on != 0, __ATOMIC_RELAXED); }

int gm_get_attention_keep_scores(void) { return __atomic_load_n(&keep_setting, __ATOMIC_RELAXED); }

/* Backward needs each tile's raw Q Kᵀ again; forward keeps them for it when asked to
 * (gm_set_attention_keep_scores), in float32, when the tile kernel computes them, they take at
 * most KEEP_MAX_BYTES and they fit under the memory limit (checked here: a failed allocation
 * would run the OOM hook, a full Lua collection, on every such call). Written to memory as they
 * are made (non-temporal stores, while the products run) and read back once, asked for while
 * the previous tile's last products run (gm_region), which costs less than the product they
 * replace (B8 H8 N1024 d64: 256 MiB, about 7 ms each way at 37 GB/s, against 18 ms for the
 * product; backward 17% faster, forward 2% slower, measured). Not in "medium": its bf16 product
 * costs half as much, and keeping made forward slower by what backward saved. Larger problems
 * compute them again, as FlashAttention does. Backward uses them only with the tile kernel
 * (gm_attention_backward), so it reads the same bits either way. Returns the kept rows' stride
 * (0: not kept). */
#define KEEP_MAX_BYTES ((int64_t)1 << 30)
static int64_t keep_scores(const problem *pb, int recording) {
  int64_t ld = (pb->S + 15) / 16 * 16, rows = pb->B * pb->H;
  if (!recording || !gm_get_attention_keep_scores() || !pb->tiles || rows == 0 || pb->L == 0 || pb->S == 0)
    return 0;
  int64_t max_floats = KEEP_MAX_BYTES / (int64_t)sizeof(float);
  if (pb->L > max_floats / rows / ld) return 0; /* B·H·L·ld > max, without overflowing */
  size_t bytes = (size_t)(rows * pb->L * ld) * sizeof(float), limit = gm_memory_limit();
  return limit && gm_memory_live() + bytes > limit ? 0 : ld;
}

gm_tensor *gm_attention(gm_tensor *q, gm_tensor *k, gm_tensor *v, const gm_attention_opts *opts,
                        gm_tensor **weights) {
  problem pb;
  if (make_problem(&pb, q, k, v, opts) != GM_OK) return NULL;
  gm_tensor *srcs[8] = {q, k, v, opts->decay, opts->key_mask, opts->key_bias, opts->attn_mask,
                        opts->attn_bias};
  int64_t out_shape[4] = {pb.B, pb.H, pb.L, pb.dv}, w_shape[4] = {pb.B, pb.H, pb.L, pb.S};
  pb.ld_kept = keep_scores(&pb, gm_needs_grad(srcs, 8));
  /* saved: the row statistics, then the kept scores */
  int64_t saved_floats = stats_floats(&pb) + pb.B * pb.H * pb.L * pb.ld_kept;
  gm_tensor *out = gm_tensor_empty(4, out_shape);
  gm_tensor *stats = gm_tensor_empty(1, &saved_floats);
  if (!stats && pb.ld_kept) { /* no room to keep the scores: backward computes them again */
    pb.ld_kept = 0;
    saved_floats = stats_floats(&pb);
    stats = gm_tensor_empty(1, &saved_floats);
  }
  pb.kept = stats && pb.ld_kept ? stats->data + stats_floats(&pb) : NULL;
  gm_tensor *w = weights ? gm_tensor_empty(4, w_shape) : NULL;
  /* A task per (b, h), heads outermost (the batch's tasks of one head read the same decay
   * plane), or per run of its query blocks when that leaves fewer than twice the threads. */
  int64_t qblocks = (pb.L + BQ - 1) / BQ, groups = pb.B * pb.H, work = groups * pb.L * pb.S * pb.d;
  int64_t chunks = groups >= 2 * gm_get_num_threads() || work <= GM_PAR_MIN
                       ? 1 : (2 * gm_get_num_threads() + groups - 1) / groups;
  if (chunks > qblocks) chunks = qblocks;
  int64_t qb_at = BQ * LDT + own_floats(&pb, pb.d);
  thread_scratch ts = {0};
  if (!out || !stats || (weights && !w) ||
      (gm_matmul_uses_bf16() && (pack_panels(&pb, pb.k, pb.d, 1, &pb.kt_panels) != GM_OK ||
                                 pack_panels(&pb, pb.v, pb.dv, 0, &pb.v_panels) != GM_OK)) ||
      /* after the panels: the query block's bf16 words are counted only in "medium" */
      thread_scratch_alloc((size_t)(qb_at + query_block_words(&pb, 0, NULL, NULL)), &ts) != GM_OK) {
    free_panels(&pb);
    gm_free(ts.all);
    gm_tensor_release(out), gm_tensor_release(stats), gm_tensor_release(w);
    return NULL;
  }
  GM_FOR(t, groups * chunks, work, {
    int64_t g = t / chunks, c = t % chunks, h = g / pb.B, b = g % pb.B, bh = b * pb.H + h;
    float *scratch = my_scratch(&ts);
    const float *kt = pack_own(&pb, pb.k, bh, pb.d, scratch + BQ * LDT);
    query_block qbt;
    query_block_words(&pb, 0, &qbt, (uint32_t *)(scratch + qb_at));
    for (int64_t i = qblocks * c / chunks; i < qblocks * (c + 1) / chunks; i++) {
      if (qbt.q_rows) /* once for both calls */
        gm_bf16_pack_rows(0, pb.q + (bh * pb.L + i * BQ) * pb.d, pb.d,
                          pb.L - i * BQ < BQ ? pb.L - i * BQ : BQ, pb.d, qbt.q_rows);
      forward_block(&pb, b, h, i * BQ, kt, &qbt, out->data, stats->data, scratch);
      if (w) weights_block(&pb, b, h, i * BQ, kt, &qbt, stats->data, w->data, scratch);
    }
    if (pb.kept) gm_tiles_stream_fence(); /* before another thread reads the kept scores */
  });
  free_panels(&pb);
  gm_free(ts.all);
  if (weights) *weights = w;
  /* iarg[0] = decay mode (1: weights), iarg[1] = renormalize, iarg[2] = dropout seed;
   * farg[0] = scale, farg[1] = dropout probability; saved = the row statistics [B, H, L, 2]
   * and, when kept, the raw scores [B, H, L, ld] after them (at stats_floats) */
  out = gm_record(out, GM_OP_ATTENTION, srcs, 8);
  if (out && out->op == GM_OP_ATTENTION) {
    gm_node_save(out, stats);
    out->iarg[0] = pb.decay_weights;
    out->iarg[1] = pb.renormalize;
    out->iarg[2] = (int64_t)pb.seed;
    out->farg[0] = pb.scale;
    out->farg[1] = pb.dropout;
  } else {
    gm_tensor_release(stats);
  }
  return out;
}

/* ---- backward ---------------------------------------------------------------------------- */

/* Accumulates the gradients of (b, h) from the query rows [i_begin, i_end): into dq (the whole
 * tensor; only those rows are written, and their first tile overwrites them), dk_bh and dv_bh
 * (this (b, h)'s [S, d] and [S, dv] destinations; overwritten by the first query block when
 * fresh_kv) and ddecay_plane (an [L, S] plane; only those rows are written, and zeroed first
 * when fresh_dd). So the caller need not zero-fill what only this call writes. */
GM_HOT static void backward_head(const problem *pb, int64_t b, int64_t h, int64_t i_begin,
                                 int64_t i_end, const float *out, const float *stats,
                                 const float *dout, float *dq_all, float *dk, float *dvv,
                                 int fresh_kv, float *ddecay_plane, int fresh_dd,
                                 const query_block *qb, float *scratch) {
  int64_t d = pb->d, dv = pb->dv, L = pb->L, S = pb->S, bh = b * pb->H + h;
  const float *q = pb->q + bh * L * d, *k = pb->k + bh * S * d;
  const float *o = out + bh * L * dv, *go = dout + bh * L * dv, *st = stats + bh * L * 2;
  float *dq = dq_all ? dq_all + bh * L * d : NULL;
  const float *dp = decay_plane(pb, h);
  int weights_mode = dp && pb->decay_weights, renorm = weights_mode && pb->renormalize;
  /* Ã is P itself unless weights or dropout change it */
  float *qk = scratch, *s = scratch + BQ * LDT, *da = scratch + 2 * BQ * LDT, *z = scratch + 4 * BQ * LDT;
  float *a = weights_mode || pb->dropout != 0.0f ? scratch + 3 * BQ * LDT : s;
  const float *kt = pack_own(pb, pb->k, bh, d, scratch + 5 * BQ * LDT);
  const float *vt = pack_own(pb, pb->v, bh, dv, scratch + 5 * BQ * LDT + own_floats(pb, d));
  for (int64_t i0 = i_begin; i0 < i_end; i0 += BQ) {
    int64_t nq = L - i0 < BQ ? L - i0 : BQ;
    float D[BQ];
    for (int64_t r = 0; r < nq; r++) {
      double acc = 0;
      for (int64_t c = 0; c < dv; c++) acc += (double)go[(i0 + r) * dv + c] * o[(i0 + r) * dv + c];
      D[r] = (float)acc;
    }
    if (qb->q_rows) { /* each operand only for the products that read it below */
      gm_bf16_pack_rows(0, q + i0 * d, d, nq, d, qb->q_rows);
      if (dq || dk || ddecay_plane) gm_bf16_pack_rows(0, go + i0 * dv, dv, nq, dv, qb->do_rows);
      if (dvv) gm_bf16_pack_panels(0, go + i0 * dv, dv, dv, nq, qb->do_panels);
      if (dk) gm_bf16_pack_panels(0, q + i0 * d, d, d, nq, qb->q_panels);
    }
    for (int64_t j0 = 0; j0 < S; j0 += BK) {
      int64_t nk = S - j0 < BK ? S - j0 : BK;
      prefetch_planes(pb, b, h, i0, nq, j0, nk, ddecay_plane, 1);
      tile_raw raw = tile_scores_product(pb, 1, b, h, i0, nq, j0, nk, kt, qb,
                                         ddecay_plane && !weights_mode ? qk : NULL, s);
      /* P into s, the final weights Ã into a */
      for (int64_t r = 0; r < nq; r++) {
        float lse = st[(i0 + r) * 2], inv_c = 1.0f / st[(i0 + r) * 2 + 1];
        float *pr = s + r * LDT, *ar = a + r * LDT;
        row_scores(pb, b, h, i0 + r, j0, nk, unscaled_row(raw, r), pr);
        if (isinf(lse)) {
          memset(pr, 0, (size_t)nk * sizeof(float));
          memset(ar, 0, (size_t)nk * sizeof(float));
          continue;
        }
        row_exp(pr, nk, lse);
        if (weights_mode) {
          const float *fr = dp + (i0 + r) * S + j0;
          for (int64_t c = 0; c < nk; c++) ar[c] = pr[c] * fr[c] * inv_c;
        }
      }
      /* with dropout alone, Ã = P ⊙ Z is written straight from P */
      apply_dropout(pb, b, h, i0, nq, j0, nk, weights_mode ? a : s, a, z);
      int kv_sum = !fresh_kv || i0 > i_begin;
      if (dvv)
        product_ab(pb, NULL, qb->do_panels, bh, 0, 1, nk, dv, nq, a, LDT, go + i0 * dv, kv_sum, dvv + j0 * dv, dv,
                   NULL, 0);
      if (!dq && !dk && !ddecay_plane) continue;
      product_abt(pb, &pb->vt_panels, vt, bh, nq, nk, dv, go + i0 * dv, qb->do_rows, dv, pb->v, j0, da,
                  ddecay_plane ? ddecay_plane + i0 * S + j0 : NULL);
      reapply_dropout(pb, nq, nk, z, da); /* dA = dÃ ⊙ Z */
      float scale = pb->scale;
      for (int64_t r = 0; r < nq; r++) {
        float inv_c = 1.0f / st[(i0 + r) * 2 + 1], Dr = D[r];
        float *ddrow = ddecay_plane ? ddecay_plane + (i0 + r) * S + j0 : NULL;
        float *dar = da + r * LDT;
        const float *pr = s + r * LDT, *fr = dp ? dp + (i0 + r) * S + j0 : NULL;
        const float *qkr = raw_row(raw, r);
        int fresh = ddrow && fresh_dd; /* the row's first term: the plane holds no sum yet */
        if (!weights_mode) {
          if (fresh) /* dp too: ddecay exists only with a decay; 0 + term, the bits of adding the
                      * first term to a zeroed row, without zeroing it first */
            for (int64_t c = 0; c < nk; c++) {
              float g = pr[c] * (dar[c] - Dr);
              ddrow[c] = 0.0f + g * scale * qkr[c];
              dar[c] = g * fr[c] * scale;
            }
          else if (ddrow)
            for (int64_t c = 0; c < nk; c++) {
              float g = pr[c] * (dar[c] - Dr);
              ddrow[c] += g * scale * qkr[c];
              dar[c] = g * fr[c] * scale;
            }
          else if (dp)
            for (int64_t c = 0; c < nk; c++) dar[c] = pr[c] * (dar[c] - Dr) * fr[c] * scale;
          else
            for (int64_t c = 0; c < nk; c++) dar[c] = pr[c] * (dar[c] - Dr) * scale;
          continue;
        }
        if (fresh) memset(ddrow, 0, (size_t)nk * sizeof(float));
        if (!renorm) {
          if (ddrow)
            for (int64_t c = 0; c < nk; c++) ddrow[c] += pr[c] * dar[c];
          for (int64_t c = 0; c < nk; c++) dar[c] = pr[c] * (fr[c] * dar[c] - Dr) * scale;
        } else {
          if (ddrow)
            for (int64_t c = 0; c < nk; c++) ddrow[c] += pr[c] * (dar[c] - Dr) * inv_c;
          for (int64_t c = 0; c < nk; c++) dar[c] = pr[c] * fr[c] * inv_c * (dar[c] - Dr) * scale;
        }
      }
      /* The next tile's kept scores and decay rows, asked for while the last products run (dQ
       * takes the scores and dK the decay rows, or one of them both); asked for all at once
       * instead, when the tile starts, they displaced each other before their turn. */
      int64_t ni = j0 + BK < S ? i0 : i0 + BQ, nj = j0 + BK < S ? j0 + BK : 0;
      gm_region next[2];
      int n_next = 0;
      if (pb->kept && ni < i_end) {
        int64_t rows = L - ni < BQ ? L - ni : BQ, cols = S - nj < BK ? S - nj : BK;
        next[n_next++] = (gm_region){pb->kept + (bh * L + ni) * pb->ld_kept + nj, rows, cols, pb->ld_kept};
        if (dp) next[n_next++] = (gm_region){dp + ni * S + nj, rows, cols, S};
      }
      int to_dq = !dq ? 0 : dk ? n_next > 0 : n_next; /* regions for dQ's product, the rest dK's */
      if (dq)
        product_ab(pb, &pb->k_panels, NULL, bh, j0, 0, nq, d, nk, da, LDT, k + j0 * d, j0 > 0, dq + i0 * d, d,
                   next, to_dq);
      if (dk)
        product_ab(pb, NULL, qb->q_panels, bh, 0, 1, nk, d, nq, da, LDT, q + i0 * d, kv_sum, dk + j0 * d, d,
                   next + to_dq, n_next - to_dq);
    }
  }
}

static gm_tensor *zeros(int ndim, const int64_t *shape) { return gm_tensor_full(ndim, shape, 0.0f); }

gm_status gm_attention_backward(const gm_tensor *node, const gm_tensor *g, gm_tensor *decay_into,
                                gm_tensor **dq, gm_tensor **dk, gm_tensor **dv, gm_tensor **ddecay) {
  gm_tensor *q = node->src[0], *k = node->src[1], *v = node->src[2], *decay = node->src[3];
  gm_attention_opts o = {.key_mask = node->src[4], .key_bias = node->src[5],
                         .attn_mask = node->src[6], .attn_bias = node->src[7], .decay = decay,
                         .decay_weights = (int)node->iarg[0], .renormalize = (int)node->iarg[1],
                         .scale = node->farg[0], .dropout = node->farg[1],
                         .dropout_seed = (uint64_t)node->iarg[2]};
  problem pb;
  thread_scratch ts = {0};
  GM_ASSERT(make_problem(&pb, q, k, v, &o) == GM_OK);
  int64_t rows = pb.B * pb.H * pb.L;
  /* forward kept the scores; used only by the tile kernel, whose product they are (after a
   * switch to "medium", backward computes them in bf16, as it would have without them) */
  if (pb.tiles && rows > 0 && node->saved->numel > stats_floats(&pb)) {
    pb.kept = node->saved->data + stats_floats(&pb);
    pb.ld_kept = (node->saved->numel - stats_floats(&pb)) / rows;
  }
  /* Every row of dQ, dK and dV (and of a per-head ddecay) is written by exactly one task, whose
   * first touch overwrites it (see backward_head; dK and dV split into chunks are zeroed before
   * the chunks are summed into them), unless there is no batch, row or key to visit; a ddecay
   * shared by the heads is summed into. */
  int visited = pb.B > 0 && pb.L > 0 && pb.S > 0;
  gm_tensor *(*alloc)(int, const int64_t *) = visited ? gm_tensor_empty : zeros;
  *dq = q->requires_grad ? alloc(4, q->shape) : NULL;
  *dk = k->requires_grad ? alloc(4, k->shape) : NULL;
  *dv = v->requires_grad ? alloc(4, v->shape) : NULL;
  /* with one batch element, each entry of a per-head ddecay gets one term: added into the
   * pending sum, the same as adding the fresh plane to it afterwards */
  int into = decay_into && decay && decay->requires_grad && pb.decay_per_head && pb.B == 1 &&
             decay_into->numel == decay->numel;
  *ddecay = !decay || !decay->requires_grad || into ? NULL
            : pb.decay_per_head ? alloc(decay->ndim, decay->shape) : zeros(decay->ndim, decay->shape);
  if ((q->requires_grad && !*dq) || (k->requires_grad && !*dk) || (v->requires_grad && !*dv) ||
      (decay && decay->requires_grad && !into && !*ddecay))
    goto fail;
  if (gm_matmul_uses_bf16() && (pack_panels(&pb, pb.k, pb.d, 1, &pb.kt_panels) != GM_OK ||
                                pack_panels(&pb, pb.v, pb.dv, 1, &pb.vt_panels) != GM_OK ||
                                pack_panels(&pb, pb.k, pb.d, 0, &pb.k_panels) != GM_OK))
    goto fail;
  float *dq_all = *dq ? (*dq)->data : NULL, *dk_all = *dk ? (*dk)->data : NULL;
  float *dv_all = *dv ? (*dv)->data : NULL;
  float *dd_all = into ? decay_into->data : *ddecay ? (*ddecay)->data : NULL;
  const float *out = node->data, *stats = node->saved->data, *dout = g->data;
  int64_t ls = pb.L * pb.S, work = pb.B * pb.H * ls * (pb.d + pb.dv), S = pb.S, d = pb.d, dvs = pb.dv;
  int64_t qblocks = (pb.L + BQ - 1) / BQ;
  int64_t qb_at = 5 * BQ * LDT + own_floats(&pb, pb.d) + own_floats(&pb, pb.dv);
  if (thread_scratch_alloc((size_t)(qb_at + query_block_words(&pb, 1, NULL, NULL)), &ts) != GM_OK)
    goto fail;
  int threads = gm_get_num_threads();
  gm_status st = GM_OK;
  if (dd_all && !pb.decay_per_head) {
    /* a decay shared by the heads: each thread sums into its own [L, S] plane, added at the end;
     * a static schedule gives each plane the same tasks in the same order on every run */
    thread_scratch planes = {0};
    if (thread_scratch_alloc((size_t)ls, &planes) != GM_OK) goto fail;
    memset(planes.all, 0, (size_t)threads * planes.stride * sizeof(float));
    GM_FOR(t, pb.B * pb.H, work, {
      float *scratch = my_scratch(&ts), *mine = my_scratch(&planes);
      query_block qbt;
      query_block_words(&pb, 1, &qbt, (uint32_t *)(scratch + qb_at));
      backward_head(&pb, t / pb.H, t % pb.H, 0, pb.L, out, stats, dout, dq_all,
                    dk_all ? dk_all + t * S * d : NULL, dv_all ? dv_all + t * S * dvs : NULL, 1,
                    mine, 0, &qbt, scratch);
    });
    for (int t = 0; t < threads; t++)
      for (int64_t i = 0; i < ls; i++) dd_all[i] += planes.all[(size_t)t * planes.stride + i];
    gm_free(planes.all);
  } else {
    /* Groups of (b, h) that share nothing: one per head when the decay's gradient is per head
     * (the group owns that head's plane and walks the batch), else one per (b, h). With fewer
     * groups than twice the threads, each group's query blocks are also cut into chunks: a
     * chunk owns its rows of dQ and of the decay plane, and sums dK and dV into scratch of its
     * own, added in chunk order afterwards, so the result does not depend on scheduling. */
    int per_head = dd_all != NULL;
    int64_t groups = per_head ? pb.H : pb.B * pb.H, per_group = per_head ? pb.B : 1;
    int64_t chunks = groups >= 2 * threads || work <= GM_PAR_MIN ? 1 : (2 * threads + groups - 1) / groups;
    if (chunks > qblocks) chunks = qblocks;
    size_t part_floats = (size_t)(S * (d + dvs));
    float *parts = NULL;
    if (chunks > 1 && (dk_all || dv_all)) {
      parts = calloc((size_t)(pb.B * pb.H * chunks) * part_floats, sizeof(float));
      if (!parts) st = GM_ERR_NOMEM;
    }
    int64_t tasks = st == GM_OK ? groups * chunks : 0;
    GM_FOR(t, tasks, work, {
      int64_t grp = t / chunks, c = t % chunks;
      int64_t i_begin = qblocks * c / chunks * BQ, i_end = qblocks * (c + 1) / chunks * BQ;
      if (i_end > pb.L) i_end = pb.L;
      float *scratch = my_scratch(&ts);
      query_block qbt;
      query_block_words(&pb, 1, &qbt, (uint32_t *)(scratch + qb_at));
      for (int64_t j = 0; j < per_group; j++) {
        int64_t b = per_head ? j : grp / pb.H, h = per_head ? grp : grp % pb.H, bh = b * pb.H + h;
        float *part = parts ? parts + (size_t)(bh * chunks + c) * part_floats : NULL;
        float *dkd = !dk_all ? NULL : part ? part : dk_all + bh * S * d;
        float *dvd = !dv_all ? NULL : part ? part + S * d : dv_all + bh * S * dvs;
        backward_head(&pb, b, h, i_begin, i_end, out, stats, dout, dq_all, dkd, dvd, !part,
                      dd_all ? dd_all + h * ls : NULL, j == 0 && !into, &qbt, scratch);
      }
    });
    if (parts && st == GM_OK)
      GM_FOR(bh, pb.B * pb.H, work, {
        if (dk_all) memset(dk_all + bh * S * d, 0, (size_t)(S * d) * sizeof(float));
        if (dv_all) memset(dv_all + bh * S * dvs, 0, (size_t)(S * dvs) * sizeof(float));
        for (int64_t c = 0; c < chunks; c++) {
          const float *part = parts + (size_t)(bh * chunks + c) * part_floats;
          if (dk_all)
            for (int64_t i = 0; i < S * d; i++) dk_all[bh * S * d + i] += part[i];
          if (dv_all)
            for (int64_t i = 0; i < S * dvs; i++) dv_all[bh * S * dvs + i] += part[S * d + i];
        }
      });
    free(parts);
  }
  free_panels(&pb);
  gm_free(ts.all);
  if (st == GM_OK) return GM_OK;
  gm_fail(st, 0, "not enough memory for the attention backward scratch");
fail:
  free_panels(&pb);
  gm_free(ts.all);
  gm_tensor_release(*dq), gm_tensor_release(*dk), gm_tensor_release(*dv), gm_tensor_release(*ddecay);
  *dq = *dk = *dv = *ddecay = NULL;
  return gm_last_status();
}
