/* gm_attention.c — fused multi-head attention with padding, graph and decay masks: forward
 * (backward: gm_attention_backward.c; the tiles both walk: gm_attention_tiles.h).
 *
 * Forward, per (batch, head, block of BQ query rows): for each block of BK keys, one small
 * product gives the raw scores Q Kᵀ; they are scaled, decayed and masked in place, folded into a
 * running (max, sum) per row — the online softmax — and multiplied into V by a second product.
 * Each row's logsumexp (and, for renormalised weight decay, its renormaliser) is kept, and, when
 * they fit (keep_scores), the raw scores themselves: the node's saved buffer, all that backward
 * reads of forward. */
#include <string.h>

#include "gm_attention_tiles.h"

/* Forward's row kernels, out of line as row_exp is (gm_attention_tiles.h). */
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
