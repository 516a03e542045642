/* gm_attention_tiles.h — what the fused attention's two passes share: gm_attention.c (forward)
 * and gm_attention_backward.c (backward) both walk the same tiles, BQ query rows by BK keys, and
 * make each tile's scores the same way; this header holds that common ground: the problem as
 * both read it (make_problem), the tile products, a tile's scores (row_scores), the dropout
 * factors, the row kernel both use (row_exp) and the threads' scratch.
 *
 * The functions are static, defined here: each pass's file compiles its own copy beside its
 * loops, so they inline into them as when the two passes were one file, and neither file calls
 * the other (the C core's layers, spec/c_layers_spec.lua: backward is reached from gm_autograd.c,
 * forward from the binding; what forward leaves for backward is data, the node's saved buffer).
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
#ifndef GM_ATTENTION_TILES_H
#define GM_ATTENTION_TILES_H

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


/* Row kernels, kept out of line so that each compiles once, vectorised (inlined into the
 * OpenMP bodies the vectoriser gives up on them); forward's own two are in gm_attention.c. */
/* t[c] = e^(t[c] − shift) (backward's P, whose rows are already known to sum to 1) */
GM_HOT static __attribute__((noinline)) void row_exp(float *t, int64_t n, float shift) {
#pragma omp simd
  for (int64_t c = 0; c < n; c++) t[c] = gm_exp_nonpositive(t[c] - shift);
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

#endif
