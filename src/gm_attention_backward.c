/* gm_attention_backward.c — the fused attention's backward (forward: gm_attention.c; the tiles
 * both walk: gm_attention_tiles.h).
 *
 * Backward, per (batch, head): the same tiles are made again (from the raw scores forward kept,
 * or by the product again), and with D_i = dO_i · O_i:
 *   dV += Ãᵀ dO,  dÃ = dO Vᵀ,  dA = dÃ ⊙ Z (dropout),
 *   scores mode (s = f · scale · qk):  dS = P ⊙ (dA − D),  df = dS · scale · qk,  dqk = dS f scale
 *   weights mode, A = P f:             dS = P ⊙ (f dA − D),  df = P dA,            dqk = dS scale
 *   weights mode, A = P f / c:         dS = A ⊙ (dA − D),    df = P (dA − D) / c,  dqk = dS scale
 *   dQ += dqk K,  dK += dqkᵀ Q.
 * (For the renormalised case Σ_j P_ij dP_ij vanishes because each row of A sums to 1.)
 * Nothing of size [B, H, L, S] is held between the passes, as in FlashAttention: the node's
 * saved buffer holds each row's logsumexp and renormaliser (stats_floats), then the raw scores
 * when forward kept them. */
#include <string.h>

#include "gm_attention_tiles.h"

/* t ⊙= z, the factors apply_dropout kept. */
GM_HOT static void reapply_dropout(const problem *pb, int64_t nq, int64_t nk, const float *z, float *t) {
  if (pb->dropout == 0.0f) return;
  for (int64_t r = 0; r < nq; r++)
    for (int64_t c = 0; c < nk; c++) t[r * LDT + c] *= z[r * LDT + c];
}

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
